/* OpenAI's response objects and SSE chunks for chat and text completions.
 *
 * Every string that reaches JSON goes through a lossy UTF-8 conversion
 * (a token decoded alone can be part of a character), so jansson never
 * refuses a value; the raw bytes stay available in "bytes". Log-probs that
 * are not finite (a token the model gives no chance) become -9999, as vLLM
 * reports them, since JSON has no -Infinity.
 *
 * Offsets in "text_offset" count Unicode code points (Python string
 * indices, as vLLM reports them) of the tokens decoded alone, from the start
 * of the choice's "text" (after the prompt when echoing). A streamed chunk
 * cannot know the text sent before it: its offsets start at its own text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"
#include "chat/chat_output.h"
#include "core/utf8.h"

/* A JSON string of s[0..n), invalid bytes replaced by U+FFFD. */
static json_t *jtext(const char *s, size_t n)
{
    if (utf8_valid_prefix(s, n) == n)
        return json_stringn(s, n);
    char *buf = xmalloc(3 * n + 1);
    size_t m = utf8_lossy(buf, s, n);
    json_t *j = json_stringn(buf, m);
    free(buf);
    return j;
}

static json_t *jlogprob(float x) { return json_real(isfinite(x) ? (double)x : -9999.0); }

static const char *finish_name(int f)
{
    return f == OAI_FINISH_TOOL_CALLS ? "tool_calls"
           : f == FINISH_REASON_STOP  ? "stop"
           : f == FINISH_REASON_ABORT ? "abort"
                                      : "length";
}

void oai_tool_call_id(const char *id, int index, int call, char out[32])
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the response id, then mixed with the indices */
    for (const char *c = id; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    uint64_t a = h ^ ((uint64_t)index << 32 | (uint32_t)call), b = a * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    a = (a ^ (a >> 31)) * 0x7fb5d329728ea185ull;
    b = (b ^ (b >> 29)) * 0x81dadef4bc2dd44dull;
    snprintf(out, 32, "call_%016llx%08llx", (unsigned long long)(a ^ (a >> 33)),
             (unsigned long long)((b ^ (b >> 32)) & 0xffffffffull));
}

/* The message of a chat choice: the text as content, or what it read back as. */
static json_t *chat_message_json(const struct oai_completion_request *r, const struct oai_choice *c, int index,
                                 const char *id)
{
    (void)r;
    json_t *msg = json_object();
    json_object_set_new(msg, "role", json_string("assistant"));
    const struct chat_message *m = c->msg;
    if (!m) {
        json_object_set_new(msg, "content", jtext(c->text ? c->text : "", c->text ? c->text_len : 0));
        return msg;
    }
    json_object_set_new(msg, "content",
                        m->content ? jtext(m->content, m->content_len) : m->n_calls ? json_null() : json_string(""));
    if (m->reasoning)
        json_object_set_new(msg, "reasoning_content", jtext(m->reasoning, m->reasoning_len));
    if (m->n_calls) {
        json_t *calls = json_array();
        for (int k = 0; k < m->n_calls; k++) {
            char call_id[32];
            oai_tool_call_id(id, index, k, call_id);
            json_t *fn = json_object();
            json_object_set_new(fn, "name", jtext(m->calls[k].name, strlen(m->calls[k].name)));
            json_object_set_new(fn, "arguments", jtext(m->calls[k].args, m->calls[k].args_len));
            json_array_append_new(calls, json_pack("{s:s, s:s, s:o}", "id", call_id, "type", "function", "function", fn));
        }
        json_object_set_new(msg, "tool_calls", calls);
    }
    return msg;
}

/* One token decoded alone, specials included (malloc'ed, raw bytes). */
struct tok_text {
    char *s;
    size_t n;
};

static struct tok_text token_text(const struct tokenizer *tok, int32_t id)
{
    struct tok_text t = {NULL, 0};
    struct err e;
    if (!tok || tokenizer_decode(tok, &id, 1, 0, &t.s, &t.n, &e)) {
        t.s = xstrdup("");
        t.n = 0;
    }
    return t;
}

