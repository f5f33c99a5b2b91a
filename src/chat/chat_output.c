/* The output parser of chat_output.h: a state machine over the bytes fed so
 * far. `in` holds what is not yet consumed; each state consumes what it can
 * decide and leaves the rest (a marker's possible start, blanks whose
 * meaning the next byte decides) for the next feed, so a text fed in any
 * split gives the same pieces. A call's JSON is read by a small scanner
 * that knows only what it must: the top-level keys, the name's string and
 * where the arguments' value starts and ends. */
#include "chat/chat_output.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct sbuf {
    char *s;
    size_t n, cap;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = xrealloc(b->s, b->cap);
    }
    if (n)
        memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void sb_drop(struct sbuf *b, size_t n) /* the first n bytes */
{
    memmove(b->s, b->s + n, b->n - n);
    b->n -= n;
    if (b->s)
        b->s[b->n] = '\0';
}

static int blank(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

enum mode { M_START, M_REASON, M_AFTER_REASON, M_CONTENT, M_CALL, M_CALL_END, M_BETWEEN, M_PYCALL };

/* Where the call scanner is in {"name": "f", "arguments": {...}}. */
enum phase { P_OPEN, P_KEY_OR_END, P_KEY, P_COLON, P_VALUE, P_IN_VALUE, P_AFTER_VALUE, P_DONE, P_FAIL };
enum slot { S_OTHER, S_NAME, S_ARGS };

struct scan {
    enum phase phase;
    enum slot slot;      /* the value being read */
    int depth, in_str, esc; /* within the value */
    int str_value;       /* the arguments are a string */
    int first;           /* the value's first byte is next */
    struct sbuf key, name, args;
    int have_name, have_args;
    int committed;       /* the call was announced */
    size_t args_sent;    /* bytes of args given out */
};

struct chat_output {
    struct chat_output_opts o;
    enum mode mode;
    struct sbuf in;
    int at_start;     /* nothing but blanks in the content yet (a Llama 3 call may open it) */
    int reason_open;  /* the reasoning has just opened: its leading newlines are dropped */
    int calls;
    int marker_shown; /* the call opened with a visible marker (the tagged syntax's) */
    struct scan sc;
    struct sbuf raw; /* the call's bytes after its marker: content again if it is not a call */
    struct sbuf gap; /* the blanks before the call: content again if it is not a call */
};

static void emit(chat_piece_fn fn, void *arg, enum chat_piece_kind k, int call, const char *s, size_t n)
{
    if (n == 0 && k != CHAT_PIECE_CALL)
        return;
    struct chat_piece p = {k, call, s, n};
    fn(arg, &p);
}

static const char *open_tag(const struct chat_output *p) /* "<tool_call>": the marker without its newline */
{
    return p->o.format->calls == CHAT_CALLS_TAGGED ? "<tool_call>" : NULL;
}

static const char *close_tag(void) { return "</tool_call>"; }

/* The longest suffix of s[0..n) that is a proper prefix of marker. */
static size_t partial(const char *s, size_t n, const char *marker)
{
    if (!marker)
        return 0;
    size_t m = strlen(marker);
    for (size_t k = (n < m - 1 ? n : m - 1); k > 0; k--)
        if (!memcmp(s + n - k, marker, k))
            return k;
    return 0;
}

static const char *find(const char *s, size_t n, const char *marker)
{
    if (!marker)
        return NULL;
    size_t m = strlen(marker);
    for (size_t i = 0; i + m <= n; i++)
        if (s[i] == marker[0] && !memcmp(s + i, marker, m))
            return s + i;
    return NULL;
}

/* s[0..n) is a proper prefix of marker */
static int prefix_of(const char *s, size_t n, const char *marker)
{
    size_t m = strlen(marker);
    return n < m && !memcmp(s, marker, n);
}

struct chat_output *chat_output_new(const struct chat_output_opts *o)
{
    struct chat_output *p = xcalloc(1, sizeof *p);
    p->o = *o;
    p->o.reasoning = o->reasoning && o->format->think_open && o->format->think_close;
    p->mode = p->o.reasoning && o->in_reasoning ? M_REASON : M_START;
    p->reason_open = 1;
    p->at_start = 1;
    return p;
}

static void scan_free(struct scan *s)
{
    free(s->key.s), free(s->name.s), free(s->args.s);
    memset(s, 0, sizeof *s);
}

void chat_output_free(struct chat_output *p)
{
    if (!p)
        return;
    scan_free(&p->sc);
    free(p->in.s), free(p->raw.s), free(p->gap.s);
    free(p);
}

int chat_output_calls(const struct chat_output *p) { return p->calls; }

/* ---- the call scanner ---- */

static void value_begin(struct scan *s, char c)
{
    s->phase = P_IN_VALUE;
    s->depth = 0;
    s->in_str = 0;
    s->esc = 0;
    s->first = 1;
    if (s->slot == S_ARGS) {
        s->have_args = 1;
        s->str_value = c == '"';
    }
}

/* One byte of a value; returns 1 when the value ended with this byte (the
 * byte is part of it), 2 when it ended before this byte (a scalar), else 0. */
static int value_byte(struct scan *s, char c)
{
    if (s->in_str) {
        if (s->esc)
            s->esc = 0;
        else if (c == '\\')
            s->esc = 1;
        else if (c == '"') {
            s->in_str = 0;
            if (s->depth == 0)
                return 1;
        }
        return 0;
    }
    if (c == '"') {
        s->in_str = 1;
        return 0;
    }
    if (c == '{' || c == '[') {
        s->depth++;
        return 0;
    }
    if (c == '}' || c == ']') {
        if (s->depth == 0)
            return 2;
        return --s->depth == 0 ? 1 : 0;
    }
    if (s->depth == 0 && (c == ',' || blank(c)))
        return 2;
    return 0;
}

static void scan_byte(struct scan *s, char c)
{
    switch (s->phase) {
    case P_OPEN:
        if (c == '{')
            s->phase = P_KEY_OR_END;
        else if (!blank(c))
            s->phase = P_FAIL;
        return;
    case P_KEY_OR_END:
        if (c == '"') {
            s->key.n = 0;
            sb_add(&s->key, "", 0);
            s->phase = P_KEY;
        } else if (c == '}')
            s->phase = P_DONE;
        else if (!blank(c) && c != ',')
            s->phase = P_FAIL;
        return;
    case P_KEY:
        if (s->esc) {
            s->esc = 0;
            sb_add(&s->key, &c, 1);
        } else if (c == '\\')
            s->esc = 1;
        else if (c == '"')
            s->phase = P_COLON;
        else
            sb_add(&s->key, &c, 1);
        return;
    case P_COLON:
        if (c == ':') {
            const char *k = s->key.s;
            s->slot = !strcmp(k, "name") && !s->have_name                                      ? S_NAME
                      : (!strcmp(k, "arguments") || !strcmp(k, "parameters")) && !s->have_args ? S_ARGS
                                                                                               : S_OTHER;
            s->phase = P_VALUE;
        } else if (!blank(c))
            s->phase = P_FAIL;
        return;
    case P_VALUE:
        if (blank(c))
            return;
        if ((s->slot == S_NAME && c != '"') || (s->slot == S_ARGS && c != '{' && c != '"')) {
            s->phase = P_FAIL;
            return;
        }
        value_begin(s, c);
        __attribute__((fallthrough)); /* the first byte belongs to the value */
    case P_IN_VALUE: {
        const int first = s->first;
        s->first = 0;
        const int end = value_byte(s, c);
        if (end != 2 && s->slot == S_ARGS)
            sb_add(&s->args, &c, 1);
        else if (end == 0 && s->slot == S_NAME && !first)
            sb_add(&s->name, &c, 1);
        if (end == 0)
            return;
        if (s->slot == S_NAME) {
            sb_add(&s->name, "", 0);
            s->have_name = 1;
        }
        s->phase = P_AFTER_VALUE;
        if (end == 1)
            return;
        __attribute__((fallthrough)); /* a scalar ended: this byte comes after it */
    }
    case P_AFTER_VALUE:
        if (c == ',')
            s->phase = P_KEY_OR_END;
        else if (c == '}')
            s->phase = P_DONE;
        else if (!blank(c))
            s->phase = P_FAIL;
        return;
    case P_DONE:
    case P_FAIL:
        return;
    }
}

/* The call's arguments as they go out: a string value is decoded (its
 * content is the arguments' JSON text), an object is its own text. */
static char *args_text(const struct scan *s, size_t *n)
{
    if (!s->str_value) {
        *n = s->args.n;
        char *t = xmalloc(s->args.n + 1);
        memcpy(t, s->args.s ? s->args.s : "", s->args.n);
        t[s->args.n] = '\0';
        return t;
    }
    json_t *j = json_loadb(s->args.s ? s->args.s : "", s->args.n, JSON_DECODE_ANY, NULL);
    const char *v = json_is_string(j) ? json_string_value(j) : "";
    *n = json_is_string(j) ? json_string_length(j) : 0;
    char *t = xmalloc(*n + 1);
    memcpy(t, v, *n);
    t[*n] = '\0';
    json_decref(j);
    return t;
}

/* Announces the call once its name and the start of an object's arguments
 * are known (a string's must be whole), then gives out its new bytes. */
static void call_progress(struct chat_output *p, chat_piece_fn fn, void *arg, int ended)
{
    struct scan *s = &p->sc;
    if (!s->committed) {
        if (!s->have_name || !s->have_args || (s->str_value && !ended))
            return;
        s->committed = 1;
        p->gap.n = 0;
        emit(fn, arg, CHAT_PIECE_CALL, p->calls, s->name.s, s->name.n);
    }
    if (s->str_value) {
        if (ended && s->args_sent == 0) {
            size_t n;
            char *t = args_text(s, &n);
            emit(fn, arg, CHAT_PIECE_ARGS, p->calls, t, n);
            free(t);
            s->args_sent = 1;
        }
        return;
    }
    emit(fn, arg, CHAT_PIECE_ARGS, p->calls, s->args.s + s->args_sent, s->args.n - s->args_sent);
    s->args_sent = s->args.n;
}

static void call_begin(struct chat_output *p, int marker_shown)
{
    scan_free(&p->sc);
    p->raw.n = 0;
    p->marker_shown = marker_shown;
    p->mode = M_CALL;
}

/* Not a call after all: its marker and bytes are content, read again. */
static void call_undo(struct chat_output *p, chat_piece_fn fn, void *arg)
{
    emit(fn, arg, CHAT_PIECE_CONTENT, 0, p->gap.s, p->gap.n);
    p->gap.n = 0;
    if (p->marker_shown)
        emit(fn, arg, CHAT_PIECE_CONTENT, 0, open_tag(p), strlen(open_tag(p)));
    struct sbuf back = {0};
    sb_add(&back, p->raw.s ? p->raw.s : "", p->raw.n);
    sb_add(&back, p->in.s ? p->in.s : "", p->in.n);
    free(p->in.s);
    p->in = back;
    p->raw.n = 0;
    scan_free(&p->sc);
    p->at_start = 0;
    p->mode = M_CONTENT;
}

static void call_drop(struct chat_output *p)
{
    scan_free(&p->sc);
    p->raw.n = 0;
    p->gap.n = 0;
    p->in.n = 0;
    p->mode = M_CONTENT;
}

static void call_end(struct chat_output *p)
{
    p->calls++;
    scan_free(&p->sc);
    p->raw.n = 0;
    p->mode = p->o.format->calls == CHAT_CALLS_TAGGED ? M_CALL_END : M_BETWEEN;
}

/* ---- the states ---- */

/* Each returns 1 when it changed state (run again), 0 when it needs more text. */

static int st_start(struct chat_output *p, int final)
{
    if (!p->o.reasoning) {
        p->mode = M_CONTENT;
        return 1;
    }
    size_t k = 0;
    while (k < p->in.n && blank(p->in.s[k]))
        k++;
    const char *open = p->o.format->think_open;
    size_t m = strlen(open);
    if (p->in.n - k >= m && !memcmp(p->in.s + k, open, m)) {
        sb_drop(&p->in, k + m);
        p->mode = M_REASON;
        return 1;
    }
    if (!final && prefix_of(p->in.s + k, p->in.n - k, open))
        return 0;
    p->mode = M_CONTENT;
    return 1;
}

static int st_reason(struct chat_output *p, chat_piece_fn fn, void *arg, int final)
{
    if (p->reason_open) {
        size_t k = 0;
        while (k < p->in.n && (p->in.s[k] == '\n' || p->in.s[k] == '\r'))
            k++;
        sb_drop(&p->in, k);
        if (p->in.n == 0)
            return 0;
        p->reason_open = 0;
    }
    const char *close = p->o.format->think_close;
    const char *at = find(p->in.s, p->in.n, close);
    size_t keep = at ? (size_t)(at - p->in.s) : p->in.n - (final ? 0 : partial(p->in.s, p->in.n, close));
    size_t out = keep;
    if (at || !final)
        while (out > 0 && (p->in.s[out - 1] == '\n' || p->in.s[out - 1] == '\r'))
            out--;
    emit(fn, arg, CHAT_PIECE_REASONING, 0, p->in.s, out);
    if (at) {
        sb_drop(&p->in, keep + strlen(close));
        p->mode = M_AFTER_REASON;
        return 1;
    }
    sb_drop(&p->in, final ? p->in.n : out);
    return 0;
}

static int st_after_reason(struct chat_output *p, int final)
{
    size_t k = 0;
    while (k < p->in.n && blank(p->in.s[k]))
        k++;
    sb_drop(&p->in, k);
    if (p->in.n == 0 && !final)
        return 0;
    p->mode = M_CONTENT;
    return 1;
}

static int st_content(struct chat_output *p, chat_piece_fn fn, void *arg, int final)
{
    const int calls = p->o.calls;
    const int llama = p->o.format->calls == CHAT_CALLS_LLAMA3;
    if (calls && llama && p->at_start) {
        size_t k = 0;
        while (k < p->in.n && blank(p->in.s[k]))
            k++;
        if (k == p->in.n && !final)
            return 0;
        p->at_start = 0;
        if (k < p->in.n && p->in.s[k] == '{') {
            p->gap.n = 0;
            sb_add(&p->gap, p->in.s, k);
            sb_drop(&p->in, k);
            call_begin(p, 0);
            return 1;
        }
    }
    const char *tag = calls ? open_tag(p) : NULL, *py = calls && llama ? CHAT_PYTHON_TAG : NULL;
    const char *a = find(p->in.s, p->in.n, tag), *b = find(p->in.s, p->in.n, py);
    const char *at = a && (!b || a < b) ? a : b;
    if (at) {
        size_t n = (size_t)(at - p->in.s);
        while (n > 0 && blank(p->in.s[n - 1])) /* blank space before a call */
            n--;
        emit(fn, arg, CHAT_PIECE_CONTENT, 0, p->in.s, n);
        p->gap.n = 0;
        sb_add(&p->gap, p->in.s + n, (size_t)(at - p->in.s) - n);
        sb_drop(&p->in, (size_t)(at - p->in.s) + strlen(at == a ? tag : py));
        call_begin(p, at == a);
        return 1;
    }
    size_t n = p->in.n;
    if (!final && calls) {
        size_t h1 = partial(p->in.s, n, tag), h2 = partial(p->in.s, n, py);
        n -= h1 > h2 ? h1 : h2;
        while (n > 0 && blank(p->in.s[n - 1]))
            n--;
    }
    if (final && calls && p->calls > 0)
        while (n > 0 && blank(p->in.s[n - 1]))
            n--;
    if (n > 0)
        p->at_start = 0;
    emit(fn, arg, CHAT_PIECE_CONTENT, 0, p->in.s, n);
    sb_drop(&p->in, final ? p->in.n : n);
    return 0;
}

static int st_call(struct chat_output *p, chat_piece_fn fn, void *arg, int final)
{
    struct scan *s = &p->sc;
    size_t i = 0;
    if (s->phase == P_OPEN && !p->marker_shown && p->o.format->calls == CHAT_CALLS_LLAMA3 && p->raw.n == 0) {
        /* after <|python_tag|>: JSON, or the built-in tools' call form */
        size_t k = 0;
        while (k < p->in.n && blank(p->in.s[k]))
            k++;
        if (k == p->in.n && !final)
            return 0;
        if (k < p->in.n && p->in.s[k] != '{') {
            p->mode = M_PYCALL;
            return 1;
        }
    }
    for (; i < p->in.n && s->phase != P_DONE && s->phase != P_FAIL; i++) {
        scan_byte(s, p->in.s[i]);
        if (s->phase != P_FAIL)
            sb_add(&p->raw, p->in.s + i, 1);
    }
    if (s->phase == P_FAIL && !s->committed) {
        sb_drop(&p->in, i - 1); /* the failing byte stays, after raw */
        call_undo(p, fn, arg);
        return 1;
    }
    const int done = s->phase == P_DONE && s->have_name && s->have_args;
    if (s->phase == P_DONE && !done) {
        sb_drop(&p->in, i);
        call_undo(p, fn, arg);
        return 1;
    }
    sb_drop(&p->in, s->phase == P_FAIL ? i - 1 : i);
    call_progress(p, fn, arg, done || s->phase == P_FAIL || final);
    if (done || s->phase == P_FAIL) {
        call_end(p);
        return 1;
    }
    if (final) { /* cut off: a call once its name is known */
        if (!s->committed && s->have_name) {
            s->committed = 1;
            p->gap.n = 0;
            emit(fn, arg, CHAT_PIECE_CALL, p->calls, s->name.s, s->name.n);
        }
        if (s->committed)
            call_end(p);
        else if (p->o.calls_held) /* a call cut before its name: nothing to show */
            call_drop(p);
        else
            call_undo(p, fn, arg);
        return 1;
    }
    return 0;
}

static int st_call_end(struct chat_output *p, int final)
{
    size_t k = 0;
    while (k < p->in.n && blank(p->in.s[k]))
        k++;
    const char *close = close_tag();
    size_t m = strlen(close);
    if (p->in.n - k >= m && !memcmp(p->in.s + k, close, m)) {
        sb_drop(&p->in, k + m);
        p->mode = M_BETWEEN;
        return 1;
    }
    if (prefix_of(p->in.s + k, p->in.n - k, close)) {
        if (!final)
            return 0;
        p->in.n = 0; /* the close marker, cut off */
    }
    p->mode = M_BETWEEN;
    return 1;
}

static int st_between(struct chat_output *p, int final)
{
    const int llama = p->o.format->calls == CHAT_CALLS_LLAMA3;
    size_t k = 0;
    while (k < p->in.n && (blank(p->in.s[k]) || (llama && p->in.s[k] == ';')))
        k++;
    sb_drop(&p->in, k);
    if (p->in.n == 0)
        return final ? (p->mode = M_CONTENT, 1) : 0;
    if (llama && p->in.s[0] == '{') {
        call_begin(p, 0);
        p->raw.n = 0;
        return 1;
    }
    const char *tag = open_tag(p);
    if (tag && p->in.n >= strlen(tag) && !memcmp(p->in.s, tag, strlen(tag))) {
        sb_drop(&p->in, strlen(tag));
        call_begin(p, 1);
        return 1;
    }
    if (tag && prefix_of(p->in.s, p->in.n, tag)) {
        if (!final)
            return 0;
        p->in.n = 0; /* the next call's marker, cut off */
        return 1;
    }
    p->at_start = 0;
    p->mode = M_CONTENT;
    return 1;
}

/* ---- the built-in tools' call form: name.call(key="value", ...) ---- */

static void skip_blanks(const char **s, const char *end)
{
    while (*s < end && blank(**s))
        (*s)++;
}

static int ident_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

/* A Python literal: a quoted string, a number, True / False / None. */
static json_t *py_value(const char **s, const char *end)
{
    const char *c = *s;
    if (c < end && (*c == '"' || *c == '\'')) {
        char q = *c++;
        struct sbuf b = {0};
        sb_add(&b, "", 0);
        while (c < end && *c != q) {
            if (*c == '\\' && c + 1 < end) {
                c++;
                char e = *c == 'n' ? '\n' : *c == 't' ? '\t' : *c;
                sb_add(&b, &e, 1);
            } else
                sb_add(&b, c, 1);
            c++;
        }
        if (c == end) {
            free(b.s);
            return NULL;
        }
        *s = c + 1;
        json_t *v = json_stringn(b.s, b.n);
        free(b.s);
        return v;
    }
    static const struct {
        const char *word;
        int kind;
    } words[] = {{"True", 1}, {"False", 0}, {"None", 2}};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(end - c) >= n && !memcmp(c, words[i].word, n)) {
            *s = c + n;
            return words[i].kind == 2 ? json_null() : json_boolean(words[i].kind);
        }
    }
    const char *e = c;
    while (e < end && (strchr("+-.eE", *e) || (*e >= '0' && *e <= '9')))
        e++;
    if (e == c)
        return NULL;
    json_t *v = json_loadb(c, (size_t)(e - c), JSON_DECODE_ANY, NULL);
    if (v && !json_is_number(v)) {
        json_decref(v);
        return NULL;
    }
    *s = e;
    return v;
}

