"""Conversations for chat-template parity between `infer template` and
transformers' apply_chat_template(..., tokenize=False).

cases(family) returns a list of case dicts, each one line of the batch input
of `infer template`: {"messages": [...], "tools": [...]?,
"add_generation_prompt": bool, "enable_thinking": bool?, ...}. Every key other
than messages/tools/add_generation_prompt is passed to the template as a
variable, on both sides. Families: "llama3", "qwen3", "gemma3" (the shared
tokenizers), anything else gets the generic cases.

The cases cover: system prompt or not, multi-turn, assistant last or not, with
and without the generation prompt, empty content, content full of quotes,
braces, backslashes, Jinja-looking text, newlines and surrounding whitespace,
unicode (accents, CJK, emoji, RTL, zero-width), Qwen3 tools, tool calls
(arguments as object and as string) and tool results, enable_thinking on/off,
<think> reasoning in assistant turns and reasoning_content, and conversations
the templates reject (Gemma's alternation rule, bad content types).

Templates that print today's date (strftime_now) are made deterministic by
passing date_string explicitly (see TYPICAL_TEMPLATES in test_chat_template.py).
"""

import copy

TEXTS = [
    "Hello!",
    "",
    "   padded with spaces and newlines \n\n",
    'She said "hi" and \'bye\'',
    "Braces {like} {{ this }} and {% not a tag %} {# nor a comment #}",
    "Back\\slash \\n not a newline, C:\\path\\to\\file",
    "Line one\nLine two\n\nLine four\r\nWindows line",
    "Tabs\tand\tmore\ttabs",
    "Accents: café, naïve, Ærøskøbing; Greek: αβγ; Cyrillic: привет",
    "CJK: 你好，世界。日本語のテキスト。한국어",
    "Emoji: 😀👍🏽🇫🇷 and ZWJ 👩‍💻",
    "RTL: مرحبا بالعالم שלום",
    "Zero-width\u200bjoiner\u200d and nbsp\u00a0and ideographic\u3000space",
    "Special-looking tokens: <|im_end|> <end_of_turn> <|eot_id|> </think>",
    "JSON: {\"a\": [1, 2, {\"b\": null}], \"c\": true}",
    "Markdown:\n```python\nprint('hi')\n```\n- item\n- item",
    "Trailing newline\n",
    "\n\nLeading newlines",
    "   ",
    "A" * 300,
]


def _user(t):
    return {"role": "user", "content": t}


def _assistant(t):
    return {"role": "assistant", "content": t}


def _system(t):
    return {"role": "system", "content": t}


def _case(messages, agp=True, **kw):
    c = {"messages": messages, "add_generation_prompt": agp}
    c.update(kw)
    return c


def common_cases():
    """Alternating user/assistant conversations every template accepts."""
    T = TEXTS
    out = [
        _case([_user("Hi")]),
        _case([_user("Hi")], agp=False),
        _case([_system("You are a helpful assistant."), _user("What is 2+2?")]),
        _case([_user("Hi"), _assistant("Hello! How can I help?"), _user("Tell me a joke.")]),
        _case([_system("Be brief."), _user("Hi"), _assistant("Hello."), _user("Bye")], agp=False),
        _case([_user("Hi"), _assistant("Hello there.")], agp=False),
        _case([_user("Hi"), _assistant("Hello there.")], agp=True),
        _case([_system(""), _user("")]),
        _case([_user(T[2]), _assistant(T[2]), _user(T[18])]),
    ]
    # each tricky text as user, assistant and system content
    for i, t in enumerate(T):
        if i in (0, 1, 2, 18):
            continue
        out.append(_case([_system(t), _user(t), _assistant(t), _user(T[(i + 3) % len(T)])], agp=i % 2 == 0))
    # a long conversation
    msgs = [_system("You are a terse assistant.")]
    for k in range(12):
        msgs.append(_user(f"Question {k}: {TEXTS[k % len(TEXTS)]}"))
        msgs.append(_assistant(f"Answer {k}."))
    out.append(_case(msgs, agp=False))
    out.append(_case(msgs + [_user("One more?")]))
    # extra keys on messages are passed through untouched
    out.append(_case([{"role": "user", "content": "named", "name": "alice", "id": 7}]))
    # extra template variables (unused by most templates)
    out.append(_case([_user("Hi")], date_string="26 Jul 2024", custom_flag=True))
    return out


