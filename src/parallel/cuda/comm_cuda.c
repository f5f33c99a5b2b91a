/* The GPU communicator (comm_cuda.h): NCCL loaded at run time, the IPC
 * buffers of the all-reduce and the logits' gather, and the choice between
 * them. */
#include "parallel/cuda/comm_cuda.h"

#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/allreduce.h"
#include "backend/cuda/logits_gather.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_ops.h"
#include "core/log.h"

/* --- NCCL, loaded once --- */

static struct {
    int loaded;
    char why[300];
    __typeof__(ncclGetVersion) *GetVersion;
    __typeof__(ncclGetUniqueId) *GetUniqueId;
    __typeof__(ncclCommInitRank) *CommInitRank;
    __typeof__(ncclCommAbort) *CommAbort;
    __typeof__(ncclGetErrorString) *GetErrorString;
    __typeof__(ncclAllReduce) *AllReduce;
    __typeof__(ncclAllGather) *AllGather;
    __typeof__(ncclSend) *Send;
    __typeof__(ncclRecv) *Recv;
    __typeof__(ncclGroupStart) *GroupStart;
    __typeof__(ncclGroupEnd) *GroupEnd;
} nccl;
static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;

static void nccl_load(void)
{
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(nccl.why, sizeof nccl.why, "cannot load libnccl.so.2 (%s)", dlerror());
        return;
    }
    struct {
        const char *name;
        void **fn;
    } syms[] = {
        {"ncclGetVersion", (void **)&nccl.GetVersion},     {"ncclGetUniqueId", (void **)&nccl.GetUniqueId},
        {"ncclCommInitRank", (void **)&nccl.CommInitRank}, {"ncclCommAbort", (void **)&nccl.CommAbort},
        {"ncclGetErrorString", (void **)&nccl.GetErrorString}, {"ncclAllReduce", (void **)&nccl.AllReduce},
        {"ncclAllGather", (void **)&nccl.AllGather},       {"ncclSend", (void **)&nccl.Send},
        {"ncclRecv", (void **)&nccl.Recv},                 {"ncclGroupStart", (void **)&nccl.GroupStart},
        {"ncclGroupEnd", (void **)&nccl.GroupEnd},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
            snprintf(nccl.why, sizeof nccl.why, "libnccl.so.2 lacks %s", syms[i].name);
            return;
        }
    nccl.loaded = 1;
}

static int nccl_ready(struct err *e)
{
    /* NVLink multicast can take a shared host's GPUs out of service: off unless asked for */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    pthread_once(&nccl_once, nccl_load);
    return nccl.loaded ? 0 : err_set(e, "--dist-backend nccl: %s", nccl.why);
}

