/* Numbers for the JSON Schema front end: exact decimals for the bounds,
 * and the grammar of the JSON number texts within bounds.
 *
 * Bounds are exact on the decimal text: a text is the sign, an integer
 * part I and a fraction F, and value comparisons split on I (below,
 * between, or equal to a bound's integer part) and then walk F digit by
 * digit against the bound's fraction, the classic digit-range automaton
 * (as regex engines build [lo-hi] numeric ranges) extended past the
 * decimal point. A negative text "-t" is the non-negative range of t with
 * the bounds mirrored, so "-0" is in exactly when 0 is. An exponent would
 * make the comparison non-local, so a bounded number is written without
 * one; "integer" is the plain integer form. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_internal.h"

/* --- decimals --------------------------------------------------------------- */

static void dec_set(struct dec *d, int neg, const char *ip, size_t ipn, const char *fp, size_t fpn)
{
    while (ipn > 1 && ip[0] == '0')
        ip++, ipn--;
    while (fpn > 0 && fp[fpn - 1] == '0')
        fpn--;
    if (ipn == 0)
        ip = "0", ipn = 1;
    d->ip = xmalloc(ipn + 1);
    memcpy(d->ip, ip, ipn);
    d->ip[ipn] = '\0';
    d->fp = xmalloc(fpn + 1);
    memcpy(d->fp, fp, fpn);
    d->fp[fpn] = '\0';
    d->neg = neg && !(strcmp(d->ip, "0") == 0 && fpn == 0); /* -0 is 0 */
}

/* d from "[-]D.DDDe[+-]X" (printf's %e): digits and a decimal exponent. */
static void dec_from_sci(struct dec *d, const char *s)
{
    int neg = *s == '-';
    if (neg)
        s++;
    char digits[64];
    size_t k = 0;
    for (; *s && *s != 'e' && *s != 'E'; s++)
        if (*s >= '0' && *s <= '9' && k < sizeof(digits))
            digits[k++] = *s;
    long e = *s ? strtol(s + 1, NULL, 10) : 0;
    long pos = 1 + e; /* digits before the decimal point */
    if (pos <= 0) {
        size_t z = (size_t)-pos;
        char *fp = xmalloc(z + k + 1);
        memset(fp, '0', z);
        memcpy(fp + z, digits, k);
        dec_set(d, neg, "0", 1, fp, z + k);
        free(fp);
    } else if ((size_t)pos >= k) {
        char *ip = xmalloc((size_t)pos + 1);
        memcpy(ip, digits, k);
        memset(ip + k, '0', (size_t)pos - k);
        dec_set(d, neg, ip, (size_t)pos, "", 0);
        free(ip);
    } else {
        dec_set(d, neg, digits, (size_t)pos, digits + pos, k - (size_t)pos);
    }
}

/* The shortest "%e" form of x that reads back as x (what Python's repr
 * writes), so a bound 0.1 is the decimal 0.1. */
static void shortest(double x, char *buf, size_t n)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*e", p - 1, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

static void dec_of_ull(struct dec *d, int neg, unsigned long long u)
{
    char buf[32];
    int k = snprintf(buf, sizeof(buf), "%llu", u);
    dec_set(d, neg, buf, (size_t)k, "", 0);
}

static unsigned long long abs_int(json_int_t v)
{
    return v < 0 ? (unsigned long long)(-(v + 1)) + 1 : (unsigned long long)v;
}

void js_dec_of(const json_t *n, struct dec *d)
{
    if (json_is_integer(n)) {
        json_int_t v = json_integer_value(n);
        dec_of_ull(d, v < 0, abs_int(v));
        return;
    }
    char buf[64];
    shortest(json_real_value(n), buf, sizeof(buf));
    dec_from_sci(d, buf);
}

void js_dec_free(struct dec *d)
{
    free(d->ip);
    free(d->fp);
    d->ip = d->fp = NULL;
}

void js_dec_copy(struct dec *dst, const struct dec *src)
{
    dst->neg = src->neg;
    dst->ip = xstrdup(src->ip);
    dst->fp = xstrdup(src->fp);
}