/* name(...) or name.call(...) into *name and the arguments object; 0 or -1. */
static int py_call(const char *s, size_t n, struct sbuf *name, json_t **args)
{
    const char *end = s + n;
    skip_blanks(&s, end);
    const char *a = s;
    while (s < end && (ident_char(*s, s == a) || (*s == '.' && s > a)))
        s++;
    if (s == a || s == end || *s != '(')
        return -1;
    size_t len = (size_t)(s - a);
    if (len > 5 && !memcmp(s - 5, ".call", 5))
        len -= 5;
    s++;
    json_t *obj = json_object();
    for (;;) {
        skip_blanks(&s, end);
        if (s < end && *s == ')')
            break;
        const char *k = s;
        while (s < end && ident_char(*s, s == k))
            s++;
        const char *ke = s;
        skip_blanks(&s, end);
        json_t *v = NULL;
        if (ke > k && s < end && *s == '=') {
            s++;
            skip_blanks(&s, end);
            v = py_value(&s, end);
        }
        if (!v) {
            json_decref(obj);
            return -1;
        }
        json_object_setn_new(obj, k, (size_t)(ke - k), v);
        skip_blanks(&s, end);
        if (s < end && *s == ',')
            s++;
        else if (!(s < end && *s == ')')) {
            json_decref(obj);
            return -1;
        }
    }
    s++;
    skip_blanks(&s, end);
    if (s != end) {
        json_decref(obj);
        return -1;
    }
    sb_add(name, a, len);
    *args = obj;
    return 0;
}

