/* Which kernel set this CPU runs: the widest it has, chosen at run time, so
 * one x86-64 binary runs everywhere (the build's baseline is x86-64-v2). */
#include "backend/quant/quant.h"

#if defined(__x86_64__)
#include <cpuid.h>

#include "backend/quant/quant_sets.h"

/* F16C from CPUID itself: clang's __builtin_cpu_supports does not know it. */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

static int has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
}

static int has_vnni(void)
{
    return has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
}

const struct quant_kernels *quant_kernels_avx2(void) { return has_avx2() ? quant_kernels_avx2_set() : NULL; }
const struct quant_kernels *quant_kernels_vnni(void) { return has_vnni() ? quant_kernels_vnni_set() : NULL; }
#else
const struct quant_kernels *quant_kernels_avx2(void) { return NULL; }
const struct quant_kernels *quant_kernels_vnni(void) { return NULL; }
#endif

const struct quant_kernels *quant_kernels_best(void)
{
    const struct quant_kernels *k = quant_kernels_vnni();
    if (!k)
        k = quant_kernels_avx2();
    return k ? k : quant_kernels_scalar();
}
