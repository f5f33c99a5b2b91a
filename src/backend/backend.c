/* Backend selection by name. */
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/ops.h"

#ifdef INFER_HAVE_CUDA
struct backend *cuda_backend_create(struct err *e);
int cuda_backend_available(void);
#endif

const char *mem_region_name(enum mem_region r)
{
    static const char *names[MEM_REGION_COUNT] = {"weights", "workspace", "metadata", "kv cache"};
    return r < MEM_REGION_COUNT ? names[r] : "?";
}

int backend_kind_parse(const char *name, enum backend_kind *kind, struct err *e)
{
    if (!strcmp(name, "cpu"))
        *kind = BACKEND_KIND_CPU;
    else if (!strcmp(name, "cuda"))
        *kind = BACKEND_KIND_CUDA;
    else if (!strcmp(name, "auto"))
#ifdef INFER_HAVE_CUDA
        *kind = cuda_backend_available() ? BACKEND_KIND_CUDA : BACKEND_KIND_CPU;
#else
        *kind = BACKEND_KIND_CPU;
#endif
    else
        return err_set(e, "--device: unknown device '%s' (cpu, cuda or auto)", name);
    return 0;
}

struct backend *backend_create(enum backend_kind kind, int n_threads, struct err *e)
{
    if (kind == BACKEND_KIND_CPU)
        return cpu_backend_create(n_threads, e);
#ifdef INFER_HAVE_CUDA
    return cuda_backend_create(e);
#else
    err_set(e, "--device cuda: this build of infer has no CUDA backend (nvcc was not found "
               "when it was built)");
    return NULL;
#endif
}

void backend_free(struct backend *be)
{
    if (be)
        be->destroy(be);
}
