/* TCP for the ranks of a split model: listening, connecting with retries
 * until a deadline, and framed messages (a kind and a length, then the
 * bytes) that arrive whole or not at all. */
#ifndef INFER_PARALLEL_NET_H
#define INFER_PARALLEL_NET_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* "HOST:PORT" (an IPv4 address or a name) into host and port; -1 with e
 * naming --dist-init-addr when malformed. */
int net_parse_addr(const char *addr, char *host, size_t host_size, int *port, struct err *e);
/* net_parse_addr, then the host must resolve: a typo fails before any rank starts. */
int net_check_addr(const char *addr, struct err *e);

/* Listens on host:port (port 0: any free one, *bound set to it). */
int net_listen(const char *host, int port, int *fd, int *bound, struct err *e);
/* Accepts one connection before the deadline (clock_now() seconds). */
int net_accept(int listen_fd, double deadline, int *fd, struct err *e);
/* Connects to host:port, retrying until the deadline (the listener may not
 * be up yet). */
int net_connect(const char *host, int port, double deadline, int *fd, struct err *e);

/* One message: kind, then n bytes. Send fails when the peer is gone. */
int net_send_msg(int fd, uint32_t kind, const void *data, size_t n, struct err *e);
/* The next message: its kind, and its bytes in *data (malloc'ed, the
 * caller frees; n 0 gives a 1-byte buffer), waiting until the deadline
 * (0: for ever). -1 with e set when the peer is gone or it times out. */
int net_recv_msg(int fd, double deadline, uint32_t *kind, void **data, size_t *n, struct err *e);

/* Polls fd without sleeping for up to spin_s seconds until it has bytes to
 * read (or is closed): the caller's blocking read after it then returns
 * without the wake-up a sleeping reader pays. 1 when readable, 0 when the
 * time ran out. */
int net_spin_readable(int fd, double spin_s);

#endif
