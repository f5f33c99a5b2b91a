/* Backend selection by name, and the metadata layout every backend shares. */
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu_fast/fast_backend.h"
#include "backend/ops.h"

#ifdef INFER_HAVE_CUDA
struct backend *cuda_backend_create(int device, struct err *e);
int cuda_backend_available(void);
#endif

const char *mem_region_name(enum mem_region r)
{
    static const char *names[MEM_REGION_COUNT] = {"weights", "workspace", "metadata", "kv cache"};
    return r < MEM_REGION_COUNT ? names[r] : "?";
}

void meta_layout_init(struct meta_layout *l, const struct meta_caps *caps)
{
    CHECK(caps->max_tokens > 0 && caps->max_seqs > 0 && caps->max_blocks_per_seq > 0 && caps->max_logits > 0);
    const size_t T = (size_t)caps->max_tokens, S = (size_t)caps->max_seqs;
    *l = (struct meta_layout){.caps = *caps};
    l->positions = l->token_ids + T;
    l->slot_mapping = l->positions + T;
    l->seq_of_token = l->slot_mapping + T;
    l->query_start = l->seq_of_token + T;
    l->kv_len = l->query_start + S + 1;
    l->logit_rows = l->kv_len + S;
    l->logit_cols = l->logit_rows + (size_t)caps->max_logits;
    l->block_tables = l->logit_cols + 1;
    l->n_ints = l->block_tables + S * (size_t)caps->max_blocks_per_seq;
}

size_t meta_layout_ints(const struct meta_layout *l, int n_seqs)
{
    return l->block_tables + (size_t)n_seqs * (size_t)l->caps.max_blocks_per_seq;
}

struct fwd_meta meta_layout_point(const struct meta_layout *l, const int32_t *base, int n_tokens, int n_seqs,
                                  int n_logits)
{
    return (struct fwd_meta){.n_tokens = n_tokens,
                             .n_seqs = n_seqs,
                             .n_logits = n_logits,
                             .max_blocks_per_seq = l->caps.max_blocks_per_seq,
                             .token_ids = base + l->token_ids,
                             .positions = base + l->positions,
                             .slot_mapping = base + l->slot_mapping,
                             .seq_of_token = base + l->seq_of_token,
                             .query_start = base + l->query_start,
                             .kv_len = base + l->kv_len,
                             .logit_rows = base + l->logit_rows,
                             .logit_cols = base + l->logit_cols,
                             .block_tables = base + l->block_tables};
}

int backend_kind_parse(const char *name, enum backend_kind *kind, struct err *e)
{
    if (!strcmp(name, "cpu"))
        *kind = BACKEND_KIND_CPU;
    else if (!strcmp(name, "cpu-reference"))
        *kind = BACKEND_KIND_CPU_REFERENCE;
    else if (!strcmp(name, "cuda"))
        *kind = BACKEND_KIND_CUDA;
    else if (!strcmp(name, "auto"))
#ifdef INFER_HAVE_CUDA
        *kind = cuda_backend_available() ? BACKEND_KIND_CUDA : BACKEND_KIND_CPU;
#else
        *kind = BACKEND_KIND_CPU;
#endif
    else
        return err_set(e, "--device: unknown device '%s' (cpu, cpu-reference, cuda or auto)", name);
    return 0;
}

const char *backend_kind_name(enum backend_kind kind)
{
    return kind == BACKEND_KIND_CPU ? "cpu" : kind == BACKEND_KIND_CPU_REFERENCE ? "cpu-reference" : "cuda";
}

struct backend *backend_create(enum backend_kind kind, int n_threads, struct err *e)
{
    return backend_create_on(kind, n_threads, 0, e);
}

static struct backend *create(enum backend_kind kind, int n_threads, int device, struct err *e)
{
    if (kind == BACKEND_KIND_CPU)
        return cpu_fast_backend_create(n_threads, e);
    if (kind == BACKEND_KIND_CPU_REFERENCE)
        return cpu_backend_create(n_threads, e);
#ifdef INFER_HAVE_CUDA
    return cuda_backend_create(device, e);
#else
    (void)device;
    err_set(e, "--device cuda: this build of infer has no CUDA backend (nvcc was not found "
               "when it was built)");
    return NULL;
#endif
}

struct backend *backend_create_on(enum backend_kind kind, int n_threads, int device, struct err *e)
{
    struct backend *be = create(kind, n_threads, device, e);
    if (be)
        be->kind = kind, be->n_threads = n_threads, be->device = device;
    return be;
}

void backend_free(struct backend *be)
{
    if (be)
        be->free_impl(be);
}
