#include "tok_fixture.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tokenizer *tok_fixture_load(const char *json)
{
    char dir[] = "/tmp/infer-tokfix-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(json, f);
    fclose(f);
    struct err e = {{0}};
    struct tokenizer *t = tokenizer_load(dir, &e);
    cr_assert(t, "%s", e.msg);
    unlink(path);
    rmdir(dir);
    return t;
}

struct tokenizer *tok_fixture_numbered(int n)
{
    size_t cap = (size_t)n * 24 + 256, len = 0;
    char *json = malloc(cap);
    len += (size_t)snprintf(json + len, cap - len, "{\"model\": {\"type\": \"BPE\", \"merges\": [], \"vocab\": {");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(json + len, cap - len, "%s\"t%d|\": %d", i ? ", " : "", i, i);
    snprintf(json + len, cap - len, "}}, \"decoder\": {\"type\": \"Fuse\"}}");
    struct tokenizer *t = tok_fixture_load(json);
    free(json);
    return t;
}

struct chat_template *tok_fixture_template(const char *config_json)
{
    json_error_t je;
    json_t *cfg = json_loads(config_json, 0, &je);
    cr_assert(cfg, "%s", je.text);
    struct err e = {{0}};
    struct chat_template *ct = chat_template_from_config(cfg, NULL, &e);
    json_decref(cfg);
    cr_assert(ct, "%s", e.msg);
    return ct;
}
