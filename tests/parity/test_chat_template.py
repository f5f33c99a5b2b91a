"""Chat-template parity: `infer template` against transformers.

For every tokenizer family in <shared>/tokenizers (env INFER_SHARED, default
the `shared` folder beside the repository) the cases of chat_cases.py are
written as JSON lines, rendered by one `$INFER template --model DIR --messages
FILE` run (env INFER, default build/infer) and compared with
AutoTokenizer.from_pretrained(DIR).apply_chat_template(messages, tools=...,
add_generation_prompt=..., tokenize=False, **other keys of the case): the
strings must be byte-for-byte equal, or both sides must fail (and when the
template itself raises, with the same message).

Two more groups use templates written for this test in the style of common
Hugging Face templates (TYPICAL_TEMPLATES) and small templates aimed at one
construct each (SNIPPETS); they run on a copy of the first family's
tokenizer with the template swapped in.

    .venv/bin/python -m pytest tests/parity/test_chat_template.py
"""

import copy
import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chat_cases  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("INFER_SHARED", REPO.parent / "shared"))
TOKENIZERS = SHARED / "tokenizers"
INFER = Path(os.environ.get("INFER", REPO / "build" / "infer"))

MIN_CASES_PER_FAMILY = 30


def _families():
    if not TOKENIZERS.is_dir():
        return []
    return sorted(p.name for p in TOKENIZERS.iterdir() if (p / "tokenizer_config.json").is_file())


FAMILIES = _families()


def _require_inputs():
    if not FAMILIES:
        pytest.skip(f"no tokenizers under {TOKENIZERS} (set INFER_SHARED to the shared folder)")
    if not INFER.is_file():
        pytest.skip(f"{INFER} not built (run make, or set INFER to the infer binary)")


def _transformers():
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import transformers  # noqa: F401
        from transformers import AutoTokenizer
    except ImportError:
        pytest.skip("transformers is not installed (use the repository's .venv)")
    return AutoTokenizer


_TOKENIZER_CACHE = {}


def _tokenizer(model_dir):
    key = str(model_dir)
    if key not in _TOKENIZER_CACHE:
        _TOKENIZER_CACHE[key] = _transformers().from_pretrained(key)
    return _TOKENIZER_CACHE[key]


def reference(tok, case, chat_template=None):
    """("ok", text) or ("error", message, is_raise) from transformers."""
    import jinja2

    case = copy.deepcopy(case)
    messages = case.pop("messages")
    tools = case.pop("tools", None)
    agp = case.pop("add_generation_prompt", True)
    try:
        out = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=agp, tokenize=False,
                                      chat_template=chat_template, **case)
        return ("ok", out)
    except Exception as e:  # the template or transformers refused the conversation
        raised = type(e) is jinja2.exceptions.TemplateError  # raise_exception() in the template
        return ("error", str(e), raised)


def run_infer(model_dir, cases, tmp_path, name="cases", compile_errors_ok=False):
    """Renders all cases in one `infer template` run; returns [("ok", text) | ("error", msg)].

    A template that does not compile makes the whole run fail (exit 1, message on stderr);
    with compile_errors_ok that counts as an error for every case."""
    path = tmp_path / f"{name}.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    p = subprocess.run([str(INFER), "template", "--model", str(model_dir), "--messages", str(path)],
                       capture_output=True, encoding="utf-8", timeout=300)
    if compile_errors_ok and p.returncode == 1 and "chat template 'default': template line" in p.stderr:
        return [("error", p.stderr.strip())] * len(cases)
    assert p.returncode == 0, f"infer template failed (exit {p.returncode}):\n{p.stderr}"
    lines = p.stdout.split("\n")
    assert lines[-1] == "", "output does not end with a newline"
    lines = lines[:-1]
    assert len(lines) == len(cases), f"{len(lines)} output lines for {len(cases)} cases:\n{p.stderr}"
    out = []
    for line in lines:
        v = json.loads(line)
        out.append(("ok", v) if isinstance(v, str) else ("error", v["error"]))
    return out


