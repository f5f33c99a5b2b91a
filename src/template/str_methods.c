/* Python's str methods that search a string or cut it into pieces:
 * startswith/endswith (tuples, start/end), find/rfind/index/rindex/count,
 * split/rsplit (whitespace runs or a separator, maxsplit), splitlines,
 * partition/rpartition, strip/lstrip/rstrip (chars), replace (count), join.
 * Indices are code points, as in Python. The methods that re-case, pad or
 * classify a string are in str_methods_format.c. */
#include <string.h>

#include "template/internal.h"

#define SELF_S (self.u.s->s)
#define SELF_N (self.u.s->len)

static int opt_str(struct rctx *c, int line, const char *fn, struct tval v, const char **s, size_t *n)
{
    if (v.k == TV_MISSING || v.k == TV_NONE) {
        *s = NULL;
        *n = 0;
        return 0;
    }
    if (v.k != TV_STR)
        return tmpl_err(c, line, "%s arg must be None or str", fn);
    *s = v.u.s->s;
    *n = v.u.s->len;
    return 0;
}

static int need_str(struct rctx *c, int line, const char *fn, struct tval v)
{
    if (v.k == TV_STR)
        return 0;
    if (v.k == TV_MISSING)
        return tmpl_err(c, line, "%s() missing required argument", fn);
    if (v.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, v);
    return tmpl_err(c, line, "%s() argument must be str, not %s", fn, tmpl_value_type_name(v));
}

/* Python's [start:end] on a string, as byte offsets. */
static int byte_range(struct rctx *c, int line, struct tval self, struct tval st, struct tval en, size_t *a,
                      size_t *z)
{
    int64_t len = (int64_t)self.u.s->ncp, s0 = 0, e0 = len;
    if (st.k != TV_MISSING && st.k != TV_NONE && tmpl_arg_int(c, line, "slice", st, &s0))
        return -1;
    if (en.k != TV_MISSING && en.k != TV_NONE && tmpl_arg_int(c, line, "slice", en, &e0))
        return -1;
    if (s0 < 0)
        s0 = s0 + len < 0 ? 0 : s0 + len;
    if (e0 < 0)
        e0 = e0 + len < 0 ? 0 : e0 + len;
    if (s0 > len)
        s0 = len;
    if (e0 > len)
        e0 = len;
    *a = utf8_offset(SELF_S, SELF_N, (size_t)s0);
    *z = e0 <= s0 ? *a : utf8_offset(SELF_S, SELF_N, (size_t)e0);
    return 0;
}

static int m_startsend(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out,
                       int end)
{
    static const char *const names[] = {"prefix", "start", "end"};
    struct tval s[3];
    const char *fn = end ? "endswith" : "startswith";
    size_t lo, hi;
    if (tmpl_args_bind(c, line, fn, a, names, 3, s) || byte_range(c, line, self, s[1], s[2], &lo, &hi))
        return -1;
    const struct tval *cands = &s[0];
    size_t nc = 1;
    if (s[0].k == TV_LIST && s[0].u.l->sub == TL_TUPLE) {
        cands = s[0].u.l->v;
        nc = s[0].u.l->n;
    }
    int res = 0;
    for (size_t i = 0; i < nc && !res; i++) {
        if (cands[i].k != TV_STR)
            return tmpl_err(c, line, "%s first arg must be str or a tuple of str, not %s", fn,
                            tmpl_value_type_name(cands[i]));
        size_t pl = cands[i].u.s->len;
        if (pl <= hi - lo)
            res = !memcmp(SELF_S + (end ? hi - pl : lo), cands[i].u.s->s, pl);
    }
    *out = tmpl_value_bool(res);
    return 0;
}

static int m_startswith(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_startsend(c, line, self, a, out, 0);
}

static int m_endswith(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_startsend(c, line, self, a, out, 1);
}

static int m_strip_common(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out,
                          int which, const char *fn)
{
    static const char *const names[] = {"chars"};
    struct tval s[1];
    const char *chars = NULL;
    size_t nchars = 0, lo, hi;
    if (tmpl_args_bind(c, line, fn, a, names, 1, s) || opt_str(c, line, fn, s[0], &chars, &nchars))
        return -1;
    tmpl_strip(SELF_S, SELF_N, chars, nchars, which, &lo, &hi);
    *out = tmpl_value_str(SELF_S + lo, hi - lo);
    return 0;
}

