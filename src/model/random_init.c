#include "model/random_init.h"

#include <stdlib.h>

#include "core/bf16.h"
#include "core/rng.h"
#include "io/safetensors.h"
#include "model/weights.h"

#define INIT_CHUNK (1 << 20)        /* elements per independent random stream */
#define INIT_BATCH (64 * INIT_CHUNK) /* elements generated per write */

struct init_ctx {
    uint16_t *buf;
    int64_t first; /* element index of buf[0] within the tensor */
    int64_t n;
    uint64_t seed;
    int tensor;
    double mean, std;
};

static void init_chunks(void *arg, long c0, long c1)
{
    struct init_ctx *c = arg;
    for (long ci = c0; ci < c1; ci++) {
        int64_t begin = (int64_t)ci * INIT_CHUNK, end = begin + INIT_CHUNK;
        if (end > c->n)
            end = c->n;
        struct rng r;
        rng_seed(&r, c->seed, (uint64_t)c->tensor, (uint64_t)((c->first + begin) / INIT_CHUNK));
        for (int64_t i = begin; i < end; i++)
            c->buf[i] = f32_to_bf16((float)(c->mean + c->std * rng_normal(&r)));
    }
}

int random_init_write(const struct model_config *cfg, const char *out_path, uint64_t seed,
                      struct threadpool *pool, struct err *e)
{
    struct model_weights w = {0};
    w.layers = xcalloc((size_t)cfg->n_layers, sizeof *w.layers);
    struct weight_spec *specs;
    int n = weight_specs_build(cfg, &w, &specs);
    struct st_writer *wr = st_writer_create(out_path, e);
    uint16_t *buf = NULL;
    int rc = wr ? 0 : -1;
    for (int i = 0; i < n && !rc; i++) {
        int64_t shape[2] = {specs[i].rows, specs[i].cols};
        rc = st_writer_declare(wr, specs[i].name, DTYPE_BF16, specs[i].ndim,
                               specs[i].ndim == 1 ? shape + 1 : shape, e);
    }
    if (!rc)
        buf = xmalloc((size_t)INIT_BATCH * sizeof(uint16_t));
    for (int i = 0; i < n && !rc; i++) {
        int64_t total = specs[i].rows * specs[i].cols;
        int norm = specs[i].kind == WEIGHT_KIND_NORM;
        for (int64_t first = 0; first < total && !rc; first += INIT_BATCH) {
            struct init_ctx c = {
                .buf = buf, .first = first, .n = total - first < INIT_BATCH ? total - first : INIT_BATCH,
                .seed = seed, .tensor = i,
                .mean = norm ? (cfg->norm_plus_one ? 0.0 : 1.0) : 0.0,
                .std = norm ? 0.1 : cfg->initializer_range,
            };
            threadpool_for(pool, (long)((c.n + INIT_CHUNK - 1) / INIT_CHUNK), 1, init_chunks, &c);
            rc = st_writer_write(wr, buf, (size_t)c.n * sizeof(uint16_t), e);
        }
    }
    free(buf);
    free(specs);
    free(w.layers);
    if (rc) {
        if (wr)
            st_writer_abort(wr);
        return -1;
    }
    return st_writer_finish(wr, e);
}
