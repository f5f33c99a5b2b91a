/* The CPU communicator, for tests: the ranks are processes (or threads) of
 * one machine sharing a POSIX shared-memory segment with a slot per rank.
 * An all-reduce copies each rank's buffer into its slot, waits at a
 * barrier, and every rank sums the slots in rank order, so every rank gets
 * the same bits; large buffers go through in slot-sized pieces. */
#ifndef INFER_PARALLEL_COMM_CPU_H
#define INFER_PARALLEL_COMM_CPU_H

#include "backend/comm.h"
#include "core/error.h"

/* Rank 0 creates the segment named name (a POSIX shm name, "/..."), the
 * others open it; slot_bytes per rank. NULL with e set when the segment
 * cannot be made or opened. Free with c->ops->free (rank 0 removes the
 * name then; comm_cpu_unlink removes it as soon as every rank has it). */
struct comm *comm_cpu_create(const char *name, int rank, int size, size_t slot_bytes, struct err *e);
void comm_cpu_unlink(const char *name);

/* A name for a new segment, unique to this process and call. */
void comm_cpu_name(char *out, size_t size);

#endif
