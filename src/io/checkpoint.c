/* Checkpoint directories: one model.safetensors, or shards named by
 * model.safetensors.index.json. Every shard is opened (and so validated) once;
 * all their tensors go into one array sorted by name, which both serves
 * binary-search lookups and makes the consistency checks cheap: a name seen
 * twice in a row is a tensor held by two shards, and every index entry and
 * every shard tensor must match up one to one. */
#include "io/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_INDEX "model.safetensors.index.json"
#define CKPT_SINGLE "model.safetensors"
/* Index files are small (a line per tensor); this only stops a runaway read. */
#define CKPT_MAX_INDEX ((off_t)256 * 1024 * 1024)

/* "dir/name" without doubling a trailing slash. Caller frees. */
static char *ckpt_join(const char *dir, const char *name)
{
    size_t dn = strlen(dir), nn = strlen(name);
    int slash = dn > 0 && dir[dn - 1] == '/';
    char *p = xmalloc(dn + nn + 2);
    memcpy(p, dir, dn);
    if (!slash)
        p[dn++] = '/';
    memcpy(p + dn, name, nn + 1);
    return p;
}

static int ckpt_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Reads and parses the JSON file at path. Caller json_decref's the result. */
static json_t *ckpt_load_json(const char *path, struct err *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err_set(e, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > CKPT_MAX_INDEX) {
        err_set(e, "%s: not a regular file of reasonable size", path);
        close(fd);
        return NULL;
    }
    size_t n = (size_t)sb.st_size, got = 0;
    char *buf = xmalloc(n);
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    json_error_t jerr;
    json_t *root = NULL;
    if (got != n)
        err_set(e, "%s: short read", path);
    else if (!(root = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &jerr)))
        err_set(e, "%s: not valid JSON: %s (line %d, column %d)", path, jerr.text, jerr.line,
                jerr.column);
    free(buf);
    return root;
}

/* Shard filenames must name a file inside the directory. */
static int ckpt_plain_name(const char *s)
{
    return s[0] != '\0' && !strchr(s, '/') && !strstr(s, "..");
}

/* Adds f to c->files (c takes ownership). */
static void ckpt_add_file(struct checkpoint *c, struct st_file *f)
{
    c->files = xrealloc(c->files, (size_t)(c->n_files + 1) * sizeof *c->files);
    c->files[c->n_files++] = f;
}

/* Index of the shard whose basename is name, or -1. */
static int ckpt_shard_index(const struct checkpoint *c, const char *name, size_t dir_len)
{
    for (int i = 0; i < c->n_files; i++) {
        const char *base = c->files[i]->path + dir_len;
        if (strcmp(base, name) == 0)
            return i;
    }
    return -1;
}