static int dec_is_zero(const struct dec *d) { return strcmp(d->ip, "0") == 0 && d->fp[0] == '\0'; }

/* Compares magnitudes. */
static int mag_cmp(const struct dec *a, const struct dec *b)
{
    size_t la = strlen(a->ip), lb = strlen(b->ip);
    if (la != lb)
        return la < lb ? -1 : 1;
    int c = strcmp(a->ip, b->ip);
    if (c)
        return c < 0 ? -1 : 1;
    for (size_t i = 0;; i++) {
        char x = a->fp[i] ? a->fp[i] : '0', y = b->fp[i] ? b->fp[i] : '0';
        if (x != y)
            return x < y ? -1 : 1;
        if (!a->fp[i] && !b->fp[i])
            return 0;
        if (!a->fp[i] || !b->fp[i]) { /* one ended: the other's rest decides */
            const char *r = a->fp[i] ? a->fp + i : b->fp + i;
            while (*r == '0')
                r++;
            if (!*r)
                return 0;
            return a->fp[i] ? 1 : -1;
        }
    }
}

int js_dec_cmp(const struct dec *a, const struct dec *b)
{
    if (a->neg != b->neg)
        return a->neg ? -1 : 1;
    int c = mag_cmp(a, b);
    return a->neg ? -c : c;
}

void js_bound_tighten(struct bound *b, const struct dec *v, int strict, int lower)
{
    if (b->set) {
        int c = js_dec_cmp(v, &b->v);
        if (lower ? c < 0 : c > 0)
            return;
        if (c == 0) {
            b->strict |= strict;
            return;
        }
        js_dec_free(&b->v);
    }
    js_dec_copy(&b->v, v);
    b->set = 1;
    b->strict = strict;
}

void js_bound_free(struct bound *b)
{
    if (b->set)
        js_dec_free(&b->v);
    b->set = 0;
}

int js_dec_in(const struct dec *v, const struct bound *lo, const struct bound *hi)
{
    if (lo->set) {
        int c = js_dec_cmp(v, &lo->v);
        if (c < 0 || (c == 0 && lo->strict))
            return 0;
    }
    if (hi->set) {
        int c = js_dec_cmp(v, &hi->v);
        if (c > 0 || (c == 0 && hi->strict))
            return 0;
    }
    return 1;
}

/* --- digit strings ---------------------------------------------------------- */

static int digits(struct js *js, int lo, int hi) /* one digit of [lo, hi] (as '0'..'9') */
{
    return lo > hi ? gx_nothing(js->g) : gx_byte_range(js->g, (unsigned)lo, (unsigned)hi);
}

static int any_digits(struct js *js, int min, int max)
{
    return gx_repeat(js->g, digits(js, '0', '9'), min, max);
}

static int all_are(const char *s, size_t n, char c)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != c)
            return 0;
    return 1;
}

/* Fixed-length suffixes: the n - k digits x with x >= s[k..n) (ge) or
 * x <= s[k..n). */
static int fixed_ge(struct js *js, const char *s, int k, int n)
{
    if (k == n)
        return gx_empty(js->g);
    if (all_are(s + k, (size_t)(n - k), '0'))
        return any_digits(js, n - k, n - k);
    int eq = gx_seq2(js->g, digits(js, s[k], s[k]), fixed_ge(js, s, k + 1, n));
    return gx_alt2(js->g, eq,
                   gx_seq2(js->g, digits(js, s[k] + 1, '9'), any_digits(js, n - k - 1, n - k - 1)));
}

static int fixed_le(struct js *js, const char *s, int k, int n)
{
    if (k == n)
        return gx_empty(js->g);
    if (all_are(s + k, (size_t)(n - k), '9'))
        return any_digits(js, n - k, n - k);
    int eq = gx_seq2(js->g, digits(js, s[k], s[k]), fixed_le(js, s, k + 1, n));
    return gx_alt2(js->g, eq,
                   gx_seq2(js->g, digits(js, '0', s[k] - 1), any_digits(js, n - k - 1, n - k - 1)));
}

