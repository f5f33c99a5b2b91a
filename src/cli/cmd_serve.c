/* infer serve --model PATH [--host 127.0.0.1] [--port 8000] [--api-key KEY]
 *             [--served-model-name N] [--max-queued-requests N] [engine and graph flags]
 * Loads the model (and captures the CUDA graphs) before the port opens,
 * then serves the OpenAI-compatible API until SIGTERM (src/server). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "core/fs.h"
#include "core/log.h"
#include "io/gguf.h"
#include "server/server.h"

/* The name clients use: --served-model-name, else the path's last part. */
static const char *default_name(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *p = path + n;
    while (p > path && p[-1] != '/')
        p--;
    static char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(path + n - p), p);
    return name;
}

/* The model's tokenizer and chat template, when it has them. */
static int load_text(const char *path, struct tokenizer **tok, struct chat_template **ct, struct err *e)
{
    char file[4096];
    snprintf(file, sizeof file, "%s/tokenizer.json", path);
    if (gguf_is_path(path) || fs_exists(file)) {
        if (!(*tok = tokenizer_load(path, e)))
            return -1;
    } else {
        log_warn("%s has no tokenizer: requests must give token ids", path);
    }
    struct err ce = {{0}};
    if (*tok && !(*ct = chat_template_load(path, &ce)))
        log_warn("no chat template (%s): /v1/chat/completions will refuse requests", ce.msg);
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    server_block_signals(); /* before any thread exists: SIGTERM goes to server_run */
    const char *model = NULL, *device = "cpu", *name = NULL;
    int threads = 0, port = 8000, max_queued = 1024, max_body_mb = 8, batch_invariant = 0, check = 0;
    double drain = 30;
    struct server_opts so = server_opts_default();
    struct engine_flags f = engine_flags_default();
    struct cli_opt opts[12 + ENGINE_FLAGS_N_OPTS] = {
        {"model", CLI_OPT_STRING, &model, 1, 0, 0, "checkpoint directory or .gguf file", 0},
        {"device", CLI_OPT_STRING, &device, 0, 0, 0, "cpu, cuda, or auto (cuda when a GPU is there); default cpu",
         0},
        {"host", CLI_OPT_STRING, &so.host, 0, 0, 0, "address to listen on (default 127.0.0.1)", 0},
        {"port", CLI_OPT_INT, &port, 0, 0, 65535, "port (default 8000; 0: any free one, printed)", 0},
        {"api-key", CLI_OPT_STRING, &so.api_key, 0, 0, 0, "require Authorization: Bearer KEY on /v1 and tokenize", 0},
        {"served-model-name", CLI_OPT_STRING, &name, 0, 0, 0, "the model name clients give (default: the path's)", 0},
        {"max-queued-requests", CLI_OPT_INT, &max_queued, 0, 1, 1 << 24,
         "waiting requests beyond which new ones get 429 (default 1024)", 0},
        {"max-body-mb", CLI_OPT_INT, &max_body_mb, 0, 1, 1024, "largest request body in MiB (default 8)", 0},
        {"drain-seconds", CLI_OPT_DOUBLE, &drain, 0, 0, 0,
         "on SIGTERM, how long in-flight requests may take (default 30)", 0},
        {"threads", CLI_OPT_INT, &threads, 0, 0, 1024, "CPU threads (default: all cores)", 0},
        {"batch-invariant", CLI_OPT_FLAG, &batch_invariant, 0, 0, 0,
         "results independent of the batch (CUDA: slower prefill)", 0},
        {"check-integrity", CLI_OPT_FLAG, &check, 0, 0, 0,
         "check the KV cache's block accounting after every step and abort on a violation (tests)", 0},
    };
    engine_flags_opts(&f, opts + 12);
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    struct err e = {{0}};
    struct backend *be = NULL;
    struct model *m = NULL;
    struct tokenizer *tok = NULL;
    struct chat_template *ct = NULL;
    enum backend_kind kind;
    struct engine_opts eo;
    int rc = cli_parse(argc, argv, "serve", opts, n_opts, &e);
    if (rc)
        goto done;
    rc = -1;
    so.port = port;
    so.max_queued = max_queued;
    so.max_body = (size_t)max_body_mb << 20;
    so.drain_seconds = drain;
    so.served_name = name ? name : default_name(model);
    if (drain < 0) {
        err_set(&e, "--drain-seconds must be >= 0");
        goto done;
    }
    if (backend_kind_parse(device, &kind, &e) || !(be = backend_create(kind, threads, &e)) ||
        !(m = model_load(model, be, &e)) || load_text(model, &tok, &ct, &e))
        goto done;
    be->batch_invariant = batch_invariant;
    if (engine_flags_apply(&f, m, &eo, &e))
        goto done;
    eo.check_integrity = check;
    if (server_run(m, tok, ct, &eo, &so, &e))
        goto done;
    rc = 0;
done:
    if (rc < 0)
        fprintf(stderr, "infer serve: %s\n", e.msg);
    chat_template_free(ct);
    tokenizer_free(tok);
    model_free(m);
    backend_free(be);
    engine_flags_free(&f);
    return rc < 0 ? 1 : 0;
}