/* Code points of s once made valid (what a client indexes). */
static size_t text_chars(const char *s, size_t n)
{
    if (utf8_valid_prefix(s, n) == n)
        return utf8_count(s, n);
    char *buf = xmalloc(3 * n + 1);
    size_t k = utf8_count(buf, utf8_lossy(buf, s, n));
    free(buf);
    return k;
}

static int n_top(const struct oai_completion_request *r, const struct oai_token_logprob *lp)
{
    int n = lp->n_top < r->f.submit.sampling.top_logprobs ? lp->n_top : r->f.submit.sampling.top_logprobs;
    return n < 0 ? 0 : n > 20 ? 20 : n;
}

/* {"token", "logprob", "bytes"} */
static json_t *chat_token(const struct tokenizer *tok, int32_t id, float logprob)
{
    struct tok_text t = token_text(tok, id);
    json_t *bytes = json_array();
    for (size_t i = 0; i < t.n; i++)
        json_array_append_new(bytes, json_integer((unsigned char)t.s[i]));
    json_t *o = json_object();
    json_object_set_new(o, "token", jtext(t.s, t.n));
    json_object_set_new(o, "logprob", jlogprob(logprob));
    json_object_set_new(o, "bytes", bytes);
    free(t.s);
    return o;
}

/* {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}, ...]} */
static json_t *chat_logprobs(const struct oai_completion_request *r, const struct tokenizer *tok,
                             const struct oai_token_logprob *lp, int n_lp)
{
    json_t *content = json_array();
    for (int i = 0; i < n_lp; i++) {
        json_t *e = chat_token(tok, lp[i].token, lp[i].logprob), *top = json_array();
        for (int k = 0; k < n_top(r, &lp[i]); k++)
            json_array_append_new(top, chat_token(tok, lp[i].top_ids[k], lp[i].top_logprobs[k]));
        json_object_set_new(e, "top_logprobs", top);
        json_array_append_new(content, e);
    }
    json_t *o = json_object();
    json_object_set_new(o, "content", content);
    return o;
}

/* Sets key (the token's text) to logprob unless a likelier token already has that text. */
static void top_set(json_t *dict, const struct tokenizer *tok, int32_t id, float logprob)
{
    struct tok_text t = token_text(tok, id);
    json_t *key = jtext(t.s, t.n);
    if (!json_object_getn(dict, json_string_value(key), json_string_length(key)))
        json_object_setn_new(dict, json_string_value(key), json_string_length(key), jlogprob(logprob));
    json_decref(key);
    free(t.s);
}

/* {"tokens", "token_logprobs", "top_logprobs": [{text: logprob}] | null, "text_offset"}:
 * each position's dict holds the N likeliest tokens and the chosen one. */
static json_t *completion_logprobs(const struct oai_completion_request *r, const struct tokenizer *tok,
                                   const struct oai_token_logprob *lp, int n_lp, size_t offset)
{
    json_t *tokens = json_array(), *lps = json_array(), *offsets = json_array();
    json_t *tops = r->f.submit.sampling.top_logprobs > 0 ? json_array() : json_null();
    for (int i = 0; i < n_lp; i++) {
        struct tok_text t = token_text(tok, lp[i].token);
        json_array_append_new(tokens, jtext(t.s, t.n));
        json_array_append_new(lps, jlogprob(lp[i].logprob));
        json_array_append_new(offsets, json_integer((json_int_t)offset));
        offset += text_chars(t.s, t.n);
        free(t.s);
        if (r->f.submit.sampling.top_logprobs > 0) {
            json_t *dict = json_object();
            for (int k = 0; k < n_top(r, &lp[i]); k++)
                top_set(dict, tok, lp[i].top_ids[k], lp[i].top_logprobs[k]);
            top_set(dict, tok, lp[i].token, lp[i].logprob);
            json_array_append_new(tops, dict);
        }
    }
    json_t *o = json_object();
    json_object_set_new(o, "tokens", tokens);
    json_object_set_new(o, "token_logprobs", lps);
    json_object_set_new(o, "top_logprobs", tops);
    json_object_set_new(o, "text_offset", offsets);
    return o;
}

