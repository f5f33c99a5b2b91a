/* The "format" keyword for the JSON Schema front end: each known format
 * as a grammar of JSON strings.
 *
 * Each grammar is sound against Python's jsonschema with every format
 * checker installed (what it checks each format with is named below):
 * it accepts no string that checker rejects, and as much of what it
 * accepts as a grammar reasonably can. Characters are written unescaped.
 *
 *   date       YYYY-MM-DD, a real day of a year 0001-9999, leap years
 *              included (datetime.date.fromisoformat behind a regex)
 *   time       hh:mm:ss[.frac](Z|z|+hh:mm|-hh:mm), seconds 00-59
 *              (rfc3339_validator, which has no leap second)
 *   date-time  date, T or t, time (rfc3339_validator on the upper-cased text)
 *   duration   P with Y M D in order and/or T with H M S, or nW; integer
 *              values (isoduration, and jsonschema's last-letter check)
 *   email      a dot-atom local part, '@', a dotted domain (jsonschema
 *              only asks for an '@': a subset, kept useful for generation)
 *   uuid       8-4-4-4-12 hex digits, either case (uuid.UUID and dashes)
 *   ipv4       four decimal octets 0-255 without leading zeros (ipaddress)
 *   ipv6       RFC 4291's text forms, an IPv4 tail included, no zone
 *              (ipaddress, which reads exactly RFC 3986's IPv6address)
 *   hostname   dot-separated labels of letters, digits and inner hyphens,
 *              at most 63 characters each, a final dot optional (fqdn);
 *              its 253-character limit is kept by bounding the labels by
 *              their count (up to 3 labels of 63, 4 of 62, 8 of 30, 16 of
 *              14, 32 of 6, 64 of 2, 127 of 1)
 *   uri        RFC 3986's URI (rfc3986_validator, a regex of the ABNF)
 *              without IPvFuture hosts */
#include <stdio.h>
#include <string.h>

#include "grammar/json_schema_internal.h"

static int set_of(struct js *js, const char *chars) /* one byte of chars; "a-z" style ranges */
{
    struct byteset b = {{0}};
    for (const char *p = chars; *p; p++) {
        if (p[1] == '-' && p[2]) {
            byteset_add_range(&b, (unsigned char)p[0], (unsigned char)p[2]);
            p += 2;
        } else {
            byteset_add(&b, (unsigned char)*p);
        }
    }
    return gx_bytes(js->g, &b);
}

static int rep(struct js *js, int x, int min, int max) { return gx_repeat(js->g, x, min, max); }
static int D(struct js *js) { return set_of(js, "0-9"); }
static int DD(struct js *js, int n) { return rep(js, D(js), n, n); }
static int HEX(struct js *js) { return set_of(js, "0-9a-fA-F"); }
static int seq(struct js *js, const int *v, int n) { return gx_seq(js->g, v, n); }
static int alt(struct js *js, const int *v, int n) { return gx_alt(js->g, v, n); }
static int c2(struct js *js, const char *a, const char *b)
{
    return gx_seq2(js->g, set_of(js, a), set_of(js, b));
}

/* --- dates and times -------------------------------------------------------- */

