/* grammar_spec_build: each kind of constraint through its front end. */
#include "grammar/spec.h"

#include "grammar/gbnf.h"
#include "grammar/regex.h"
#include "grammar/tool_calls.h"

const char *grammar_kind_name(enum grammar_kind k)
{
    switch (k) {
    case GRAMMAR_NONE: return "none";
    case GRAMMAR_JSON_SCHEMA: return "json_schema";
    case GRAMMAR_JSON_OBJECT: return "json_object";
    case GRAMMAR_REGEX: return "regex";
    case GRAMMAR_GBNF: return "grammar";
    case GRAMMAR_TOOL_CALLS: return "tool_calls";
    }
    return "?";
}

static int build_body(const struct grammar_spec *spec, struct gir *g, struct json_schema_notes *notes,
                      struct err *e)
{
    struct json_schema_opts o = {spec->strict, spec->ws_max, spec->ws_lines};
    switch (spec->kind) {
    case GRAMMAR_JSON_SCHEMA: return json_schema_from_text(spec->text, spec->len, &o, notes, g, e);
    case GRAMMAR_JSON_OBJECT: return json_object_to_gir(g, &o, e);
    case GRAMMAR_REGEX: {
        int x = regex_to_gx(g, spec->text, spec->len, 0, e);
        if (x < 0)
            return -1;
        int root = gir_rule(g, "root");
        gir_define(g, root, x);
        gir_set_root(g, root);
        if (gir_failed(g))
            return err_set(e, "%s", g->error.msg);
        return 0;
    }
    case GRAMMAR_GBNF: return gbnf_to_gir(g, spec->text, spec->len, e);
    case GRAMMAR_TOOL_CALLS: return tool_calls_to_gir(g, spec->text, spec->len, &o, notes, e);
    case GRAMMAR_NONE: break;
    }
    return err_set(e, "no grammar given");
}

int grammar_spec_build(const struct grammar_spec *spec, struct gir *g, struct json_schema_notes *notes,
                       struct err *e)
{
    if (build_body(spec, g, notes, e))
        return -1;
    if (!spec->think_open || !spec->think_close)
        return 0;
    /* (open, text without close, close, blanks)? then the body; inside: no open, not optional */
    struct byteset blanks = {{1u << '\t' | 1u << '\n' | 1u << '\r', 1u << 0}};
    int think = gx_seq3(g, spec->think_inside ? gx_empty(g) : gx_str(g, spec->think_open),
                        gx_without(g, spec->think_close),
                        gx_seq2(g, gx_str(g, spec->think_close), gx_repeat(g, gx_bytes(g, &blanks), 0, 4)));
    int root = gir_rule_fresh(g, "root_after_reasoning");
    gir_define(g, root, gx_seq2(g, spec->think_inside ? think : gx_opt(g, think), gx_ref(g, g->root)));
    gir_set_root(g, root);
    if (gir_failed(g))
        return err_set(e, "%s", g->error.msg);
    return 0;
}