static json_t *usage(int prompt_tokens, int completion_tokens)
{
    json_t *u = json_object();
    json_object_set_new(u, "prompt_tokens", json_integer(prompt_tokens));
    json_object_set_new(u, "completion_tokens", json_integer(completion_tokens));
    json_object_set_new(u, "total_tokens", json_integer((json_int_t)prompt_tokens + completion_tokens));
    return u;
}

/* {"id", "object", "created", "model"} */
static json_t *envelope(const struct oai_completion_request *r, const char *id, long created, const char *object)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", jtext(id, strlen(id)));
    json_object_set_new(o, "object", json_string(object));
    json_object_set_new(o, "created", json_integer(created));
    json_object_set_new(o, "model", jtext(r->model ? r->model : "", r->model ? strlen(r->model) : 0));
    return o;
}

/* "warnings": what the schema had ignored ("strict": false, or unknown
 * keywords), so the client knows the output was not held to it; absent
 * when nothing was. */
static void add_warnings(json_t *o, const struct oai_completion_request *r)
{
    if (r->f.n_warnings == 0)
        return;
    json_t *w = json_array();
    for (int i = 0; i < r->f.n_warnings; i++)
        json_array_append_new(w, jtext(r->f.warnings[i], strlen(r->f.warnings[i])));
    json_object_set_new(o, "warnings", w);
}

/* The echoed prompt followed by text (a new string). */
static json_t *with_echo(const struct oai_completion_request *r, int echo, const char *text, size_t len)
{
    size_t pl = echo && r->f.prompt_text ? strlen(r->f.prompt_text) : 0;
    char *s = xmalloc(pl + len + 1);
    if (pl)
        memcpy(s, r->f.prompt_text, pl);
    if (len)
        memcpy(s + pl, text, len);
    json_t *j = jtext(s, pl + len);
    free(s);
    return j;
}

static size_t echo_chars(const struct oai_completion_request *r, int echo)
{
    return echo && r->f.prompt_text ? text_chars(r->f.prompt_text, strlen(r->f.prompt_text)) : 0;
}

json_t *oai_response(const struct oai_completion_request *r, const struct tokenizer *tok, const char *id, long created,
                     const struct oai_choice *choices, int n_choices, int prompt_tokens,
                     int completion_tokens)
{
    const int chat = r->kind == OAI_CHAT;
    json_t *o = envelope(r, id, created, chat ? "chat.completion" : "text_completion"), *arr = json_array();
    for (int i = 0; i < n_choices; i++) {
        const struct oai_choice *c = &choices[i];
        const int n_lp = c->lp ? c->n_lp : 0; /* asked for, none given: empty lists */
        json_t *ch = json_object();
        json_object_set_new(ch, "index", json_integer(i));
        if (chat) {
            json_object_set_new(ch, "message", chat_message_json(r, c, i, id));
            json_object_set_new(ch, "logprobs",
                                r->logprobs ? chat_logprobs(r, tok, c->lp, n_lp) : json_null());
        } else {
            json_object_set_new(ch, "text", with_echo(r, r->echo, c->text, c->text ? c->text_len : 0));
            json_t *lp =
                r->logprobs ? completion_logprobs(r, tok, c->lp, n_lp, echo_chars(r, r->echo)) : json_null();
            json_object_set_new(ch, "logprobs", lp);
        }
        const int calls = c->msg && c->msg->n_calls > 0 && c->finish == FINISH_REASON_STOP;
        json_object_set_new(ch, "finish_reason", json_string(finish_name(calls ? OAI_FINISH_TOOL_CALLS : (int)c->finish)));
        json_array_append_new(arr, ch);
    }
    json_object_set_new(o, "choices", arr);
    json_object_set_new(o, "usage", usage(prompt_tokens, completion_tokens));
    add_warnings(o, r);
    return o;
}

/* "data: <compact JSON>\n\n"; takes o. */
static char *sse(json_t *o)
{
    char *js = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(o);
    CHECK(js); /* every value above is valid */
    size_t n = strlen(js);
    char *s = xmalloc(n + 9);
    memcpy(s, "data: ", 6);
    memcpy(s + 6, js, n);
    memcpy(s + 6 + n, "\n\n", 3);
    free(js);
    return s;
}

