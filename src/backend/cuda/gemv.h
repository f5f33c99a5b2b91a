/* The decode GEMV's variants by name, its launchers (gemv.cu) and the
 * matmul ops' choice between it and cuBLASLt (cuda_gemm.c).
 * docs/kernels/gemm.md describes the kernel and how the choices were measured. */
#ifndef INFER_BACKEND_CUDA_GEMV_H
#define INFER_BACKEND_CUDA_GEMV_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One compiled variant of the GEMV kernel (launch_gemv, launch_gemv_gated). */
struct gemv_variant {
    int tiles;   /* 8-row weight tiles per block (NT): 1 or 2; the gated GEMV: 2 (one gate, one up tile) */
    int unroll;  /* 32-wide k chunks per load step (U): 2 or 4; 3 for the gated GEMV with blocks5 */
    int l2_hint; /* 1: weight loads carry the L2::256B prefetch hint */
    int pdl;     /* 1: programmatic dependent launch */
    int blocks5; /* 1: compiled for 5 resident blocks an SM, not 4 (the gated GEMV, unroll 3 only:
                    its grid then fits 2 waves where Qwen3-4B's 1216 blocks spill into a third) */
};

/* out[m, n] = x[m, k] . W[n, k]^T (bf16 x and W, fp32 accumulation), out
 * bf16 or (out_f32) f32 with a tanh soft-cap when softcap > 0. variant NULL
 * = the launcher's own choice (gemv_variant_auto; m <= 16); an explicit
 * variant also takes m > 16 in 16-row tiles (batch-invariant mode).
 * cudaErrorInvalidValue for k % 8 != 0, m < 1, a variant outside the values
 * above or a grid too tall. */
cudaError_t launch_gemv(void *out, int out_f32, const void *x, const void *w, int m, int n, int k,
                        float softcap, const struct gemv_variant *variant, int n_sms, cudaStream_t stream);
/* out[m, f] (bf16) = act(x . W[0:f]^T) * (x . W[f:2f]^T), act 0 = SiLU, 1 =
 * GELU-tanh; variant as launch_gemv's, with tiles 2. */
cudaError_t launch_gemv_gated(void *out, const void *x, const void *w, int m, int f, int k, int act,
                              const struct gemv_variant *variant, int n_sms, cudaStream_t stream);

/* The variant launch_gemv / launch_gemv_gated choose for variant NULL at m
 * rows (prefetch hint and PDL on): the one whose grid keeps the most
 * warp-slot time busy. A caller pins it to use one variant for every M. */
cudaError_t gemv_variant_auto(int m, int n, int k, int n_sms, struct gemv_variant *out);
/* The gated launcher's choice (the blocks5 variant among them at m <= 8). */
cudaError_t gemv_gated_variant_auto(int m, int f, int k, int n_sms, struct gemv_variant *out);

/* cuda_gemm.c: the path the matmul ops take for a call (outside
 * batch-invariant mode), asked without running it (tests and benchmarks
 * report it, or time its variant without PDL). */
struct backend;
struct err;
struct weight;
enum cuda_gemm_path {
    CUDA_GEMM_PATH_GEMV, /* the GEMV (gated: with the activation in its epilogue) */
    CUDA_GEMM_PATH_LT,   /* cuBLASLt (gated: into the scratch, then gated_act) */
};
/* matmul / logits with x [m, w->cols], W = w; *variant is set for the GEMV. */
enum cuda_gemm_path cuda_gemm_choose(struct backend *be, const void *x, const struct weight *w, int m,
                                     struct gemv_variant *variant);
/* gated_matmul with W = gate|up w [2F, K]. */
enum cuda_gemm_path cuda_gemm_choose_gated(struct backend *be, const void *x, const struct weight *w, int m,
                                           struct gemv_variant *variant);
/* The cuBLASLt path of matmul (out bf16) / logits (out_f32, then the
 * soft-cap kernel when softcap > 0): m >= 1, bf16 W. */
void cuda_gemm_lt(struct backend *be, void *out, int out_f32, const void *x, const struct weight *w, int m,
                  float softcap);
/* cuBLASLt plans cached so far (one per M bucket, N, K, output type, alignment). */
int cuda_gemm_plan_count(struct backend *be);

#ifdef __cplusplus
}
#endif

#endif