def _show(s):
    return "\n".join(repr(x) for x in s.splitlines(keepends=True)) or "''"


def describe(i, case, exp, got):
    head = f"case {i}: {json.dumps(case, ensure_ascii=False)[:400]}"
    if exp[0] == "ok" and got[0] == "ok":
        diff = difflib.unified_diff([repr(x) + "\n" for x in exp[1].splitlines(keepends=True)],
                                    [repr(x) + "\n" for x in got[1].splitlines(keepends=True)],
                                    "transformers", "infer", lineterm="\n")
        return f"{head}\n{''.join(diff)}"
    if exp[0] == "ok":
        return f"{head}\n  transformers rendered:\n{_show(exp[1])}\n  infer failed: {got[1]}"
    if got[0] == "ok":
        return f"{head}\n  transformers failed: {exp[1]}\n  infer rendered:\n{_show(got[1])}"
    return f"{head}\n  transformers raised {exp[1]!r}\n  infer raised        {got[1]!r}"


def compare(tok, model_dir, cases, tmp_path, chat_template=None, name="cases"):
    got = run_infer(model_dir, cases, tmp_path, name)
    bad = []
    for i, (case, g) in enumerate(zip(cases, got)):
        exp = reference(tok, case, chat_template)
        if exp[0] == "ok":
            same = g == ("ok", exp[1])
        else:  # both must fail; a template's own raise_exception message must match exactly
            same = g[0] == "error" and (not exp[2] or g[1] == exp[1])
        if not same:
            bad.append(describe(i, case, exp, g))
    return bad


# ---------------------------------------------------------------- families


@pytest.mark.parametrize("family", FAMILIES or ["(none)"])
def test_family(family, tmp_path):
    _require_inputs()
    model_dir = TOKENIZERS / family
    cases = chat_cases.cases(family)
    assert len(cases) >= MIN_CASES_PER_FAMILY
    bad = compare(_tokenizer(model_dir), model_dir, cases, tmp_path)
    assert not bad, f"{len(bad)} of {len(cases)} {family} conversations differ:\n\n" + "\n\n".join(bad)


# ------------------------------------------------- typical HF-style templates

