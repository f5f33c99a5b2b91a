/* Statement execution and scopes.
 *
 * Scoping follows jinja2: `if` shares its frame; every for-loop iteration,
 * macro call, `with` and call/generation block gets a fresh child frame, so
 * a `set` inside them does not leak out (namespaces exist for that); each
 * iteration starts again from the enclosing values. Macros see the frame
 * they were defined in, live (a top-level macro sees top-level variables set
 * before the call, not the caller's loop variables). Frames captured by
 * macros and all namespaces are remembered by the render context so the
 * reference cycles through them are cleared when the render ends. */
#include <string.h>

#include "template/internal.h"

enum { X_OK = 0, X_ERR = -1, X_BREAK = 1, X_CONTINUE = 2 };

struct frame *tmpl_frame_new(struct frame *parent)
{
    struct frame *f = xcalloc(1, sizeof *f);
    f->h.rc = 1;
    f->parent = parent;
    if (parent)
        parent->h.rc++;
    return f;
}

static void tmpl_frame_clear(struct frame *f)
{
    for (int i = 0; i < f->n; i++)
        tmpl_value_release(f->vals[i]);
    f->n = 0;
}

void tmpl_frame_release(struct frame *f)
{
    while (f && --f->h.rc == 0) {
        struct frame *p = f->parent;
        tmpl_frame_clear(f);
        free(f->names);
        free(f->vals);
        free(f);
        f = p;
    }
}

void tmpl_frame_set(struct frame *f, const char *name, struct tval v)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name)) {
            tmpl_value_release(f->vals[i]);
            f->vals[i] = v;
            return;
        }
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 8;
        f->names = xrealloc(f->names, (size_t)f->cap * sizeof *f->names);
        f->vals = xrealloc(f->vals, (size_t)f->cap * sizeof *f->vals);
    }
    f->names[f->n] = name;
    f->vals[f->n++] = v;
}

struct tval *tmpl_frame_lookup(struct frame *f, const char *name)
{
    for (; f; f = f->parent)
        for (int i = f->n - 1; i >= 0; i--)
            if (!strcmp(f->names[i], name))
                return &f->vals[i];
    return NULL;
}

static void track_frame(struct rctx *c, struct frame *f)
{
    for (int i = 0; i < c->ncaptured; i++)
        if (c->captured[i] == f)
            return;
    if (c->ncaptured == c->capcap) {
        c->capcap = c->capcap ? c->capcap * 2 : 8;
        c->captured = xrealloc(c->captured, (size_t)c->capcap * sizeof *c->captured);
    }
    f->h.rc++;
    c->captured[c->ncaptured++] = f;
}

void tmpl_track_ns(struct rctx *c, struct tns *ns)
{
    if (c->nnss == c->nscap) {
        c->nscap = c->nscap ? c->nscap * 2 : 8;
        c->nss = xrealloc(c->nss, (size_t)c->nscap * sizeof *c->nss);
    }
    ns->h.rc++;
    c->nss[c->nnss++] = ns;
}

/* ------------------------------------------------------------ assignment */

static int assign(struct rctx *c, struct frame *f, const struct node *t, struct tval v)
{
    if (t->kind == E_NAME) {
        tmpl_frame_set(f, t->str, v);
        return 0;
    }
    if (t->kind == E_NSREF) {
        struct tval *ns = tmpl_frame_lookup(f, t->str);
        if (!ns)
            ns = tmpl_dict_get_str(c->vars, t->str);
        if (!ns || ns->k != TV_NS) {
            tmpl_value_release(v);
            return tmpl_err(c, t->line, "cannot assign attribute on non-namespace object");
        }
        if (t->str2[0] == '_') {
            tmpl_value_release(v);
            return tmpl_err(c, t->line,
                            "Chat templates cannot store underscore-prefixed attributes on a namespace, "
                            "but got '%s'",
                            t->str2);
        }
        tmpl_dict_set(ns->u.ns->d, tmpl_value_cstr(t->str2), v);
        return 0;
    }
    /* tuple unpacking */
    struct tlist *items;
    int rc = tmpl_eval_iterate(c, t->line, v, &items);
    tmpl_value_release(v);
    if (rc)
        return -1;
    struct tval il = {.k = TV_LIST};
    il.u.l = items;
    if (items->n != (size_t)t->l1.n) {
        if (items->n > (size_t)t->l1.n)
            tmpl_err(c, t->line, "too many values to unpack (expected %d)", t->l1.n);
        else
            tmpl_err(c, t->line, "not enough values to unpack (expected %d, got %zu)", t->l1.n, items->n);
        tmpl_value_release(il);
        return -1;
    }
    for (int i = 0; i < t->l1.n; i++) {
        tmpl_value_retain(items->v[i]);
        if (assign(c, f, t->l1.v[i], items->v[i])) {
            tmpl_value_release(il);
            return -1;
        }
    }
    tmpl_value_release(il);
    return 0;
}

