/* The AVX-512 VNNI kernel set (vpdpbusd on 256-bit lanes, AVX512VL); built
 * with those instructions (Makefile), called only where the CPU has them
 * (quant_select.c). */
#define QUANT_SET quant_kernels_vnni_set
#define QUANT_SET_NAME "avx512-vnni"
#define QUANT_SET_FEATURES "AVX2, FMA, F16C, AVX-512 F/VL/BW, AVX512-VNNI (256-bit)"
#define QUANT_VNNI 1
#include "backend/quant/quant_x86.h"
