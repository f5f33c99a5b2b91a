#include "test_util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fixture_path(const char *name)
{
    static char buf[4096];
    const char *root = getenv("INFER_ROOT");
    snprintf(buf, sizeof buf, "%s/tests/fixtures/%s", root ? root : ".", name);
    return buf;
}

struct model *test_load_model(const char *fixture, struct backend **be_out)
{
    return test_load_model_opts(fixture, 0, be_out);
}

struct model *test_load_model_opts(const char *fixture, int fuse_weights, struct backend **be_out)
{
    return test_load_model_on(fixture, BACKEND_KIND_CPU_REFERENCE, fuse_weights, be_out);
}

struct model *test_load_model_on(const char *fixture, enum backend_kind kind, int fuse_weights,
                                 struct backend **be_out)
{
    struct err e = {{0}};
    struct backend *be = backend_create(kind, 2, &e);
    cr_assert(be, "backend: %s", e.msg);
    be->fuse_weights = fuse_weights;
    struct model *m = model_load(fixture_path(fixture), be, &e);
    cr_assert(m, "model_load(%s): %s", fixture, e.msg);
    *be_out = be;
    return m;
}

void test_free_model(struct model *m, struct backend *be)
{
    model_free(m);
    backend_free(be);
}

double max_rel_err(const float *a, const float *b, long n)
{
    double num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (isnan(a[i]) || isnan(b[i]))
            return INFINITY;
        num = d > num ? d : num;
        den = fabs((double)b[i]) > den ? fabs((double)b[i]) : den;
    }
    return den > 0 ? num / den : num;
}

char test_tmp_dir[64];

void test_tmp_setup(void)
{
    strcpy(test_tmp_dir, "/tmp/infer_test_XXXXXX");
    cr_assert_not_null(mkdtemp(test_tmp_dir), "mkdtemp: %s", strerror(errno));
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void test_tmp_teardown(void)
{
    if (test_tmp_dir[0])
        nftw(test_tmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

struct tpath test_tmp_path(const char *name)
{
    struct tpath p;
    snprintf(p.s, sizeof p.s, "%s/%s", test_tmp_dir, name);
    return p;
}