/* ---------------------------------------------------------------- output */

static int emit(struct rctx *c, int line, const char *s, size_t n)
{
    if (c->out->n + n > TMPL_MAX_STR)
        return tmpl_err(c, line, "rendered output too large");
    tmpl_strbuf_put(c->out, s, n);
    return 0;
}

/* Runs body in frame f with output captured into a string value. */
static int capture(struct rctx *c, struct frame *f, const struct nlist *body, struct tval *out)
{
    struct sbuf buf = {0}, *saved = c->out;
    c->out = &buf;
    int rc = tmpl_exec_body(c, f, body);
    c->out = saved;
    if (rc < 0) {
        tmpl_strbuf_free(&buf);
        return -1;
    }
    *out = tmpl_strbuf_take_str(&buf);
    return 0;
}

/* ---------------------------------------------------------------- loops */

static int exec_for(struct rctx *c, struct frame *f, const struct node *n)
{
    struct tval it;
    struct tlist *items;
    if (tmpl_eval_expr(c, f, n->b, &it))
        return X_ERR;
    int rc = tmpl_eval_iterate(c, n->b->line, it, &items);
    tmpl_value_release(it);
    if (rc)
        return X_ERR;
    struct tval il = {.k = TV_LIST};
    il.u.l = items;
    if (n->c) { /* {% for x in xs if cond %} */
        struct tval kept = tmpl_value_list_new(TL_LIST, items->n);
        for (size_t i = 0; i < items->n; i++) {
            struct frame *tmp = tmpl_frame_new(f);
            struct tval cond;
            tmpl_value_retain(items->v[i]);
            rc = assign(c, tmp, n->a, items->v[i]) || tmpl_eval_expr(c, tmp, n->c, &cond) ? -1 : 0;
            tmpl_frame_release(tmp);
            if (rc) {
                tmpl_value_release(kept);
                tmpl_value_release(il);
                return X_ERR;
            }
            if (tmpl_value_truthy(cond)) {
                tmpl_value_retain(items->v[i]);
                tmpl_list_push(kept.u.l, items->v[i]);
            }
            tmpl_value_release(cond);
        }
        tmpl_value_release(il);
        il = kept;
        items = kept.u.l;
    }
    if (!items->n) {
        tmpl_value_release(il);
        if (!n->l2.n)
            return X_OK;
        struct frame *ef = tmpl_frame_new(f);
        rc = tmpl_exec_body(c, ef, &n->l2);
        tmpl_frame_release(ef);
        return rc < 0 ? X_ERR : rc;
    }
    struct tloop *lp = xcalloc(1, sizeof *lp);
    lp->h.rc = 1;
    lp->items = items; /* takes il's reference */
    lp->last_changed.k = TV_MISSING;
    struct tval loopv = {.k = TV_LOOP};
    loopv.u.loop = lp;
    rc = X_OK;
    for (size_t i = 0; i < items->n; i++) {
        lp->idx = i;
        struct frame *it_f = tmpl_frame_new(f);
        tmpl_value_retain(items->v[i]);
        if (assign(c, it_f, n->a, items->v[i])) {
            tmpl_frame_release(it_f);
            rc = X_ERR;
            break;
        }
        tmpl_value_retain(loopv);
        tmpl_frame_set(it_f, "loop", loopv);
        int r = tmpl_exec_body(c, it_f, &n->l1);
        tmpl_frame_release(it_f);
        if (r == X_ERR) {
            rc = X_ERR;
            break;
        }
        if (r == X_BREAK)
            break;
    }
    tmpl_value_release(loopv);
    return rc;
}

/* ---------------------------------------------------------------- macros */

static struct tval make_macro(struct rctx *c, struct frame *f, const struct node *n)
{
    struct tfunc *m = xcalloc(1, sizeof *m);
    m->h.rc = 1;
    m->kind = FN_MACRO;
    m->name = n->str;
    m->macro = n;
    m->closure = f;
    f->h.rc++;
    m->self.k = TV_UNDEF;
    track_frame(c, f);
    struct tval v = {.k = TV_FUNC};
    v.u.fn = m;
    return v;
}

