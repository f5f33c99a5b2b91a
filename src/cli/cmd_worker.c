/* infer worker --dist-init-addr HOST:PORT --rank R [--dist-timeout S]
 * One rank (not rank 0) of a split model, started by rank 0's command (or
 * by another machine's `infer serve --node-rank K`), not by hand: joins rank
 * 0, loads its share as rank 0 says, and follows rank 0's steps until the
 * group ends (launch_worker). Exits 0 on an orderly end, non-zero (the
 * cause logged) when anything fails; rank 0's watchdog then ends the group. */
#include <stdio.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/log.h"
#include "engine/launch.h"

int cmd_worker(int argc, char **argv)
{
    const char *addr = NULL;
    int rank = -1;
    double timeout = 120;
    struct cli_opt opts[] = {
        {"dist-init-addr", CLI_OPT_STRING, &addr, 1, 0, 0, "HOST:PORT where rank 0 listens", 0},
        {"rank", CLI_OPT_INT, &rank, 1, 1, 1023, "this process's rank (1 or more)", 0},
        {"dist-timeout", CLI_OPT_DOUBLE, &timeout, 0, 0, 0, "seconds to reach rank 0", 0},
    };
    struct err e = {{0}};
    int rc = cli_parse(argc, argv, "worker", opts, (int)(sizeof opts / sizeof opts[0]), &e);
    if (rc == 0) {
        char tag[32];
        snprintf(tag, sizeof tag, "rank %d", rank);
        log_set_tag(tag);
        rc = launch_worker(addr, rank, timeout, &e);
    }
    if (rc < 0)
        fprintf(stderr, "infer worker (rank %d): %s\n", rank, e.msg);
    return rc < 0 ? 1 : 0;
}
