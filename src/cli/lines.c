#include "cli/lines.h"

#include <stdlib.h>
#include <string.h>

#include "core/fs.h"

int cli_for_each_line(const char *file, int skip_empty,
                      int (*fn)(const char *line, size_t len, void *ctx, struct err *e), void *ctx, struct err *e)
{
    char *data;
    size_t len;
    if (fs_read_file(file, (size_t)1 << 31, &data, &len, e))
        return -1;
    int rc = 0, line = 0;
    for (char *p = data, *end; p < data + len && !rc; p = end + 1) {
        end = memchr(p, '\n', (size_t)(data + len - p));
        if (!end)
            end = data + len;
        line++;
        if (!(skip_empty && end == p) && fn(p, (size_t)(end - p), ctx, e))
            rc = err_prefix(e, "%s:%d", file, line);
    }
    free(data);
    return rc;
}
