/* Named shared-memory segments of one machine's ranks (the CPU
 * communicator, the relay's mailbox): rank 0 creates and sizes one, the
 * others map it by the name rank 0 sends them. */
#ifndef INFER_PARALLEL_SHM_H
#define INFER_PARALLEL_SHM_H

#include <stddef.h>

#include "core/error.h"

/* A name for a new segment, unique on this machine: /infer-WHAT-pid-n-ns. */
void shm_segment_name(const char *what, char *out, size_t size);

/* Maps segment `name`: created and sized to *bytes (create), or opened as
 * it is (*bytes := its size). NULL with e set, `who` named (a failed
 * create leaves no segment behind). */
void *shm_segment_map(const char *who, const char *name, int create, size_t *bytes, struct err *e);

#endif