/* n-digit strings x with lo <= x <= hi (both n digits, lo <= hi). */
static int fixed_range(struct js *js, const char *lo, const char *hi, int k, int n)
{
    while (k < n && lo[k] == hi[k])
        k++;
    int pre = gx_literal(js->g, lo, (size_t)k);
    if (k == n)
        return pre;
    int rest = n - k - 1, body;
    if (all_are(lo + k + 1, (size_t)rest, '0') && all_are(hi + k + 1, (size_t)rest, '9')) {
        body = gx_seq2(js->g, digits(js, lo[k], hi[k]), any_digits(js, rest, rest));
    } else {
        int alts[3] = {gx_seq2(js->g, digits(js, lo[k], lo[k]), fixed_ge(js, lo, k + 1, n)),
                       gx_seq2(js->g, digits(js, lo[k] + 1, hi[k] - 1), any_digits(js, rest, rest)),
                       gx_seq2(js->g, digits(js, hi[k], hi[k]), fixed_le(js, hi, k + 1, n))};
        body = gx_alt(js->g, alts, 3);
    }
    return gx_seq2(js->g, pre, body);
}

/* Integer digit strings (no leading zeros) a + 1 and a - 1 (a >= 1). */
static char *str_inc(const char *a)
{
    size_t n = strlen(a);
    char *r = xmalloc(n + 2);
    memcpy(r + 1, a, n + 1);
    r[0] = '0';
    size_t i = n;
    while (r[i] == '9')
        r[i--] = '0';
    r[i]++;
    if (r[0] == '0')
        memmove(r, r + 1, n + 1);
    return r;
}

static char *str_dec(const char *a)
{
    size_t n = strlen(a);
    char *r = xstrdup(a);
    size_t i = n - 1;
    while (r[i] == '0')
        r[i--] = '9';
    r[i]--;
    if (r[0] == '0' && n > 1)
        memmove(r, r + 1, n);
    return r;
}

/* The integers in [a, b] as digit strings without leading zeros (b NULL:
 * unbounded): per digit count, with the counts strictly between a's and
 * b's as one repetition. */
static int int_range(struct js *js, const char *a, const char *b)
{
    int la = (int)strlen(a), lb = b ? (int)strlen(b) : 0;
    if (b && (lb < la || (lb == la && strcmp(a, b) > 0)))
        return gx_nothing(js->g);
    if (b && lb == la)
        return fixed_range(js, a, b, 0, la);
    int alts[3], k = 0;
    alts[k++] = fixed_ge(js, a, 0, la);
    if (!b) {
        alts[k++] = gx_seq2(js->g, digits(js, '1', '9'), any_digits(js, la, -1));
    } else {
        if (lb - la >= 2)
            alts[k++] = gx_seq2(js->g, digits(js, '1', '9'), any_digits(js, la, lb - 2));
        char *low = xmalloc((size_t)lb + 1);
        memset(low, '0', (size_t)lb);
        low[0] = '1';
        low[lb] = '\0';
        alts[k++] = fixed_range(js, low, b, 0, lb);
        free(low);
    }
    return gx_alt(js->g, alts, k);
}

/* --- fractions ---------------------------------------------------------------- */

/* Fraction digits F (what follows the '.', read as a fraction with zeros
 * after its end) from position k on, F[0..k) having matched the bound so
 * far; at k == 0 F has at least one digit. s is the bound's fraction
 * padded to m digits. */
static int frac_ge(struct js *js, const char *s, int m, int k, int strict)
{
    if (all_are(s + k, (size_t)(m - k), '0')) {
        if (strict) /* the rest must not be all zeros */
            return gx_seq3(js->g, any_digits(js, 0, -1), digits(js, '1', '9'), any_digits(js, 0, -1));
        return any_digits(js, k == 0, -1);
    }
    int eq = gx_seq2(js->g, digits(js, s[k], s[k]), frac_ge(js, s, m, k + 1, strict));
    return gx_alt2(js->g, eq, gx_seq2(js->g, digits(js, s[k] + 1, '9'), any_digits(js, 0, -1)));
}

