/* Public entry points of the template interpreter: compile (lex + parse),
 * render (JSON variables -> values, run the statements, break the
 * reference cycles left in frames and namespaces), free. */
#include <string.h>

#include "template/internal.h"
#include "template/template.h"

struct tmpl {
    struct node *root;
};

struct tmpl *tmpl_compile(const char *src, size_t len, struct err *e)
{
    struct token *toks;
    int ntoks;
    if (tmpl_lex(src, len, &toks, &ntoks, e))
        return NULL;
    struct node *root = tmpl_parse(toks, ntoks, e);
    tmpl_tokens_free(toks, ntoks);
    if (!root)
        return NULL;
    struct tmpl *t = xcalloc(1, sizeof *t);
    t->root = root;
    return t;
}

void tmpl_free(struct tmpl *t)
{
    if (!t)
        return;
    tmpl_node_free(t->root);
    free(t);
}

static struct tval from_json(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        struct tval d = tmpl_value_dict_new(json_object_size(j));
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) tmpl_dict_set(d.u.d, tmpl_value_cstr(k), from_json(v));
        return d;
    }
    case JSON_ARRAY: {
        struct tval l = tmpl_value_list_new(TL_LIST, json_array_size(j));
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) tmpl_list_push(l.u.l, from_json(v));
        return l;
    }
    case JSON_STRING:
        return tmpl_value_str(json_string_value(j), json_string_length(j));
    case JSON_INTEGER:
        return tmpl_value_int((int64_t)json_integer_value(j));
    case JSON_REAL:
        return tmpl_value_float(json_real_value(j));
    case JSON_TRUE:
        return tmpl_value_bool(1);
    case JSON_FALSE:
        return tmpl_value_bool(0);
    default:
        return tmpl_value_none();
    }
}

int tmpl_render(const struct tmpl *t, const json_t *vars, char **out, size_t *out_len, struct err *e)
{
    if (vars && !json_is_object(vars))
        return err_set(e, "template variables must be a JSON object");
    struct tval vd = vars ? from_json(vars) : tmpl_value_dict_new(0);
    struct sbuf buf = {0};
    struct rctx c = {.e = e, .vars = vd.u.d, .out = &buf};
    struct frame *root = tmpl_frame_new(NULL);
    int rc = tmpl_exec_body(&c, root, &t->root->l1);
    /* break cycles: macros <-> their frames, namespaces holding anything */
    for (int i = 0; i < c.ncaptured; i++) {
        struct frame *f = c.captured[i];
        for (int k = 0; k < f->n; k++)
            tmpl_value_release(f->vals[k]);
        f->n = 0;
    }
    for (int i = 0; i < c.nnss; i++) {
        struct tdict *d = c.nss[i]->d;
        for (size_t k = 0; k < d->n; k++) {
            tmpl_value_release(d->k[k]);
            tmpl_value_release(d->v[k]);
        }
        d->n = 0;
    }
    for (int i = 0; i < c.ncaptured; i++)
        tmpl_frame_release(c.captured[i]);
    for (int i = 0; i < c.nnss; i++) {
        struct tval v = {.k = TV_NS};
        v.u.ns = c.nss[i];
        tmpl_value_release(v);
    }
    free(c.captured);
    free(c.nss);
    tmpl_frame_release(root);
    tmpl_value_release(vd);
    if (rc < 0) {
        tmpl_strbuf_free(&buf);
        return -1;
    }
    if (!buf.p) {
        buf.p = xmalloc(1);
        buf.p[0] = 0;
    }
    *out = buf.p;
    if (out_len)
        *out_len = buf.n;
    return 0;
}
