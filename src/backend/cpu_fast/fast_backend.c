/* The fast CPU backend's table and weights (fast_backend.h). */
#include "backend/cpu_fast/fast_backend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/quant/quant_repack.h"

/* Spin this long for the next op before parking: the ops of a step come
 * microseconds apart, the steps themselves (a server between requests)
 * may not come at all. */
#define FAST_SPIN_NS 200000L

/* The pages wholly inside [p, p + n) given back: a weight's source after
 * its repacking is never read again (a file mapping's pages come back from
 * the file should anything touch them; the host copies are dead). */
static void drop_pages(const void *p, size_t n)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1), hi = ((uintptr_t)p + n) & ~(uintptr_t)(page - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Repacked for the kernel set's several-row tiles where it has them (a copy
 * the backend owns), else left where the checkpoint reader put them (the
 * file's mapping). */
static int fast_weight_upload(struct backend *be, struct weight *dst, const void *host_data, enum dtype dtype,
                              int64_t rows, int64_t cols, struct err *e)
{
    struct fast_backend *fb = fast_of(be);
    const int block = quant_act_block(dtype);
    if (!block || !fb->k->tile[dtype])
        return err_set(e, "cpu backend: no matmul for weights of type %s", dtype_name(dtype));
    if (dtype_is_block(dtype) && cols % dtype_block_elems(dtype))
        return err_set(e, "cpu backend: a %s weight's rows of %lld elements are not whole blocks of %d",
                       dtype_name(dtype), (long long)cols, dtype_block_elems(dtype));
    const enum dtype packed = quant_repacked_type(dtype);
    if (packed != dtype && fb->k->tile[packed]) {
        const size_t bytes = quant_repack_bytes(dtype, rows, cols);
        void *data = xmalloc(bytes);
        quant_repack(fb->base.pool, dtype, host_data, rows, cols, data);
        drop_pages(host_data, dtype_row_bytes(dtype, cols) * (size_t)rows);
        cpu_backend_own(&fb->base, data);
        *dst = (struct weight){data, packed, rows, cols};
        return 0;
    }
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
    snprintf(be->detail, sizeof be->detail, "%d threads, %s kernels (%s)", threadpool_size(fb->base.pool),
             fb->k->name, fb->k->features);
    be->block_weights = 1;
    be->kv_dtype = DTYPE_F16; /* the reference's qk_rope_kv_write rounds into it */
    be->free_impl = fast_backend_free;
    return be;
}