TYPICAL_TEMPLATES = {
    # Llama 3.1 style: date header, tools as indented JSON in the first user turn, ipython results
    "llama31_style": r"""{{- bos_token }}
{%- if custom_tools is defined %}{%- set tools = custom_tools %}{%- endif %}
{%- if not tools_in_user_message is defined %}{%- set tools_in_user_message = true %}{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = strftime_now("%d %b %Y") %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}{{- "Environment: ipython\n" }}{%- endif %}
{{- "Today Date: " + date_string + "\n\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- if tools_in_user_message and not tools is none %}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.\n\n' }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", "parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}<|eot_id|>" }}
    {%- else %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable and message.content is not string %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
""",
    # Mistral style: strict alternation, system folded into the first user turn
    "mistral_style": """{% if messages[0]['role'] == 'system' %}
    {% set loop_messages = messages[1:] %}
    {% set system_message = messages[0]['content'].strip() + '\\n\\n' %}
{% else %}
    {% set loop_messages = messages %}
    {% set system_message = '' %}
{% endif %}
{{ bos_token }}
{% for message in loop_messages %}
    {% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {% endif %}
    {% set content = (system_message if loop.first else '') + message['content'] %}
    {% if message['role'] == 'user' %}
        {{ '[INST] ' + content.strip() + ' [/INST]' }}
    {% elif message['role'] == 'assistant' %}
        {{ ' '  + content.strip() + ' ' + eos_token }}
    {% endif %}
{% endfor %}
""",
    # ChatML with a default system prompt, tools listed with tojson, tool calls and results
    "chatml_tools": """{%- set ns = namespace(sys_done=false, n_tool=0) -%}
{%- if messages[0].role != 'system' -%}
<|im_start|>system
You are a helpful assistant.{% if tools %} You can call: {{ tools | map(attribute='function.name') | join(', ') }}.{% endif %}<|im_end|>
{% endif -%}
{%- for message in messages -%}
{%- if message.role == 'tool' -%}
{%- set ns.n_tool = ns.n_tool + 1 -%}
<|im_start|>tool #{{ ns.n_tool }}
{{ message.content }}<|im_end|>
{% elif message.tool_calls is defined -%}
<|im_start|>assistant
{{ message.content | default('', true) }}
{%- for tc in message.tool_calls %}
<tool_call>{{ {'name': (tc.function or tc).name, 'arguments': (tc.function or tc).arguments} | tojson }}</tool_call>
{%- endfor %}<|im_end|>
{% else -%}
<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% endif -%}
""",
    # Phi style with a macro, filters and loop variables
    "macro_filters": """{%- macro turn(role, text, last=false) -%}
<|{{ role | lower }}|>
{{ text | trim | replace('\\r\\n', '\\n') }}{% if not last %}<|end|>{% endif %}
{% endmacro -%}
{{ bos_token }}
{%- for m in messages %}
{%- if m.content is string %}{{ turn(m.role, m.content, last=loop.last and m.role == 'assistant' and not add_generation_prompt) }}
{%- else %}{{ turn(m.role, m.content | selectattr('type', 'equalto', 'text') | map(attribute='text') | join(' ')) }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|assistant|>
{% endif %}
{#- stats line, checks count/len/first/last/title/wordcount #}
[{{ messages | length }} turns; first={{ (messages | first).role | title }}; last={{ (messages | last).role | upper }}; words={{ messages | map(attribute='content') | select('string') | join(' ') | wordcount }}]""",
    # DeepSeek-R1 style: namespace state machine, reasoning stripped with split()
    "deepseek_style": """{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}
{%- set ns = namespace(is_first=false, is_tool=false, system_prompt='') -%}
{%- for message in messages -%}{%- if message['role'] == 'system' -%}{%- set ns.system_prompt = ns.system_prompt + message['content'] -%}{%- endif -%}{%- endfor -%}
{{ bos_token }}{{ ns.system_prompt }}
{%- for message in messages -%}
  {%- if message['role'] == 'user' -%}{%- set ns.is_tool = false -%}{{ '<|User|>' + message['content'] }}
  {%- elif message['role'] == 'assistant' and message['content'] is not defined -%}
    {%- set ns.is_tool = false -%}
    {%- for tool in message['tool_calls'] -%}
      {{ ('' if loop.first else '\\n') + '<|tool_call|>' + tool['function']['name'] + '\\n```json\\n' + (tool['function']['arguments'] if tool['function']['arguments'] is string else tool['function']['arguments'] | tojson) + '\\n```' }}
    {%- endfor -%}
  {%- elif message['role'] == 'assistant' -%}
    {%- set content = message['content'] -%}
    {%- if '</think>' in content -%}{%- set content = content.split('</think>')[-1].lstrip() -%}{%- endif -%}
    {{ '<|Assistant|>' + content + eos_token }}
  {%- elif message['role'] == 'tool' -%}
    {%- set ns.is_tool = true -%}{{ '<|tool_output|>' + message['content'] }}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt and not ns.is_tool -%}{{ '<|Assistant|><think>\\n' }}{%- endif -%}
""",
    # Zephyr style: plain, whitespace-sensitive
    "zephyr_style": """{% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>\n' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>\n' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>\n'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %}""",
}


def _swap_template(tmp_path, name, template):
    """A copy of the first family's tokenizer with another chat template."""
    src = TOKENIZERS / FAMILIES[0]
    d = tmp_path / name
    d.mkdir()
    shutil.copy(src / "tokenizer.json", d / "tokenizer.json")
    cfg = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    cfg["chat_template"] = template
    (d / "tokenizer_config.json").write_text(json.dumps(cfg, ensure_ascii=False), encoding="utf-8")
    return d


