/* The processes of a split model (group.h): launch, join, the relay rank
 * 0's runner drives the others through, the watchdog, the end. Every rank
 * but 0 has two connections to rank 0: control (the relay's messages) and
 * liveness (nothing ever travels on it; its closing says the peer died). */
#include "parallel/group.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "parallel/mailbox.h"
#include "parallel/net.h"

enum dist_msg {
    DIST_MSG_HELLO = 1,
    DIST_MSG_SETTINGS,
    DIST_MSG_READY,
    DIST_MSG_RUNNER,
    DIST_MSG_AGREE,
    DIST_MSG_EXIT,
    DIST_MSG_WAKE /* a message is in the mailbox (mailbox.h) */
};

struct hello {
    int32_t rank;
    int32_t live; /* 1: the liveness connection */
};

int dist_backend_parse(const char *s, enum dist_backend *out, struct err *e)
{
    if (!strcmp(s, "nccl"))
        *out = DIST_BACKEND_NCCL;
    else if (!strcmp(s, "cpu-test"))
        *out = DIST_BACKEND_CPU_TEST;
    else
        return err_set(e, "--dist-backend: unknown backend '%s' (nccl, or cpu-test for tests on the CPU)", s);
    return 0;
}

static struct dist_group *group_new(int rank, int size, double timeout)
{
    struct dist_group *g = xcalloc(1, sizeof *g);
    g->rank = rank;
    g->size = size;
    g->timeout = timeout;
    const int n = rank == 0 ? size : 1;
    g->ctrl = xmalloc((size_t)n * sizeof *g->ctrl);
    g->live = xmalloc((size_t)n * sizeof *g->live);
    for (int i = 0; i < n; i++)
        g->ctrl[i] = g->live[i] = -1;
    return g;
}

/* --- the relay (relay.h) over the mailbox and the control connections --- */

/* The ranks [1, local) share rank 0's machine and take messages from the
 * mailbox; the others from their connections. */
static int mailbox_end(const struct dist_group *g) { return g->mbox ? mailbox_ranks(g->mbox) : 1; }

static int relay_send(void *ctx, const void *msg, size_t n, struct err *e)
{
    struct dist_group *g = ctx;
    const int local = mailbox_end(g);
    if (g->mbox) {
        mailbox_post(g->mbox, DIST_MSG_RUNNER, msg, n);
        const int big = n > mailbox_capacity(g->mbox); /* its bytes go on each connection */
        for (int r = 1; r < local; r++)
            if (big ? net_send_msg(g->ctrl[r], DIST_MSG_RUNNER, msg, n, e)
                    : mailbox_sleeping(g->mbox, r) && net_send_msg(g->ctrl[r], DIST_MSG_WAKE, NULL, 0, e))
                return err_prefix(e, "rank %d", r);
    }
    for (int r = local; r < g->size; r++)
        if (net_send_msg(g->ctrl[r], DIST_MSG_RUNNER, msg, n, e))
            return err_prefix(e, "rank %d", r);
    return 0;
}

/* The next message on rank 0's connection that is not a wake-up (a rank
 * that took a message while rank 0 saw it asleep finds one later). */
static int recv_not_wake(struct dist_group *g, double deadline, uint32_t *kind, void **data, size_t *n,
                         struct err *e)
{
    for (;;) {
        if (net_recv_msg(g->ctrl[0], deadline, kind, data, n, e))
            return -1;
        if (*kind != DIST_MSG_WAKE)
            return 0;
        free(*data);
    }
}