static int frac_le(struct js *js, const char *s, int m, int k, int strict)
{
    if (all_are(s + k, (size_t)(m - k), '0')) /* only zeros may follow, and then F equals the bound */
        return strict ? gx_nothing(js->g) : gx_repeat(js->g, gx_byte(js->g, '0'), k == 0, -1);
    int alts[3] = {gx_seq2(js->g, digits(js, s[k], s[k]), frac_le(js, s, m, k + 1, strict)),
                   gx_seq2(js->g, digits(js, '0', s[k] - 1), any_digits(js, 0, -1)),
                   k > 0 ? gx_empty(js->g) : gx_nothing(js->g)}; /* ending here is below the bound */
    return gx_alt(js->g, alts, 3);
}

static int frac_between(struct js *js, const char *lo, const char *hi, int m, int k, int ls, int hs)
{
    if (all_are(lo + k, (size_t)(m - k), '0') && !ls) /* the lower bound holds whatever follows */
        return frac_le(js, hi, m, k, hs);
    if (all_are(hi + k, (size_t)(m - k), '0')) /* only zeros may follow, and the lower bound wants more */
        return gx_nothing(js->g);
    if (lo[k] == hi[k])
        return gx_seq2(js->g, digits(js, lo[k], lo[k]), frac_between(js, lo, hi, m, k + 1, ls, hs));
    if (lo[k] > hi[k])
        return gx_nothing(js->g);
    int alts[3] = {gx_seq2(js->g, digits(js, lo[k], lo[k]), frac_ge(js, lo, m, k + 1, ls)),
                   gx_seq2(js->g, digits(js, lo[k] + 1, hi[k] - 1), any_digits(js, 0, -1)),
                   gx_seq2(js->g, digits(js, hi[k], hi[k]), frac_le(js, hi, m, k + 1, hs))};
    return gx_alt(js->g, alts, 3);
}

static char *pad(const char *s, size_t m)
{
    size_t n = strlen(s);
    char *r = xmalloc(m + 1);
    memcpy(r, s, n);
    memset(r + n, '0', m - n);
    r[m] = '\0';
    return r;
}

/* The optional fraction ("." F, or none, which reads as zero) within the
 * bounds lo (NULL: none) and hi (NULL: none); integer: none only. */
static int fraction(struct js *js, const char *lo, int ls, const char *hi, int hs, int integer)
{
    int lo_zero = !lo || !*lo, hi_zero = hi && !*hi;
    int none_ok = (!lo || (lo_zero && !ls)) && (!hi || !(hi_zero && hs));
    int none = none_ok ? gx_empty(js->g) : gx_nothing(js->g);
    if (integer)
        return none;
    size_t ml = lo ? strlen(lo) : 0, mh = hi ? strlen(hi) : 0, m = ml > mh ? ml : mh;
    char *pl = pad(lo ? lo : "", m), *ph = hi ? pad(hi, m) : NULL;
    int f;
    if (lo && hi)
        f = frac_between(js, pl, ph, (int)m, 0, ls, hs);
    else if (hi)
        f = frac_le(js, ph, (int)m, 0, hs);
    else
        f = frac_ge(js, pl, (int)m, 0, ls);
    free(pl);
    free(ph);
    return gx_alt2(js->g, none, gx_seq2(js->g, gx_byte(js->g, '.'), f));
}

/* --- ranges ------------------------------------------------------------------- */

/* Texts (no sign) of t >= 0 with lo <= t (ls: <) and t <= hi (hs: <; hi
 * NULL: unbounded); lo and hi are non-negative. */
