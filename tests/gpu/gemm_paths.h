/* How the GEMM tests and benchmarks run one path of the CUDA matmul ops.
 * The backend has no switch that forces a path: a test calls the path it
 * wants, through the same entry points production uses (backend/cuda/gemv.h):
 * the op itself (its own choice: table, launcher's choice or cuBLASLt), the
 * op's choice with its GEMV launched without PDL (cuda_gemm_choose),
 * cuBLASLt (cuda_gemm_lt), or the GEMV launchers with an explicit variant or
 * their own choice (launch_gemv, launch_gemv_gated). */
#ifndef INFER_TESTS_GPU_GEMM_PATHS_H
#define INFER_TESTS_GPU_GEMM_PATHS_H

#include <stddef.h>

#include "backend/cuda/gemv.h"
#include "backend/ops.h"

#define N_GEMV_VARIANTS                                                                                      \
    16 /* tiles 1|2 x unroll 2|4 x hint x PDL; gated (tiles 2): 8, and 2 for 5 blocks an SM */

enum gemm_run {
    GEMM_RUN_OP,   /* the backend's op (matmul, logits, gated_matmul) */
    GEMM_RUN_LT,   /* cuBLASLt (gated: into the scratch, then gated_act) */
    GEMM_RUN_GEMV, /* the GEMV launcher */
};

struct gemm_mode {
    enum gemm_run run;
    int no_pdl;                         /* GEMM_RUN_OP, GEMM_RUN_GEMV's own choice: without PDL */
    const struct gemv_variant *variant; /* GEMM_RUN_GEMV: NULL = the launcher's own choice */
};

/* Every GEMV variant into out (gated: tiles 2 only), tiles fastest, then
 * unroll, hint, those with PDL first (docs/kernels/gemm.md's g1..g16);
 * returns how many (16, gated 8). */
int gemv_variants_all(struct gemv_variant *out, int gated);
/* "T2_U4_HINT" (cuda_gemm.c's names), "_NOPDL" appended without PDL. */
const char *gemv_variant_name(const struct gemv_variant *v, char *buf, size_t size);
const char *gemm_mode_name(const struct gemm_mode *md, char *buf, size_t size);
/* The op's choice for x, W at m rows: "cuBLASLt" (gated: then gated_act) or
 * the GEMV variant's name. */
const char *gemm_choice_name(struct backend *be, const void *x, const struct weight *w, int m, int gated,
                             char *buf, size_t size);

/* matmul (out bf16) or logits (out_f32) the way md says. Returns 1 (nothing
 * run) where md forces the GEMV onto what it cannot run (K % 8 or K < 8, or
 * M > 16 with the launcher's own choice: every other path takes cuBLASLt
 * there), else 0. */
int gemm_mode_matmul(struct backend *be, const struct gemm_mode *md, void *out, int out_f32, const void *x,
                     const struct weight *w, int m, float softcap);
/* gated_matmul the way md says into out [m, F] (scratch [m, 2F] for the
 * unfused paths), W = gate|up w [2F, K]; returns as gemm_mode_matmul. */
int gemm_mode_gated(struct backend *be, const struct gemm_mode *md, void *out, void *scratch, const void *x,
                    const struct weight *w, int m, enum act_fn fn);

#endif