/* Whether fd has bytes to read now. */
static int readable_now(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

/* A message past the mailbox (size bytes posted): its bytes came on the
 * connection as data[dn] of kind (or the end came instead: 1). */
static int take_from_connection(struct dist_group *g, uint32_t kind, void *data, size_t dn, size_t size, void **msg,
                                size_t *n, struct err *e)
{
    if (kind == DIST_MSG_EXIT) {
        free(data);
        *msg = NULL;
        return 1;
    }
    if (kind != DIST_MSG_RUNNER || dn != size) {
        free(data);
        return err_set(e, "rank 0 sent message %u (%zu bytes) where a step of %zu bytes was due", kind, dn, size);
    }
    mailbox_take(g->mbox, NULL);
    *msg = data;
    *n = dn;
    return 0;
}

/* The next message from the mailbox: polled for relay_spin_s (and the
 * connection every ~1k polls, for the end), then asleep on the connection
 * until rank 0 wakes this rank. 1 at the end. */
static int mailbox_recv(struct dist_group *g, void **msg, size_t *n, struct err *e)
{
    uint32_t kind;
    size_t size;
    double until = clock_now() + g->relay_spin_s;
    for (long i = 1;; i++) {
        if (mailbox_peek(g->mbox, &kind, &size))
            break;
        if (clock_now() < until && (i % 1024 || !readable_now(g->ctrl[0]))) {
            mailbox_pause();
            continue;
        }
        if (mailbox_sleep(g->mbox))
            continue; /* a message came meanwhile */
        void *data = NULL;
        size_t dn;
        const int rc = net_recv_msg(g->ctrl[0], 0, &kind, &data, &dn, e);
        mailbox_awake(g->mbox);
        if (rc)
            return -1;
        if (kind == DIST_MSG_WAKE) {
            free(data);
            until = clock_now() + g->relay_spin_s;
            continue;
        }
        uint32_t posted; /* the end, or the bytes of a message past the mailbox, posted before they were sent */
        size = 0;
        if (kind != DIST_MSG_EXIT && !mailbox_peek(g->mbox, &posted, &size)) {
            free(data);
            return err_set(e, "rank 0 sent message %u (%zu bytes) where a step was due", kind, dn);
        }
        return take_from_connection(g, kind, data, dn, size, msg, n, e);
    }
    if (size <= mailbox_capacity(g->mbox)) {
        *msg = xmalloc(size ? size : 1);
        mailbox_take(g->mbox, *msg);
        *n = size;
        return 0;
    }
    void *data = NULL; /* past the mailbox: its bytes come on the connection */
    size_t dn;
    return recv_not_wake(g, 0, &kind, &data, &dn, e) ? -1 : take_from_connection(g, kind, data, dn, size, msg, n, e);
}

static int relay_recv(void *ctx, void **msg, size_t *n, struct err *e)
{
    struct dist_group *g = ctx;
    uint32_t kind;
    if (g->mbox)
        return mailbox_recv(g, msg, n, e);
    if (g->relay_spin_s > 0)
        net_spin_readable(g->ctrl[0], g->relay_spin_s);
    if (net_recv_msg(g->ctrl[0], 0, &kind, msg, n, e))
        return -1;
    if (kind == DIST_MSG_EXIT) {
        free(*msg);
        *msg = NULL;
        return 1;
    }
    if (kind != DIST_MSG_RUNNER) {
        free(*msg);
        return err_set(e, "rank 0 sent message %u where a step was due", kind);
    }
    return 0;
}

static int relay_agree_min(void *ctx, int v, int *out, struct err *e)
{
    struct dist_group *g = ctx;
    int32_t mine = v;
    void *data = NULL;
    size_t n;
    uint32_t kind;
    if (g->rank != 0) {
        if (net_send_msg(g->ctrl[0], DIST_MSG_AGREE, &mine, sizeof mine, e) ||
            recv_not_wake(g, clock_now() + g->timeout, &kind, &data, &n, e))
            return -1;
        const int ok = kind == DIST_MSG_AGREE && n == sizeof mine;
        if (ok)
            memcpy(&mine, data, sizeof mine);
        free(data);
        if (!ok)
            return err_set(e, "rank 0 sent message %u where the agreed value was due", kind);
        *out = mine;
        return 0;
    }
    for (int r = 1; r < g->size; r++) {
        if (net_recv_msg(g->ctrl[r], clock_now() + g->timeout, &kind, &data, &n, e))
            return err_prefix(e, "rank %d", r);
        int32_t theirs = INT32_MAX;
        if (kind == DIST_MSG_AGREE && n == sizeof theirs)
            memcpy(&theirs, data, sizeof theirs);
        free(data);
        if (kind != DIST_MSG_AGREE)
            return err_set(e, "rank %d sent message %u where its value was due", r, kind);
        mine = theirs < mine ? theirs : mine;
    }
    for (int r = 1; r < g->size; r++)
        if (net_send_msg(g->ctrl[r], DIST_MSG_AGREE, &mine, sizeof mine, e))
            return err_prefix(e, "rank %d", r);
    *out = mine;
    return 0;
}

static void relay_init(struct dist_group *g)
{
    g->relay = (struct relay){.ctx = g, .send = relay_send, .recv = relay_recv, .agree_min = relay_agree_min};
}

/* --- starting ranks --- */

/* Starts `infer worker` for rank, connecting to addr; its pid, or -1. */
static pid_t spawn_rank(const char *addr, int rank, double timeout, struct err *e)
{
    char exe[PATH_MAX], r[16], t[32];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        err_set(e, "cannot find this executable to start rank %d: %s", rank, strerror(errno));
        return -1;
    }
    exe[len] = '\0';
    snprintf(r, sizeof r, "%d", rank);
    snprintf(t, sizeof t, "%g", timeout);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        err_set(e, "cannot start rank %d: fork: %s", rank, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the group ends with its launcher */
        if (getppid() != parent)
            _exit(70);
        char *argv[] = {"infer", "worker", "--dist-init-addr", (char *)addr, "--rank", r, "--dist-timeout", t, NULL};
        execv(exe, argv);
        fprintf(stderr, "infer: cannot start rank %d (%s): %s\n", rank, exe, strerror(errno));
        _exit(70);
    }
    return pid;
}

