/* infer serve --model PATH [--host 127.0.0.1] [--port 8000] [--api-key KEY]
 *             [--served-model-name N] [--max-queued-requests N] [model, engine and graph flags]
 * Loads the model (and captures the CUDA graphs) before the port opens,
 * then serves the OpenAI-compatible API until SIGTERM (src/server). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/model_flags.h"
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
    const char *name = NULL;
    struct server_opts so = server_opts_default(); /* the flags' defaults */
    int port = so.port, max_queued = so.max_queued, max_body_mb = (int)(so.max_body >> 20), check = 0;
    int max_connections = so.max_connections;
    double drain = so.drain_seconds;
    struct launch_opts mf = launch_opts_default();
    struct engine_flags f = engine_flags_default();
    enum { N_OWN = 9 };
    struct cli_opt opts[N_OWN + MODEL_FLAGS_N_OPTS + ENGINE_FLAGS_N_OPTS] = {
        {"host", CLI_OPT_STRING, &so.host, 0, 0, 0, "address to listen on", 0},
        {"port", CLI_OPT_INT, &port, 0, 0, 65535, "port (0: any free one, printed)", 0},
        {"api-key", CLI_OPT_STRING, &so.api_key, 0, 0, 0, "require Authorization: Bearer KEY on /v1 and tokenize", 0},
        {"served-model-name", CLI_OPT_STRING, &name, 0, 0, 0, "the model name clients give (default: the path's)", 0},
        {"max-queued-requests", CLI_OPT_INT, &max_queued, 0, 1, 1 << 24, "waiting requests beyond which new ones get 429",
         0},
        {"max-body-mb", CLI_OPT_INT, &max_body_mb, 0, 1, 1024, "largest request body in MiB", 0},
        {"drain-seconds", CLI_OPT_DOUBLE, &drain, 0, 0, 0, "on SIGTERM, how long in-flight requests may take", 0},
        {"max-connections", CLI_OPT_INT, &max_connections, 0, 1, 1 << 16,
         "open connections (a thread each) beyond which new ones get 503", 0},
        {"check-integrity", CLI_OPT_FLAG, &check, 0, 0, 0,
         "check the KV cache's block accounting after every step and abort on a violation (tests)", 0},
    };
    model_flags_opts(&mf, opts + N_OWN);
    engine_flags_opts(&f, opts + N_OWN + MODEL_FLAGS_N_OPTS);
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    struct err e = {{0}};
    struct loaded_model lm = {0};
    int node_status = 0;
    struct tokenizer *tok = NULL;
    struct chat_template *ct = NULL;
    struct engine_opts eo;
    int rc = cli_parse(argc, argv, "serve", opts, n_opts, &e);
    if (rc)
        goto done;
    rc = -1;
    so.port = port;
    so.max_queued = max_queued;
    so.max_body = (size_t)max_body_mb << 20;
    so.drain_seconds = drain;
    so.max_connections = max_connections;
    if (launch_check(&mf, &e) || engine_flags_check(&f, opts + N_OWN + MODEL_FLAGS_N_OPTS, &e))
        goto done;
    const int other_node = launch_other_node(&mf, &node_status, &e); /* its ranks of a split model only */
    if (other_node) {
        rc = other_node < 0 ? -1 : 0;
        goto done;
    }
    so.served_name = name ? name : default_name(mf.model);
    if (!(drain >= 0 && drain <= 86400)) {
        err_set(&e, "--drain-seconds must be in [0, 86400], got %g", drain);
        goto done;
    }
    if (server_listen(&so, &e)) /* before the model: a port in use fails at once */
        goto done;
    if (launch_model(&mf, &lm, &e) || load_text(mf.model, &tok, &ct, &e) ||
        engine_flags_apply(&f, lm.m, &eo, &e))
        goto done;
    eo.relay = loaded_model_relay(&lm);
    eo.check_integrity = check;
    const int run = server_run(lm.m, tok, ct, &eo, &so, &e);
    so.listener = NULL; /* server_run took it */
    if (run)
        goto done;
    rc = 0;
done:
    server_unlisten(&so);
    if (rc < 0)
        fprintf(stderr, "infer serve: %s\n", e.msg);
    chat_template_free(ct);
    tokenizer_free(tok);
    loaded_model_free(&lm);
    engine_flags_free(&f);
    return rc < 0 ? 1 : node_status;
}