static int st_pycall(struct chat_output *p, chat_piece_fn fn, void *arg, int final)
{
    if (!final)
        return 0;
    struct sbuf name = {0};
    json_t *args = NULL;
    if (py_call(p->in.s ? p->in.s : "", p->in.n, &name, &args) == 0) {
        char *js = json_dumps(args, JSON_COMPACT | JSON_ENSURE_ASCII);
        emit(fn, arg, CHAT_PIECE_CALL, p->calls, name.s, name.n);
        emit(fn, arg, CHAT_PIECE_ARGS, p->calls, js, strlen(js));
        free(js);
        json_decref(args);
        p->calls++;
        p->in.n = 0;
    }
    free(name.s);
    p->at_start = 0;
    p->mode = M_CONTENT; /* not a call: the text is content */
    return 1;
}

static void run(struct chat_output *p, chat_piece_fn fn, void *arg, int final)
{
    for (int again = 1; again;) {
        switch (p->mode) {
        case M_START: again = st_start(p, final); break;
        case M_REASON: again = st_reason(p, fn, arg, final); break;
        case M_AFTER_REASON: again = st_after_reason(p, final); break;
        case M_CONTENT: again = st_content(p, fn, arg, final); break;
        case M_CALL: again = st_call(p, fn, arg, final); break;
        case M_CALL_END: again = st_call_end(p, final); break;
        case M_BETWEEN: again = st_between(p, final); break;
        case M_PYCALL: again = st_pycall(p, fn, arg, final); break;
        }
        if (final && p->mode == M_CONTENT && p->in.n == 0)
            break;
    }
}