/* The first of the ranks this process started that has exited (its rank
 * through *rank and its status), or 0. */
static pid_t exited_child(struct dist_group *g, int first_rank, int *rank, int *status)
{
    for (int i = 0; i < g->n_children; i++) {
        if (g->children[i] <= 0)
            continue;
        pid_t p = waitpid(g->children[i], status, WNOHANG);
        if (p == g->children[i]) {
            g->children[i] = 0;
            *rank = first_rank + i;
            return p;
        }
    }
    return 0;
}

static void describe_exit(char *buf, size_t size, int status)
{
    if (WIFEXITED(status))
        snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, size, "status %d", status);
}

static int spawn_ranks(struct dist_group *g, const char *addr, int first, int count, double timeout, struct err *e)
{
    g->children = xcalloc((size_t)(count > 0 ? count : 1), sizeof *g->children);
    for (int i = 0; i < count; i++) {
        if ((g->children[i] = spawn_rank(addr, first + i, timeout, e)) < 0)
            return -1;
        g->n_children = i + 1;
    }
    return 0;
}

/* Accepts the 2 (size - 1) connections of the other ranks. */
static int accept_ranks(struct dist_group *g, int listen_fd, int first_child, struct err *e)
{
    const double deadline = clock_now() + g->timeout;
    for (int got = 0; got < 2 * (g->size - 1);) {
        int rank, status, fd;
        if (exited_child(g, first_child, &rank, &status)) {
            char why[64];
            describe_exit(why, sizeof why, status);
            return err_set(e, "rank %d ended before it joined the group (%s; its messages are above)", rank, why);
        }
        if (clock_now() >= deadline)
            return err_set(e, "%d of the %d ranks joined before the --dist-timeout of %g s ran out", 1 + got / 2,
                           g->size, g->timeout);
        struct err ae;
        if (net_accept(listen_fd, clock_now() + 0.2, &fd, &ae))
            continue;
        uint32_t kind;
        void *data = NULL;
        size_t n;
        struct hello h = {-1, 0};
        if (net_recv_msg(fd, clock_now() + g->timeout, &kind, &data, &n, e) || kind != DIST_MSG_HELLO ||
            n != sizeof h) {
            free(data);
            close(fd);
            continue; /* not one of ours: ignore it */
        }
        memcpy(&h, data, sizeof h);
        free(data);
        int *slot = h.rank > 0 && h.rank < g->size ? (h.live ? &g->live[h.rank] : &g->ctrl[h.rank]) : NULL;
        if (!slot || *slot >= 0) {
            close(fd);
            return err_set(e, "a process joined as rank %d, which is %s", h.rank,
                           slot ? "taken already" : "not a rank of the group");
        }
        *slot = fd;
        got++;
    }
    return 0;
}

static void kill_children(struct dist_group *g)
{
    for (int i = 0; i < g->n_children; i++)
        if (g->children[i] > 0)
            kill(g->children[i], SIGKILL);
    for (int i = 0; i < g->n_children; i++)
        if (g->children[i] > 0)
            waitpid(g->children[i], NULL, 0);
    g->n_children = 0;
}

static void close_all(struct dist_group *g)
{
    const int n = g->rank == 0 ? g->size : 1;
    for (int i = 0; i < n; i++) {
        if (g->ctrl[i] >= 0)
            close(g->ctrl[i]);
        if (g->live[i] >= 0)
            close(g->live[i]);
        g->ctrl[i] = g->live[i] = -1;
    }
}

static void group_free(struct dist_group *g)
{
    if (g->mbox_named)
        mailbox_unlink(g->settings.relay_mailbox);
    mailbox_free(g->mbox);
    close_all(g);
    free(g->ctrl);
    free(g->live);
    free(g->children);
    free(g);
}

