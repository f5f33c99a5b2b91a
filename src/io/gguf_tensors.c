/* The tensor infos and the data section: each tensor's dims and type (a
 * known block size, whole blocks per row, sizes without overflow), an
 * aligned offset, a unique name, and bytes inside the data section that
 * overlap no other tensor's. */
#include <stdio.h>
#include <stdlib.h>

#include "io/gguf_impl.h"

/* The type must have a known block size, dims[0] whole blocks (ggml splits
 * rows into blocks), and numel / nbytes must not overflow. */
static int check_tensor_type(struct gguf_rd *r, struct gguf_tensor *t, uint32_t type)
{
    const struct ggml_type_info *ti =
        type < GGML_TYPE_COUNT_ ? ggml_type_info_of((enum ggml_type)type) : NULL;
    if (!ti)
        return gguf_rd_fail(r, "unknown tensor type %u", type);
    if (!ti->block_elems)
        return gguf_rd_fail(r, "tensor type %u (%s) is not supported: its block size is unknown here", type,
                            ti->name);
    t->type = (enum ggml_type)type;
    int64_t numel = 1;
    for (int d = 0; d < t->n_dims; d++)
        if (__builtin_mul_overflow(numel, t->dims[d], &numel))
            return gguf_rd_fail(r, "element count overflows (dims[%d] = %lld)", d, (long long)t->dims[d]);
    t->numel = numel;
    if (t->dims[0] % ti->block_elems != 0)
        return gguf_rd_fail(r, "dims[0] = %lld is not a multiple of the %s block size (%d elements)",
                            (long long)t->dims[0], ti->name, ti->block_elems);
    uint64_t nbytes;
    if (__builtin_mul_overflow((uint64_t)(numel / ti->block_elems), (uint64_t)ti->block_bytes, &nbytes) ||
        nbytes > SIZE_MAX)
        return gguf_rd_fail(r, "byte size of %lld %s elements overflows", (long long)numel, ti->name);
    t->nbytes = (size_t)nbytes;
    return 0;
}

static int rd_dims(struct gguf_rd *r, struct gguf_tensor *t)
{
    uint32_t nd;
    if (gguf_rd_u32(r, "the dimension count", &nd) < 0)
        return -1;
    if (nd < 1 || nd > GGUF_MAX_DIMS)
        return gguf_rd_fail(r, "%u dimensions (must be 1 to %d)", nd, GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    for (int d = 0; d < GGUF_MAX_DIMS; d++)
        t->dims[d] = 1; /* unused dims read as 1, as in ggml */
    for (int d = 0; d < t->n_dims; d++) {
        uint64_t v;
        if (gguf_rd_u64(r, "a dimension", &v) < 0)
            return -1;
        /* ggml reads dims as int64: above INT64_MAX they are negative */
        if (v == 0 || v > (uint64_t)INT64_MAX)
            return gguf_rd_fail(r, "dims[%d] = %lld is not positive", d, (long long)(int64_t)v);
        t->dims[d] = (int64_t)v;
    }
    return 0;
}

int gguf_read_tensor_info(struct gguf_rd *r, const struct gguf_file *f, int64_t i, struct gguf_tensor *t)
{
    snprintf(r->where, sizeof r->where, "tensor info %lld", (long long)i);
    if (gguf_rd_str(r, "name", -1, &t->name) < 0)
        return -1;
    gguf_rd_where(r, "tensor", &t->name);
    uint32_t type;
    if (rd_dims(r, t) < 0 || gguf_rd_u32(r, "the type", &type) < 0 ||
        gguf_rd_u64(r, "the offset", &t->offset) < 0)
        return -1;
    if (check_tensor_type(r, t, type) < 0)
        return -1;
    if (t->offset % f->alignment != 0)
        return gguf_rd_fail(r, "offset %llu is not a multiple of the alignment (%llu)",
                            (unsigned long long)t->offset, (unsigned long long)f->alignment);
    return 0;
}

int gguf_check_duplicate_tensors(struct gguf_rd *r, const struct gguf_file *f)
{
    struct gguf_name_ref *refs = xcalloc((size_t)f->n_tensors, sizeof *refs);
    for (int64_t k = 0; k < f->n_tensors; k++)
        refs[k] = (struct gguf_name_ref){&f->tensors[k].name, k};
    int64_t i, j;
    int dup = gguf_find_duplicate(refs, f->n_tensors, &i, &j);
    free(refs);
    if (!dup)
        return 0;
    gguf_rd_where(r, "tensor", &f->tensors[i].name);
    return gguf_rd_fail(r, "duplicate tensor name (tensor infos %lld and %lld)", (long long)i, (long long)j);
}

struct span {
    uint64_t begin, end;
    int64_t index;
};

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Every tensor is non-empty, so after sorting by start an overlap always
 * shows between neighbours. */
static int check_overlap(struct gguf_rd *r, const struct gguf_file *f)
{
    int64_t n = f->n_tensors;
    struct span *s = xcalloc((size_t)n, sizeof *s);
    for (int64_t i = 0; i < n; i++)
        s[i] = (struct span){f->tensors[i].offset, f->tensors[i].offset + f->tensors[i].nbytes, i};
    qsort(s, (size_t)n, sizeof *s, span_cmp);
    int rc = 0;
    for (int64_t i = 1; i < n && !rc; i++) {
        if (s[i].begin < s[i - 1].end) {
            const struct span *p = &s[i - 1], *q = &s[i];
            char buf[GGUF_SHOW_MAX + 4];
            gguf_rd_where(r, "tensor", &f->tensors[q->index].name);
            rc = gguf_rd_fail(r, "bytes [%llu, %llu) of the data section overlap tensor '%s' [%llu, %llu)",
                              (unsigned long long)q->begin, (unsigned long long)q->end,
                              gguf_show(&f->tensors[p->index].name, buf, sizeof buf),
                              (unsigned long long)p->begin, (unsigned long long)p->end);
        }
    }
    free(s);
    return rc;
}

/* The data section starts at the first aligned offset after the tensor
 * infos; each tensor must lie inside it. */
int gguf_place_tensors(struct gguf_rd *r, struct gguf_file *f)
{
    uint64_t start = (r->pos + f->alignment - 1) / f->alignment * f->alignment;
    snprintf(r->where, sizeof r->where, "data section");
    if (start > r->size) {
        if (f->n_tensors > 0)
            return gguf_rd_fail(
                r,
                "starts at offset %llu (the tensor infos end at %zu), past the end of the file "
                "(%zu bytes)",
                (unsigned long long)start, r->pos, r->size);
        start = r->size; /* no tensors: the padding may be left out */
    }
    uint64_t data_size = r->size - start;
    f->data = r->base ? r->base + start : NULL;
    for (int64_t i = 0; i < f->n_tensors; i++) {
        struct gguf_tensor *t = &f->tensors[i];
        if (t->offset > data_size || t->nbytes > data_size - t->offset) {
            gguf_rd_where(r, "tensor", &t->name);
            return gguf_rd_fail(
                r,
                "%zu bytes at offset %llu run past the end of the data section (%llu bytes from "
                "offset %llu of the file)",
                t->nbytes, (unsigned long long)t->offset, (unsigned long long)data_size,
                (unsigned long long)start);
        }
        t->data = (const unsigned char *)f->data + t->offset;
    }
    return check_overlap(r, f);
}
