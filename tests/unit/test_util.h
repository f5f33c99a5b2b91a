/* Helpers shared by the unit tests: fixture paths and model loading. */
#ifndef INFER_TESTS_TEST_UTIL_H
#define INFER_TESTS_TEST_UTIL_H

#include "backend/ops.h"
#include "model/model.h"

/* "$INFER_ROOT/tests/fixtures/<name>" (INFER_ROOT defaults to "."); static buffer. */
const char *fixture_path(const char *name);

/* Loads a fixture model on a fresh CPU reference backend (2 threads); aborts the test on failure. */
struct model *test_load_model(const char *fixture, struct backend **be_out);
/* The same, optionally with q|k|v and gate|up stacked as the CUDA backend loads them. */
struct model *test_load_model_opts(const char *fixture, int fuse_weights, struct backend **be_out);
/* The same on a backend of kind (2 threads). */
struct model *test_load_model_on(const char *fixture, enum backend_kind kind, int fuse_weights,
                                 struct backend **be_out);
void test_free_model(struct model *m, struct backend *be);

/* A temp directory per test (Criterion fixtures take no arguments, so it
 * lives in this global; each test runs in its own process): setup makes
 * it, teardown removes it with everything inside. */
extern char test_tmp_dir[64];
void test_tmp_setup(void);
void test_tmp_teardown(void);
/* "<test_tmp_dir>/name", by value (no allocation to free in a test). */
struct tpath {
    char s[256];
};
struct tpath test_tmp_path(const char *name);

/* max |a - b| / max |b| over n elements */
double max_rel_err(const float *a, const float *b, long n);

#endif
