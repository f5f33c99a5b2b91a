"""`infer serve` driven by the official `openai` Python client: chat and completions,
streaming and not, n=2, stop strings, logprobs and usage, on a tiny random Gemma GGUF with the real
Gemma 3 tokenizer and on the real Gemma 3 270M. Every answer must equal what `infer generate`
gives for the same request (the same engine, the same seeds)."""
import json
import re
import urllib.request

import openai
import pytest

from conftest import Server, generate

PROMPT = "Question: What is the capital of France?\nAnswer:"
MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name a colour."}]


@pytest.fixture(scope="module", params=["tiny", "real"])
def served(request):
    model = request.getfixturevalue("tiny_gguf" if request.param == "tiny" else "real_gguf")
    s = Server(model, name=f"{request.param}-gemma")
    yield model, s, openai.OpenAI(base_url=s.base, api_key="none", max_retries=0, timeout=300)
    assert s.stop() == 0, open(s.log.name).read()[-2000:]


def tokens_for(model):
    return 24 if "tiny" in model else 8  # the real model decodes ~10 tok/s on 2 cores


def test_completion_equals_generate(served):
    model, s, client = served
    n = tokens_for(model)
    r = client.completions.create(model=s.name, prompt=PROMPT, max_tokens=n, temperature=0)
    want = generate(model, [{"prompt": PROMPT, "max_tokens": n}])[0]
    assert r.choices[0].text == want["text"]
    assert r.choices[0].finish_reason == want["finish_reason"]
    assert r.usage.prompt_tokens == want["prompt_tokens"]
    assert r.usage.completion_tokens == want["completion_tokens"]
    assert r.usage.total_tokens == want["prompt_tokens"] + want["completion_tokens"]
    assert r.object == "text_completion" and r.model == s.name


def test_chat_equals_generate(served):
    model, s, client = served
    n = tokens_for(model)
    r = client.chat.completions.create(model=s.name, messages=MESSAGES, max_tokens=n, temperature=0)
    want = generate(model, [{"messages": MESSAGES, "max_tokens": n}])[0]
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content == want["text"]
    assert r.choices[0].finish_reason == want["finish_reason"]
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (want["prompt_tokens"], want["completion_tokens"])


