#include "core/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fs_read_file(const char *path, size_t max_bytes, char **data, size_t *len, struct err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(e, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 8192, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n > max_bytes) {
            fclose(f);
            free(buf);
            return err_set(e, "%s: larger than the %zu bytes allowed", path, max_bytes);
        }
        if (got == 0)
            break;
        if (n == cap)
            buf = xrealloc(buf, (cap *= 2) + 1);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return err_set(e, "%s: read error", path);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

int fs_write_atomic(const char *path, const void *data, size_t len, struct err *e)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return err_set(e, "%s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return err_set(e, "%s: cannot create: %s", tmp, strerror(errno));
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int saved = errno;
            close(fd);
            unlink(tmp);
            return err_set(e, "%s: write failed: %s", tmp, strerror(saved));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) || close(fd)) {
        unlink(tmp);
        return err_set(e, "%s: cannot flush: %s", tmp, strerror(errno));
    }
    if (rename(tmp, path)) {
        unlink(tmp);
        return err_set(e, "%s: cannot rename into place: %s", path, strerror(errno));
    }
    return 0;
}

int fs_copy_file(const char *src, const char *dst, struct err *e)
{
    char *data;
    size_t len;
    if (fs_read_file(src, (size_t)1 << 32, &data, &len, e))
        return -1;
    int rc = fs_write_atomic(dst, data, len, e);
    free(data);
    return rc;
}

int fs_mkdir_p(const char *path, struct err *e)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return err_set(e, "%s: path too long", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0755) && errno != EEXIST)
                return err_set(e, "%s: cannot create directory: %s", buf, strerror(errno));
            *p = saved;
            if (!saved)
                break;
        }
    }
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode))
        return err_set(e, "%s: exists and is not a directory", path);
    return 0;
}

int fs_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}
