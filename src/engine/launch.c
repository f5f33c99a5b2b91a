/* Bringing a model up on one device or split over ranks (launch.h). */
#include "engine/launch.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "parallel/comm_cpu.h"
#include "parallel/group.h"
#include "parallel/net.h"
#include "runner/runner.h"

struct launch_opts launch_opts_default(void)
{
    return (struct launch_opts){.device = "auto", .tp = 1, .nnodes = 1, .dist_timeout = 120};
}

#ifdef INFER_HAVE_CUDA
#include "parallel/cuda/comm_cuda.h"
int cuda_backend_device_count(void);
#endif

/* The backend the flags name. */
static int dist_backend_of(const struct launch_opts *f, enum backend_kind kind, enum dist_backend *b, struct err *e)
{
    const int cpu = backend_kind_is_cpu(kind);
    *b = cpu ? DIST_BACKEND_CPU_TEST : DIST_BACKEND_NCCL;
    if (f->dist_backend && dist_backend_parse(f->dist_backend, b, e))
        return -1;
    if (f->tp > 1 && cpu && (!f->dist_backend || *b != DIST_BACKEND_CPU_TEST))
        return err_set(e, "--tensor-parallel-size %d on the cpu needs --dist-backend cpu-test (the CPU splits a "
                          "model for tests only; split it over GPUs with --device cuda)",
                       f->tp);
    if (*b == DIST_BACKEND_CPU_TEST && !cpu)
        return err_set(e, "--dist-backend cpu-test runs on --device cpu only");
    if (*b == DIST_BACKEND_NCCL && cpu)
        return err_set(e, "--dist-backend nccl needs --device cuda");
    return 0;
}

int launch_check(const struct launch_opts *f, struct err *e)
{
    enum backend_kind kind;
    enum dist_backend b;
    if (backend_kind_parse(f->device, &kind, e) || dist_backend_of(f, kind, &b, e))
        return -1;
    if (!(f->dist_timeout > 0 && f->dist_timeout <= 86400))
        return err_set(e, "--dist-timeout must be in (0, 86400] seconds, got %g", f->dist_timeout);
    if (f->tp % f->nnodes)
        return err_set(e, "--nnodes %d does not divide --tensor-parallel-size %d (each machine runs as many ranks)",
                       f->nnodes, f->tp);
    if (f->node_rank >= f->nnodes)
        return err_set(e, "--node-rank %d is not one of the %d machines of --nnodes", f->node_rank, f->nnodes);
    if (f->nnodes > 1 && !f->dist_init_addr)
        return err_set(e, "--nnodes %d needs --dist-init-addr HOST:PORT, where rank 0 listens", f->nnodes);
    if (f->dist_init_addr && net_check_addr(f->dist_init_addr, e))
        return -1;
#ifdef INFER_HAVE_CUDA
    const int local = f->tp / f->nnodes, gpus = kind == BACKEND_KIND_CUDA ? cuda_backend_device_count() : 0;
    if (kind == BACKEND_KIND_CUDA && f->tp > CUDA_COMM_MAX_RANKS)
        return err_set(e, "--tensor-parallel-size %d: at most %d GPUs (ranks) per model", f->tp, CUDA_COMM_MAX_RANKS);
    if (kind == BACKEND_KIND_CUDA && local > gpus)
        return err_set(e, "--tensor-parallel-size %d runs %d ranks on this machine, but only %d GPU%s visible",
                       f->tp, local, gpus, gpus == 1 ? " is" : "s are");
#endif
    if (f->tp > 1) { /* refused before any process starts: the model must split this way */
        struct model_config cfg;
        struct model_shard sh;
        if (model_read_config(f->model, &cfg, e) || model_shard_plan(&cfg, 0, f->tp, &sh, e))
            return -1;
    }
    return 0;
}

static struct dist_opts dist_opts_of(const struct launch_opts *f, enum dist_backend b)
{
    return (struct dist_opts){.size = f->tp, .nnodes = f->nnodes, .node_rank = f->node_rank,
                              .init_addr = f->dist_init_addr, .backend = b, .timeout = f->dist_timeout};
}

int launch_other_node(const struct launch_opts *f, int *status, struct err *e)
{
    if (f->node_rank == 0)
        return 0;
    enum backend_kind kind;
    enum dist_backend b;
    if (backend_kind_parse(f->device, &kind, e) || dist_backend_of(f, kind, &b, e))
        return -1;
    const struct dist_opts o = dist_opts_of(f, b);
    const int rc = dist_run_node(&o, e);
    if (rc < 0)
        return -1;
    *status = rc;
    return 1;
}

/* The communicator of rank of the group the settings describe. */
static struct comm *comm_open(const struct dist_settings *s, struct backend *be, int rank, struct err *e)
{
    if (s->backend == DIST_BACKEND_CPU_TEST)
        return comm_cpu_create(s->comm_id, rank, s->size, 1 << 20, e);
#ifdef INFER_HAVE_CUDA
    return cuda_comm_create(be, s->comm_id, rank, s->size, s->ranks_per_host, &s->tuning, e);
#else
    (void)be;
    err_set(e, "--dist-backend nccl: this build of infer has no CUDA backend");
    return NULL;
#endif
}