def test_streaming_equals_whole(served):
    model, s, client = served
    n = tokens_for(model)
    whole = client.chat.completions.create(model=s.name, messages=MESSAGES, max_tokens=n, temperature=0)
    chunks = list(client.chat.completions.create(model=s.name, messages=MESSAGES, max_tokens=n, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert chunks[0].choices[0].delta.role == "assistant"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert len({c.id for c in chunks}) == 1
    stream = list(client.completions.create(model=s.name, prompt=PROMPT, max_tokens=n, temperature=0, stream=True))
    full = client.completions.create(model=s.name, prompt=PROMPT, max_tokens=n, temperature=0)
    assert "".join(c.choices[0].text for c in stream if c.choices) == full.choices[0].text


def test_n2_seeded_sampling_equals_generate(served):
    model, s, client = served
    n = tokens_for(model)
    r = client.chat.completions.create(model=s.name, messages=MESSAGES, max_tokens=n, temperature=1.0, top_p=0.9,
                                       n=2, seed=1234)
    want = generate(model, [{"messages": MESSAGES, "max_tokens": n, "temperature": 1.0, "top_p": 0.9, "n": 2,
                             "seed": 1234}])
    assert [c.message.content for c in sorted(r.choices, key=lambda c: c.index)] == [w["text"] for w in want]
    streamed = {}
    for c in client.chat.completions.create(model=s.name, messages=MESSAGES, max_tokens=n, temperature=1.0,
                                            top_p=0.9, n=2, seed=1234, stream=True):
        for ch in c.choices:
            streamed[ch.index] = streamed.get(ch.index, "") + (ch.delta.content or "")
    assert [streamed[0], streamed[1]] == [w["text"] for w in want]


def test_stop_string(served):
    model, s, client = served
    n = tokens_for(model)
    text = client.completions.create(model=s.name, prompt=PROMPT, max_tokens=n, temperature=0).choices[0].text
    stop = text[len(text) // 2:len(text) // 2 + 2] or "\n"
    r = client.completions.create(model=s.name, prompt=PROMPT, max_tokens=n, temperature=0, stop=[stop])
    want = generate(model, [{"prompt": PROMPT, "max_tokens": n, "stop": [stop]}])[0]
    assert r.choices[0].text == want["text"] and stop not in r.choices[0].text
    assert r.choices[0].finish_reason == want["finish_reason"] == "stop"


def test_logprobs_equal_generate(served):
    model, s, client = served
    n = tokens_for(model)
    r = client.chat.completions.create(model=s.name, messages=MESSAGES, max_tokens=n, temperature=0, logprobs=True,
                                       top_logprobs=3)
    want = generate(model, [{"messages": MESSAGES, "max_tokens": n, "logprobs": True, "top_logprobs": 3}])[0]
    got = r.choices[0].logprobs.content
    assert len(got) == len(want["logprobs"]["content"]) == want["completion_tokens"]
    for g, w in zip(got, want["logprobs"]["content"]):
        assert g.logprob == pytest.approx(w["logprob"], abs=1e-5)
        assert [t.logprob for t in g.top_logprobs] == pytest.approx([t["logprob"] for t in w["top_logprobs"]],
                                                                     abs=1e-5)
        assert bytes(g.bytes).decode("utf-8", "replace") == g.token or g.bytes
    c = client.completions.create(model=s.name, prompt=PROMPT, max_tokens=n, temperature=0, logprobs=2)
    lp = c.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset)
    # a control token (a random model draws <unusedN>) is in the log-probs but not in the text
    assert "".join(t for t in lp.tokens if not re.fullmatch(r"<unused\d+>", t)) == c.choices[0].text


def test_models_health_tokenize(served):
    model, s, client = served
    assert [m.id for m in client.models.list().data] == [s.name]
    m = client.models.retrieve(s.name)
    assert (m.id, m.object, m.owned_by) == (s.name, "model", "infer")
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("no-such-model")
    assert e.value.body["code"] == "model_not_found"
    with urllib.request.urlopen(s.url + "/health") as h:
        assert h.status == 200
    req = urllib.request.Request(s.url + "/tokenize", data=json.dumps({"prompt": "Hello, world"}).encode(),
                                 headers={"Content-Type": "application/json"})
    ids = json.load(urllib.request.urlopen(req))["tokens"]
    req = urllib.request.Request(s.url + "/detokenize", data=json.dumps({"tokens": ids}).encode(),
                                 headers={"Content-Type": "application/json"})
    assert json.load(urllib.request.urlopen(req))["prompt"] == "<bos>Hello, world"


def test_errors_through_the_client(served):
    model, s, client = served
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="no-such-model", prompt="x", max_tokens=1)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=s.name, messages=MESSAGES, max_tokens=1, temperature=-1)
    assert e.value.body["param"] == "temperature"
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model=s.name, prompt="x", max_tokens=10 ** 7)


def test_api_key(tiny_gguf):
    s = Server(tiny_gguf, name="keyed", extra=["--api-key", "sesame"])
    try:
        bad = openai.OpenAI(base_url=s.base, api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.models.list()
        with pytest.raises(openai.AuthenticationError):
            bad.models.retrieve("keyed")
        good = openai.OpenAI(base_url=s.base, api_key="sesame", max_retries=0)
        assert good.completions.create(model="keyed", prompt="Hi", max_tokens=2).usage.completion_tokens == 2
        with urllib.request.urlopen(s.url + "/health") as h:  # health and metrics stay open
            assert h.status == 200
    finally:
        assert s.stop() == 0


def test_readme_demo_answers(real_gguf):
    """The README's main command (scripts/demo): the default model served, asked for the capital
    of France, answers Paris; the server then exits cleanly."""
    import os
    import subprocess
    import sys

    from conftest import INFER, ROOT

    env = dict(os.environ, INFER=INFER, PYTHON=sys.executable)  # the demo fetches (here: finds) the model itself
    p = subprocess.run(["bash", os.path.join(ROOT, "scripts", "demo")], capture_output=True, text=True, env=env,
                       timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "Answer: Paris\n" in p.stdout, p.stdout
    assert "tokens/s" in p.stdout
