/* Helpers shared by the unit tests: fixture paths and model loading. */
#ifndef INFER_TESTS_TEST_UTIL_H
#define INFER_TESTS_TEST_UTIL_H

#include "backend/ops.h"
#include "model/model.h"

/* "$INFER_ROOT/tests/fixtures/<name>" (INFER_ROOT defaults to "."); static buffer. */
const char *fixture_path(const char *name);

/* Loads a fixture model on a fresh CPU backend (2 threads); aborts the test on failure. */
struct model *test_load_model(const char *fixture, struct backend **be_out);
/* The same, optionally with q|k|v and gate|up stacked as the CUDA backend loads them. */
struct model *test_load_model_opts(const char *fixture, int fuse_weights, struct backend **be_out);
void test_free_model(struct model *m, struct backend *be);

/* max |a - b| / max |b| over n elements */
double max_rel_err(const float *a, const float *b, long n);

#endif
