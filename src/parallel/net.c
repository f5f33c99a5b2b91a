#include "parallel/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/clock.h"

enum { NET_MAGIC = 0x50546e69, NET_MAX_MSG = 1 << 30 }; /* "inTP" */

struct msg_header {
    uint32_t magic, kind;
    uint64_t len;
};

int net_parse_addr(const char *addr, char *host, size_t host_size, int *port, struct err *e)
{
    const char *colon = strrchr(addr, ':');
    char *end;
    long p = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || colon == addr || (size_t)(colon - addr) >= host_size || !colon[1] || *end || p < 0 || p > 65535)
        return err_set(e, "--dist-init-addr: '%s' is not HOST:PORT", addr);
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    *port = (int)p;
    return 0;
}

static int resolve(const char *host, int port, struct sockaddr_in *sa, struct err *e)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc || !res)
        return err_set(e, "--dist-init-addr: cannot resolve '%s': %s", host, gai_strerror(rc));
    *sa = *(struct sockaddr_in *)res->ai_addr;
    sa->sin_port = htons((uint16_t)port);
    freeaddrinfo(res);
    return 0;
}

int net_check_addr(const char *addr, struct err *e)
{
    char host[256];
    int port;
    struct sockaddr_in sa;
    return net_parse_addr(addr, host, sizeof host, &port, e) || resolve(host, port, &sa, e) ? -1 : 0;
}

static void tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* small control messages go at once */
}

int net_listen(const char *host, int port, int *fd, int *bound, struct err *e)
{
    struct sockaddr_in sa;
    if (resolve(host, port, &sa, e))
        return -1;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (s < 0)
        return err_set(e, "socket: %s", strerror(errno));
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(s, (struct sockaddr *)&sa, sizeof sa) || listen(s, 64)) {
        err_set(e, "--dist-init-addr: cannot listen on %s:%d: %s", host, port, strerror(errno));
        close(s);
        return -1;
    }
    socklen_t len = sizeof sa;
    getsockname(s, (struct sockaddr *)&sa, &len);
    *bound = ntohs(sa.sin_port);
    *fd = s;
    return 0;
}

/* Waits for fd to be readable (events) until the deadline; 0 ready, 1 timed out. */
static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        int ms = -1;
        if (deadline > 0) {
            double left = deadline - clock_now();
            if (left <= 0)
                return 1;
            ms = (int)(left * 1000) + 1;
        }
        struct pollfd p = {fd, events, 0};
        int rc = poll(&p, 1, ms);
        if (rc > 0)
            return 0;
        if (rc < 0 && errno != EINTR)
            return 0; /* let the call itself fail */
    }
}

int net_accept(int listen_fd, double deadline, int *fd, struct err *e)
{
    if (wait_fd(listen_fd, POLLIN, deadline))
        return err_set(e, "no rank connected before the --dist-timeout ran out");
    int s = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (s < 0)
        return err_set(e, "accept: %s", strerror(errno));
    tune(s);
    *fd = s;
    return 0;
}

int net_connect(const char *host, int port, double deadline, int *fd, struct err *e)
{
    struct sockaddr_in sa;
    if (resolve(host, port, &sa, e))
        return -1;
    for (;;) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
            return err_set(e, "socket: %s", strerror(errno));
        if (connect(s, (struct sockaddr *)&sa, sizeof sa) == 0) {
            tune(s);
            *fd = s;
            return 0;
        }
        const int why = errno;
        close(s);
        if (clock_now() >= deadline)
            return err_set(e, "cannot reach rank 0 at %s:%d before the --dist-timeout ran out: %s", host, port,
                           strerror(why));
        usleep(100000);
    }
}

static int send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k, n -= (size_t)k;
    }
    return 0;
}

static int recv_all(int fd, void *p, size_t n, double deadline)
{
    char *c = p;
    while (n) {
        if (deadline > 0 && wait_fd(fd, POLLIN, deadline))
            return 1;
        ssize_t k = recv(fd, c, n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k, n -= (size_t)k;
    }
    return 0;
}

/* Header and body in one system call (one segment, one wake-up of the
 * reader), the rest of a partial send after it. */
static int send_msg_all(int fd, const struct msg_header *h, const void *data, size_t n)
{
    struct iovec iov[2] = {{(void *)h, sizeof *h}, {(void *)data, n}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = n ? 2 : 1};
    ssize_t k;
    do
        k = sendmsg(fd, &m, MSG_NOSIGNAL);
    while (k < 0 && errno == EINTR);
    if (k < 0)
        return -1;
    const size_t sent = (size_t)k;
    if (sent < sizeof *h)
        return send_all(fd, (const char *)h + sent, sizeof *h - sent) || (n && send_all(fd, data, n));
    return send_all(fd, (const char *)data + (sent - sizeof *h), n - (sent - sizeof *h));
}

int net_send_msg(int fd, uint32_t kind, const void *data, size_t n, struct err *e)
{
    const struct msg_header h = {NET_MAGIC, kind, n};
    if (send_msg_all(fd, &h, data, n))
        return err_set(e, "a rank of the group is gone (sending: %s)", strerror(errno));
    return 0;
}

int net_spin_readable(int fd, double spin_s)
{
    const double until = clock_now() + spin_s;
    do {
        char c;
        const ssize_t k = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (k >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return 1; /* bytes, the end, or an error: the read says which */
    } while (clock_now() < until);
    return 0;
}

int net_recv_msg(int fd, double deadline, uint32_t *kind, void **data, size_t *n, struct err *e)
{
    struct msg_header h;
    int rc = recv_all(fd, &h, sizeof h, deadline);
    if (rc)
        return err_set(e, rc > 0 ? "no message from the group before the --dist-timeout ran out"
                                 : "a rank of the group is gone (its connection closed)");
    if (h.magic != NET_MAGIC || h.len > NET_MAX_MSG)
        return err_set(e, "a rank sent something that is not one of infer's messages");
    char *buf = xmalloc(h.len ? h.len : 1);
    if ((rc = recv_all(fd, buf, h.len, deadline))) {
        free(buf);
        return err_set(e, "a rank of the group is gone (mid-message)");
    }
    *kind = h.kind;
    *data = buf;
    *n = h.len;
    return 0;
}
