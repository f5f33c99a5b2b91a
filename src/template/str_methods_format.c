/* Python's str methods that rebuild or classify a whole string: case changes
 * (upper/lower/title/capitalize/swapcase/casefold), the is* character-class
 * tests, removeprefix/removesuffix, center/ljust/rjust/zfill, and format
 * (which pyfmt.c implements). The methods that search a string or cut it into
 * pieces are in str_methods.c. */
#include <string.h>

#include "template/internal.h"

#define SELF_S (self.u.s->s)
#define SELF_N (self.u.s->len)

int tmpl_str_case(struct tval self, int mode, struct tval *out)
{
    struct sbuf b = {0};
    int prev_cased = 0, first = 1;
    for (size_t i = 0; i < SELF_N;) {
        uint32_t cp = utf8_next(SELF_S, SELF_N, &i);
        switch (mode) {
        case CASE_UPPER:
            tmpl_put_upper(&b, cp);
            break;
        case CASE_LOWER:
            tmpl_put_lower(&b, cp);
            break;
        case CASE_TITLE:
            if (prev_cased)
                tmpl_put_lower(&b, cp);
            else
                tmpl_put_upper(&b, cp);
            prev_cased = tmpl_isupper(cp) || tmpl_islower(cp);
            break;
        case CASE_CAPITALIZE:
            if (first)
                tmpl_put_upper(&b, cp);
            else
                tmpl_put_lower(&b, cp);
            break;
        default:
            if (tmpl_isupper(cp))
                tmpl_put_lower(&b, cp);
            else if (tmpl_islower(cp))
                tmpl_put_upper(&b, cp);
            else
                tmpl_strbuf_put_cp(&b, cp);
        }
        first = 0;
    }
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

#define CASE_METHOD(fname, mode)                                                                             \
    static int fname(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)    \
    {                                                                                                        \
        if (a->npos || a->nkw)                                                                               \
            return tmpl_err(c, line, "%s() takes no arguments", &(#fname)[2]);                               \
        return tmpl_str_case(self, mode, out);                                                               \
    }
CASE_METHOD(m_upper, CASE_UPPER)
CASE_METHOD(m_lower, CASE_LOWER)
CASE_METHOD(m_title, CASE_TITLE)
CASE_METHOD(m_capitalize, CASE_CAPITALIZE)
CASE_METHOD(m_swapcase, CASE_SWAP)
CASE_METHOD(m_casefold, CASE_LOWER)

enum { IS_DIGIT, IS_ALPHA, IS_ALNUM, IS_SPACE, IS_UPPER, IS_LOWER };

static int str_is(struct tval self, int kind)
{
    int any_cased = 0;
    if (!SELF_N)
        return 0;
    for (size_t i = 0; i < SELF_N;) {
        uint32_t cp = utf8_next(SELF_S, SELF_N, &i);
        switch (kind) {
        case IS_DIGIT:
            if (!tmpl_isdigit(cp))
                return 0;
            break;
        case IS_ALPHA:
            if (!tmpl_isalpha(cp))
                return 0;
            break;
        case IS_ALNUM:
            if (!tmpl_isalpha(cp) && !tmpl_isdigit(cp))
                return 0;
            break;
        case IS_SPACE:
            if (!tmpl_isspace(cp))
                return 0;
            break;
        case IS_UPPER:
            if (tmpl_islower(cp))
                return 0;
            any_cased |= tmpl_isupper(cp);
            break;
        default:
            if (tmpl_isupper(cp))
                return 0;
            any_cased |= tmpl_islower(cp);
        }
    }
    return kind == IS_UPPER || kind == IS_LOWER ? any_cased : 1;
}

int tmpl_str_is_upper(struct tval s) { return str_is(s, IS_UPPER); }

int tmpl_str_is_lower(struct tval s) { return str_is(s, IS_LOWER); }

#define IS_METHOD(fname, kind)                                                                               \
    static int fname(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)    \
    {                                                                                                        \
        if (a->npos || a->nkw)                                                                               \
            return tmpl_err(c, line, "%s() takes no arguments", &(#fname)[2]);                               \
        *out = tmpl_value_bool(str_is(self, kind));                                                      \
        return 0;                                                                                            \
    }
IS_METHOD(m_isdigit, IS_DIGIT)
IS_METHOD(m_isdecimal, IS_DIGIT)
IS_METHOD(m_isnumeric, IS_DIGIT)
IS_METHOD(m_isalpha, IS_ALPHA)
IS_METHOD(m_isalnum, IS_ALNUM)
IS_METHOD(m_isspace, IS_SPACE)
IS_METHOD(m_isupper, IS_UPPER)
IS_METHOD(m_islower, IS_LOWER)

static int m_format(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return tmpl_str_format(c, line, self, a, out);
}

static int m_affix(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out,
                   int suffix)
{
    if (a->npos != 1 || a->nkw || a->pos[0].k != TV_STR)
        return tmpl_err(c, line, "remove%s() takes one str argument", suffix ? "suffix" : "prefix");
    const struct tstr *x = a->pos[0].u.s;
    if (x->len <= SELF_N && !memcmp(SELF_S + (suffix ? SELF_N - x->len : 0), x->s, x->len))
        *out = tmpl_value_str(SELF_S + (suffix ? 0 : x->len), SELF_N - x->len);
    else {
        *out = self;
        tmpl_value_retain(self);
    }
    return 0;
}

static int m_removeprefix(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_affix(c, line, self, a, out, 0);
}

static int m_removesuffix(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return m_affix(c, line, self, a, out, 1);
}

/* center/ljust/rjust/zfill */
static int m_justify(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out,
                     char how)
{
    static const char *const names[] = {"width", "fillchar"};
    struct tval s[2];
    int64_t width;
    if (tmpl_args_bind(c, line, "justify", a, names, how == 'z' ? 1 : 2, s) ||
        tmpl_arg_int(c, line, "justify", s[0], &width))
        return -1;
    uint32_t fill = how == 'z' ? '0' : ' ';
    if (s[1].k == TV_STR && s[1].u.s->ncp == 1) {
        size_t i = 0;
        fill = utf8_next(s[1].u.s->s, s[1].u.s->len, &i);
    }
    int64_t len = (int64_t)self.u.s->ncp;
    if (width <= len) {
        *out = self;
        tmpl_value_retain(self);
        return 0;
    }
    if (width > TMPL_MAX_WIDTH)
        return tmpl_err(c, line, "width too large");
    int64_t pad = width - len, left = how == 'r' || how == 'z' ? pad
                                      : how == 'l'             ? 0
                                                               : pad / 2 + (pad & width & 1);
    struct sbuf b = {0};
    size_t skip = 0;
    if (how == 'z' && SELF_N && (SELF_S[0] == '-' || SELF_S[0] == '+')) {
        tmpl_strbuf_putc(&b, SELF_S[0]);
        skip = 1;
    }
    for (int64_t i = 0; i < left; i++)
        tmpl_strbuf_put_cp(&b, fill);
    tmpl_strbuf_put(&b, SELF_S + skip, SELF_N - skip);
    for (int64_t i = left; i < pad; i++)
        tmpl_strbuf_put_cp(&b, fill);
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

#define JUSTIFY_METHOD(fname, how)                                                                           \
    static int fname(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)    \
    {                                                                                                        \
        return m_justify(c, line, self, a, out, how);                                                        \
    }
JUSTIFY_METHOD(m_center, 'c')
JUSTIFY_METHOD(m_ljust, 'l')
JUSTIFY_METHOD(m_rjust, 'r')
JUSTIFY_METHOD(m_zfill, 'z')

const struct method_def tmpl_str_format_methods[] = {
    {"upper", m_upper},
    {"lower", m_lower},
    {"title", m_title},
    {"capitalize", m_capitalize},
    {"swapcase", m_swapcase},
    {"casefold", m_casefold},
    {"isdigit", m_isdigit},
    {"isdecimal", m_isdecimal},
    {"isnumeric", m_isnumeric},
    {"isalpha", m_isalpha},
    {"isalnum", m_isalnum},
    {"isspace", m_isspace},
    {"isupper", m_isupper},
    {"islower", m_islower},
    {"format", m_format},
    {"removeprefix", m_removeprefix},
    {"removesuffix", m_removesuffix},
    {"center", m_center},
    {"ljust", m_ljust},
    {"rjust", m_rjust},
    {"zfill", m_zfill},
};

const size_t tmpl_n_str_format_methods = sizeof tmpl_str_format_methods / sizeof tmpl_str_format_methods[0];
