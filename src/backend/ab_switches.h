/* The CUDA backend's one-digit A/B switches (docs/testing.md): each kernel
 * launcher reads its own with env_digit (common.cuh), where a value outside
 * its digits would quietly mean the default. They are checked here, in plain
 * C so the CPU tests cover it, when a CUDA backend is created: a set value
 * that is not exactly one of the switch's digits is refused by name. */
#ifndef INFER_BACKEND_AB_SWITCHES_H
#define INFER_BACKEND_AB_SWITCHES_H

#include "core/error.h"

/* 0, or -1 with an error naming the first switch whose value (set and not
 * empty) is not one of its digits, and what those digits do. */
int ab_switches_check(struct err *e);

#endif