static int m_strip(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_strip_common(c, line, self, a, out, 3, "strip");
}

static int m_lstrip(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_strip_common(c, line, self, a, out, 1, "lstrip");
}

static int m_rstrip(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_strip_common(c, line, self, a, out, 2, "rstrip");
}

static size_t ws_run(const char *s, size_t n, size_t i)
{
    while (i < n) {
        size_t j = i;
        if (!tmpl_isspace(utf8_next(s, n, &j)))
            break;
        i = j;
    }
    return i;
}

static size_t nonws_run(const char *s, size_t n, size_t i)
{
    while (i < n) {
        size_t j = i;
        if (tmpl_isspace(utf8_next(s, n, &j)))
            break;
        i = j;
    }
    return i;
}

static void push_str(struct tval l, const char *s, size_t n)
{
    tmpl_list_push(l.u.l, tmpl_value_str(s, n));
}

static void reverse_list(struct tlist *l)
{
    for (size_t i = 0; i < l->n / 2; i++) {
        struct tval t = l->v[i];
        l->v[i] = l->v[l->n - 1 - i];
        l->v[l->n - 1 - i] = t;
    }
}

/* Last occurrence of needle in s[0..n) */
static const char *rmemmem(const char *s, size_t n, const char *needle, size_t nn)
{
    if (nn > n)
        return NULL;
    for (size_t i = n - nn + 1; i-- > 0;)
        if (!memcmp(s + i, needle, nn))
            return s + i;
    return NULL;
}

static int m_split_common(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out,
                          int right)
{
    static const char *const names[] = {"sep", "maxsplit"};
    struct tval s[2];
    const char *sep = NULL;
    size_t nsep = 0;
    int64_t maxsplit = -1;
    const char *fn = right ? "rsplit" : "split";
    if (tmpl_args_bind(c, line, fn, a, names, 2, s) || opt_str(c, line, fn, s[0], &sep, &nsep) ||
        (s[1].k != TV_MISSING && tmpl_arg_int(c, line, fn, s[1], &maxsplit)))
        return -1;
    if (sep && !nsep)
        return tmpl_err(c, line, "empty separator");
    struct tval l = tmpl_value_list_new(TL_LIST, 4);
    const char *p = SELF_S;
    size_t n = SELF_N;
    if (!sep) {
        if (!right) {
            size_t i = ws_run(p, n, 0);
            while (i < n) {
                if (maxsplit >= 0 && (int64_t)l.u.l->n == maxsplit) {
                    push_str(l, p + i, n - i);
                    break;
                }
                size_t j = nonws_run(p, n, i);
                push_str(l, p + i, j - i);
                i = ws_run(p, n, j);
            }
        } else {
            size_t end = n;
            for (;;) {
                while (end > 0) { /* skip trailing whitespace */
                    size_t q = utf8_prev(p, end), j = q;
                    if (!tmpl_isspace(utf8_next(p, n, &j)))
                        break;
                    end = q;
                }
                if (!end)
                    break;
                if (maxsplit >= 0 && (int64_t)l.u.l->n == maxsplit) {
                    push_str(l, p, end);
                    break;
                }
                size_t start = end;
                while (start > 0) {
                    size_t q = utf8_prev(p, start), j = q;
                    if (tmpl_isspace(utf8_next(p, n, &j)))
                        break;
                    start = q;
                }
                push_str(l, p + start, end - start);
                end = start;
            }
            reverse_list(l.u.l);
        }
        *out = l;
        return 0;
    }
    if (!right) {
        size_t i = 0;
        for (;;) {
            const char *hit =
                maxsplit >= 0 && (int64_t)l.u.l->n >= maxsplit ? NULL : memmem(p + i, n - i, sep, nsep);
            if (!hit) {
                push_str(l, p + i, n - i);
                break;
            }
            push_str(l, p + i, (size_t)(hit - (p + i)));
            i = (size_t)(hit - p) + nsep;
        }
    } else {
        size_t end = n;
        for (;;) {
            const char *hit =
                maxsplit >= 0 && (int64_t)l.u.l->n >= maxsplit ? NULL : rmemmem(p, end, sep, nsep);
            if (!hit) {
                push_str(l, p, end);
                break;
            }
            size_t at = (size_t)(hit - p);
            push_str(l, p + at + nsep, end - at - nsep);
            end = at;
        }
        reverse_list(l.u.l);
    }
    *out = l;
    return 0;
}