int tmpl_exec_macro_call(struct rctx *c, int line, const struct tfunc *m, const struct targs *a,
                         struct tval *out)
{
    const struct node *n = m->macro;
    int nparams = n->l2.n, ndef = n->l3.n;
    if (a->npos > nparams && !(n->flags & MACRO_USES_VARARGS))
        return tmpl_err(c, line, "macro '%s' takes not more than %d argument(s)", m->name, nparams);
    if (c->depth >= TMPL_MAX_DEPTH)
        return tmpl_err(c, line, "maximum macro recursion depth exceeded");
    struct frame *mf = tmpl_frame_new(m->closure);
    struct tval kwargs = tmpl_value_dict_new(0), caller = tmpl_value_undef_hint("No caller defined");
    int rc = 0;
    char *bound = xcalloc((size_t)nparams + 1, 1);
    for (int i = 0; i < nparams && i < a->npos; i++) {
        tmpl_value_retain(a->pos[i]);
        tmpl_frame_set(mf, n->l2.v[i]->str, a->pos[i]);
        bound[i] = 1;
    }
    for (int k = 0; k < a->nkw && !rc; k++) {
        int found = 0;
        for (int i = 0; i < nparams; i++)
            if (!strcmp(n->l2.v[i]->str, a->kwn[k])) {
                found = 1;
                if (bound[i]) {
                    rc = tmpl_err(c, line, "macro '%s' got multiple values for argument '%s'", m->name,
                                  a->kwn[k]);
                } else {
                    tmpl_value_retain(a->kw[k]);
                    tmpl_frame_set(mf, n->l2.v[i]->str, a->kw[k]);
                    bound[i] = 1;
                }
            }
        if (found || rc)
            continue;
        if (!strcmp(a->kwn[k], "caller") && (n->flags & MACRO_USES_CALLER)) {
            tmpl_value_release(caller);
            caller = a->kw[k];
            tmpl_value_retain(caller);
        } else if (n->flags & MACRO_USES_KWARGS) {
            tmpl_value_retain(a->kw[k]);
            tmpl_dict_set(kwargs.u.d, tmpl_value_cstr(a->kwn[k]), a->kw[k]);
        } else {
            rc = tmpl_err(c, line, "macro '%s' takes no keyword argument '%s'", m->name, a->kwn[k]);
        }
    }
    for (int i = 0; i < nparams && !rc; i++) {
        if (bound[i])
            continue;
        int d = i - (nparams - ndef);
        struct tval v;
        if (d >= 0) {
            if (tmpl_eval_expr(c, mf, n->l3.v[d], &v)) {
                rc = -1;
                break;
            }
        } else {
            v = tmpl_value_undef_hint("parameter '%s' was not provided", n->l2.v[i]->str);
        }
        tmpl_frame_set(mf, n->l2.v[i]->str, v);
    }
    free(bound);
    if (!rc) {
        if (n->flags & MACRO_USES_VARARGS) {
            struct tval va = tmpl_value_list_new(TL_TUPLE, 0);
            for (int i = nparams; i < a->npos; i++) {
                tmpl_value_retain(a->pos[i]);
                tmpl_list_push(va.u.l, a->pos[i]);
            }
            tmpl_frame_set(mf, "varargs", va);
        }
        if (n->flags & MACRO_USES_KWARGS) {
            tmpl_value_retain(kwargs);
            tmpl_frame_set(mf, "kwargs", kwargs);
        }
        if (n->flags & MACRO_USES_CALLER) {
            tmpl_value_retain(caller);
            tmpl_frame_set(mf, "caller", caller);
        }
        c->depth++;
        rc = capture(c, mf, &n->l1, out);
        c->depth--;
    }
    tmpl_value_release(kwargs);
    tmpl_value_release(caller);
    tmpl_frame_release(mf);
    return rc ? -1 : 0;
}

static int exec_callblock(struct rctx *c, struct frame *f, const struct node *n)
{
    struct tval callee, res;
    const struct node *call = n->a;
    if (tmpl_eval_expr(c, f, call->a, &callee))
        return X_ERR;
    /* the call's own arguments, plus caller= (zeroed slots are Undefined) */
    int np = call->l1.n, nk = call->l2.n, rc = 0;
    struct tval *pos = xcalloc((size_t)np + 1, sizeof *pos), *kw = xcalloc((size_t)nk + 1, sizeof *kw);
    const char **kwn = xcalloc((size_t)nk + 1, sizeof *kwn);
    for (int i = 0; i < np && !rc; i++)
        rc = tmpl_eval_expr(c, f, call->l1.v[i], &pos[i]);
    for (int i = 0; i < nk && !rc; i++) {
        kwn[i] = call->kwn[i];
        rc = tmpl_eval_expr(c, f, call->l2.v[i], &kw[i]);
    }
    if (!rc) {
        kwn[nk] = "caller";
        kw[nk] = make_macro(c, f, n);
        struct targs a = {.npos = np, .pos = pos, .nkw = nk + 1, .kwn = kwn, .kw = kw};
        rc = tmpl_eval_call(c, n->line, callee, &a, &res);
        if (!rc) {
            struct sbuf s = {0};
            tmpl_value_write_str(&s, res);
            tmpl_value_release(res);
            rc = emit(c, n->line, s.p ? s.p : "", s.n);
            tmpl_strbuf_free(&s);
        }
    }
    for (int i = 0; i < np; i++)
        tmpl_value_release(pos[i]);
    for (int i = 0; i <= nk; i++)
        tmpl_value_release(kw[i]);
    free(pos);
    free(kw);
    free(kwn);
    tmpl_value_release(callee);
    return rc ? X_ERR : X_OK;
}