static int ckpt_tensor_cmp(const void *a, const void *b)
{
    const struct st_tensor *x = *(const struct st_tensor *const *)a;
    const struct st_tensor *y = *(const struct st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

/* Gathers every tensor of every file, sorted by name; rejects a name held
 * twice (by two shards). */
static int ckpt_collect(struct checkpoint *c, struct err *e)
{
    size_t total = 0;
    for (int i = 0; i < c->n_files; i++)
        total += (size_t)c->files[i]->n_tensors;
    c->tensors = xcalloc(total, sizeof *c->tensors);
    for (int i = 0; i < c->n_files; i++)
        for (int j = 0; j < c->files[i]->n_tensors; j++)
            c->tensors[c->n_tensors++] = &c->files[i]->tensors[j];
    qsort(c->tensors, total, sizeof *c->tensors, ckpt_tensor_cmp);
    for (int i = 1; i < c->n_tensors; i++) {
        const struct st_tensor *a = c->tensors[i - 1], *b = c->tensors[i];
        if (strcmp(a->name, b->name) == 0)
            return err_set(e, "%s: tensor '%s' is in two shards: %s and %s", c->dir, a->name,
                           a->file->path, b->file->path);
    }
    return 0;
}

/* Opens every shard the weight map names and checks that the map and the
 * shards agree exactly. */
static int ckpt_open_sharded(struct checkpoint *c, const char *index_path, struct err *e)
{
    json_t *root = ckpt_load_json(index_path, e);
    if (!root)
        return -1;
    int rc = -1;
    const json_t *map = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(map)) {
        err_set(e, "%s: no \"weight_map\" object", index_path);
        goto out;
    }
    /* Shard paths are ckpt_join(dir, name): their name starts at dir_len. */
    char *prefix = ckpt_join(c->dir, "");
    size_t dir_len = strlen(prefix);
    free(prefix);

    const char *name;
    json_t *v;
    json_object_foreach((json_t *)map, name, v) {
        if (!json_is_string(v)) {
            err_set(e, "%s: weight_map: tensor '%s' maps to a non-string", index_path, name);
            goto out;
        }
        const char *shard = json_string_value(v);
        if (!ckpt_plain_name(shard)) {
            err_set(e, "%s: weight_map: tensor '%s' maps to '%s', which is not a plain file name",
                    index_path, name, shard);
            goto out;
        }
        if (ckpt_shard_index(c, shard, dir_len) >= 0)
            continue;
        char *path = ckpt_join(c->dir, shard);
        struct st_file *f = st_open(path, e);
        free(path);
        if (!f) {
            err_prefix(e, "%s: shard for tensor '%s'", index_path, name);
            goto out;
        }
        ckpt_add_file(c, f);
    }
    if (ckpt_collect(c, e) < 0)
        goto out;
    json_object_foreach((json_t *)map, name, v) {
        const char *shard = json_string_value(v);
        const struct st_tensor *t = checkpoint_find(c, name);
        if (!t) {
            err_set(e, "%s: tensor '%s' is mapped to %s, which does not hold it", index_path,
                    name, shard);
            goto out;
        }
        if (strcmp(t->file->path + dir_len, shard) != 0) {
            err_set(e, "%s: tensor '%s' is mapped to %s but is in %s", index_path, name, shard,
                    t->file->path);
            goto out;
        }
    }
    for (int i = 0; i < c->n_tensors; i++) {
        if (!json_object_get(map, c->tensors[i]->name)) {
            err_set(e, "%s: tensor '%s' is not listed in %s", c->tensors[i]->file->path,
                    c->tensors[i]->name, index_path);
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* Caller frees the result with checkpoint_close. */
struct checkpoint *checkpoint_open(const char *dir, struct err *e)
{
    struct stat sb;
    if (stat(dir, &sb) < 0) {
        err_set(e, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    if (!S_ISDIR(sb.st_mode)) {
        err_set(e, "%s: not a directory", dir);
        return NULL;
    }
    struct checkpoint *c = xcalloc(1, sizeof *c);
    c->dir = xstrdup(dir);
    char *index = ckpt_join(dir, CKPT_INDEX);
    char *single = ckpt_join(dir, CKPT_SINGLE);
    int rc = -1;
    if (ckpt_exists(index)) {
        rc = ckpt_open_sharded(c, index, e);
    } else if (ckpt_exists(single)) {
        struct st_file *f = st_open(single, e);
        if (f) {
            ckpt_add_file(c, f);
            rc = ckpt_collect(c, e);
        }
    } else {
        err_set(e, "%s: no %s or %s", dir, CKPT_SINGLE, CKPT_INDEX);
    }
    free(index);
    free(single);
    if (rc < 0) {
        checkpoint_close(c);
        return NULL;
    }
    return c;
}

struct checkpoint *checkpoint_wrap(const char *dir, struct st_file *f, struct err *e)
{
    struct checkpoint *c = xcalloc(1, sizeof *c);
    c->dir = xstrdup(dir);
    ckpt_add_file(c, f);
    if (ckpt_collect(c, e) < 0) {
        checkpoint_close(c);
        return NULL;
    }
    return c;
}

void checkpoint_close(struct checkpoint *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n_files; i++)
        st_close(c->files[i]);
    free(c->files);
    free(c->tensors);
    free(c->dir);
    free(c);
}

const struct st_tensor *checkpoint_find(const struct checkpoint *c, const char *name)
{
    int lo = 0, hi = c->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int cmp = strcmp(c->tensors[mid]->name, name);
        if (cmp == 0)
            return c->tensors[mid];
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}