@pytest.mark.parametrize("name", sorted(TYPICAL_TEMPLATES))
def test_typical_template(name, tmp_path):
    _require_inputs()
    d = _swap_template(tmp_path, name, TYPICAL_TEMPLATES[name])
    cases = chat_cases.cases("generic")
    if "strftime_now" in TYPICAL_TEMPLATES[name]:
        for c in cases:  # today's date would make the output depend on the day: pin it
            c.setdefault("date_string", "26 Jul 2024")
    bad = compare(_tokenizer(d), d, cases, tmp_path)
    assert not bad, f"{len(bad)} of {len(cases)} conversations differ:\n\n" + "\n\n".join(bad)


# ------------------------------------------------------------------ snippets

SNIPPET_VARS = {
    "d": {"a": 1, "items": 2, "keys": 3},
    "xs": [1, 2, 3],
    "s": "Hello World",
    "n": None,
    "f": 1.5,
    "nested": {"x": {"y": [1, {"z": "deep"}]}},
}

SNIPPETS = r"""{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}
====
{% for i in [1,2] %}{% if loop.first %}{% set y = 1 %}{% endif %}[{{ y }}]{% endfor %}
====
{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}{% for x in [5] %}{{ m() }}{% endfor %}
====
{{ foo.bar }}
====
{{ d.missing.y }}
====
{{ foo + 'x' }}
====
{{ 'a' in foo }}{{ foo in [1] }}{{ foo|length }}{{ foo == foo }}{{ foo == none }}{% for x in foo %}a{% else %}b{% endfor %}
====
{{ foo|tojson }}
====
{{ none }}|{{ [1,'a',"it's", none, true, 1.5, {'k': 'v'}] }}|{{ (1,) }}|{{ ('a','b') }}|{{ [foo] }}
====
{{ -2**2 }}|{{ 2**-1 }}|{{ 7//-2 }}|{{ -7 % 3 }}|{{ 7/2 }}|{{ 6/2 }}|{{ 1e20 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 0.0001 }}|{{ 0.00001 }}|{{ 0.1 + 0.2 }}|{{ -0.0 }}
====
{{ 'a' * 3 }}|{{ [1] * 2 }}|{{ 3 * 'b' }}|{{ 1 + true }}|{{ 'x' ~ 1 ~ none ~ foo }}
====
{{ xs[1:] }}{{ xs[::-1] }}{{ 'héllo'[1:3] }}{{ 'héllo'|length }}{{ xs[5] }}|{{ xs[-1] }}{{ s[::-2] }}{{ s[-3:] }}
====
{{ messages[5].role }}
====
{{ xs.append(4) }}
====
{{ 1 if false }}|{{ 2 if false else 3 }}
====
{% set ns = namespace(a=1) %}{% set ns.b = 2 %}{{ ns.a }}{{ ns.b }}{{ ns.c }}|{{ ns }}
====
{% set a, b = 1, 2 %}{{ a }}{{ b }}{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}
====
{% for a in xs if a > 1 %}{{ loop.index }}/{{ loop.length }}{{ loop.last }},{% endfor %}
====
{{ 'a' < 1 }}
====
{{ xs|join(', ') }}|{{ xs|sum }}|{{ xs|first }}|{{ xs|last }}|{{ 'abc'|list }}|{{ d|list }}|{{ d|items|list }}
====
{{ 3.0|int }}|{{ '3'|int }}|{{ 'x'|int }}|{{ '3.5'|float }}|{{ 3|float }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.567|round(2) }}|{{ -3|abs }}
====
{{ foo is sequence }}{{ foo is iterable }}{{ {} is sequence }}{{ d.items() is sequence }}{{ 1 is number }}{{ true is number }}{{ true is integer }}{{ none is iterable }}
====
{{ xs|map('string')|list }}{{ xs|select('odd')|list }}{{ messages|selectattr('role','equalto','user')|list }}{{ messages|map(attribute='role')|join(',') }}
====
{% set g = xs|select('odd') %}{{ g|list }}{{ g|list }}{% if [1]|select('even') %}always-true{% endif %}
====
{{ (xs|select('odd'))|length }}
====
{{ xs|reverse|list }}{{ 'abc'|reverse }}{{ d|reverse|list }}{{ range(3) }}{{ range(1,10,3)|list }}
====
{{ d.keys() }}{{ d.values() }}{{ d.items() }}{{ d.items()|length }}{{ d.get('zz', 'dflt') }}{{ d['keys'] }}
====
{{ '  a b  '.split() }}{{ 'a,b,,c'.split(',') }}{{ 'a,b,c'.split(',', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}{{ ''.split(',') }}{{ '  a  b '.split(None, 1) }}{{ '  a  b '.rsplit(None, 1) }}
====
{{ 'xxhixx'.strip('x') }}{{ 'hello world'.title() }}{{ "they're bill's friends"|title }}{{ "they're"|capitalize }}{{ 'hELLO'.capitalize() }}{{ 'é'|upper }}{{ 'ß'|upper }}
====
{{ "%s and %d" % ('a', 3) }}|{{ "{} {}".format(1, 'x') }}|{{ "%s"|format(1) }}|{{ "{:>5}|{:.2f}|{!r}".format('a', 3.14159, 'q') }}
====
{{ "a\nb" }}|{{ 'it\'s' }}|{{ "\u00e9\x41\101\q" }}|{{ ["a\nb", 'c"d', "e'f", 'g\\h', "é"] }}
====
{{ 1 / 0 }}
====
{{ d|tojson }}{{ d|tojson(indent=2) }}{{ [1.0, 2.5e-7, 'é', "\u2028", {"a": [], "b": {}}]|tojson }}{{ {'b':1,'a':2}|tojson(sort_keys=true) }}{{ {'k': 'é'}|tojson(ensure_ascii=true) }}{{ d|tojson(separators=(',', ':')) }}
====
{% macro m(a, b=2) %}[{{ a }},{{ b }}]{% endmacro %}{{ m(1) }}{{ m(1, 3) }}{{ m(b=5, a=0) }}{{ m() }}
====
{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}
====
{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}
====
{% macro outer(x) %}[{{ caller(x * 2) }}]{% endmacro %}{% call(v) outer(4) %}got {{ v }}{% endcall %}
====
{{ 1 < 2 > 1 }}{{ not 1 == 2 }}{{ -1|abs }}{{ [1,2,3]|length > 2 }}{{ 'a' ~ 1 + 2 if false else 'ok' }}
====
{{ 1 in 'abc' }}
====
{% for a, b in [[1,2,3]] %}{% endfor %}
====
{% for x in [1,2,3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}{% for x in [1,2,3] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %}
====
{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.revindex }}-{{ loop.revindex0 }}-{{ loop.cycle('a','b') }}|{% endfor %}
====
{% set x %}  hello {{ 1 }} {% endset %}[{{ x }}]{% set y | upper %}abc{% endset %}{{ y }}{% filter title %}a title here{% endfilter %}
====
{{ dict(a=1, b='x') }}{{ {'a': none, 1: 2, (1,2): 3} }}{{ namespace(a=1).a }}
====
{% set l = [3,1,2] %}{{ l|sort }}{{ l|sort(reverse=true) }}{{ ['b','A','a']|sort }}{{ [{'n':2},{'n':1}]|sort(attribute='n') }}{{ [1,2,2,3]|unique|list }}{{ ['a','B']|max }}{{ []|min }}
====
{{ "  a  "|trim }}|{{ "xxaxx"|trim('x') }}|{{ none|trim }}|{{ 5|trim }}|{{ "a\nb\n\nc"|indent }}|{{ "a\nb"|indent(2, true) }}|{{ "a\n\nb"|indent('>', blank=true) }}
====
{{ 'a' == 'a' and 'b' }}{{ 0 or 'x' }}{{ '' or none }}{{ 1 and 0 }}{{ [] or 'x' }}{{ [1] + [2] }}{{ (1,) + (2,) }}
====
{{ [1] + (2,) }}
====
{{ raise_exception('custom failure: ' ~ 42) }}
====
{{ nested.x.y.1.z }}{{ nested['x']['y'][1]['z'] }}{{ [nested]|map(attribute='x.y.1.z')|list }}{{ s.startswith('Hell') }}{{ s.endswith(('x','ld')) }}{{ s.find('o') }}{{ s.rfind('o') }}{{ s.count('l') }}
====
{{ 'a<b>&"\''|e }}{{ 42|string }}{{ 'ab'|safe }}{{ 'a b  c\nd'|wordcount }}{{ 'x'|center(6) }}|{{ '%s-%s'|format(1, 2) }}{{ foo|default('x') }}{{ ''|default('x', true) }}{{ 0|d('z', boolean=true) }}
====
{{ 5 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ none is none }}{{ 'a' is string }}{{ d is mapping }}{{ 1.0 is float }}{{ 'A' is upper }}{{ 1 is in [1,2] }}{{ 1 is eq 1 }}{{ none is sameas none }}{{ foo is not defined }}
====
{{ xs[::0] }}
====
{{ xs[foo:] }}
====
{% for x in none %}{% endfor %}
====
{{ [1, 2, 3,] }}{{ {'a': 1,} }}{{ () }}{{ 'multi' 'part' "string" }}{{ 1_000 }}{{ 0x1F }}{{ 0o17 }}{{ 0b101 }}{{ 1.5e3 }}{{ 1E-2 }}{{ True }}{{ None }}
====
{{ {'a': [1, {'b': none}], 'c': (1,), 'd': 1.0, 'e': 'x'} }}{{ ['\t\x00\x7f\x80\xa0\u200b\u3000é😀'] }}{{ [0.1, 1e16, 123456789012345678, 1.5e-5] }}
====
{% set messages = messages[1:] %}{{ messages|length }}{{ strftime_now('%Y')|length }}
====
{% if true %}
    indented
    {%- if false %}x{% else %}
  else-branch
  {% endif %}
{% endif %}
  {# comment #}
tail {{- '  lead' }}  {{ 'trail' -}}
   end
====
{%- for m in messages -%}
  {{ m.role }}:{{ m.content }}
{% endfor %}
{%+ if true %}keep{% endif +%}
  {% raw %}{{ not rendered }}{% endraw %}
====
{% if foo %}
====
{{ x | frobnicate }}
====
{% endfor %}"""


def test_snippets(tmp_path):
    _require_inputs()
    tok = _tokenizer(TOKENIZERS / FAMILIES[0])
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    snippets = [s for s in SNIPPETS.split("\n====\n") if s.strip()]
    bad = []
    for i, src in enumerate(snippets):
        d = _swap_template(tmp_path, f"snippet{i}", src)
        case = {"messages": messages, "add_generation_prompt": False, **SNIPPET_VARS}
        got = run_infer(d, [case], tmp_path, f"snippet{i}", compile_errors_ok=True)[0]
        exp = reference(tok, case, chat_template=src)
        same = got == ("ok", exp[1]) if exp[0] == "ok" else got[0] == "error" and (not exp[2] or got[1] == exp[1])
        if not same:
            bad.append(f"snippet {i}: {src!r}\n" + describe(i, {}, exp, got))
    assert not bad, f"{len(bad)} of {len(snippets)} snippets differ:\n\n" + "\n\n".join(bad)