static int nonneg_range(struct js *js, const struct dec *lo, int ls, const struct dec *hi, int hs,
                        int integer)
{
    if (hi) {
        int c = mag_cmp(lo, hi);
        if (c > 0 || (c == 0 && (ls || hs)))
            return gx_nothing(js->g);
        if (strcmp(lo->ip, hi->ip) == 0)
            return gx_seq2(js->g, js_lit(js, lo->ip), fraction(js, lo->fp, ls, hi->fp, hs, integer));
    }
    int alts[3], k = 0;
    alts[k++] = gx_seq2(js->g, js_lit(js, lo->ip), fraction(js, lo->fp, ls, NULL, 0, integer));
    char *a = str_inc(lo->ip), *b = hi ? str_dec(hi->ip) : NULL;
    alts[k++] = gx_seq2(js->g, int_range(js, a, b), fraction(js, NULL, 0, NULL, 0, integer));
    free(a);
    free(b);
    if (hi)
        alts[k++] = gx_seq2(js->g, js_lit(js, hi->ip), fraction(js, NULL, 0, hi->fp, hs, integer));
    return gx_alt(js->g, alts, k);
}

static int number_rule(struct js *js, int integer)
{
    int *r = integer ? &js->r_integer : &js->r_number;
    if (*r >= 0)
        return gx_ref(js->g, *r);
    struct gir *g = js->g;
    *r = gir_rule_fresh(g, integer ? "json_integer" : "json_number");
    int digit = digits(js, '0', '9');
    int intpart = gx_alt2(g, gx_byte(g, '0'), gx_seq2(g, digits(js, '1', '9'), gx_star(g, digit)));
    int items[4] = {gx_opt(g, gx_byte(g, '-')), intpart, gx_empty(g), gx_empty(g)};
    if (!integer) {
        items[2] = gx_opt(g, gx_seq2(g, gx_byte(g, '.'), any_digits(js, 1, -1)));
        struct byteset e = {{0}}, sign = {{0}};
        byteset_add(&e, 'e');
        byteset_add(&e, 'E');
        byteset_add(&sign, '+');
        byteset_add(&sign, '-');
        items[3] =
            gx_opt(g, gx_seq3(g, gx_bytes(g, &e), gx_opt(g, gx_bytes(g, &sign)), any_digits(js, 1, -1)));
    }
    gir_define(g, *r, gx_seq(g, items, 4));
    return gx_ref(g, *r);
}

int js_number_expr(struct js *js, const struct bound *lo, const struct bound *hi, int integer)
{
    if (!lo->set && !hi->set)
        return number_rule(js, integer);
    struct dec zero = {0, "0", ""};
    /* without a sign: t = v >= 0 */
    int pos;
    if (hi->set && hi->v.neg) {
        pos = gx_nothing(js->g);
    } else {
        int low_set = lo->set && !lo->v.neg;
        pos = nonneg_range(js, low_set ? &lo->v : &zero, low_set && lo->strict, hi->set ? &hi->v : NULL,
                           hi->strict, integer);
    }
    /* "-t": v = -t, so v >= lo is t <= -lo and v <= hi is t >= -hi */
    int neg;
    if (lo->set && !lo->v.neg && !dec_is_zero(&lo->v)) {
        neg = gx_nothing(js->g);
    } else {
        struct dec tlo = zero, thi = zero;
        int tls = 0, ths = 0;
        if (hi->set && (hi->v.neg || dec_is_zero(&hi->v))) {
            tlo = hi->v;
            tlo.neg = 0;
            tls = hi->strict;
        }
        if (lo->set) {
            thi = lo->v;
            thi.neg = 0;
            ths = lo->strict;
        }
        neg = gx_seq2(js->g, gx_byte(js->g, '-'),
                      nonneg_range(js, &tlo, tls, lo->set ? &thi : NULL, ths, integer));
    }
    return gx_alt2(js->g, pos, neg);
}

/* --- multiples ---------------------------------------------------------------- */

int js_dec_divisible(const struct dec *v, long long k)
{
    long long r = 0;
    for (const char *c = v->ip; *c; c++)
        r = (r * 10 + (*c - '0')) % k;
    for (const char *c = v->fp; *c; c++) /* an integral value's fraction is zeros */
        if (*c != '0')
            return 0;
    return r == 0;
}

static int is_zero_bound(const struct bound *b) { return b->set && !b->strict && dec_is_zero(&b->v); }

/* The digits after a number's first, read left to right with the remainder
 * so far: rule rest[r] takes remainder r to 0 (r' = 10 r + d mod k), so
 * the integers divisible by k form k mutually tail-calling rules. */
