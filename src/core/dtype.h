/* Element types shared by the checkpoint readers and the backends. */
#ifndef INFER_CORE_DTYPE_H
#define INFER_CORE_DTYPE_H

#include <stddef.h>

enum dtype {
    DTYPE_BF16,
    DTYPE_F16,
    DTYPE_F32,
    DTYPE_I32,
    DTYPE_I64,
    DTYPE_COUNT
};

static inline size_t dtype_size(enum dtype t)
{
    static const size_t sizes[DTYPE_COUNT] = {2, 2, 4, 4, 8};
    return sizes[t];
}

/* Names as safetensors spells them ("BF16", "F16", "F32", "I32", "I64"). */
static inline const char *dtype_name(enum dtype t)
{
    static const char *names[DTYPE_COUNT] = {"BF16", "F16", "F32", "I32", "I64"};
    return names[t];
}

static inline int dtype_is_float(enum dtype t)
{
    return t == DTYPE_BF16 || t == DTYPE_F16 || t == DTYPE_F32;
}

#endif
