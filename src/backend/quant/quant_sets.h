/* The x86 kernel sets' entry points, for quant_select.c (which calls them
 * only where the CPU has their instructions). */
#ifndef INFER_BACKEND_QUANT_QUANT_SETS_H
#define INFER_BACKEND_QUANT_QUANT_SETS_H

#include "backend/quant/quant.h"

const struct quant_kernels *quant_kernels_avx2_set(void);
const struct quant_kernels *quant_kernels_vnni_set(void);

#endif