int js_multiple_expr(struct js *js, const struct bound *lo, const struct bound *hi, long long k, const char *path)
{
    struct gir *g = js->g;
    if ((lo->set && !is_zero_bound(lo)) || (hi->set && !is_zero_bound(hi)))
        return js_refuse(js, "multipleOf", path, "only supported without minimum/maximum, or with 0 as the bound");
    int *rest = xmalloc((size_t)k * sizeof(int));
    for (long long r = 0; r < k; r++)
        rest[r] = gir_rule_fresh(g, "multiple_rest");
    for (long long r = 0; r < k; r++) {
        int alts[11], n = 0;
        for (int d = 0; d < 10; d++)
            alts[n++] = gx_seq2(g, gx_byte(g, (unsigned char)('0' + d)), gx_ref(g, rest[(r * 10 + d) % k]));
        if (r == 0)
            alts[n++] = gx_empty(g);
        gir_define(g, rest[r], gx_alt(g, alts, n));
    }
    int first[9];
    for (int d = 1; d <= 9; d++)
        first[d - 1] = gx_seq2(g, gx_byte(g, (unsigned char)('0' + d)), gx_ref(g, rest[d % k]));
    free(rest);
    int zero = gx_byte(g, '0'), nonzero = gx_alt(g, first, 9);
    /* v >= 0 (lo 0): no negative but "-0"; v <= 0 (hi 0): no positive */
    int pos = hi->set ? zero : gx_alt2(g, zero, nonzero);
    int neg = gx_seq2(g, gx_byte(g, '-'), lo->set ? zero : gx_alt2(g, zero, nonzero));
    return gx_alt2(g, pos, neg);
}

/* --- literals ----------------------------------------------------------------- */

/* The texts of one number: its sign ("-" optional for zero), the integer
 * digits ip, then: int_form: nothing; frac_forms: "." and fp, then any
 * zeros (at least one when fp is empty). */
static int forms(struct js *js, int neg, int zero, const char *ip, const char *fp, int int_form,
                 int frac_forms)
{
    struct gir *g = js->g;
    int sign = zero ? gx_opt(g, gx_byte(g, '-')) : neg ? gx_byte(g, '-') : gx_empty(g);
    int frac = gx_nothing(g);
    if (frac_forms)
        frac = gx_seq3(g, gx_byte(g, '.'), js_lit(js, fp), gx_repeat(g, gx_byte(g, '0'), *fp ? 0 : 1, -1));
    int tail = gx_alt2(g, int_form ? gx_empty(g) : gx_nothing(g), frac);
    return gx_seq3(g, sign, js_lit(js, ip), tail);
}

int js_number_literal(struct js *js, const json_t *n)
{
    char buf[400];
    if (json_is_integer(n)) {
        json_int_t v = json_integer_value(n);
        unsigned long long u = abs_int(v);
        snprintf(buf, sizeof(buf), "%llu", u);
        /* Python compares int and float exactly: "v.0" equals v only when the double of v is v */
        double d = (double)u;
        int exact = u <= (1ull << 53) || (d < 18446744073709551616.0 && (unsigned long long)d == u);
        return forms(js, v < 0, v == 0, buf, "", 1, exact);
    }
    double x = json_real_value(n);
    if (x == 0)
        return forms(js, 0, 1, "0", "", 1, 1);
    if (x == floor(x)) {
        /* an integral double: its exact digits as an integer, and as a float any
         * decimal reading back as x (the exact one, and the shortest) */
        snprintf(buf, sizeof(buf), "%.0f", fabs(x));
        int a = forms(js, x < 0, 0, buf, "", 1, 1);
        struct dec s;
        js_dec_of(n, &s);
        int b = strcmp(s.ip, buf) ? forms(js, x < 0, 0, s.ip, "", 0, 1) : gx_nothing(js->g);
        js_dec_free(&s);
        return gx_alt2(js->g, a, b);
    }
    struct dec s;
    js_dec_of(n, &s);
    int x1 = forms(js, s.neg, 0, s.ip, s.fp, 0, 1);
    js_dec_free(&s);
    return x1;
}