int dist_launch(const struct dist_opts *o, struct dist_group **out, struct err *e)
{
    char host[256] = "127.0.0.1", addr[320];
    int port = 0, bound, listen_fd;
    if (o->init_addr && net_parse_addr(o->init_addr, host, sizeof host, &port, e))
        return -1;
    if (net_listen(host, port, &listen_fd, &bound, e))
        return -1;
    snprintf(addr, sizeof addr, "%s:%d", host, bound);
    struct dist_group *g = group_new(0, o->size, o->timeout);
    const int local = o->size / o->nnodes;
    int rc = spawn_ranks(g, addr, 1, local - 1, o->timeout, e) || accept_ranks(g, listen_fd, 1, e);
    close(listen_fd);
    if (rc) {
        kill_children(g);
        group_free(g);
        return -1;
    }
    relay_init(g);
    *out = g;
    return 0;
}

int dist_send_settings(struct dist_group *g, struct dist_settings *s, struct err *e)
{
    s->relay_mailbox[0] = '\0';
    const size_t mailbox_bytes = s->tuning.relay_tcp ? 0 : (size_t)s->tuning.relay_mailbox_bytes;
    if (mailbox_bytes && s->ranks_per_host >= 2) {
        mailbox_name(s->relay_mailbox, sizeof s->relay_mailbox);
        if (!(g->mbox = mailbox_create(s->relay_mailbox, s->ranks_per_host, mailbox_bytes, e)))
            return -1;
        g->mbox_named = 1;
        log_info("relay: a shared-memory mailbox of %zu bytes for ranks 1-%d (this machine's)", mailbox_bytes,
                 s->ranks_per_host - 1);
    }
    g->settings = *s;
    for (int r = 1; r < g->size; r++)
        if (net_send_msg(g->ctrl[r], DIST_MSG_SETTINGS, s, sizeof *s, e))
            return err_prefix(e, "rank %d", r);
    return 0;
}

int dist_ready(struct dist_group *g, struct err *e)
{
    return net_send_msg(g->ctrl[0], DIST_MSG_READY, NULL, 0, e);
}

int dist_wait_ready(struct dist_group *g, struct err *e)
{
    for (int r = 1; r < g->size; r++) {
        uint32_t kind;
        void *data = NULL;
        size_t n;
        if (net_recv_msg(g->ctrl[r], clock_now() + g->timeout, &kind, &data, &n, e))
            return err_prefix(e, "rank %d loading its share", r);
        free(data);
        if (kind != DIST_MSG_READY)
            return err_set(e, "rank %d sent message %u where it was to say it is ready", r, kind);
    }
    if (g->mbox_named) /* every rank has it open */
        mailbox_unlink(g->settings.relay_mailbox), g->mbox_named = 0;
    return 0;
}

int dist_join(const char *addr, int rank, double timeout, struct dist_group **out, struct err *e)
{
    char host[256];
    int port;
    if (net_parse_addr(addr, host, sizeof host, &port, e))
        return -1;
    struct dist_group *g = group_new(rank, 0, timeout);
    const double deadline = clock_now() + timeout;
    const struct hello ctrl = {rank, 0}, live = {rank, 1};
    uint32_t kind = 0;
    void *data = NULL;
    size_t n = 0;
    int rc = net_connect(host, port, deadline, &g->ctrl[0], e) ||
             net_send_msg(g->ctrl[0], DIST_MSG_HELLO, &ctrl, sizeof ctrl, e) ||
             net_connect(host, port, deadline, &g->live[0], e) ||
             net_send_msg(g->live[0], DIST_MSG_HELLO, &live, sizeof live, e) ||
             net_recv_msg(g->ctrl[0], clock_now() + timeout, &kind, &data, &n, e);
    if (!rc && (kind != DIST_MSG_SETTINGS || n != sizeof g->settings))
        rc = err_set(e, "rank 0 sent message %u where the settings were due", kind);
    if (rc) {
        free(data);
        group_free(g);
        return err_prefix(e, "rank %d joining %s", rank, addr);
    }
    memcpy(&g->settings, data, sizeof g->settings);
    free(data);
    const struct dist_settings *s = &g->settings;
    /* a GPU rank polls for the next step a while (the ranks meet at the step's
     * first sum, so a sleeping reader's wake-up is on every step's path);
     * CPU ranks never poll: their cores do the forward */
    g->relay_spin_s = s->backend == DIST_BACKEND_NCCL ? s->tuning.relay_spin_ms / 1e3 : 0;
    if (s->relay_mailbox[0] && rank < s->ranks_per_host && !(g->mbox = mailbox_open(s->relay_mailbox, rank, e))) {
        group_free(g);
        return err_prefix(e, "rank %d", rank);
    }
    g->size = g->settings.size;
    relay_init(g);
    *out = g;
    return 0;
}

