"""Structured outputs end to end: the official `openai` client against `infer serve` on tiny random
models with real tokenizers (the tiny Gemma GGUF always; tiny Llama 3 and Qwen3 models written by
`infer mkmodel` with ../shared/tokenizers when present). Random weights make any output possible,
which is the point: at temperature 1 the sampler meets everything the grammar lets through.

For every JSON Schema of the grammar test cases (tests/grammar: the hand-written set and a sample of
bfcl's function schemas; at least 50 compiled) and SEEDS seeds each, the chat answer
- finished with "stop" must parse as JSON and validate (jsonschema, Draft 2020-12, formats checked);
- cut with "length" must be a prefix the grammar accepts, checked with llguidance (PyPI) over a byte
  tokenizer, so the verdict does not depend on any model's tokenization.
json_object, regular expressions, GBNF and choices likewise; 8 constrained requests sharing steps with
8 unconstrained ones; streaming equal to the whole answer; top_logprobs never naming a masked token;
n > 1; "strict": false reporting what it ignored.

INFER_STRUCTURED_SEEDS: seeds per schema, 1 by default (make test's form: each seed of the schema
test costs the sanitizer build some 4 minutes on 2 cores over the three models); the full form is
INFER_STRUCTURED_SEEDS=10.
INFER_STRUCTURED_BFCL (default 30): bfcl schemas sampled besides the hand-written ones."""
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from conftest import INFER, ROOT, SHARED, Server, tiny_with_tokenizer

sys.path.insert(0, os.path.join(ROOT, "tests", "grammar"))

SEEDS = int(os.environ.get("INFER_STRUCTURED_SEEDS", "1"))
N_BFCL = int(os.environ.get("INFER_STRUCTURED_BFCL", "30"))
MAX_TOKENS = 40
WORKERS = 8  # requests in flight: they share the engine's steps
MESSAGES = [{"role": "user", "content": "Answer in JSON."}]


def _need(module):
    try:
        __import__(module)
    except ImportError:
        pytest.skip(f"{module} is not installed (tests/requirements.txt)")


# --- the oracle: llguidance over bytes ---------------------------------------------------------

_LL = None


def _llg_tokenizer():
    global _LL
    if _LL is None:
        import oracle_llg
        _LL = oracle_llg.load_tokenizer(oracle_llg.BYTES)[1]
    return _LL


_SHORT = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}


def plain_spelling(text):
    """text with the JSON string escapes llguidance does not take where infer does (\\uXXXX in
    property names, enum, const and pattern strings; \\/ anywhere) written as the characters they
    stand for, and an escape cut short at the end dropped: the same values, so the same verdict
    from a grammar that accepts every spelling (src/grammar/json_schema.h), which infer's does."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if not in_str:
            in_str = c == '"'
            out.append(c)
            i += 1
            continue
        if c == '"':
            in_str = False
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:
            break  # cut inside the escape
        e = text[i + 1]
        if e == "/":
            out.append("/")
            i += 2
        elif e != "u":
            out.append(text[i:i + 2])
            i += 2
        else:
            if i + 6 > n:
                break
            cp, i = int(text[i + 2:i + 6], 16), i + 6
            if 0xD800 <= cp < 0xDC00:
                if i + 6 > n:
                    break
                cp = 0x10000 + ((cp - 0xD800) << 10) + (int(text[i + 2:i + 6], 16) - 0xDC00)
                i += 6
            out.append(_SHORT.get(cp) or (f"\\u{cp:04x}" if cp < 0x20 else chr(cp)))
    return "".join(out)


def llg_verdict(case, text, complete):
    """Whether llguidance's matcher for case takes all of text (and, complete, may end there)."""
    import llguidance
    import oracle_llg
    m = llguidance.LLMatcher(_llg_tokenizer(), oracle_llg.grammar_for(case, lines=True), log_level=0)
    assert not m.is_error(), f"llguidance refuses {case['name']}: {m.get_error()}"
    if not complete:  # a cut inside a character: the server renders its bytes as U+FFFD
        text = text.rstrip("\ufffd")
    if case["mode"] in ("json-schema", "json-object"):
        text = plain_spelling(text)
    data = text.encode()
    if m.try_consume_tokens(list(data)) != len(data):
        return False
    return m.is_accepting() if complete else True


# --- the cases ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def schema_cases():
    _need("jsonschema")
    _need("llguidance")
    import cases_bfcl
    import cases_hand
    cases = [c for c in cases_hand.build() if c["group"] == "schema"]
    try:
        bfcl, _ = cases_bfcl.build(n_schemas=N_BFCL)
        cases += bfcl
    except cases_bfcl.BfclUnavailable as e:
        print(f"bfcl-eval data unavailable ({e}): the hand-written schemas only")
    return cases