/* Rank 0: the name the other ranks find the communicator by. */
static int comm_name(struct dist_settings *s, struct err *e)
{
    if (s->backend == DIST_BACKEND_CPU_TEST) {
        comm_cpu_name(s->comm_id, sizeof s->comm_id);
        return 0;
    }
#ifdef INFER_HAVE_CUDA
    return cuda_comm_unique_id(s->comm_id, sizeof s->comm_id, e);
#else
    return err_set(e, "--dist-backend nccl: this build of infer has no CUDA backend");
#endif
}

static int load_rank(const struct dist_settings *s, int rank, struct loaded_model *lm, struct err *e)
{
    enum backend_kind kind;
    memset(lm, 0, sizeof *lm);
    /* rank r takes GPU r of its machine; rank 0 (GPU 0) runs the engine on another thread, whose device is 0 too */
    const int device = s->ranks_per_host > 0 ? rank % s->ranks_per_host : 0;
    if (backend_kind_parse(s->device, &kind, e) || !(lm->be = backend_create_on(kind, s->threads, device, e)))
        return -1;
    lm->be->batch_invariant = s->batch_invariant;
    if (s->size > 1 && !(lm->be->comm = comm_open(s, lm->be, rank, e)))
        return -1;
    return (lm->m = model_load_shard(s->model, lm->be, rank, s->size, e)) ? 0 : -1;
}

int launch_model(const struct launch_opts *f, struct loaded_model *lm, struct err *e)
{
    enum backend_kind kind;
    enum dist_backend b;
    memset(lm, 0, sizeof *lm);
    if (backend_kind_parse(f->device, &kind, e) || dist_backend_of(f, kind, &b, e))
        return -1;
    struct dist_settings s = {.size = f->tp, .ranks_per_host = f->tp / f->nnodes, .threads = f->threads,
                              .batch_invariant = f->batch_invariant, .backend = b};
    if (strlen(f->model) >= sizeof s.model)
        return err_set(e, "--model: the path is longer than %zu bytes", sizeof s.model - 1);
    snprintf(s.model, sizeof s.model, "%s", f->model);
    snprintf(s.device, sizeof s.device, "%s", backend_kind_name(kind));
    if (f->tp == 1)
        return load_rank(&s, 0, lm, e);
    const struct dist_opts o = dist_opts_of(f, b);
    if (parallel_tuning_read(&s.tuning, e)) /* refused here, before any rank starts, where a value is bad */
        return -1;
    if (dist_launch(&o, &lm->group, e) || comm_name(&s, e))
        return -1;
    if (!(lm->be = backend_create_on(kind, s.threads, 0, e)))
        return -1;
    lm->be->batch_invariant = s.batch_invariant;
    /* the CPU segment must exist before the others open it; NCCL's start waits for every rank */
    if (b == DIST_BACKEND_CPU_TEST && !(lm->be->comm = comm_open(&s, lm->be, 0, e)))
        return -1;
    if (dist_send_settings(lm->group, &s, e))
        return -1;
    dist_watch(lm->group);
    if (!lm->be->comm && !(lm->be->comm = comm_open(&s, lm->be, 0, e)))
        return -1;
    if (!(lm->m = model_load_shard(s.model, lm->be, 0, s.size, e)) || dist_wait_ready(lm->group, e))
        return -1;
    if (b == DIST_BACKEND_CPU_TEST)
        comm_cpu_unlink(s.comm_id); /* every rank has it open */
    log_info("model split over %d ranks, %d per machine (%s)", s.size, s.ranks_per_host,
             b == DIST_BACKEND_CPU_TEST ? "cpu-test" : "nccl");
    return 0;
}

const struct relay *loaded_model_relay(const struct loaded_model *lm)
{
    return lm->group ? &lm->group->relay : NULL;
}

void loaded_model_free(struct loaded_model *lm)
{
    model_free(lm->m);
    dist_group_release(lm->group); /* every rank ends its communicator together */
    if (lm->be && lm->be->comm)
        lm->be->comm->ops->free(lm->be->comm);
    backend_free(lm->be);
    dist_group_end(lm->group);
    memset(lm, 0, sizeof *lm);
}

int launch_worker(const char *addr, int rank, double timeout, struct err *e)
{
    struct dist_group *g = NULL;
    struct loaded_model lm = {0};
    if (!(timeout > 0 && timeout <= 86400))
        return err_set(e, "--dist-timeout must be in (0, 86400] seconds, got %g", timeout);
    if (dist_join(addr, rank, timeout, &g, e))
        return -1;
    dist_watch(g);
    const int rc = load_rank(&g->settings, rank, &lm, e) || dist_ready(g, e) || runner_follow(lm.m, &g->relay, e)
                       ? -1
                       : 0;
    loaded_model_free(&lm);
    dist_group_end(g);
    return rc;
}