static int date(struct js *js)
{
    struct gir *g = js->g;
    int year_alts[4] = {gx_seq2(g, set_of(js, "1-9"), DD(js, 3)),
                        gx_seq3(g, js_lit(js, "0"), set_of(js, "1-9"), DD(js, 2)),
                        gx_seq3(g, js_lit(js, "00"), set_of(js, "1-9"), D(js)),
                        gx_seq2(g, js_lit(js, "000"), set_of(js, "1-9"))};
    int year = alt(js, year_alts, 4);
    int m31_alts[2] = {c2(js, "0", "13578"), c2(js, "1", "02")},
        m30_alts[2] = {c2(js, "0", "469"), js_lit(js, "11")};
    int d31_alts[3] = {c2(js, "0", "1-9"), c2(js, "12", "0-9"), c2(js, "3", "01")};
    int d30_alts[3] = {c2(js, "0", "1-9"), c2(js, "12", "0-9"), js_lit(js, "30")};
    int d28_alts[3] = {c2(js, "0", "1-9"), c2(js, "1", "0-9"), c2(js, "2", "0-8")};
    int md_alts[3] = {gx_seq3(g, alt(js, m31_alts, 2), js_lit(js, "-"), alt(js, d31_alts, 3)),
                      gx_seq3(g, alt(js, m30_alts, 2), js_lit(js, "-"), alt(js, d30_alts, 3)),
                      gx_seq2(g, js_lit(js, "02-"), alt(js, d28_alts, 3))};
    int plain = gx_seq3(g, year, js_lit(js, "-"), alt(js, md_alts, 3));
    /* leap years: YY a non-zero multiple of 4, or YY = 00 and CC a non-zero multiple of 4 */
    int mult4_nz[3] = {c2(js, "0", "48"), c2(js, "2468", "048"), c2(js, "13579", "26")};
    int leap_alts[2] = {gx_seq2(g, DD(js, 2), alt(js, mult4_nz, 3)),
                        gx_seq2(g, alt(js, mult4_nz, 3), js_lit(js, "00"))};
    int leap = gx_seq2(g, alt(js, leap_alts, 2), js_lit(js, "-02-29"));
    return gx_alt2(g, plain, leap);
}

static int hour(struct js *js) { return gx_alt2(js->g, c2(js, "01", "0-9"), c2(js, "2", "0-3")); }
static int sixty(struct js *js) { return c2(js, "0-5", "0-9"); }

static int time_of_day(struct js *js)
{
    struct gir *g = js->g;
    int frac = gx_opt(g, gx_seq2(g, js_lit(js, "."), rep(js, D(js), 1, -1)));
    int offset_items[4] = {set_of(js, "+-"), hour(js), js_lit(js, ":"), sixty(js)};
    int offset = gx_alt2(g, set_of(js, "Zz"), seq(js, offset_items, 4));
    int items[7] = {hour(js), js_lit(js, ":"), sixty(js), js_lit(js, ":"), sixty(js), frac, offset};
    return seq(js, items, 7);
}

static int duration(struct js *js)
{
    struct gir *g = js->g;
#define N(letter) gx_seq2(g, rep(js, D(js), 1, -1), js_lit(js, letter))
    /* each component present makes the ones after it optional */
    int date_alts[3] = {gx_seq3(g, N("Y"), gx_opt(g, N("M")), gx_opt(g, N("D"))),
                        gx_seq2(g, N("M"), gx_opt(g, N("D"))), N("D")};
    int time_alts[3] = {gx_seq3(g, N("H"), gx_opt(g, N("M")), gx_opt(g, N("S"))),
                        gx_seq2(g, N("M"), gx_opt(g, N("S"))), N("S")};
    int t1 = gx_seq2(g, js_lit(js, "T"), alt(js, time_alts, 3));
    int t2 = gx_seq2(g, js_lit(js, "T"), alt(js, time_alts, 3));
    int body_alts[3] = {gx_seq2(g, alt(js, date_alts, 3), gx_opt(g, t1)), t2, N("W")};
#undef N
    return gx_seq2(g, js_lit(js, "P"), alt(js, body_alts, 3));
}

/* --- network ------------------------------------------------------------------ */

static int ipv4(struct js *js)
{
    struct gir *g = js->g;
    int parts[4];
    for (int i = 0; i < 4; i++) {
        int octet[5] = {gx_seq2(g, js_lit(js, "25"), set_of(js, "0-5")),
                        gx_seq3(g, js_lit(js, "2"), set_of(js, "0-4"), D(js)),
                        gx_seq2(g, js_lit(js, "1"), DD(js, 2)), gx_seq2(g, set_of(js, "1-9"), D(js)), D(js)};
        parts[i] = alt(js, octet, 5);
    }
    int dot = js_lit(js, "."), d2 = js_lit(js, "."), d3 = js_lit(js, ".");
    int items[7] = {parts[0], dot, parts[1], d2, parts[2], d3, parts[3]};
    return seq(js, items, 7);
}