static int m_split(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_split_common(c, line, self, a, out, 0);
}

static int m_rsplit(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_split_common(c, line, self, a, out, 1);
}

int tmpl_str_replace(struct rctx *c, int line, struct tval self, struct tval old, struct tval neu,
                     int64_t count, struct tval *out)
{
    (void)c;
    (void)line;
    struct sbuf b = {0};
    const char *p = SELF_S, *o = old.u.s->s, *nw = neu.u.s->s;
    size_t n = SELF_N, no = old.u.s->len, nn = neu.u.s->len;
    if (!no) {
        size_t i = 0;
        int64_t done = 0;
        while (1) {
            if (count < 0 || done < count) {
                tmpl_strbuf_put(&b, nw, nn);
                done++;
            }
            if (i >= n)
                break;
            size_t j = i;
            utf8_next(p, n, &j);
            tmpl_strbuf_put(&b, p + i, j - i);
            i = j;
        }
    } else {
        size_t i = 0;
        int64_t done = 0;
        for (;;) {
            const char *hit = count >= 0 && done >= count ? NULL : memmem(p + i, n - i, o, no);
            if (!hit) {
                tmpl_strbuf_put(&b, p + i, n - i);
                break;
            }
            tmpl_strbuf_put(&b, p + i, (size_t)(hit - (p + i)));
            tmpl_strbuf_put(&b, nw, nn);
            i = (size_t)(hit - p) + no;
            done++;
            if (b.n > TMPL_MAX_STR)
                break;
        }
    }
    if (b.n > TMPL_MAX_STR) {
        tmpl_strbuf_free(&b);
        return tmpl_err(c, line, "replace() result too large");
    }
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

static int m_replace(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    static const char *const names[] = {"old", "new", "count"};
    struct tval s[3];
    int64_t count = -1;
    if (tmpl_args_bind(c, line, "replace", a, names, 3, s) || need_str(c, line, "replace", s[0]) ||
        need_str(c, line, "replace", s[1]) ||
        (s[2].k != TV_MISSING && tmpl_arg_int(c, line, "replace", s[2], &count)))
        return -1;
    return tmpl_str_replace(c, line, self, s[0], s[1], count, out);
}

enum { FIND_FIND, FIND_RFIND, FIND_INDEX, FIND_RINDEX, FIND_COUNT };

static int m_find_common(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out,
                         int mode)
{
    static const char *const names[] = {"sub", "start", "end"};
    static const char *const fns[] = {"find", "rfind", "index", "rindex", "count"};
    struct tval s[3];
    size_t lo, hi;
    if (tmpl_args_bind(c, line, fns[mode], a, names, 3, s) || need_str(c, line, fns[mode], s[0]) ||
        byte_range(c, line, self, s[1], s[2], &lo, &hi))
        return -1;
    const char *sub = s[0].u.s->s;
    size_t ns = s[0].u.s->len;
    if (mode == FIND_COUNT) {
        int64_t cnt = 0;
        if (!ns) {
            cnt = (int64_t)utf8_count(SELF_S + lo, hi - lo) + 1;
        } else {
            for (size_t i = lo; i + ns <= hi;) {
                const char *h = memmem(SELF_S + i, hi - i, sub, ns);
                if (!h)
                    break;
                cnt++;
                i = (size_t)(h - SELF_S) + ns;
            }
        }
        *out = tmpl_value_int(cnt);
        return 0;
    }
    const char *h = NULL;
    if (ns <= hi - lo)
        h = mode == FIND_FIND || mode == FIND_INDEX ? memmem(SELF_S + lo, hi - lo, sub, ns)
                                                    : rmemmem(SELF_S + lo, hi - lo, sub, ns);
    if (!h && ns == 0 && lo <= hi)
        h = mode == FIND_FIND || mode == FIND_INDEX ? SELF_S + lo : SELF_S + hi;
    if (!h) {
        if (mode == FIND_INDEX || mode == FIND_RINDEX)
            return tmpl_err(c, line, "substring not found");
        *out = tmpl_value_int(-1);
        return 0;
    }
    *out = tmpl_value_int((int64_t)utf8_count(SELF_S, (size_t)(h - SELF_S)));
    return 0;
}

#define FIND_METHOD(fname, mode)                                                                             \
    static int fname(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)    \
    {                                                                                                        \
        return m_find_common(c, line, self, a, out, mode);                                                   \
    }
FIND_METHOD(m_find, FIND_FIND)
FIND_METHOD(m_rfind, FIND_RFIND)
FIND_METHOD(m_index, FIND_INDEX)
FIND_METHOD(m_rindex, FIND_RINDEX)
FIND_METHOD(m_count, FIND_COUNT)

static int m_join(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    if (a->npos != 1 || a->nkw)
        return tmpl_err(c, line, "join() takes exactly one argument");
    struct tlist *items;
    if (tmpl_eval_iterate(c, line, a->pos[0], &items))
        return -1;
    struct tval il = {.k = TV_LIST};
    il.u.l = items;
    struct sbuf b = {0};
    for (size_t i = 0; i < items->n; i++) {
        if (items->v[i].k != TV_STR) {
            tmpl_strbuf_free(&b);
            tmpl_value_release(il);
            return tmpl_err(c, line, "sequence item %zu: expected str instance, %s found", i,
                            tmpl_value_type_name(items->v[i]));
        }
        if (i)
            tmpl_strbuf_put(&b, SELF_S, SELF_N);
        tmpl_strbuf_put(&b, items->v[i].u.s->s, items->v[i].u.s->len);
    }
    tmpl_value_release(il);
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

static void add_line(void *ctx, const char *s, size_t n) { push_str(*(struct tval *)ctx, s, n); }

static int m_splitlines(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    static const char *const names[] = {"keepends"};
    struct tval s[1];
    if (tmpl_args_bind(c, line, "splitlines", a, names, 1, s))
        return -1;
    if (s[0].k != TV_MISSING && tmpl_value_truthy(s[0]))
        return tmpl_err(c, line, "splitlines(keepends=True) is not supported");
    struct tval l = tmpl_value_list_new(TL_LIST, 4);
    tmpl_splitlines(SELF_S, SELF_N, add_line, &l);
    *out = l;
    return 0;
}

static int m_partition_common(struct rctx *c, int line, struct tval self, const struct targs *a,
                              struct tval *out, int right)
{
    if (a->npos != 1 || a->nkw || need_str(c, line, "partition", a->pos[0]))
        return a->npos != 1 || a->nkw ? tmpl_err(c, line, "partition() takes exactly one argument") : -1;
    const struct tstr *sep = a->pos[0].u.s;
    if (!sep->len)
        return tmpl_err(c, line, "empty separator");
    const char *h =
        right ? rmemmem(SELF_S, SELF_N, sep->s, sep->len) : memmem(SELF_S, SELF_N, sep->s, sep->len);
    struct tval t = tmpl_value_list_new(TL_TUPLE, 3);
    if (!h) {
        push_str(t, right ? "" : SELF_S, right ? 0 : SELF_N);
        push_str(t, "", 0);
        push_str(t, right ? SELF_S : "", right ? SELF_N : 0);
    } else {
        size_t at = (size_t)(h - SELF_S);
        push_str(t, SELF_S, at);
        push_str(t, sep->s, sep->len);
        push_str(t, SELF_S + at + sep->len, SELF_N - at - sep->len);
    }
    *out = t;
    return 0;
}

static int m_partition(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_partition_common(c, line, self, a, out, 0);
}

static int m_rpartition(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_partition_common(c, line, self, a, out, 1);
}

const struct method_def tmpl_str_methods[] = {
    {"startswith", m_startswith},
    {"endswith", m_endswith},
    {"split", m_split},
    {"rsplit", m_rsplit},
    {"strip", m_strip},
    {"lstrip", m_lstrip},
    {"rstrip", m_rstrip},
    {"replace", m_replace},
    {"find", m_find},
    {"rfind", m_rfind},
    {"index", m_index},
    {"rindex", m_rindex},
    {"count", m_count},
    {"join", m_join},
    {"splitlines", m_splitlines},
    {"partition", m_partition},
    {"rpartition", m_rpartition},
};

const size_t tmpl_n_str_methods = sizeof tmpl_str_methods / sizeof tmpl_str_methods[0];