#define NCCL_TRY(call, e)                                                                               \
    do {                                                                                                \
        ncclResult_t r_ = (call);                                                                       \
        if (r_ != ncclSuccess)                                                                          \
            return err_set((e), "NCCL: %s failed: %s", #call, nccl.GetErrorString(r_));                \
    } while (0)

/* Inside a step: a failure is fatal (a peer that died is the watchdog's). */
#define NCCL_CHECK(call)                                                                                \
    do {                                                                                                \
        ncclResult_t r_ = (call);                                                                       \
        if (r_ != ncclSuccess) {                                                                        \
            fprintf(stderr, "infer: fatal: NCCL: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__,  \
                    nccl.GetErrorString(r_));                                                           \
            abort();                                                                                    \
        }                                                                                               \
    } while (0)

int cuda_comm_unique_id(char *out, size_t size, struct err *e)
{
    ncclUniqueId id;
    if (nccl_ready(e))
        return -1;
    NCCL_TRY(nccl.GetUniqueId(&id), e);
    if (size < 2 * sizeof id.internal + 1)
        return err_set(e, "NCCL unique id: %zu bytes of text do not hold it", size);
    for (size_t i = 0; i < sizeof id.internal; i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)id.internal[i]);
    return 0;
}

static int parse_id(const char *text, ncclUniqueId *id, struct err *e)
{
    if (strlen(text) != 2 * sizeof id->internal)
        return err_set(e, "NCCL unique id: '%.40s...' is not %zu hex digits", text, 2 * sizeof id->internal);
    for (size_t i = 0; i < sizeof id->internal; i++) {
        unsigned v;
        if (sscanf(text + 2 * i, "%2x", &v) != 1)
            return err_set(e, "NCCL unique id: not hex at %zu", 2 * i);
        id->internal[i] = (char)v;
    }
    return 0;
}

/* --- the communicator --- */

enum ar_path { AR_PATH_IPC, AR_PATH_NCCL, AR_PATH_GATHER };

enum {
    IPC_HALF_BYTES = 8 << 20,          /* per call: larger messages go in pieces */
    GATHER_STAGE_BYTES = 64 << 20,     /* rank 0: where NCCL lands the other ranks' logits */
    /* from 4 ranks up, IPC sums of at least this many bytes go in two rounds
     * (launch_ar_two_shot: 2 (N - 1) / N of the message out of each rank
     * instead of N - 1 copies; at 2 ranks the same bytes in two rounds) */
    TWO_SHOT_MIN_DEFAULT = 256 << 10,
};

struct cuda_comm {
    struct comm c;
    struct backend *be;
    ncclComm_t nccl;
    int nccl_only; /* the tuning's: no IPC */
    int batch_invariant;
    size_t one_shot_max; /* bytes */
    size_t two_shot_min; /* bytes; SIZE_MAX: never */
    /* IPC: every rank's buffer mapped here (group.buf[rank] is ours) */
    int have_ipc;
    struct ar_group group;
    /* IPC: the logits' gather (logits_gather.h) over sync words after each
     * rank's all-reduce buffer and a landing space after rank 0's
     * (gather.landing NULL: none) */
    struct gather_group gather;
    /* scratch */
    void *parts;        /* AR_PATH_GATHER: size pieces of IPC_HALF_BYTES */
    float *gather_stage; /* rank 0: GATHER_STAGE_BYTES */
};

static struct cuda_comm *cc_of(struct comm *c) { return (struct cuda_comm *)c; }

static enum ar_path choose(const struct cuda_comm *cc, size_t bytes)
{
    if (cc->have_ipc)
        return cc->batch_invariant || bytes <= cc->one_shot_max ? AR_PATH_IPC : AR_PATH_NCCL;
    return cc->batch_invariant ? AR_PATH_GATHER : AR_PATH_NCCL;
}

static void cuda_comm_all_reduce(struct comm *c, void *buf, size_t n, enum dtype dt, void *stream)
{
    struct cuda_comm *cc = cc_of(c);
    cudaStream_t s = stream;
    CHECK(dt == DTYPE_BF16 || dt == DTYPE_F32);
    const int f32 = dt == DTYPE_F32;
    const size_t es = f32 ? 4 : 2, piece = IPC_HALF_BYTES / es; /* elements of an all-gather's piece */
    char *p = buf;
    switch (choose(cc, n * es)) {
    case AR_PATH_IPC: /* in slot-sized calls; the two forms give the same bits */
        if (n * es >= cc->two_shot_min && ar_two_shot_fits(&cc->group, n, es))
            CUDA_CHECK(f32 ? launch_ar_two_shot_f32(&cc->group, buf, buf, n, s)
                           : launch_ar_two_shot(&cc->group, buf, buf, n, s));
        else
            CUDA_CHECK(f32 ? launch_ar_one_shot_f32(&cc->group, buf, buf, n, s)
                           : launch_ar_one_shot(&cc->group, buf, buf, n, s));
        break;
    case AR_PATH_NCCL:
        NCCL_CHECK(nccl.AllReduce(buf, buf, n, f32 ? ncclFloat32 : ncclBfloat16, ncclSum, cc->nccl, s));
        break;
    case AR_PATH_GATHER:
        for (size_t at = 0; at < n; at += piece) {
            const size_t k = n - at < piece ? n - at : piece;
            NCCL_CHECK(nccl.AllGather(p + at * es, cc->parts, k, f32 ? ncclFloat32 : ncclBfloat16, cc->nccl, s));
            CUDA_CHECK(f32 ? launch_ar_sum_parts_f32((float *)(p + at * es), cc->parts, c->size, k, s)
                           : launch_ar_sum_parts(p + at * es, cc->parts, c->size, k, s));
        }
        break;
    }
}

/* The gather with records goes over CUDA IPC, where the landing holds it. */
static int cuda_comm_records_fit(struct comm *c, int rows, int cols, int n_recs)
{
    const struct cuda_comm *cc = cc_of(c);
    return cc->gather.landing && gather_fits(c->size, rows, cols, n_recs, GATHER_LANDING_BYTES);
}

static void cuda_comm_gather_records(struct comm *c, float *out, const float *in, struct comm_records recs,
                                     const int32_t *want_cols, int rows, int cols, void *stream)
{
    struct cuda_comm *cc = cc_of(c);
    const struct gather_records r = {recs.at, recs.stride, recs.n};
    CHECK(cuda_comm_records_fit(c, rows, cols, recs.n));
    CUDA_CHECK(c->rank == 0 ? launch_gather_place(&cc->gather, out, in, r, want_cols, rows, cols, stream)
                            : launch_gather_push(&cc->gather, in, r, want_cols, rows, cols, stream));
}

/* One exchange of the gather: rank 0 receives count floats from each other
 * rank r into stage + (r - 1) * count; the others send theirs from in. */
static ncclResult_t gather_to_rank0(struct cuda_comm *cc, float *stage, const float *in, size_t count,
                                    cudaStream_t s)
{
    ncclResult_t r = nccl.GroupStart();
    if (cc->c.rank == 0)
        for (int p = 1; p < cc->c.size && r == ncclSuccess; p++)
            r = nccl.Recv(stage + (size_t)(p - 1) * count, count, ncclFloat32, p, cc->nccl, s);
    else if (r == ncclSuccess)
        r = nccl.Send(in, count, ncclFloat32, 0, cc->nccl, s);
    ncclResult_t g = nccl.GroupEnd();
    return r != ncclSuccess ? r : g;
}

/* Over IPC where the landing holds it; else rank 0 receives each rank's
 * rows through NCCL into its staging, then places them as columns, in
 * pieces of rows that fit the staging. */
static void cuda_comm_gather_cols(struct comm *c, float *out, const float *in, int rows, int cols, void *stream)
{
    struct cuda_comm *cc = cc_of(c);
    cudaStream_t s = stream;
    const int N = c->size;
    if (cc->gather.landing && gather_fits(N, rows, cols, 0, GATHER_LANDING_BYTES)) {
        const struct gather_records none = {0};
        CUDA_CHECK(c->rank == 0 ? launch_gather_place(&cc->gather, out, in, none, NULL, rows, cols, s)
                                : launch_gather_push(&cc->gather, in, none, NULL, rows, cols, s));
        return;
    }
    const size_t row_bytes = (size_t)cols * sizeof(float);
    int step = (int)(GATHER_STAGE_BYTES / (row_bytes * (size_t)(N - 1)));
    CHECK(step >= 1);
    for (int at = 0; at < rows; at += step) {
        const int k = rows - at < step ? rows - at : step;
        const size_t count = (size_t)k * (size_t)cols;
        NCCL_CHECK(gather_to_rank0(cc, cc->gather_stage, in + (size_t)at * cols, count, s));
        if (c->rank != 0)
            continue;
        const size_t out_pitch = row_bytes * (size_t)N;
        float *dst = out + (size_t)at * (size_t)cols * (size_t)N;
        CUDA_CHECK(cudaMemcpy2DAsync(dst, out_pitch, in + (size_t)at * cols, row_bytes, row_bytes, (size_t)k,
                                     cudaMemcpyDeviceToDevice, s));
        for (int r = 1; r < N; r++)
            CUDA_CHECK(cudaMemcpy2DAsync(dst + (size_t)r * cols, out_pitch, cc->gather_stage + (size_t)(r - 1) * count,
                                         row_bytes, row_bytes, (size_t)k, cudaMemcpyDeviceToDevice, s));
    }
}

static void close_ipc(struct cuda_comm *cc)
{
    for (int r = 0; r < cc->group.size; r++) {
        if (!cc->group.buf[r])
            continue;
        if (r == cc->c.rank)
            cudaFree(cc->group.buf[r]);
        else
            cudaIpcCloseMemHandle(cc->group.buf[r]);
        cc->group.buf[r] = NULL;
    }
}

static void cuda_comm_free(struct comm *c)
{
    if (!c)
        return;
    struct cuda_comm *cc = cc_of(c);
    cudaStreamSynchronize(cuda_stream(cc->be));
    close_ipc(cc);
    cudaFree(cc->parts);
    cudaFree(cc->gather_stage);
    /* local: ncclCommDestroy may wait for the other ranks, which may be gone */
    if (cc->nccl)
        nccl.CommAbort(cc->nccl);
    free(cc);
}

static const struct comm_ops cuda_comm_ops = {.all_reduce = cuda_comm_all_reduce,
                                              .gather_cols = cuda_comm_gather_cols,
                                              .records_fit = cuda_comm_records_fit,
                                              .gather_records = cuda_comm_gather_records,
                                              .free = cuda_comm_free};

/* The IPC buffers: each rank makes its own, the handles meet through an
 * NCCL all-gather, and each rank maps its peers'. Whether that worked is
 * agreed (a minimum over ranks), so no rank takes a path another lacks. */
static int open_ipc(struct cuda_comm *cc, cudaStream_t s, struct err *e)
{
    const int N = cc->c.size, me = cc->c.rank;
    /* the all-reduce's buffer, the gather's sync words, rank 0's landing */
    const size_t bytes = ar_buffer_bytes(IPC_HALF_BYTES), sync = (sizeof(struct gather_sync) + 255) / 256 * 256,
                 landing = me == 0 ? GATHER_LANDING_BYTES : 0;
    cc->group = (struct ar_group){.rank = me, .size = N, .half_bytes = IPC_HALF_BYTES};
    CUDA_TRY(cudaMalloc((void **)&cc->group.buf[me], bytes + sync + landing), e);
    CUDA_TRY(ar_buffer_init(cc->group.buf[me], IPC_HALF_BYTES, s), e);
    CUDA_TRY(cudaMemsetAsync(cc->group.buf[me] + bytes, 0, sync, s), e);
    if (landing)
        CUDA_TRY(ar_fill_empty(cc->group.buf[me] + bytes + sync, landing, s), e);
    cudaIpcMemHandle_t mine, *all = xcalloc((size_t)N, sizeof *all);
    void *dev = NULL;
    int32_t *ok_dev = NULL, ok = 1;
    int rc = -1;
    if (cudaIpcGetMemHandle(&mine, cc->group.buf[me]) != cudaSuccess ||
        cudaMalloc(&dev, (size_t)N * sizeof mine) != cudaSuccess || cudaMalloc((void **)&ok_dev, 4) != cudaSuccess ||
        cudaMemcpyAsync((char *)dev + (size_t)me * sizeof mine, &mine, sizeof mine, cudaMemcpyHostToDevice, s) !=
            cudaSuccess) {
        err_set(e, "CUDA IPC: cannot export this rank's buffer");
        goto done;
    }
    /* the all-gather also orders every rank's emptying before any peer's first push */
    if (nccl.AllGather((char *)dev + (size_t)me * sizeof mine, dev, sizeof mine, ncclChar, cc->nccl, s) !=
            ncclSuccess ||
        cudaMemcpyAsync(all, dev, (size_t)N * sizeof mine, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess) {
        err_set(e, "CUDA IPC: the ranks could not exchange their buffers' handles");
        goto done;
    }
    for (int r = 0; r < N; r++)
        if (r != me && cudaIpcOpenMemHandle((void **)&cc->group.buf[r], all[r], cudaIpcMemLazyEnablePeerAccess) !=
                           cudaSuccess) {
            cudaGetLastError(); /* not sticky: this rank falls back with the others */
            cc->group.buf[r] = NULL;
            ok = 0;
        }
    if (cudaMemcpyAsync(ok_dev, &ok, 4, cudaMemcpyHostToDevice, s) != cudaSuccess ||
        nccl.AllReduce(ok_dev, ok_dev, 1, ncclInt32, ncclMin, cc->nccl, s) != ncclSuccess ||
        cudaMemcpyAsync(&ok, ok_dev, 4, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess) {
        err_set(e, "CUDA IPC: the ranks could not agree on their buffers");
        goto done;
    }
    if (ok && (ar_load_kernels() != cudaSuccess || gather_load_kernels() != cudaSuccess)) {
        err_set(e, "CUDA IPC: cannot load the all-reduce and gather kernels");
        goto done;
    }
    cc->have_ipc = ok;
    if (ok) {
        cc->gather = (struct gather_group){
            .landing = (float *)(cc->group.buf[0] + bytes + sync), .rank = me, .size = N};
        for (int r = 0; r < N; r++)
            cc->gather.sync[r] = (struct gather_sync *)(cc->group.buf[r] + bytes);
    }
    rc = 0;
done:
    if (!cc->have_ipc)
        close_ipc(cc);
    cudaFree(dev);
    cudaFree(ok_dev);
    free(all);
    return rc;
}

/* NCCL connects a pair of ranks on their first send: one float from every rank to
 * rank 0 now, so the logits gather's connections (~300 MiB on rank 0 a peer) are
 * made at start-up, not inside the first capture where they read as graph memory. */
static int connect_gather(struct cuda_comm *cc, cudaStream_t s, struct err *e)
{
    float *one = NULL;
    int rc = -1;
    if (cudaMalloc((void **)&one, (size_t)cc->c.size * sizeof *one) != cudaSuccess ||
        cudaMemsetAsync(one, 0, (size_t)cc->c.size * sizeof *one, s) != cudaSuccess) {
        err_set(e, "cudaMalloc of %d floats for the logits gather's first exchange failed", cc->c.size);
        goto done;
    }
    const ncclResult_t r = gather_to_rank0(cc, one + 1, one, 1, s);
    const cudaError_t c = r == ncclSuccess ? cudaStreamSynchronize(s) : cudaSuccess;
    if (r != ncclSuccess || c != cudaSuccess) {
        err_set(e, "NCCL: rank %d could not connect to rank 0 for the logits gather: %s", cc->c.rank,
                c != cudaSuccess ? cudaGetErrorString(c) : nccl.GetErrorString(r));
        goto done;
    }
    rc = 0;
done:
    cudaFree(one);
    return rc;
}

struct comm *cuda_comm_create(struct backend *be, const char *id_text, int rank, int size, int ranks_per_host,
                              const struct parallel_tuning *tuning, struct err *e)
{
    ncclUniqueId id;
    _Static_assert((int)CUDA_COMM_MAX_RANKS <= (int)AR_MAX_RANKS, "the all-reduce holds every rank");
    if (size < 2 || size > CUDA_COMM_MAX_RANKS) {
        err_set(e, "--tensor-parallel-size %d: the GPU communicator takes 2 to %d ranks", size, CUDA_COMM_MAX_RANKS);
        return NULL;
    }
    if (nccl_ready(e) || parse_id(id_text, &id, e))
        return NULL;
    struct cuda_comm *cc = xcalloc(1, sizeof *cc);
    cc->c = (struct comm){.ops = &cuda_comm_ops, .rank = rank, .size = size, .impl = cc};
    cc->be = be;
    cc->batch_invariant = be->batch_invariant;
    cudaStream_t s = cuda_stream(be);
    cc->nccl_only = tuning->ar_nccl_only;
    cc->one_shot_max = (size_t)tuning->ar_one_shot_max;
    cc->two_shot_min = tuning->ar_two_shot_min >= 0 ? (size_t)tuning->ar_two_shot_min
                       : size >= 4                  ? TWO_SHOT_MIN_DEFAULT
                                                    : SIZE_MAX;
    ncclResult_t r = nccl.CommInitRank(&cc->nccl, size, id, rank);
    if (r != ncclSuccess) {
        err_set(e, "NCCL: rank %d of %d could not join the group: %s", rank, size, nccl.GetErrorString(r));
        goto fail;
    }
    if (ranks_per_host == size && !cc->nccl_only && open_ipc(cc, s, e)) /* IPC needs every rank on this host */
        goto fail;
    if (!cc->have_ipc &&
        cudaMalloc(&cc->parts, (size_t)size * IPC_HALF_BYTES) != cudaSuccess) {
        err_set(e, "cudaMalloc of the all-gather's %d MiB failed", size * (IPC_HALF_BYTES >> 20));
        goto fail;
    }
    if (rank == 0 && cudaMalloc((void **)&cc->gather_stage, GATHER_STAGE_BYTES) != cudaSuccess) {
        err_set(e, "cudaMalloc of the logits' gathering space (%d MiB) failed", GATHER_STAGE_BYTES >> 20);
        goto fail;
    }
    if (connect_gather(cc, s, e))
        goto fail;
    int version = 0;
    nccl.GetVersion(&version);
    if (cc->have_ipc && cc->batch_invariant)
        log_info("all-reduce: one-shot over CUDA IPC for every size (--batch-invariant); logits over %s",
                 cc->gather.landing ? "CUDA IPC (NCCL past its landing space)" : "NCCL");
    else if (cc->have_ipc)
        log_info("all-reduce: one-shot over CUDA IPC up to %zu KiB, NCCL %d above; logits gathered over %s",
                 cc->one_shot_max >> 10, version,
                 cc->gather.landing ? "CUDA IPC (NCCL past its landing space)" : "NCCL");
    else
        log_info("all-reduce: NCCL %d%s%s", version,
                 cc->batch_invariant ? ", an all-gather then a rank-order sum (--batch-invariant)" : "",
                 cc->nccl_only ? " (INFER_AR_NCCL_ONLY=1)" : "");
    return &cc->c;
fail:
    cuda_comm_free(&cc->c);
    return NULL;
}
