/* The fast CPU backend's table and weights (fast_backend.h). */
#include "backend/cpu_fast/fast_backend.h"

#include <pthread.h>
#include <stdlib.h>

/* Spin this long for the next op before parking: the ops of a step come
 * microseconds apart, the steps themselves (a server between requests)
 * may not come at all. */
#define FAST_SPIN_NS 200000L

/* Weights stay where the checkpoint reader put them (the file's mapping):
 * any type quant.h has a dot product for, rows of whole blocks. */
static int fast_weight_upload(struct backend *be, struct weight *dst, const void *host_data, enum dtype dtype,
                              int64_t rows, int64_t cols, struct err *e)
{
    const struct fast_backend *fb = fast_of(be);
    const int block = quant_act_block(dtype);
    if (!block || !fb->k->tile[dtype])
        return err_set(e, "cpu backend: no matmul for weights of type %s", dtype_name(dtype));
    if (dtype_is_block(dtype) && cols % dtype_block_elems(dtype))
        return err_set(e, "cpu backend: a %s weight's rows of %lld elements are not whole blocks of %d",
                       dtype_name(dtype), (long long)cols, dtype_block_elems(dtype));
    *dst = (struct weight){host_data, dtype, rows, cols};
    return 0;
}

static struct backend_ops fast_ops;

static void fast_ops_init(void)
{
    fast_ops = *cpu_reference_ops();
    fast_ops.name = "cpu";
    fast_ops.weight_upload = fast_weight_upload;
    fast_ops.weight_upload_concat = NULL; /* fuse_weights is 0: q|k|v of one file may mix types */
    fast_ops.embed = fast_embed;
    fast_ops.matmul = fast_matmul;
    fast_ops.gated_matmul = NULL;
    fast_ops.logits = fast_logits;
    fast_ops.gated_act = fast_gated_act;
    fast_ops.attention = fast_attention;
    fast_ops.attention_rope = fast_attention_rope;
}

static void fast_backend_free(struct backend *be)
{
    free(fast_of(be)->scratch);
    cpu_backend_destroy(be);
}

struct backend *cpu_fast_backend_create(int n_threads, struct err *e)
{
    (void)e;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fast_ops_init);
    struct fast_backend *fb = xcalloc(1, sizeof *fb);
    fb->base.pool = threadpool_create_spinning(n_threads, FAST_SPIN_NS);
    fb->k = quant_kernels_best();
    struct backend *be = cpu_backend_wrap(&fb->base, &fast_ops);
    be->block_weights = 1;
    be->kv_dtype = DTYPE_F16; /* the reference's qk_rope_kv_write rounds into it */
    be->free_impl = fast_backend_free;
    return be;
}
