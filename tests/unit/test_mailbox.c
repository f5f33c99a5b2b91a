/* The relay's shared-memory mailbox (parallel/mailbox.h) between processes:
 * rank 0 posts 3000 messages of varying sizes to two ranks, one polling,
 * one that goes to sleep on a pipe between messages and is woken the way
 * group.c's relay does it (rank 0 writes a byte where mailbox_sleeping says
 * so). Every message must arrive whole and in order at both, none may be
 * missed by the sleeper (a lost wake-up hangs the test: criterion's
 * timeout fails it), and a rank outside the group is refused. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "parallel/mailbox.h"

enum { N_MSG = 3000, CAP = 4096 };

static size_t size_of(int i) { return (size_t)(i * 37) % CAP + 1; }

static char byte_of(int i, size_t j) { return (char)(i * 131 + (int)j * 7); }

/* A rank's loop: every message checked; exits 0 when all were right. */
static int rank_main(const char *name, int rank, int wake_fd)
{
    struct err e;
    struct mailbox *m = mailbox_open(name, rank, &e);
    if (!m)
        return 10;
    char *buf = malloc(CAP);
    for (int i = 0; i < N_MSG; i++) {
        uint32_t kind;
        size_t n;
        while (!mailbox_peek(m, &kind, &n)) {
            if (wake_fd < 0 || mailbox_sleep(m))
                continue; /* the poller; or a message came meanwhile */
            char c;
            if (read(wake_fd, &c, 1) != 1)
                return 11;
            mailbox_awake(m);
        }
        if (kind != (uint32_t)(i % 7) || n != size_of(i))
            return 12;
        mailbox_take(m, buf);
        for (size_t j = 0; j < n; j++)
            if (buf[j] != byte_of(i, j))
                return 13;
    }
    free(buf);
    mailbox_free(m);
    return 0;
}

Test(mailbox, messages_reach_a_polling_and_a_sleeping_rank, .timeout = 60)
{
    char name[64];
    struct err e;
    mailbox_name(name, sizeof name);
    struct mailbox *m = mailbox_create(name, 3, CAP, &e);
    cr_assert(m, "%s", e.msg);
    int wake[2];
    cr_assert_eq(pipe(wake), 0);
    pid_t kids[2];
    for (int r = 1; r <= 2; r++) {
        kids[r - 1] = fork();
        cr_assert(kids[r - 1] >= 0);
        if (kids[r - 1] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test takes its ranks along */
            _exit(rank_main(name, r, r == 2 ? wake[0] : -1));
        }
    }
    char *msg = malloc(CAP);
    for (int i = 0; i < N_MSG; i++) {
        for (size_t j = 0; j < size_of(i); j++)
            msg[j] = byte_of(i, j);
        mailbox_post(m, (uint32_t)(i % 7), msg, size_of(i));
        if (mailbox_sleeping(m, 2))
            cr_assert_eq(write(wake[1], "w", 1), 1);
        if (i % 97 == 0)
            usleep(200); /* let the sleeper fall asleep now and then */
    }
    for (int r = 0; r < 2; r++) {
        int status;
        cr_assert_eq(waitpid(kids[r], &status, 0), kids[r]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank %d: exit status %d", r + 1,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    cr_assert_null(mailbox_open(name, 3, &e), "rank 3 of a group of 3");
    cr_assert(strstr(e.msg, "rank 3"), "%s", e.msg);
    free(msg);
    mailbox_free(m);
    mailbox_unlink(name);
    close(wake[0]);
    close(wake[1]);
}

/* The two orders of a post and a rank going to sleep, step by step in one
 * process: a post the rank missed before it said it sleeps is seen when it
 * says so (it does not sleep); a post after it said so finds it asleep (rank
 * 0 wakes it). Either way no message waits on a sleeping rank. */
Test(mailbox, no_lost_wake_up_in_either_order)
{
    char name[64];
    struct err e;
    mailbox_name(name, sizeof name);
    struct mailbox *m = mailbox_create(name, 2, 64, &e), *r1 = m ? mailbox_open(name, 1, &e) : NULL;
    cr_assert(r1, "%s", e.msg);
    uint32_t kind;
    size_t n;
    char buf[64];
    cr_assert_eq(mailbox_peek(r1, &kind, &n), 0, "nothing posted yet");
    mailbox_post(m, 5, "first", 6); /* after the rank's empty peek, before it says it sleeps */
    cr_assert_eq(mailbox_sleeping(m, 1), 0);
    cr_assert_eq(mailbox_sleep(r1), 1, "the post came meanwhile: the rank must not sleep");
    cr_assert_eq(mailbox_sleeping(m, 1), 0, "and it does not say it sleeps");
    cr_assert(mailbox_peek(r1, &kind, &n) && kind == 5 && n == 6);
    mailbox_take(r1, buf);
    cr_assert_str_eq(buf, "first");
    cr_assert_eq(mailbox_sleep(r1), 0, "nothing new: the rank sleeps");
    mailbox_post(m, 6, "second", 7);
    cr_assert_eq(mailbox_sleeping(m, 1), 1, "rank 0 sees it asleep after its post: it wakes it");
    mailbox_awake(r1);
    cr_assert(mailbox_peek(r1, &kind, &n) && kind == 6 && n == 7);
    mailbox_take(r1, buf);
    cr_assert_str_eq(buf, "second");
    mailbox_free(r1);
    mailbox_free(m);
    mailbox_unlink(name);
}
