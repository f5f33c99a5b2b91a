/* A Hugging Face checkpoint directory: model.safetensors, or shards listed by
 * model.safetensors.index.json ("weight_map": {tensor: file}). Every shard is
 * opened and validated; the index must agree with what the shards hold. */
#ifndef INFER_IO_CHECKPOINT_H
#define INFER_IO_CHECKPOINT_H

#include "core/error.h"
#include "io/safetensors.h"

struct checkpoint {
    char *dir;
    struct st_file **files;
    int n_files;
    const struct st_tensor **tensors; /* every tensor of every shard, sorted by name */
    int n_tensors;
};

/* Returns NULL with e set (naming the file, and the tensor where there is
 * one) when the directory has no weights or anything is malformed. */
struct checkpoint *checkpoint_open(const char *dir, struct err *e);
void checkpoint_close(struct checkpoint *c);

/* A checkpoint of one file already open (made by another reader, e.g. a
 * dequantised GGUF); takes f. dir names it in messages. NULL with e set
 * when two tensors share a name. */
struct checkpoint *checkpoint_wrap(const char *dir, struct st_file *f, struct err *e);

/* NULL when absent (binary search). */
const struct st_tensor *checkpoint_find(const struct checkpoint *c, const char *name);

#endif
