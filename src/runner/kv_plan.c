#include "runner/kv_plan.h"

#include "model/kv_store.h"

int kv_plan_blocks(const struct model *m, int needed, int host_blocks, int cap, int block_size, double util,
                   int *n_blocks, size_t *free_before, struct err *e)
{
    struct backend *be = m->be;
    size_t free_bytes = 0, total = 0;
    be->ops->mem_info(be, &free_bytes, &total);
    *free_before = free_bytes;
    *n_blocks = host_blocks > needed ? host_blocks : needed;
    if (total == 0) /* host memory: as asked */
        return 0;
    size_t per_block = kv_store_block_bytes(&m->cfg, &m->sh, be->kv_dtype, block_size);
    double budget = util * (double)free_bytes;
    long fit = (long)(budget / (double)per_block);
    if (fit > (1L << 30))
        fit = 1L << 30;
    if (fit < needed)
        return err_set(e,
                       "the KV cache needs %d blocks of %d tokens (%.1f MiB) but --gpu-memory-utilization "
                       "%g leaves room for %ld (%.1f MiB free); raise it or shorten the context",
                       needed, block_size, (double)needed * per_block / (1 << 20), util, fit,
                       (double)free_bytes / (1 << 20));
    *n_blocks = cap > 0 && cap < fit ? cap : (int)fit;
    return 0;
}
