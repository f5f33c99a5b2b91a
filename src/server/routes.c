/* The small routes: /health, /v1/models, /v1/models/{id}, /metrics, /tokenize, /detokenize. */
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"

int route_health(struct server *s, struct conn *c)
{
    (void)s;
    return server_reply_text(c, 200, "text/plain", strdup(""), 0);
}

/* A served model as OpenAI's model object. */
static json_t *model_object(const struct server *s, const char *id)
{
    return json_pack("{s:s, s:s, s:I, s:s, s:i}", "id", id, "object", "model", "created", (json_int_t)s->started,
                     "owned_by", "infer", "max_model_len", s->octx.max_context);
}

int route_models(struct server *s, struct conn *c)
{
    return server_reply_json(c, 200,
                             json_pack("{s:s, s:[o]}", "object", "list", "data", model_object(s, s->o.served_name)));
}

/* GET /v1/models/{id}: the model when id is a served name (ids may hold '/'), else OpenAI's 404. */
int route_model(struct server *s, struct conn *c, const char *id)
{
    for (int i = 0; i < s->octx.n_model_names; i++)
        if (!strcmp(id, s->octx.model_names[i]))
            return server_reply_json(c, 200, model_object(s, s->octx.model_names[i]));
    struct oai_error err;
    oai_error_set(&err, 404, "model", "The model '%s' does not exist", id);
    return server_reply_error(c, &err);
}

int route_metrics(struct server *s, struct conn *c)
{
    struct engine_stats st;
    engine_get_stats(s->eng, &st);
    struct metrics_gauges g = {.running = st.running,
                               .waiting = st.waiting,
                               .kv_blocks_used = st.kv_blocks_used,
                               .kv_blocks_total = st.kv_blocks,
                               .prefix_hit_tokens = st.prefix_hit_tokens,
                               .prefix_lookup_tokens = st.prefix_lookup_tokens,
                               .graph_replays = st.graph_replays,
                               .eager_steps = st.eager_steps,
                               .ranks = st.ranks,
                               .graph_capture_s = st.graph_capture_s,
                               .graph_bytes = st.graph_bytes,
                               .preemptions = st.preemptions,
                               .spec_steps = st.spec_steps,
                               .spec_proposed = st.spec_proposed,
                               .spec_accepted = st.spec_accepted,
                               .spec_method = st.spec_method};
    size_t len;
    char *text = metrics_render(s->metrics, &g, &len);
    return server_reply_text(c, 200, "text/plain; version=0.0.4", text, len);
}

static json_t *parse_body(const struct conn *c, struct oai_error *err)
{
    json_error_t je;
    json_t *o = c->body ? json_loadb(c->body, c->len, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!o) {
        oai_error_set(err, 400, NULL, "the body is not valid JSON%s%s", c->body ? ": " : "", c->body ? je.text : "");
        return NULL;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        oai_error_set(err, 400, NULL, "the body must be a JSON object");
        return NULL;
    }
    return o;
}

/* {"prompt": text, "add_special_tokens"?} or {"messages": [...]} -> {"tokens", "count", "max_model_len"} */
int route_tokenize(struct server *s, struct conn *c)
{
    struct oai_error err;
    json_t *o = parse_body(c, &err);
    if (!o)
        return server_reply_error(c, &err);
    const json_t *prompt = json_object_get(o, "prompt"), *messages = json_object_get(o, "messages");
    const json_t *add = json_object_get(o, "add_special_tokens");
    char *rendered = NULL;
    struct token_ids ids = {0};
    struct err e = {{0}};
    int failed = 0;
    if (!s->tok) {
        failed = oai_error_set(&err, 400, NULL, "the model has no tokenizer");
    } else if (!!prompt == !!messages) {
        failed = oai_error_set(&err, 400, NULL, "give one of \"prompt\" and \"messages\"");
    } else if (prompt && !json_is_string(prompt)) {
        failed = oai_error_set(&err, 400, "prompt", "\"prompt\" must be a string");
    } else if (add && !json_is_boolean(add)) {
        failed = oai_error_set(&err, 400, "add_special_tokens", "\"add_special_tokens\" must be true or false");
    } else if (messages && (!s->ct || !json_is_array(messages) ||
                            chat_template_render(s->ct, messages, NULL, 1, NULL, &rendered, &e))) {
        failed = oai_error_set(&err, 400, "messages", "%s",
                               !s->ct ? "the model has no chat template"
                               : !json_is_array(messages) ? "\"messages\" must be an array"
                                                          : e.msg);
    }
    if (!failed) {
        const char *text = prompt ? json_string_value(prompt) : rendered;
        size_t len = prompt ? json_string_length(prompt) : strlen(rendered);
        int special = prompt ? (add ? json_is_true(add) : 1) : 0; /* a rendered template writes its own BOS */
        if (tokenizer_encode(s->tok, text, len, special, &ids, &e))
            failed = oai_error_set(&err, 400, prompt ? "prompt" : "messages", "%s", e.msg);
    }
    free(rendered);
    json_decref(o);
    if (failed) {
        token_ids_free(&ids);
        return server_reply_error(c, &err);
    }
    json_t *tokens = json_array();
    for (int i = 0; i < ids.n; i++)
        json_array_append_new(tokens, json_integer(ids.ids[i]));
    json_t *out = json_pack("{s:i, s:i, s:o}", "count", ids.n, "max_model_len", s->octx.max_context, "tokens", tokens);
    token_ids_free(&ids);
    return server_reply_json(c, 200, out);
}

/* {"tokens": [ids]} -> {"prompt": text} */
int route_detokenize(struct server *s, struct conn *c)
{
    struct oai_error err;
    json_t *o = parse_body(c, &err);
    if (!o)
        return server_reply_error(c, &err);
    const json_t *tokens = json_object_get(o, "tokens");
    int failed = 0;
    if (!s->tok)
        failed = oai_error_set(&err, 400, NULL, "the model has no tokenizer");
    else if (!json_is_array(tokens))
        failed = oai_error_set(&err, 400, "tokens", "\"tokens\" must be an array of token ids");
    int n = failed ? 0 : (int)json_array_size(tokens);
    int32_t *ids = xmalloc((size_t)(n ? n : 1) * sizeof *ids);
    for (int i = 0; i < n && !failed; i++) {
        const json_t *t = json_array_get(tokens, (size_t)i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= s->octx.vocab_size)
            failed = oai_error_set(&err, 400, "tokens", "\"tokens\"[%d] is not a token id in [0, %d)", i,
                                   s->octx.vocab_size);
        else
            ids[i] = (int32_t)json_integer_value(t);
    }
    json_decref(o);
    char *text = NULL;
    size_t len = 0;
    struct err e = {{0}};
    if (!failed && tokenizer_decode(s->tok, ids, n, 0, &text, &len, &e))
        failed = oai_error_set(&err, 400, "tokens", "%s", e.msg);
    free(ids);
    if (failed) {
        free(text);
        return server_reply_error(c, &err);
    }
    json_t *out = json_pack("{s:s%}", "prompt", text, len);
    free(text);
    if (!out) { /* the ids decode to bytes that are not UTF-8 on their own */
        oai_error_set(&err, 400, "tokens", "the tokens do not decode to valid UTF-8 text");
        return server_reply_error(c, &err);
    }
    return server_reply_json(c, 200, out);
}