@pytest.fixture(scope="module")
def hand_cases():
    _need("llguidance")
    import cases_hand
    return {c["name"]: c for c in cases_hand.build()}


# --- the models --------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=["gemma3", "llama3", "qwen3"])
def served(request, tmp_path_factory):
    if request.param == "gemma3":
        model = request.getfixturevalue("tiny_gguf")
    else:
        model = tiny_with_tokenizer(request.param, str(tmp_path_factory.mktemp(request.param)))
        if model is None:
            pytest.skip(f"{SHARED}/tokenizers/{request.param}/tokenizer.json not found (set INFER_SHARED)")
    s = Server(model, name=f"tiny-{request.param}", extra=("--max-num-seqs", "16"))
    client = openai.OpenAI(base_url=s.base, api_key="none", max_retries=0, timeout=600)
    yield request.param, s, client
    assert s.stop() == 0, open(s.log.name).read()[-2000:]


def _chat(client, s, **kw):
    kw.setdefault("messages", MESSAGES)
    kw.setdefault("max_tokens", MAX_TOKENS)
    kw.setdefault("temperature", 1.0)
    return client.chat.completions.create(model=s.name, **kw)


def _check_json(case, text, finish, problems, counts):
    """Appends to problems what is wrong with one answer to case (a JSON schema or json_object)."""
    from cases_common import validator
    schema = case["grammar"] if case["mode"] == "json-schema" else None
    counts[finish] = counts.get(finish, 0) + 1
    if finish == "stop":
        try:
            v = json.loads(text)
        except ValueError as e:
            problems.append(f"{case['name']}: finished but not JSON ({e}): {text!r}")
            return
        ok = isinstance(v, dict) if schema is None else validator(schema).is_valid(v)
        if not ok:
            problems.append(f"{case['name']}: finished but invalid: {text!r}")
    elif finish == "length":
        if not llg_verdict(case, text, complete=False):
            problems.append(f"{case['name']}: cut, and llguidance refuses the prefix: {text!r}")
    else:
        problems.append(f"{case['name']}: finish_reason {finish!r}: {text!r}")


# --- the tests ---------------------------------------------------------------------------------

def test_json_schemas_many_seeds(served, schema_cases):
    family, s, client = served
    compiled, refused = [], []
    for c in schema_cases:
        try:
            _chat(client, s, max_tokens=1, response_format={
                "type": "json_schema", "json_schema": {"name": "t", "schema": c["grammar"], "strict": True}})
            compiled.append(c)
        except openai.BadRequestError as e:
            refused.append(f"{c['name']}: {e.body.get('message') if isinstance(e.body, dict) else e}")
    print(f"\n{family}: {len(compiled)} schemas compiled, {len(refused)} refused: {refused}")
    assert len(compiled) >= 50 or len(schema_cases) < 50, refused

    def one(job):
        c, seed = job
        r = _chat(client, s, seed=seed, response_format={
            "type": "json_schema", "json_schema": {"name": "t", "schema": c["grammar"], "strict": True}})
        return c, r.choices[0].message.content, r.choices[0].finish_reason

    problems, counts = [], {}
    with ThreadPoolExecutor(WORKERS) as ex:
        for c, text, finish in ex.map(one, [(c, seed) for c in compiled for seed in range(SEEDS)]):
            _check_json(c, text, finish, problems, counts)
    print(f"{family}: {len(compiled)} schemas x {SEEDS} seeds: {counts}")
    assert not problems, f"{len(problems)} of {len(compiled) * SEEDS} answers wrong:\n" + "\n".join(problems[:30])


