/* The fast backend's products: every weight type through quant_matmul, and
 * the embedding's rows dequantised from whatever type the table has. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_fast/fast_backend.h"
#include "backend/quant/quant_matmul.h"
#include "backend/quant/quant_repack.h"
#include "core/dequant.h"

/* The scratch grows to the largest matmul's and stays: the first steps of
 * the largest size (the warm-up's) size it for the rest. */
static void *scratch_for(struct fast_backend *fb, size_t bytes)
{
    if (bytes > fb->scratch_bytes) {
        free(fb->scratch);
        fb->scratch = xmalloc(bytes);
        fb->scratch_bytes = bytes;
    }
    return fb->scratch;
}

static void run(struct backend *be, float *out, const float *x, const struct weight *w, int n_rows, float softcap)
{
    struct fast_backend *fb = fast_of(be);
    void *xq = scratch_for(fb, quant_matmul_scratch(w, n_rows));
    quant_matmul(fb->k, fb->base.pool, out, x, w, n_rows, xq, softcap);
}

void fast_matmul(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows)
{
    run(be, out, x, w, n_rows, 0);
}

void fast_logits(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows, float softcap)
{
    run(be, out, x, w, n_rows, softcap);
}

/* A table row in any type the backend holds: blocks, floats, packed rows. */
static void any_row(const struct weight *table, int64_t row, float *out)
{
    if (quant_is_packed(table->dtype))
        quant_packed_row_f32(table->dtype, table->data, row, table->cols, out);
    else
        dtype_dequant_f32(table->dtype, (const char *)table->data + (size_t)row * dtype_row_bytes(table->dtype, table->cols),
                          table->cols, out);
}

void fast_embed(struct backend *be, void *out, const struct fwd_meta *m, const struct weight *table,
                int64_t vocab_lo, float scale)
{
    (void)be;
    cpu_embed_rows(out, m, table, vocab_lo, scale, any_row);
}
