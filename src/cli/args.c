#include "cli/args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A numeric option's value before parsing is its default: shown unless the
 * help text already speaks of it. */
static void print_default(FILE *f, const struct cli_opt *o)
{
    if (strstr(o->help, "(default") || strstr(o->help, "; default") || o->required)
        return;
    if (o->type == CLI_OPT_INT)
        fprintf(f, " (default %d)", *(const int *)o->dst);
    else if (o->type == CLI_OPT_U64)
        fprintf(f, " (default %llu)", (unsigned long long)*(const uint64_t *)o->dst);
    else if (o->type == CLI_OPT_DOUBLE)
        fprintf(f, " (default %g)", *(const double *)o->dst);
    else if (o->type == CLI_OPT_STRING && *(const char *const *)o->dst)
        fprintf(f, " (default %s)", *(const char *const *)o->dst);
}

void cli_usage(FILE *f, const char *cmd, const struct cli_opt *opts, int n_opts)
{
    fprintf(f, "usage: infer %s [options]\n", cmd);
    for (int i = 0; i < n_opts; i++) {
        const char *arg = opts[i].type == CLI_OPT_FLAG ? "" : opts[i].type == CLI_OPT_STRING ? " S" : " N";
        int pad = 24 - (int)(strlen(opts[i].name) + strlen(arg));
        fprintf(f, "  --%s%s%*s%s", opts[i].name, arg, pad > 2 ? pad : 2, "", opts[i].help);
        print_default(f, &opts[i]);
        fprintf(f, "%s\n", opts[i].required ? " (required)" : "");
    }
}

static int set_value(struct cli_opt *o, const char *v, struct err *e)
{
    char *end;
    errno = 0;
    switch (o->type) {
    case CLI_OPT_STRING:
        *(const char **)o->dst = v;
        return 0;
    case CLI_OPT_INT: {
        long x = strtol(v, &end, 10);
        if (errno || end == v || *end)
            return err_set(e, "--%s: '%s' is not an integer", o->name, v);
        if (x < o->min || x > o->max)
            return err_set(e, "--%s: %ld is outside [%ld, %ld]", o->name, x, o->min, o->max);
        *(int *)o->dst = (int)x;
        return 0;
    }
    case CLI_OPT_U64: {
        if (*v == '-')
            return err_set(e, "--%s: '%s' must not be negative", o->name, v);
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || end == v || *end)
            return err_set(e, "--%s: '%s' is not a non-negative integer", o->name, v);
        *(uint64_t *)o->dst = x;
        return 0;
    }
    case CLI_OPT_DOUBLE: {
        double x = strtod(v, &end);
        if (errno || end == v || *end || !(x == x))
            return err_set(e, "--%s: '%s' is not a number", o->name, v);
        *(double *)o->dst = x;
        return 0;
    }
    case CLI_OPT_FLAG:
        break;
    }
    return err_set(e, "--%s takes no value", o->name);
}

/* Short names of long options, the way vLLM and SGLang spell them. */
static const struct {
    const char *alias, *name;
} aliases[] = {{"tp", "tensor-parallel-size"}};

static const char *unalias(const char *name, size_t *len)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strlen(aliases[i].alias) == *len && !strncmp(aliases[i].alias, name, *len)) {
            *len = strlen(aliases[i].name);
            return aliases[i].name;
        }
    return name;
}

int cli_parse(int argc, char **argv, const char *cmd, struct cli_opt *opts, int n_opts, struct err *e)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cli_usage(stdout, cmd, opts, n_opts);
            return 1;
        }
        if (strncmp(a, "--", 2))
            return err_set(e, "unexpected argument '%s' (options start with --)", a);
        const char *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        const char *name = unalias(a + 2, &len);
        struct cli_opt *o = NULL;
        for (int j = 0; j < n_opts; j++)
            if (strlen(opts[j].name) == len && !strncmp(opts[j].name, name, len))
                o = &opts[j];
        if (!o)
            return err_set(e, "unknown option '%.*s' (see infer %s --help)", (int)len + 2,
                           a, cmd);
        if (o->seen)
            return err_set(e, "--%s given twice", o->name);
        o->seen = 1;
        if (o->type == CLI_OPT_FLAG) {
            if (eq)
                return err_set(e, "--%s takes no value", o->name);
            *(int *)o->dst = 1;
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v)
            return err_set(e, "--%s needs a value", o->name);
        if (set_value(o, v, e))
            return -1;
    }
    for (int j = 0; j < n_opts; j++)
        if (opts[j].required && !opts[j].seen)
            return err_set(e, "--%s is required (see infer %s --help)", opts[j].name, cmd);
    return 0;
}

int cli_given(const struct cli_opt *opts, int n_opts, const char *name)
{
    for (int i = 0; i < n_opts; i++)
        if (!strcmp(opts[i].name, name))
            return opts[i].seen;
    CHECK(!"cli_given: no such option");
    return 0;
}

int cli_parse_int_list(const char *s, const char *flag, int32_t **out, int *n, struct err *e)
{
    int cap = 16, cnt = 0;
    int32_t *v = xmalloc((size_t)cap * sizeof *v);
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || x > INT32_MAX || (*end && *end != ',')) {
            free(v);
            return err_set(e, "--%s: expected comma-separated non-negative integers, got '%s'", flag, s);
        }
        if (cnt == cap)
            v = xrealloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[cnt++] = (int32_t)x;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) {
            free(v);
            return err_set(e, "--%s: trailing comma in '%s'", flag, s);
        }
    }
    if (!cnt) {
        free(v);
        return err_set(e, "--%s: empty list", flag);
    }
    *out = v;
    *n = cnt;
    return 0;
}
