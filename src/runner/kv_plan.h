/* How many KV blocks the cache gets: on a device backend,
 * gpu_memory_utilization of the memory left once the weights, workspace and
 * metadata are placed (the memory plan), at most what the caller asks for;
 * on the host, what the caller asks for. */
#ifndef INFER_RUNNER_KV_PLAN_H
#define INFER_RUNNER_KV_PLAN_H

#include <stddef.h>

#include "model/model.h"

/* needed: the fewest blocks that work; host_blocks: the host's count;
 * cap: a device's most (0: no cap). *free_before: the device's free bytes
 * before the cache (0 on the host). Returns -1 when the budget holds fewer
 * than needed. */
int kv_plan_blocks(const struct model *m, int needed, int host_blocks, int cap, int block_size, double util,
                   int *n_blocks, size_t *free_before, struct err *e);

#endif
