/* infer info --model DIR [--json]: architecture, dimensions, parameter count
 * and weight bytes of a checkpoint (by tensor type, as the CPU backend
 * holds them: a GGUF file's blocks kept), after validating every tensor. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "io/checkpoint.h"
#include "model/model.h"
#include "model/weights.h"

static void print_text(const struct model_config *c, int64_t params, int64_t bytes, const int64_t *by_type)
{
    printf("architecture       %s (%s)\n", c->arch_name, model_arch_name(c->arch));
    printf("layers             %d\n", c->n_layers);
    printf("hidden size        %d\n", c->hidden_size);
    printf("intermediate size  %d\n", c->intermediate_size);
    printf("attention heads    %d (kv %d, head dim %d)\n", c->n_heads, c->n_kv_heads, c->head_dim);
    printf("vocabulary         %d\n", c->vocab_size);
    printf("max positions      %d\n", c->max_positions);
    int sliding = 0;
    for (int i = 0; i < c->n_layers; i++)
        sliding += c->layer_sliding[i];
    if (sliding)
        printf("sliding window     %d tokens on %d of %d layers\n", c->sliding_window, sliding, c->n_layers);
    printf("tied embeddings    %s\n", c->tie_embeddings ? "yes" : "no");
    printf("parameters         %lld\n", (long long)params);
    printf("weight bytes       %lld (%.2f GiB)\n", (long long)bytes, (double)bytes / (1 << 30));
    for (int t = 0; t < DTYPE_COUNT; t++)
        if (by_type[t])
            printf("  %-16s %lld (%.1f MB)\n", dtype_name((enum dtype)t), (long long)by_type[t], (double)by_type[t] / 1e6);
}

static void print_json(const struct model_config *c, int64_t params, int64_t bytes, const int64_t *by_type)
{
    json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:I, s:I}",
                          "architecture", c->arch_name, "family", model_arch_name(c->arch),
                          "layers", c->n_layers, "hidden_size", c->hidden_size,
                          "intermediate_size", c->intermediate_size, "heads", c->n_heads,
                          "kv_heads", c->n_kv_heads, "head_dim", c->head_dim, "vocab_size",
                          c->vocab_size, "max_positions", c->max_positions, "tied_embeddings",
                          c->tie_embeddings, "parameters", (json_int_t)params, "weight_bytes",
                          (json_int_t)bytes);
    json_t *types = json_object();
    for (int t = 0; t < DTYPE_COUNT; t++)
        if (by_type[t])
            json_object_set_new(types, dtype_name((enum dtype)t), json_integer((json_int_t)by_type[t]));
    json_object_set_new(o, "weight_bytes_by_type", types);
    char *s = json_dumps(o, JSON_COMPACT);
    printf("%s\n", s);
    free(s);
    json_decref(o);
}

int cmd_info(int argc, char **argv)
{
    const char *model = NULL;
    int as_json = 0;
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model, 1, 0, 0, "checkpoint directory or .gguf file", 0},
        {"json", CLI_OPT_FLAG, &as_json, 0, 0, 0, "print one JSON object", 0},
    };
    struct err e = {{0}};
    int rc = cli_parse(argc, argv, "info", opts, (int)(sizeof opts / sizeof opts[0]), &e);
    if (rc)
        goto done;
    struct model_config cfg;
    struct checkpoint *ck = NULL;
    if (model_open_checkpoint(model, &cfg, 1, &ck, &e)) {
        rc = -1;
        goto done;
    }
    struct model_weights w = {0};
    w.layers = xcalloc((size_t)cfg.n_layers, sizeof *w.layers);
    struct weight_spec *specs;
    int n = weight_specs_build(&cfg, &w, &specs);
    int64_t bytes = 0, by_type[DTYPE_COUNT] = {0};
    for (int i = 0; i < n && !rc; i++) {
        const struct st_tensor *t = weight_spec_find(&specs[i], ck, &cfg, &e);
        if (!t)
            rc = -1;
        else
            bytes += (int64_t)t->nbytes, by_type[t->dtype] += (int64_t)t->nbytes;
    }
    if (!rc) {
        int64_t params = weight_specs_count_params(specs, n);
        (as_json ? print_json : print_text)(&cfg, params, bytes, by_type);
    }
    free(specs);
    free(w.layers);
    checkpoint_close(ck);
done:
    if (rc < 0)
        fprintf(stderr, "infer info: %s\n", e.msg);
    return rc < 0 ? 1 : 0;
}