static int h16(struct js *js) { return rep(js, HEX(js), 1, 4); }
static int h16c(struct js *js) { return gx_seq2(js->g, h16(js), js_lit(js, ":")); } /* h16 ":" */

/* [ *(k-1)( h16 ":" ) h16 ]: up to k groups before "::" */
static int before(struct js *js, int k)
{
    if (k == 0)
        return gx_empty(js->g);
    return gx_opt(js->g, gx_seq2(js->g, rep(js, h16c(js), 0, k - 1), h16(js)));
}

static int ls32(struct js *js) { return gx_alt2(js->g, gx_seq2(js->g, h16c(js), h16(js)), ipv4(js)); }

static int ipv6(struct js *js)
{
    struct gir *g = js->g;
    int a[9];
    a[0] = gx_seq2(g, rep(js, h16c(js), 6, 6), ls32(js));
    a[1] = gx_seq3(g, js_lit(js, "::"), rep(js, h16c(js), 5, 5), ls32(js));
    for (int k = 1; k <= 5; k++) { /* k groups at most before "::", 5 - k after it, then ls32 */
        int items[4] = {before(js, k), js_lit(js, "::"), rep(js, h16c(js), 5 - k, 5 - k), ls32(js)};
        a[k + 1] = seq(js, items, 4);
    }
    a[7] = gx_seq3(g, before(js, 6), js_lit(js, "::"), h16(js));
    a[8] = gx_seq2(g, before(js, 7), js_lit(js, "::"));
    return alt(js, a, 9);
}

static int label(struct js *js, int max) /* letters, digits, inner hyphens; 1..max characters */
{
    struct gir *g = js->g;
    if (max == 1)
        return set_of(js, "a-zA-Z0-9");
    int inner = gx_seq2(g, rep(js, set_of(js, "a-zA-Z0-9-"), 0, max - 2), set_of(js, "a-zA-Z0-9"));
    return gx_seq2(g, set_of(js, "a-zA-Z0-9"), gx_opt(g, inner));
}

static int hostname(struct js *js)
{
    static const int tiers[][3] = {{1, 3, 63},  {4, 4, 62},  {5, 8, 30},  {9, 16, 14},
                                   {17, 32, 6}, {33, 64, 2}, {65, 127, 1}};
    struct gir *g = js->g;
    int alts[7];
    for (int i = 0; i < 7; i++) {
        int more =
            rep(js, gx_seq2(g, js_lit(js, "."), label(js, tiers[i][2])), tiers[i][0] - 1, tiers[i][1] - 1);
        alts[i] = gx_seq2(g, label(js, tiers[i][2]), more);
    }
    return gx_seq2(g, alt(js, alts, 7), gx_opt(g, js_lit(js, ".")));
}

static int email(struct js *js)
{
    struct gir *g = js->g;
    const char *atext = "a-zA-Z0-9!#$%&'*+/=?^_`{|}~-";
    int atom1 = rep(js, set_of(js, atext), 1, -1), atom2 = rep(js, set_of(js, atext), 1, -1);
    int local = gx_seq2(g, atom1, gx_star(g, gx_seq2(g, js_lit(js, "."), atom2)));
    int domain = gx_seq2(g, label(js, 63), gx_star(g, gx_seq2(g, js_lit(js, "."), label(js, 63))));
    return gx_seq3(g, local, js_lit(js, "@"), domain);
}

static int uuid(struct js *js)
{
    static const int groups[5] = {8, 4, 4, 4, 12};
    int items[9], k = 0;
    for (int i = 0; i < 5; i++) {
        if (i)
            items[k++] = js_lit(js, "-");
        items[k++] = rep(js, HEX(js), groups[i], groups[i]);
    }
    return seq(js, items, k);
}

/* --- uri --------------------------------------------------------------------- */

