"""llguidance (PyPI) as the second opinion: the same grammar, the same token
ids, walked the way `infer grammar --check` walks them (each token checked
against the mask before it is consumed, EOS checked at the end).

llguidance is set up to mean what infer's grammar means:
- JSON whitespace: `x-guidance.whitespace_pattern` = one run of [ \\t\\n\\r]
  of 1..16 bytes wherever JSON allows whitespace (llguidance's lexer skip, so
  also around ',' and ':'), and the same bounded run before and after the
  whole text, which llguidance's JSON grammar does not allow by itself: the
  schema is inlined in a Lark grammar `start: WS? body WS?` (%json).
- `json_allow_general_unicode_escapes`: \\uXXXX accepted in strings without
  a regex constraint, as JSON allows (llguidance still refuses escapes inside
  enum / const / pattern / format strings and property names, and refuses the
  escape \\/ everywhere: its json_allowed_escapes cannot include '/'; both show
  up as llguidance-vs-label information, never as failures).
- property order fixed to `properties` order, additional properties after
  (llguidance's only behaviour; see its docs/json_schema.md).
- json_object mode: the schema {"type": "object"}.
- GBNF through llguidance.gbnf_to_lark; regexes through grammar_from_regex.
Tokenizers come from tokenizer.json through transformers and
llguidance.hf.from_tokenizer; the EOS is the tokenizer's (tokenizer_config).
"""
import json
import os
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")

WS = r"[\x20\x0A\x0D\x09]"
X_GUIDANCE = {"whitespace_pattern": WS + "{1,16}", "json_allow_general_unicode_escapes": True}
# infer's lines whitespace (what requests decode under, src/grammar/json_schema.h): one space, or
# one line break and up to 16 blanks of indentation, and none around the text
LINES_WS = r"(\x20|\x0D?\x0A[\x20\x09]{0,16})"


BYTES = "bytes"  # load_tokenizer's name for the byte tokenizer


class _ByteTokens:
    """One token per byte, and an EOS: llguidance's verdict on a text is then its verdict on the
    bytes. Its masks are byte-exact whatever the vocabulary, so this is the same oracle for a model
    whose tokenizer.json is not at hand (only the tokenization walked differs)."""
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    eos_token_id = 256
    bos_token_id = None
    special_token_ids = [256]

    def __call__(self, s):
        return list(s.encode() if isinstance(s, str) else s)


def load_tokenizer(tokenizer_dir):
    """(encode(text) -> ids, LLTokenizer, eos id, seconds to build the LLTokenizer); tokenizer_dir
    BYTES: the byte tokenizer."""
    if tokenizer_dir == BYTES:
        import llguidance
        t = time.perf_counter()
        ll = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokens()))
        return _ByteTokens(), ll, _ByteTokens.eos_token_id, time.perf_counter() - t
    import llguidance.hf
    import transformers
    hf = transformers.AutoTokenizer.from_pretrained(tokenizer_dir)
    t = time.perf_counter()
    ll = llguidance.hf.from_tokenizer(hf)
    dt = time.perf_counter() - t

    def encode(text):
        return hf.encode(text, add_special_tokens=False)
    return encode, ll, ll.eos_token, dt


def grammar_for(case, lenient=False, lines=False):
    """The llguidance grammar (its JSON form) for one case record; lines: JSON whitespace as
    requests have it (LINES_WS), else flexible (X_GUIDANCE's, also around the text)."""
    import llguidance
    mode, g = case["mode"], case["grammar"]
    if mode in ("json-schema", "json-object"):
        schema = {"type": "object"} if mode == "json-object" else g
        if not isinstance(schema, dict):  # a boolean schema
            schema = {} if schema else {"not": {}}
        s = dict(schema)
        opts = dict(X_GUIDANCE)
        if lenient:
            opts["lenient"] = True
        if lines:
            opts["whitespace_pattern"] = LINES_WS
        s["x-guidance"] = opts
        lark = ("start: body\n" if lines else f"start: WS? body WS?\nWS: /{WS}{{1,16}}/\n") + \
            f"body: %json {json.dumps(s)}\n"
        return llguidance.LLMatcher.grammar_from_lark(lark)
    if mode == "regex":
        return llguidance.LLMatcher.grammar_from_regex(g)
    if mode == "gbnf":
        from llguidance.gbnf_to_lark import gbnf_to_lark
        return llguidance.LLMatcher.grammar_from_lark(gbnf_to_lark(g))
    raise ValueError(mode)


class Compiled:
    """A compiled grammar for one tokenizer: error (None or the message), the
    compile seconds, and walk()."""

    def __init__(self, ll, case, lenient=False):
        import llguidance
        self.ll = ll
        t = time.perf_counter()
        try:
            grm = grammar_for(case, lenient)
            self.m0 = llguidance.LLMatcher(ll, grm, log_level=0)
            self.error = self.m0.get_error() if self.m0.is_error() else None
        except Exception as e:  # grammar_from_* raise on malformed input
            self.m0, self.error = None, f"{type(e).__name__}: {e}"
        self.compile_s = time.perf_counter() - t

    def walk(self, ids, eos, times=None):
        """True when every token of ids is allowed in turn and EOS then is; times,
        a list, gets the seconds of each mask computation."""
        import llguidance.numpy as lnp
        m = self.m0.deep_copy()
        mask = lnp.allocate_token_bitmask(1, self.ll.vocab_size)
        row = mask[0]
        for t in list(ids) + [eos]:
            t0 = time.perf_counter()
            lnp.fill_next_token_bitmask(m, mask)
            if times is not None:
                times.append(time.perf_counter() - t0)
            if not (int(row[t >> 5]) >> (t & 31)) & 1:
                return False
            if t == eos:
                return True
            if not m.consume_token(t):
                return False
        raise AssertionError("unreachable: the loop returns at eos")


def run_case(ll, encode, eos, case, lenient=False, times=None):
    """(error or None, [verdict per instance], compile seconds)."""
    c = Compiled(ll, case, lenient)
    if c.error:
        return c.error, None, c.compile_s
    return None, [c.walk(encode(i["text"]), eos, times) for i in case["instances"]], c.compile_s
