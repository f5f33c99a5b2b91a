/* infer mkmodel --config config.json --out DIR [--seed S] [--tokenizer DIR]
 * Writes config.json (verbatim) and a random bf16 model.safetensors. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/fs.h"
#include "core/threadpool.h"
#include "model/random_init.h"

static const char *tokenizer_files[] = {"tokenizer.json", "tokenizer_config.json",
                                        "special_tokens_map.json", "generation_config.json"};

static int copy_tokenizer(const char *src_dir, const char *out_dir, struct err *e)
{
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/tokenizer.json", src_dir);
    if (!fs_exists(src))
        return err_set(e, "--tokenizer: %s not found", src);
    for (size_t i = 0; i < sizeof tokenizer_files / sizeof tokenizer_files[0]; i++) {
        snprintf(src, sizeof src, "%s/%s", src_dir, tokenizer_files[i]);
        snprintf(dst, sizeof dst, "%s/%s", out_dir, tokenizer_files[i]);
        if (fs_exists(src) && fs_copy_file(src, dst, e))
            return -1;
    }
    return 0;
}

int cmd_mkmodel(int argc, char **argv)
{
    const char *config = NULL, *out = NULL, *tokenizer = NULL;
    uint64_t seed = 0;
    int threads = 0;
    struct cli_opt opts[] = {
        {"config", CLI_OPT_STRING, &config, 1, 0, 0, "config.json to build the model from", 0},
        {"out", CLI_OPT_STRING, &out, 1, 0, 0, "output directory (created if missing)", 0},
        {"seed", CLI_OPT_U64, &seed, 0, 0, 0, "random seed (default 0)", 0},
        {"tokenizer", CLI_OPT_STRING, &tokenizer, 0, 0, 0, "directory whose tokenizer files to copy in", 0},
        {"threads", CLI_OPT_INT, &threads, 0, 0, 1024, "worker threads (default: all cores)", 0},
    };
    struct err e = {{0}};
    int rc = cli_parse(argc, argv, "mkmodel", opts, (int)(sizeof opts / sizeof opts[0]), &e);
    if (rc)
        goto done;
    struct model_config cfg;
    char *text = NULL;
    size_t len;
    char path[4096];
    if (model_config_load(config, &cfg, &e) || fs_read_file(config, 64u << 20, &text, &len, &e) ||
        fs_mkdir_p(out, &e)) {
        free(text);
        rc = -1;
        goto done;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    struct threadpool *pool = threadpool_create(threads);
    rc = random_init_write(&cfg, path, seed, pool, &e);
    threadpool_free(pool);
    if (!rc) {
        snprintf(path, sizeof path, "%s/config.json", out);
        rc = fs_write_atomic(path, text, len, &e);
    }
    free(text);
    if (!rc && tokenizer)
        rc = copy_tokenizer(tokenizer, out, &e);
    if (!rc)
        printf("wrote %s (%s, seed %llu)\n", out, cfg.arch_name, (unsigned long long)seed);
done:
    if (rc < 0)
        fprintf(stderr, "infer mkmodel: %s\n", e.msg);
    return rc < 0 ? 1 : 0;
}