def test_json_object_regex_gbnf_choice(served, hand_cases):
    family, s, client = served
    jobs = []
    for seed in range(SEEDS):
        jobs.append(("json_object", {"response_format": {"type": "json_object"}}, seed))
        for name in ("regex_01", "regex_03", "regex_07", "regex_09", "regex_11", "regex_14"):
            jobs.append((name, {"extra_body": {"structured_outputs": {"regex": hand_cases[name]["grammar"]}}}, seed))
        for name in ("arithmetic", "word_list", "key_lines", "counted", "unicode_literals"):
            jobs.append((name, {"extra_body": {"grammar": hand_cases[name]["grammar"]}}, seed))
        jobs.append(("choice", {"extra_body": {"guided_choice": ["red", "green", "blue"]}}, seed))

    def one(job):
        name, kw, seed = job
        r = _chat(client, s, seed=seed, **kw)
        return name, r.choices[0].message.content, r.choices[0].finish_reason

    problems, counts = [], {}
    with ThreadPoolExecutor(WORKERS) as ex:
        for name, text, finish in ex.map(one, jobs):
            counts[finish] = counts.get(finish, 0) + 1
            if name == "json_object":
                _check_json(hand_cases[name], text, finish, problems, {})
            elif name == "choice":
                if (finish, text) not in {("stop", t) for t in ("red", "green", "blue")}:
                    problems.append(f"choice: {finish} {text!r}")
            elif finish not in ("stop", "length"):
                problems.append(f"{name}: finish_reason {finish!r}")
            elif finish == "stop" and hand_cases[name]["mode"] == "regex" and \
                    not re.fullmatch(hand_cases[name]["grammar"], text):
                problems.append(f"{name}: finished but re.fullmatch refuses {text!r}")
            elif not llg_verdict(hand_cases[name], text, complete=finish == "stop"):
                problems.append(f"{name}: {finish}, and llguidance refuses {text!r}")
    print(f"\n{family}: {len(jobs)} answers: {counts}")
    assert not problems, "\n".join(problems[:30])


def test_constrained_and_free_requests_share_steps(served, hand_cases):
    """8 constrained and 8 unconstrained requests at once: each constrained answer holds to its
    grammar, the free ones are not held to any (random weights leave the JSON grammar at once)."""
    family, s, client = served
    case = hand_cases["json_object"]
    jobs = [(i % 2 == 0, i) for i in range(16)]

    def one(job):
        constrained, seed = job
        kw = {"response_format": {"type": "json_object"}} if constrained else {}
        r = _chat(client, s, seed=seed, **kw)
        return constrained, r.choices[0].message.content, r.choices[0].finish_reason

    with ThreadPoolExecutor(16) as ex:
        out = list(ex.map(one, jobs))
    problems = []
    for constrained, text, finish in out:
        if constrained:
            _check_json(case, text, finish, problems, {})
    free_prefixes = [llg_verdict(case, text, complete=False) for constrained, text, _ in out if not constrained]
    assert not problems, "\n".join(problems)
    assert not all(free_prefixes), "every unconstrained answer fits the JSON grammar: the mask leaked"


def test_streaming_equals_whole(served, schema_cases):
    family, s, client = served
    c = next(c for c in schema_cases if c["name"] == "nested_object")
    rf = {"type": "json_schema", "json_schema": {"name": "t", "schema": c["grammar"]}}
    whole = _chat(client, s, seed=3, response_format=rf)
    chunks = list(_chat(client, s, seed=3, response_format=rf, stream=True))
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == whole.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == whole.choices[0].finish_reason


def test_masked_tokens_never_in_top_logprobs(served):
    family, s, client = served
    # Thinking off: with it on, Qwen3's grammar also admits a leading <think>
    # block, so '<' would be a legal alternative at the first position.
    r = _chat(client, s, seed=1, logprobs=True, top_logprobs=5, n=2,
              extra_body={"structured_outputs": {"regex": "[ab]{6}"},
                          "chat_template_kwargs": {"enable_thinking": False}})
    for ch in r.choices:
        assert re.fullmatch("[ab]{1,6}", ch.message.content), ch.message.content
        for t in ch.logprobs.content:
            assert t.token and set(t.token) <= {"a", "b"}, t.token
            for alt in t.top_logprobs:
                assert set(alt.token) <= {"a", "b"} and alt.token, f"masked token {alt.token!r} in top_logprobs"


def test_completions_endpoint_and_not_strict(served):
    family, s, client = served
    r = client.completions.create(model=s.name, prompt="Pick:", max_tokens=8, temperature=1, seed=2,
                                  extra_body={"guided_choice": ["alpha", "beta"]})
    assert (r.choices[0].text, r.choices[0].finish_reason) in {("alpha", "stop"), ("beta", "stop")}
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
              "not": {"required": ["b"]}, "additionalProperties": False}
    with pytest.raises(openai.BadRequestError) as e:
        _chat(client, s, response_format={"type": "json_schema", "json_schema": {"name": "t", "schema": schema,
                                                                                 "strict": True}})
    assert "not" in str(e.value) and "response_format" in str(e.value)
    r = _chat(client, s, seed=4, response_format={"type": "json_schema", "json_schema": {
        "name": "t", "schema": schema, "strict": False}})
    warnings = (r.model_extra or {}).get("warnings")
    assert warnings and any("not" in w for w in warnings), r.model_dump()