void chat_output_feed(struct chat_output *p, const char *s, size_t n, chat_piece_fn fn, void *arg)
{
    sb_add(&p->in, s, n);
    run(p, fn, arg, 0);
}

void chat_output_finish(struct chat_output *p, chat_piece_fn fn, void *arg) { run(p, fn, arg, 1); }

/* ---- a whole message ---- */

static void append(char **s, size_t *n, const char *t, size_t k)
{
    *s = xrealloc(*s, *n + k + 1);
    memcpy(*s + *n, t, k);
    *n += k;
    (*s)[*n] = '\0';
}

void chat_message_add(void *msg, const struct chat_piece *p)
{
    struct chat_message *m = msg;
    switch (p->kind) {
    case CHAT_PIECE_CONTENT: append(&m->content, &m->content_len, p->text, p->len); break;
    case CHAT_PIECE_REASONING: append(&m->reasoning, &m->reasoning_len, p->text, p->len); break;
    case CHAT_PIECE_CALL: {
        m->calls = xrealloc(m->calls, (size_t)(m->n_calls + 1) * sizeof *m->calls);
        struct chat_message_call *c = &m->calls[m->n_calls++];
        c->name = xmalloc(p->len + 1);
        memcpy(c->name, p->text, p->len);
        c->name[p->len] = '\0';
        c->args = xstrdup("");
        c->args_len = 0;
        break;
    }
    case CHAT_PIECE_ARGS:
        if (p->call < m->n_calls)
            append(&m->calls[p->call].args, &m->calls[p->call].args_len, p->text, p->len);
        break;
    }
}

void chat_message_free(struct chat_message *m)
{
    free(m->content), free(m->reasoning);
    for (int i = 0; i < m->n_calls; i++)
        free(m->calls[i].name), free(m->calls[i].args);
    free(m->calls);
    memset(m, 0, sizeof *m);
}