#define UNRESERVED "-a-zA-Z0-9._~" /* the hyphen first: not a range */
#define SUBDELIMS "!$&'()*+,;="

/* One character of extra plus the unreserved, the sub-delims and %HH. */
static int uri_char(struct js *js, const char *extra)
{
    char chars[64];
    strcpy(chars, UNRESERVED SUBDELIMS);
    strcat(chars, extra);
    int pct = gx_seq3(js->g, js_lit(js, "%"), HEX(js), HEX(js));
    return gx_alt2(js->g, set_of(js, chars), pct);
}

static int pchar(struct js *js) { return uri_char(js, ":@"); }
static int segments(struct js *js) /* *( "/" segment ) */
{
    return gx_star(js->g, gx_seq2(js->g, js_lit(js, "/"), gx_star(js->g, pchar(js))));
}

static int uri(struct js *js)
{
    struct gir *g = js->g;
    int scheme = gx_seq2(g, set_of(js, "a-zA-Z"), gx_star(g, set_of(js, "a-zA-Z0-9+.-")));
    int userinfo = gx_opt(g, gx_seq2(g, gx_star(g, uri_char(js, ":")), js_lit(js, "@")));
    int host =
        gx_alt2(g, gx_seq3(g, js_lit(js, "["), ipv6(js), js_lit(js, "]")), gx_star(g, uri_char(js, "")));
    int port = gx_opt(g, gx_seq2(g, js_lit(js, ":"), gx_star(g, D(js))));
    int auth_items[5] = {js_lit(js, "//"), userinfo, host, port, segments(js)};
    int hier[4] = {
        seq(js, auth_items, 5),
        gx_seq2(g, js_lit(js, "/"), gx_opt(g, gx_seq2(g, rep(js, pchar(js), 1, -1), segments(js)))),
        gx_seq2(g, rep(js, pchar(js), 1, -1), segments(js)), gx_empty(g)};
    int query = gx_opt(g, gx_seq2(g, js_lit(js, "?"), gx_star(g, uri_char(js, ":@/?"))));
    int fragment = gx_opt(g, gx_seq2(g, js_lit(js, "#"), gx_star(g, uri_char(js, ":@/?"))));
    int items[5] = {scheme, js_lit(js, ":"), alt(js, hier, 4), query, fragment};
    return seq(js, items, 5);
}

static int date_time(struct js *js) { return gx_seq3(js->g, date(js), set_of(js, "Tt"), time_of_day(js)); }

/* --- the table ------------------------------------------------------------------ */

static const struct format {
    const char *name;
    int (*build)(struct js *js);
    long long min_len, max_len;
} formats[] = {
    {"date", date, 10, 10},        {"time", time_of_day, 9, -1}, {"date-time", date_time, 20, -1},
    {"duration", duration, 3, -1}, {"email", email, 3, -1},      {"uuid", uuid, 36, 36},
    {"ipv4", ipv4, 7, 15},         {"ipv6", ipv6, 2, 45},        {"hostname", hostname, 1, 254},
    {"uri", uri, 2, -1},
};

static const struct format *find(const char *name)
{
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
        if (strcmp(formats[i].name, name) == 0)
            return &formats[i];
    return NULL;
}

int js_format_known(const char *name) { return find(name) != NULL; }

int js_format_expr(struct js *js, const char *name, long long *min_len, long long *max_len)
{
    const struct format *f = find(name);
    if (!f)
        return js_fail(js, "unknown format '%s'", name);
    *min_len = f->min_len;
    *max_len = f->max_len;
    int *r = &js->r_format[f - formats];
    if (*r < 0) {
        char hint[64];
        snprintf(hint, sizeof(hint), "format_%s", name);
        *r = gir_rule_fresh(js->g, hint);
        gir_define(js->g, *r, gx_seq3(js->g, gx_byte(js->g, '"'), f->build(js), gx_byte(js->g, '"')));
    }
    return gx_ref(js->g, *r);
}