int dist_run_node(const struct dist_opts *o, struct err *e)
{
    if (!o->init_addr)
        return err_set(e, "--node-rank %d needs --dist-init-addr, where rank 0 listens", o->node_rank);
    const int local = o->size / o->nnodes, first = o->node_rank * local;
    struct dist_group *g = group_new(first, o->size, o->timeout);
    int worst = 0;
    if (spawn_ranks(g, o->init_addr, first, local, o->timeout, e)) {
        kill_children(g);
        group_free(g);
        return -1;
    }
    for (int left = g->n_children; left > 0; left--) { /* one failing rank ends the node's others */
        int status, rank;
        pid_t p;
        while (!(p = exited_child(g, first, &rank, &status)))
            usleep(50000);
        if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            char why[64];
            describe_exit(why, sizeof why, status);
            log_error("rank %d ended (%s); ending this node's ranks", rank, why);
            worst = WIFEXITED(status) ? WEXITSTATUS(status) : 70;
            kill_children(g);
            break;
        }
    }
    group_free(g);
    return worst;
}

/* --- liveness --- */

static void *watch(void *arg)
{
    struct dist_group *g = arg;
    const int n = g->rank == 0 ? g->size : 1;
    struct pollfd *p = xcalloc((size_t)n + 1, sizeof *p);
    for (int i = 0; i < n; i++)
        p[i] = (struct pollfd){g->live[i], POLLIN, 0};
    p[n] = (struct pollfd){g->wake[0], POLLIN, 0};
    for (;;) {
        if (poll(p, (nfds_t)n + 1, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            char c;
            if (recv(p[i].fd, &c, 1, MSG_DONTWAIT) > 0)
                continue; /* nothing travels here; ignore it */
            if (atomic_load(&g->stopping)) {
                p[i].fd = -1;
                continue;
            }
            if (g->rank == 0)
                log_error("rank %d is gone (its process ended or its connection broke); ending the group", i);
            else
                log_error("rank 0 is gone (its process ended or its connection broke); ending this rank");
            _exit(70); /* from inside a collective too: never a hang */
        }
        if (atomic_load(&g->stopping))
            break;
    }
    free(p);
    return NULL;
}

void dist_watch(struct dist_group *g)
{
    if (g->watching || pipe2(g->wake, O_CLOEXEC))
        return;
    if (pthread_create(&g->watchdog, NULL, watch, g) == 0)
        g->watching = 1;
}

void dist_group_release(struct dist_group *g)
{
    if (!g || atomic_exchange(&g->stopping, 1))
        return;
    struct err e;
    for (int r = 1; g->rank == 0 && r < g->size; r++)
        net_send_msg(g->ctrl[r], DIST_MSG_EXIT, NULL, 0, &e);
}

/* Waits until the peer closes fd (its process ended) or the deadline passes. */
static void wait_closed(int fd, double deadline)
{
    for (;;) {
        const double left = deadline - clock_now();
        struct pollfd p = {fd, POLLIN, 0};
        const int n = left > 0 ? poll(&p, 1, (int)(left * 1000) + 1) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the deadline, or poll failed */
        char c;
        const ssize_t k = recv(fd, &c, 1, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return; /* closed, or reset */
    }
}

void dist_group_end(struct dist_group *g)
{
    if (!g)
        return;
    dist_group_release(g);
    const double deadline = clock_now() + 30;
    /* Rank 0 leaves last: a rank of another machine that saw rank 0's
     * connection drop before it read the end message would take it for a
     * crash. */
    for (int r = 1; g->rank == 0 && r < g->size; r++)
        if (g->live[r] >= 0)
            wait_closed(g->live[r], deadline);
    for (int i = 0; i < g->n_children; i++) /* the ranks started here end on their own, or are ended */
        while (g->children[i] > 0) {
            const pid_t p = waitpid(g->children[i], NULL, WNOHANG);
            if (p == g->children[i] || p < 0)
                g->children[i] = 0;
            else if (clock_now() >= deadline)
                break;
            else
                usleep(20000);
        }
    kill_children(g);
    if (g->watching) {
        const char c = 1;
        if (write(g->wake[1], &c, 1) != 1)
            log_warn("cannot wake the watchdog: %s", strerror(errno));
        pthread_join(g->watchdog, NULL);
        close(g->wake[0]);
        close(g->wake[1]);
    }
    group_free(g);
}