/* ------------------------------------------------------------ statements */

static int exec_node(struct rctx *c, struct frame *f, const struct node *n)
{
    struct tval v;
    int rc;
    switch (n->kind) {
    case N_DATA:
        return emit(c, n->line, n->str, n->len) ? X_ERR : X_OK;
    case N_OUTPUT:
        for (int i = 0; i < n->l1.n; i++) {
            if (tmpl_eval_expr(c, f, n->l1.v[i], &v))
                return X_ERR;
            size_t before = c->out->n;
            tmpl_value_write_str(c->out, v);
            tmpl_value_release(v);
            if (c->out->n > TMPL_MAX_STR) {
                c->out->n = before;
                return tmpl_err(c, n->line, "rendered output too large");
            }
        }
        return X_OK;
    case N_IF:
        if (tmpl_eval_expr(c, f, n->a, &v))
            return X_ERR;
        rc = tmpl_value_truthy(v);
        tmpl_value_release(v);
        return tmpl_exec_body(c, f, rc ? &n->l1 : &n->l2);
    case N_FOR:
        return exec_for(c, f, n);
    case N_SET:
        if (tmpl_eval_expr(c, f, n->b, &v))
            return X_ERR;
        return assign(c, f, n->a, v) ? X_ERR : X_OK;
    case N_SET_BLOCK: {
        struct frame *bf = tmpl_frame_new(f);
        rc = capture(c, bf, &n->l1, &v);
        tmpl_frame_release(bf);
        if (rc)
            return X_ERR;
        if (n->c) {
            struct tval r;
            rc = tmpl_eval_filter_apply(c, f, n->c, v, &r);
            tmpl_value_release(v);
            if (rc)
                return X_ERR;
            v = r;
        }
        return assign(c, f, n->a, v) ? X_ERR : X_OK;
    }
    case N_MACRO:
        tmpl_frame_set(f, n->str, make_macro(c, f, n));
        return X_OK;
    case N_CALLBLOCK:
        return exec_callblock(c, f, n);
    case N_FILTER_BLOCK: {
        struct frame *bf = tmpl_frame_new(f);
        rc = capture(c, bf, &n->l1, &v);
        tmpl_frame_release(bf);
        if (rc)
            return X_ERR;
        struct tval r;
        rc = tmpl_eval_filter_apply(c, f, n->a, v, &r);
        tmpl_value_release(v);
        if (rc)
            return X_ERR;
        struct sbuf s = {0};
        tmpl_value_write_str(&s, r);
        tmpl_value_release(r);
        rc = emit(c, n->line, s.p ? s.p : "", s.n);
        tmpl_strbuf_free(&s);
        return rc ? X_ERR : X_OK;
    }
    case N_WITH: {
        struct frame *wf = tmpl_frame_new(f);
        rc = X_OK;
        for (int i = 0; i < n->l2.n && rc == X_OK; i++) {
            if (tmpl_eval_expr(c, f, n->l3.v[i], &v) || assign(c, wf, n->l2.v[i], v))
                rc = X_ERR;
        }
        if (rc == X_OK)
            rc = tmpl_exec_body(c, wf, &n->l1);
        tmpl_frame_release(wf);
        return rc;
    }
    case N_SCOPE: {
        struct frame *sf = tmpl_frame_new(f);
        rc = tmpl_exec_body(c, sf, &n->l1);
        tmpl_frame_release(sf);
        return rc;
    }
    case N_BREAK:
        return X_BREAK;
    case N_CONTINUE:
        return X_CONTINUE;
    default:
        return tmpl_err(c, n->line, "expression used as a statement");
    }
}

int tmpl_exec_body(struct rctx *c, struct frame *f, const struct nlist *body)
{
    for (int i = 0; i < body->n; i++) {
        int rc = exec_node(c, f, body->v[i]);
        if (rc != X_OK)
            return rc;
    }
    return X_OK;
}
