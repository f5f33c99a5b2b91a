/* GGUF files (llama.cpp's checkpoint format, versions 2 and 3): mmap and
 * validate.
 *
 * Layout (little-endian): magic "GGUF", u32 version, u64 tensor count, u64
 * metadata count; the metadata pairs (string key, u32 value type, value);
 * the tensor infos (string name, u32 n_dims, u64 dims[n_dims], u32 ggml
 * type, u64 offset); padding to general.alignment (default 32); the data
 * section, each tensor at its offset from the section's start. A string is
 * a u64 length and that many bytes (not NUL-terminated); an array is a u32
 * element type, a u64 count and the elements.
 *
 * The reader rejects, with a message naming the file and the key or tensor:
 * a bad magic, a version other than 2 or 3 (a byte-swapped version is
 * called big-endian), anything that runs past the end of the file, counts
 * that cannot fit in the file, unknown value or tensor types, nested arrays
 * deeper than one level, duplicate keys or tensor names, a
 * general.alignment that is not a power of two, more than 4 dims or
 * dims <= 0, element counts that overflow or are not whole blocks of the
 * type, tensors that overlap or leave the data section, offsets that are
 * not aligned. */
#ifndef INFER_IO_GGUF_H
#define INFER_IO_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

enum gguf_value_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
};

/* ggml tensor types (the numbers are the file's). */
enum ggml_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q8_1 = 9,
    GGML_TYPE_Q2_K = 10,
    GGML_TYPE_Q3_K = 11,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_Q8_K = 15,
    GGML_TYPE_IQ2_XXS = 16,
    GGML_TYPE_IQ2_XS = 17,
    GGML_TYPE_IQ3_XXS = 18,
    GGML_TYPE_IQ1_S = 19,
    GGML_TYPE_IQ4_NL = 20,
    GGML_TYPE_IQ3_S = 21,
    GGML_TYPE_IQ2_S = 22,
    GGML_TYPE_IQ4_XS = 23,
    GGML_TYPE_I8 = 24,
    GGML_TYPE_I16 = 25,
    GGML_TYPE_I32 = 26,
    GGML_TYPE_I64 = 27,
    GGML_TYPE_F64 = 28,
    GGML_TYPE_IQ1_M = 29,
    GGML_TYPE_BF16 = 30,
    GGML_TYPE_TQ1_0 = 34,
    GGML_TYPE_TQ2_0 = 35,
    GGML_TYPE_MXFP4 = 39,
    GGML_TYPE_COUNT_ = 40, /* one past the largest known number */
};

/* A string in the mapping: not NUL-terminated. */
struct gguf_str {
    const char *s;
    uint64_t len;
};

struct gguf_kv {
    struct gguf_str key;
    enum gguf_value_type type;
    union { /* scalars */
        uint64_t u;          /* UINT8..UINT64 and BOOL (0 or 1) */
        int64_t i;           /* INT8..INT64 */
        double f;            /* FLOAT32, FLOAT64 */
        struct gguf_str str; /* STRING */
    } v;
    /* ARRAY: element type and count; numbers are the file's little-endian
     * bytes at arr_data (use gguf_arr_* to read them); strings are indexed
     * in arr_strs (built at open). */
    enum gguf_value_type arr_type;
    uint64_t arr_n;
    const void *arr_data;
    struct gguf_str *arr_strs;
};

#define GGUF_MAX_DIMS 4

struct gguf_tensor {
    struct gguf_str name;
    int n_dims;
    int64_t dims[GGUF_MAX_DIMS]; /* ggml order: dims[0] is the contiguous one (a row's length) */
    int64_t numel;
    enum ggml_type type;
    uint64_t offset;  /* from the data section's start */
    const void *data; /* in the mapping */
    size_t nbytes;
};

struct gguf_file {
    char *path;
    void *map;
    size_t map_size;
    uint32_t version;
    uint64_t alignment;
    struct gguf_kv *kvs; /* file order */
    int64_t n_kv;
    struct gguf_tensor *tensors; /* file order */
    int64_t n_tensors;
    const void *data; /* the data section */
};

/* Whether path names a GGUF file (ends in ".gguf"). */
int gguf_is_path(const char *path);

/* Maps and validates path. NULL with e set on any problem. Free with gguf_close. */
struct gguf_file *gguf_open(const char *path, struct err *e);
void gguf_close(struct gguf_file *f);
/* Hands f's mapping to the caller, who munmaps it (size *size) when done:
 * tensor data and strings stay valid while it lives; gguf_close then
 * leaves it mapped. */
void *gguf_take_map(struct gguf_file *f, size_t *size);

/* NULL when absent. */
const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key);
const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name);

/* Typed reads of a key; -1 with e naming the key (and the file) when it is
 * absent, of another kind, or out of range. Integers accept any integer type
 * whose value fits; floats accept FLOAT32 and FLOAT64; strings are copied
 * (malloc'd, NUL-terminated; a string with a NUL byte inside is refused). */
int gguf_get_int(const struct gguf_file *f, const char *key, int64_t *out, struct err *e);
int gguf_get_float(const struct gguf_file *f, const char *key, double *out, struct err *e);
int gguf_get_bool(const struct gguf_file *f, const char *key, int *out, struct err *e);
char *gguf_get_string(const struct gguf_file *f, const char *key, struct err *e);
/* A token id key (tokenizer.ggml.bos_token_id, ...): gguf_get_int, except
 * that a value of any other type is refused as "<path>: <key>: expected an
 * integer id, got STRING" (or "got ARRAY of INT32"). The caller checks the
 * id against its vocabulary. */
int gguf_get_token_id(const struct gguf_file *f, const char *key, int64_t *out, struct err *e);

/* Element i of a numeric array kv (any numeric element type), widened. */
int64_t gguf_arr_int(const struct gguf_kv *kv, uint64_t i);
double gguf_arr_float(const struct gguf_kv *kv, uint64_t i);

/* "UINT32", "STRING", ... or "value type 13" style for unknown numbers (static buffer). */
const char *gguf_value_type_name(enum gguf_value_type t);

/* "Q4_K", "F32", ... or "type 37" style for numbers without a name (static buffer). */
const char *ggml_type_name(enum ggml_type t);
/* Elements per block and bytes per block of t; 0 for types this reader does
 * not know the size of (those tensors are refused at open). */
int ggml_type_block_elems(enum ggml_type t);
size_t ggml_type_block_bytes(enum ggml_type t);

#endif
