/* Reading /metrics (scrape.h). */
#include "loadgen/scrape.h"

#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "loadgen/http_response.h"

static void add(struct scrape *s, const char *name, size_t len, double v)
{
    for (int i = 0; i < s->n; i++)
        if (strlen(s->names[i]) == len && !memcmp(s->names[i], name, len)) {
            s->values[i] += v;
            return;
        }
    s->names = xrealloc(s->names, (size_t)(s->n + 1) * sizeof *s->names);
    s->values = xrealloc(s->values, (size_t)(s->n + 1) * sizeof *s->values);
    s->names[s->n] = strndup(name, len);
    CHECK(s->names[s->n]);
    s->values[s->n++] = v;
}

void scrape_parse(struct scrape *s, const char *text)
{
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len && line[0] != '#') {
            size_t name_len = 0;
            while (name_len < len && line[name_len] != '{' && line[name_len] != ' ')
                name_len++;
            const char *v = line + name_len;
            if (name_len < len && *v == '{') { /* skip the labels (values may hold '}' inside quotes) */
                int quoted = 0;
                while (v < line + len && (quoted || *v != '}')) {
                    if (*v == '"' && v[-1] != '\\')
                        quoted = !quoted;
                    v++;
                }
                v++;
            }
            char num[64];
            size_t k = 0;
            while (v < line + len && *v == ' ')
                v++;
            while (v < line + len && *v != ' ' && k < sizeof num - 1)
                num[k++] = *v++;
            num[k] = 0;
            char *stop;
            const double x = strtod(num, &stop);
            if (name_len && k && !*stop && isfinite(x))
                add(s, line, name_len, x);
        }
        line = end ? end + 1 : NULL;
    }
}

static void on_body(void *ctx, const char *p, size_t n)
{
    char **buf = ctx;
    size_t have = *buf ? strlen(*buf) : 0;
    if (have + n > (64u << 20))
        return; /* a metrics page is not this large: keep what fits */
    *buf = xrealloc(*buf, have + n + 1);
    memcpy(*buf + have, p, n);
    (*buf)[have + n] = 0;
}

int scrape_metrics(const struct lg_target *t, struct scrape *s, struct err *e)
{
    memset(s, 0, sizeof *s);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(t->host, t->port, &hints, &ai))
        return err_set(e, "/metrics: cannot resolve %s", t->host);
    const int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = 10};
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return err_set(e, "/metrics: cannot connect to %s:%s", t->host, t->port);
    }
    freeaddrinfo(ai);
    const size_t prefix = strlen(t->path) - strlen("/v1/completions");
    char req[1024];
    const int n = snprintf(req, sizeof req, "GET %.*s/metrics HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n",
                           (int)prefix, t->path, t->host, t->port);
    struct http_response r;
    http_response_init(&r);
    char *body = NULL, buf[65536];
    int rc = send(fd, req, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
    while (!rc) {
        const ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k <= 0) {
            rc = k < 0 || http_response_closed(&r) ? -1 : 0;
            break;
        }
        if (http_response_feed(&r, buf, (size_t)k, on_body, &body) < 0)
            rc = -1;
    }
    close(fd);
    if (rc || r.status != 200 || !body) {
        free(body);
        return err_set(e, "/metrics: no page (HTTP status %d)", r.status);
    }
    scrape_parse(s, body);
    free(body);
    return 0;
}

double scrape_get(const struct scrape *s, const char *name, int *found)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name)) {
            if (found)
                *found = 1;
            return s->values[i];
        }
    if (found)
        *found = 0;
    return 0;
}

void scrape_free(struct scrape *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    free(s->values);
    memset(s, 0, sizeof *s);
}
