#include "cli/sampling_flags.h"

#include <string.h>

struct sampling_flags sampling_flags_default(void)
{
    return (struct sampling_flags){.temperature = 0.0, .top_p = 1.0, .min_p = 0.0, .top_k = 0, .seed = 0};
}

void sampling_flags_opts(struct sampling_flags *sf, struct cli_opt *opts, const char *seed_help)
{
    const struct cli_opt o[SAMPLING_FLAGS_N_OPTS] = {
        {"temperature", CLI_OPT_DOUBLE, &sf->temperature, 0, 0, 0, "sampling temperature (0: greedy)", 0},
        {"top-p", CLI_OPT_DOUBLE, &sf->top_p, 0, 0, 0, "nucleus sampling mass, in (0, 1] (1: off)", 0},
        {"top-k", CLI_OPT_INT, &sf->top_k, 0, 0, 1 << 30, "sample from the k most likely tokens (0: off)", 0},
        {"min-p", CLI_OPT_DOUBLE, &sf->min_p, 0, 0, 0, "drop tokens below min-p times the best, in [0, 1] (0: off)",
         0},
        {"seed", CLI_OPT_U64, &sf->seed, 0, 0, 0, seed_help, 0},
    };
    memcpy(opts, o, sizeof o);
}

struct sampling_params sampling_flags_params(const struct sampling_flags *sf)
{
    struct sampling_params p = sampling_params_default();
    p.temperature = (float)sf->temperature;
    p.top_p = (float)sf->top_p;
    p.min_p = (float)sf->min_p;
    p.top_k = sf->top_k;
    p.seed = sf->seed;
    return p;
}

int sampling_flags_check(const struct sampling_flags *sf, struct err *e)
{
    const struct sampling_params p = sampling_flags_params(sf);
    if (!sampling_params_check(&p, 1 << 30, e))
        return 0;
    /* sampling_params_check names the field; the user typed the flag */
    static const char *const names[][2] = {
        {"temperature", "--temperature"}, {"top_k", "--top-k"}, {"top_p", "--top-p"}, {"min_p", "--min-p"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strncmp(e->msg, names[i][0], strlen(names[i][0])))
            return err_prefix(e, "%s", names[i][1]);
    return -1;
}