QWEN_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city. Uses \"quotes\" and unicode: °C, 東京",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7.5},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "",
            "parameters": {"type": "object", "properties": {}, "required": []},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "book",
            "description": "Book seats; nested schema with arrays, maps and a union type",
            "parameters": {
                "type": "object",
                "properties": {
                    "names": {"type": "array", "items": {"type": "string"}, "description": "who travels"},
                    "meta": {"type": "object", "additionalProperties": {"type": "number"}, "description": "extra"},
                    "note": {"type": ["string", "null"], "description": "  optional note  "},
                    "flag": {"type": "boolean", "description": "yes/no", "default": False},
                },
                "required": ["names"],
            },
        },
    },
]


def _tool_call(name, args, as_string=False, wrap=True):
    import json

    fn = {"name": name, "arguments": json.dumps(args, ensure_ascii=False) if as_string else args}
    return {"type": "function", "function": fn} if wrap else fn


def qwen3_cases():
    out = common_cases()
    W = {"city": "Paris", "unit": "celsius"}
    u = _user("What's the weather in Paris?")
    call = {"role": "assistant", "content": "", "tool_calls": [_tool_call("get_weather", W)]}
    result = {"role": "tool", "content": '{"temp": 21, "sky": "clear"}'}
    out += [
        _case([u], tools=QWEN_TOOLS),
        _case([_system("You are a weather bot."), u], tools=QWEN_TOOLS),
        _case([_system("Sys"), u], tools=QWEN_TOOLS[:1], enable_thinking=False),
        _case([u, call, result], tools=QWEN_TOOLS),
        _case([u, call, result, _assistant("It is 21°C and clear.")], tools=QWEN_TOOLS, agp=False),
        _case([u, call, result, _assistant("It is 21°C and clear."), _user("And tomorrow?")], tools=QWEN_TOOLS),
        # arguments given as a JSON string, several calls, content next to the calls
        _case([u, {"role": "assistant", "content": "Let me check.",
                   "tool_calls": [_tool_call("get_weather", W, as_string=True),
                                  _tool_call("search", {"q": "paris weather \"today\""})]},
               {"role": "tool", "content": "21C"}, {"role": "tool", "content": "sunny"}], tools=QWEN_TOOLS),
        # tool calls without the {"function": ...} wrapper
        _case([u, {"role": "assistant", "content": "", "tool_calls": [_tool_call("search", {"q": "x"}, wrap=False)]},
               result], tools=QWEN_TOOLS),
        # OpenAI-style content null next to tool calls (the key is dropped, as transformers does)
        _case([u, {"role": "assistant", "content": None, "tool_calls": [_tool_call("search", {"q": "x"})]}, result],
              tools=QWEN_TOOLS),
        # tool results without tools definitions
        _case([u, call, result]),
        # thinking switches
        _case([_user("Think about it.")], enable_thinking=True),
        _case([_user("Don't think.")], enable_thinking=False),
        _case([_user("Don't think.")], agp=False, enable_thinking=False),
        _case([_system("S"), _user("Q1"), _assistant("A1"), _user("Q2")], enable_thinking=False),
        # reasoning in assistant turns
        _case([_user("Q1"), _assistant("<think>\nreasoning one\n</think>\n\nAnswer one."), _user("Q2")]),
        _case([_user("Q1"), _assistant("<think>\nreasoning one\n</think>\n\nAnswer one.")], agp=False),
        _case([_user("Q1"), _assistant("<think>\n\n</think>\n\nEmpty thoughts.")], agp=False),
        _case([_user("Q1"), _assistant("no think tags but </think> at the end</think>tail")], agp=False),
        _case([_user("Q1"), {"role": "assistant", "content": "Final.", "reasoning_content": "Because reasons."}],
              agp=False),
        _case([_user("Q1"), {"role": "assistant", "content": "Final.", "reasoning_content": "R"}, _user("Q2")]),
        _case([_user("Q1"), {"role": "assistant", "content": "Final.", "thinking": "aliased thoughts"}], agp=False),
        _case([_user("Q1"), {"role": "assistant", "content": "Final.", "reasoning_content": None}], agp=False),
        # agent loop: reasoning after the last real user query is kept
        _case([_user("Plan a trip"),
               {"role": "assistant", "content": "<think>\nneed weather\n</think>\n\n",
                "tool_calls": [_tool_call("get_weather", W)]},
               result,
               {"role": "assistant", "content": "<think>\nnow answer\n</think>\n\nPack light."}],
              tools=QWEN_TOOLS, agp=False),
        # a user turn that is really a tool response does not count as the last query
        _case([_user("Q"), call, _user("<tool_response>\nraw\n</tool_response>"),
               _assistant("<think>\nkeep me\n</think>\n\nok")], agp=False),
        # system message that is not first
        _case([_user("Hi"), _system("Late system note"), _user("Again")]),
        # non-alternating roles are fine for Qwen
        _case([_user("one"), _user("two"), _assistant("a"), _assistant("b")], agp=False),
        # assistant first
        _case([_assistant("I start."), _user("ok")]),
    ]
    return out