char *oai_chunk(const struct oai_completion_request *r, const struct tokenizer *tok, const char *id, long created,
                int index, int first, const char *delta, size_t delta_len, const struct oai_token_logprob *lp,
                int n_lp, int finish)
{
    const int chat = r->kind == OAI_CHAT;
    if (!delta)
        delta_len = 0;
    json_t *o = envelope(r, id, created, chat ? "chat.completion.chunk" : "text_completion"),
           *ch = json_object();
    json_object_set_new(ch, "index", json_integer(index));
    if (chat) {
        /* the last chunk's delta is {} unless it still carries text */
        json_t *d = json_object();
        if (first)
            json_object_set_new(d, "role", json_string("assistant"));
        if (first || finish < 0 || delta_len > 0)
            json_object_set_new(d, "content", jtext(delta_len ? delta : "", delta_len));
        json_object_set_new(ch, "delta", d);
        json_object_set_new(ch, "logprobs",
                            r->logprobs && lp && n_lp > 0 ? chat_logprobs(r, tok, lp, n_lp) : json_null());
    } else {
        const int echo = first && r->echo;
        json_object_set_new(ch, "text", with_echo(r, echo, delta, delta_len));
        json_object_set_new(ch, "logprobs",
                            r->logprobs && lp && n_lp > 0
                                ? completion_logprobs(r, tok, lp, n_lp, echo_chars(r, echo))
                                : json_null());
    }
    json_object_set_new(ch, "finish_reason",
                        finish >= 0 ? json_string(finish_name(finish)) : json_null());
    json_t *arr = json_array();
    json_array_append_new(arr, ch);
    json_object_set_new(o, "choices", arr);
    if (r->include_usage) /* OpenAI: every other chunk carries "usage": null */
        json_object_set_new(o, "usage", json_null());
    if (first)
        add_warnings(o, r);
    return sse(o);
}

char *oai_chunk_piece(const struct oai_completion_request *r, const struct tokenizer *tok, const char *id,
                      long created, int index, const struct chat_piece *p, const struct oai_token_logprob *lp,
                      int n_lp)
{
    json_t *o = envelope(r, id, created, "chat.completion.chunk"), *ch = json_object(), *d = json_object();
    json_object_set_new(ch, "index", json_integer(index));
    if (p->kind == CHAT_PIECE_CONTENT || p->kind == CHAT_PIECE_REASONING) {
        json_object_set_new(d, p->kind == CHAT_PIECE_CONTENT ? "content" : "reasoning_content", jtext(p->text, p->len));
    } else {
        json_t *call = json_object(), *fn = json_object();
        json_object_set_new(call, "index", json_integer(p->call));
        if (p->kind == CHAT_PIECE_CALL) {
            char call_id[32];
            oai_tool_call_id(id, index, p->call, call_id);
            json_object_set_new(call, "id", json_string(call_id));
            json_object_set_new(call, "type", json_string("function"));
            json_object_set_new(fn, "name", jtext(p->text, p->len));
            json_object_set_new(fn, "arguments", json_string(""));
        } else {
            json_object_set_new(fn, "arguments", jtext(p->text, p->len));
        }
        json_object_set_new(call, "function", fn);
        json_object_set_new(d, "tool_calls", json_pack("[o]", call));
    }
    json_object_set_new(ch, "delta", d);
    json_object_set_new(ch, "logprobs", r->logprobs && lp && n_lp > 0 ? chat_logprobs(r, tok, lp, n_lp) : json_null());
    json_object_set_new(ch, "finish_reason", json_null());
    json_object_set_new(o, "choices", json_pack("[o]", ch));
    if (r->include_usage)
        json_object_set_new(o, "usage", json_null());
    return sse(o);
}

char *oai_usage_chunk(const struct oai_completion_request *r, const char *id, long created, int prompt_tokens,
                      int completion_tokens)
{
    json_t *o = envelope(r, id, created, r->kind == OAI_CHAT ? "chat.completion.chunk" : "text_completion");
    json_object_set_new(o, "choices", json_array());
    json_object_set_new(o, "usage", usage(prompt_tokens, completion_tokens));
    return sse(o);
}
