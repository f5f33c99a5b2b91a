/* The AVX2 (+ FMA, F16C) kernel set; built with those instructions
 * (Makefile), called only where the CPU has them (quant_select.c). */
#define QUANT_SET quant_kernels_avx2_set
#define QUANT_SET_NAME "avx2"
#define QUANT_SET_FEATURES "AVX2, FMA, F16C"
#include "backend/quant/quant_x86.h"