def gemma3_cases():
    out = common_cases()
    parts = [{"type": "text", "text": "  Look at this:  "}, {"type": "image"}, {"type": "text", "text": "What is it?"}]
    out += [
        _case([_user(parts)]),
        _case([{"role": "system", "content": [{"type": "text", "text": "System as parts."}]}, _user("Hi")]),
        _case([_system("Sys"), _user(parts), _assistant([{"type": "text", "text": "A cat."}]), _user("Sure?")]),
        _case([_user([])]),
        _case([_system("Only a system prompt")]),
        _case([_system("Only a system prompt")], agp=False),
        # the template raises: roles must alternate
        _case([_user("one"), _user("two")]),
        _case([_assistant("I start."), _user("ok")]),
        _case([_system("S"), _assistant("first")]),
        _case([_user("q"), _assistant("a"), _assistant("b")], agp=False),
        # the template raises: content neither string nor list
        _case([_user(42)]),
        _case([_user(None)]),
    ]
    return out


def llama3_cases():
    out = common_cases()
    out += [
        _case([_user("one"), _user("two"), _assistant("x"), _assistant("y")], agp=False),
        _case([_assistant("I start."), _user("ok")]),
        _case([_system("Only a system prompt")]),
        _case([{"role": "ipython", "content": "tool output"}, _user("ok")]),
        _case([_user(None)]),
        # content that is not a string: `| trim` prints it (a list becomes its repr)
        _case([_user(12345)]),
        _case([_user([{"type": "text", "text": "parts"}])]),
    ]
    return out


def generic_cases():
    out = common_cases()
    out += [
        _case([_user("one"), _user("two")]),
        _case([_assistant("I start."), _user("ok")]),
        _case([_user("What's the weather?"),
               {"role": "assistant", "content": "", "tool_calls": [_tool_call("get_weather", {"city": "Oslo"})]},
               {"role": "tool", "content": "cold"}], tools=QWEN_TOOLS),
        _case([_user("Tools but plain chat")], tools=QWEN_TOOLS),
        _case([_user("two calls"),
               {"role": "assistant", "content": "",
                "tool_calls": [_tool_call("search", {"q": "a"}), _tool_call("search", {"q": "b"})]}],
              tools=QWEN_TOOLS, agp=False),
    ]
    return out


def cases(family):
    fn = {"qwen3": qwen3_cases, "gemma3": gemma3_cases, "llama3": llama3_cases}.get(family, generic_cases)
    return copy.deepcopy(fn())


if __name__ == "__main__":
    import sys

    for fam in sys.argv[1:] or ["llama3", "qwen3", "gemma3", "generic"]:
        print(fam, len(cases(fam)))
