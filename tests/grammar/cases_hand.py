"""Hand-written grammar cases for what bfcl's function docs lack: nesting,
optional properties, anyOf / oneOf / allOf, $defs / $ref recursion, enums and
consts with unicode and escapes, numeric bounds, string lengths, patterns and
formats, JSON syntax corners; json_object mode; regexes; GBNF grammars.

Each JSON instance carries the label its author meant (True / False); the
label used is jsonschema's, and test_hand_labels checks the two agree, so a
slip here shows up as a broken case rather than as a wrong verdict on infer.
Values (V) are written in every json.dumps variant; texts (T) as given.
Regex labels come from re.fullmatch; GBNF labels are the author's (checked
against llguidance's GBNF support in the test, as information)."""
import json

from cases_common import dumps_variants, label_json, label_regex, order_like_schema


def V(value, valid=True):
    return ("value", value, valid)


def T(text, valid):
    return ("text", text, valid)


SCHEMAS = {
    "nested_object": ({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0},
            "address": {"type": "object", "properties": {
                "street": {"type": "string"}, "city": {"type": "string"},
                "geo": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                        "required": ["lat", "lon"], "additionalProperties": False}},
                "required": ["city"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "address"],
    }, [
        V({"name": "Ada", "age": 36, "address": {"street": "1 Main St", "city": "London",
                                                 "geo": {"lat": 51.5, "lon": -0.12}}, "tags": ["math", "code"]}),
        V({"name": "Bo", "address": {"city": "Oslo"}}),
        V({"name": "Cy", "address": {"city": "Rome", "zip": "00100"}, "tags": []}),
        V({"name": "Ada", "address": {"city": "X", "geo": {"lat": 1}}}, False),
        V({"name": "Ada", "address": {"city": "X", "geo": {"lat": 1, "lon": 2, "alt": 3}}}, False),
        V({"name": "Ada", "address": {"street": "s"}}, False),
        V({"name": "Ada", "age": -1, "address": {"city": "X"}}, False),
        V({"name": "Ada", "address": {"city": "X"}, "tags": [1]}, False),
        V({"address": {"city": "X"}}, False),
        T('{"name":"Ada","address":{"city":"X"},"tags":["a",]}', False),
        T('{"name":"Ada","address":{"city":"X"}}}', False),
    ]),
    "all_optional": ({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"},
                       "d": {"type": "null"}},
        "additionalProperties": False,
    }, [
        V({}), V({"a": 1}), V({"b": "x"}), V({"c": False}), V({"d": None}), V({"a": 1, "c": True}),
        V({"b": "x", "d": None}), V({"a": 1, "b": "", "c": True, "d": None}),
        V({"e": 1}, False), V({"a": 1, "e": 1}, False), V({"a": "1"}, False), V({"d": 0}, False),
        T("{,}", False), T('{"a":1,}', False), T("", False), T("null", False),
    ]),
    "additional_properties_schema": ({
        "type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"],
        "additionalProperties": {"type": "integer"},
    }, [
        V({"id": "x"}), V({"id": "x", "n": 1}), V({"id": "x", "n": 1, "m": -7}), V({"id": "x", "n": "1"}, False),
        V({"id": "x", "n": 1.5}, False),
    ]),
    "required_not_in_properties": ({
        "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"],
    }, [
        V({"a": 1, "b": 2}), V({"a": 1, "b": "anything"}), V({"a": 1}, False),
    ]),
    "array_bounds": ({
        "type": "array", "items": {"type": "integer", "minimum": -5, "maximum": 5}, "minItems": 1, "maxItems": 4,
    }, [
        V([0]), V([-5, 5]), V([1, 2, 3, 4]), V([], False), V([1, 2, 3, 4, 5], False), V([6], False),
        V([-6], False), V([1.5], False), T("[1,2,]", False), T("[ 1 , 2 ]", True), T("[01]", False),
    ]),
    "prefix_items": ({
        "type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}],
        "items": False, "minItems": 2,
    }, [
        V(["a", 1]), V(["a", 1, True]), V(["a"], False), V([1, "a"], False), V(["a", 1, True, None], False),
    ]),
    "nested_arrays": ({
        "type": "array", "items": {"type": "array", "items": {"type": "number"}, "maxItems": 3},
    }, [
        V([]), V([[]]), V([[1, 2.5], [-3e-2], []]), V([[1, 2, 3, 4]], False), V([[1], ["x"]], False),
        T("[[1],[2]", False),
    ]),
    "any_of": ({
        "anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "minimum": 10}, {"type": "null"}],
    }, [
        V("abc"), V(10), V(12345), V(None), V("abcd", False), V(9, False), V(True, False), V([], False),
    ]),
    "one_of_tagged": ({
        "oneOf": [
            {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
             "required": ["kind", "r"], "additionalProperties": False},
            {"type": "object", "properties": {"kind": {"const": "rect"}, "w": {"type": "number"},
                                              "h": {"type": "number"}},
             "required": ["kind", "w", "h"], "additionalProperties": False},
        ],
    }, [
        V({"kind": "circle", "r": 1}), V({"kind": "rect", "w": 2, "h": 3.5}), V({"kind": "circle", "w": 1}, False),
        V({"kind": "square", "r": 1}, False), V({"kind": "rect", "w": 2}, False),
    ]),
    "all_of": ({
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]},
        ],
    }, [
        V({"a": 1, "b": "x"}), V({"a": 1}, False), V({"b": "x"}, False), V({"a": "1", "b": "x"}, False),
    ]),
    "defs_tree": ({
        "$defs": {"node": {"type": "object", "properties": {
            "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["value"], "additionalProperties": False}},
        "$ref": "#/$defs/node",
    }, [
        V({"value": 1}), V({"value": 1, "children": []}),
        V({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]}),
        V({"value": 1, "children": [{"value": "2"}]}, False),
        V({"value": 1, "children": [{"children": []}]}, False),
        V({"value": 1, "children": [{"value": 2, "x": 0}]}, False),
    ]),
    "ref_root_list": ({
        "type": "object",
        "properties": {"head": {"type": "string"}, "tail": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
        "required": ["head", "tail"],
    }, [
        V({"head": "a", "tail": None}), V({"head": "a", "tail": {"head": "b", "tail": {"head": "c", "tail": None}}}),
        V({"head": "a", "tail": {"head": "b"}}, False), V({"head": "a"}, False),
    ]),
    "enum_unicode": ({
        "type": "object", "properties": {"v": {"enum": ["café", "naïve", "日本語", "emoji 😀", 'quote"', "back\\slash",
                                                         "tab\tin", "line\nbreak", "", 7, None, True]}},
        "required": ["v"],
    }, [
        V({"v": "café"}), V({"v": "naïve"}), V({"v": "日本語"}), V({"v": "emoji 😀"}), V({"v": 'quote"'}),
        V({"v": "back\\slash"}), V({"v": "tab\tin"}), V({"v": "line\nbreak"}), V({"v": ""}), V({"v": 7}),
        V({"v": None}), V({"v": True}),
        T(r'{"v":"caf\u00e9"}', True), T(r'{"v":"emoji \ud83d\ude00"}', True), T(r'{"v":"\u65e5\u672c\u8a9e"}', True),
        T(r'{"v":"back\u005cslash"}', True), T(r'{"v":"line\u000abreak"}', True),
        V({"v": "cafe"}, False), V({"v": "Café"}, False), V({"v": "日本"}, False), V({"v": 8}, False),
        V({"v": False}, False), V({"v": "7"}, False), T('{"v":"tab\tin"}', False),
    ]),
    "const_values": ({
        "type": "object", "properties": {
            "version": {"const": "1.0"}, "n": {"const": 42}, "flag": {"const": False},
            "obj": {"const": {"k": [1, "two"]}}},
        "required": ["version", "n"],
    }, [
        V({"version": "1.0", "n": 42}), V({"version": "1.0", "n": 42, "flag": False}),
        V({"version": "1.0", "n": 42, "obj": {"k": [1, "two"]}}),
        V({"version": "1.1", "n": 42}, False), V({"version": "1.0", "n": 43}, False),
        V({"version": "1.0", "n": 42, "flag": True}, False), V({"version": "1.0", "n": 42, "obj": {"k": [1]}}, False),
        V({"version": 1.0, "n": 42}, False),
    ]),
    "integer_bounds": ({
        "type": "object", "properties": {
            "a": {"type": "integer", "minimum": -10, "maximum": 10},
            "b": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100},
            "c": {"type": "integer", "minimum": 1000},
            "d": {"type": "integer", "maximum": -3},
            "e": {"type": "integer", "minimum": 0, "multipleOf": 5}},
    }, [
        V({"a": -10}), V({"a": 10}), V({"a": 0}), V({"b": 1}), V({"b": 99}), V({"c": 1000}), V({"c": 123456789012}),
        V({"d": -3}), V({"d": -1000}), V({"e": 0}), V({"e": 35}),
        V({"a": -11}, False), V({"a": 11}, False), V({"a": 100}, False), V({"b": 0}, False), V({"b": 100}, False),
        V({"c": 999}, False), V({"c": 99}, False), V({"d": -2}, False), V({"d": 3}, False), V({"e": 7}, False),
        V({"e": -5}, False), V({"a": 1.5}, False), T('{"a":-0}', True), T('{"a":01}', False), T('{"a":+1}', False),
        T('{"a":--1}', False), T('{"b":5', False),
    ]),
    "number_bounds": ({
        "type": "object", "properties": {
            "p": {"type": "number", "minimum": 0, "maximum": 1},
            "q": {"type": "number", "exclusiveMinimum": -1.5, "exclusiveMaximum": 2.25},
            "r": {"type": "number"}},
    }, [
        V({"p": 0}), V({"p": 1}), V({"p": 0.5}), V({"q": -1.25}), V({"q": 2.2}), V({"r": -1e300}),
        T('{"r":1E+2}', True), T('{"r":1e-7}', True), T('{"r":-0.0}', True), T('{"r":0.000}', True),
        T('{"p":1.0}', True), T('{"p":1.00001}', False), T('{"p":-0.1}', False), T('{"q":-1.5}', False),
        T('{"q":2.25}', False), T('{"q":3}', False), T('{"r":.5}', False), T('{"r":1.}', False), T('{"r":1e}', False),
        T('{"r":0x10}', False), T('{"r":NaN}', False), T('{"r":Infinity}', False), T('{"r":"1"}', False),
    ]),
    "string_lengths": ({
        "type": "object", "properties": {
            "s": {"type": "string", "minLength": 2, "maxLength": 4},
            "t": {"type": "string", "maxLength": 0},
            "u": {"type": "string", "minLength": 1}},
    }, [
        V({"s": "ab"}), V({"s": "abcd"}), V({"s": "éé"}), V({"s": "😀😀"}), V({"s": "日本語"}), V({"t": ""}),
        V({"u": "x"}), T(r'{"s":"\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00"}', True), T(r'{"s":"\n\t"}', True),
        V({"s": "a"}, False), V({"s": "abcde"}, False), V({"s": "😀"}, False), V({"s": "日本語です"}, False),
        V({"t": "x"}, False), V({"u": ""}, False), T(r'{"s":"\u0061"}', False),
    ]),
    "string_pattern": ({
        "type": "object", "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"},
            "loose": {"type": "string", "pattern": "ab+c"},
            "hex": {"type": "string", "pattern": "^(0x)?[0-9a-fA-F]+$", "maxLength": 6}},
    }, [
        V({"code": "ABC-123"}), V({"loose": "abc"}), V({"loose": "xxabbbcyy"}), V({"hex": "0xff"}), V({"hex": "DEAD"}),
        V({"code": "AB-123"}, False), V({"code": "ABCD-123"}, False), V({"code": "abc-123"}, False),
        V({"code": " ABC-123"}, False), V({"loose": "ac"}, False), V({"loose": "a b c"}, False),
        V({"hex": "0xfffff"}, False), V({"hex": "0x"}, False), V({"hex": "xyz"}, False),
    ]),
    "string_escapes": ({
        "type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"], "additionalProperties": False,
    }, [
        T(r'{"s":"a\"b"}', True), T(r'{"s":"a\\b"}', True), T(r'{"s":"a\/b"}', True), T(r'{"s":"\b\f\n\r\t"}', True),
        T(r'{"s":"\u0000"}', True), T(r'{"s":"\u001F"}', True), T(r'{"s":"\uD83D\uDE00"}', True),
        T(r'{"s":"\u00e9\u00E9"}', True), T('{"s":"é 日本 😀"}', True), T('{"s":""}', True),
        T(r'{"s":"\x41"}', False), T(r'{"s":"\u00g0"}', False), T(r'{"s":"\u00"}', False), T('{"s":"a\tb"}', False),
        T('{"s":"a\nb"}', False), T('{"s":"a\x01b"}', False), T("{\"s\":'x'}", False), T('{"s":"abc}', False),
        T('{"s":"\\"}', False),
    ]),
    "format_date_time": ({"type": "string", "format": "date-time"}, [
        V("2024-01-31T23:59:59Z"), V("2024-01-31T23:59:59.123Z"), V("2024-01-31T23:59:59+05:30"),
        V("1999-12-31T00:00:00-08:00"), V("2024-02-29T12:00:00Z"),
        V("2024-01-31 23:59:59Z", False), V("2024-01-31T23:59:59", False), V("2024-13-01T00:00:00Z", False),
        V("2024-01-32T00:00:00Z", False), V("2024-01-31T24:00:00Z", False), V("2024-01-31T23:60:00Z", False),
        V("2024-02-30T00:00:00Z", False), V("24-01-31T00:00:00Z", False), V("", False), V("now", False),
    ]),
    "format_date": ({"type": "string", "format": "date"}, [
        V("2024-01-31"), V("0001-01-01"), V("2024-02-29"), V("2024-04-30"),
        V("2024-1-31", False), V("2024-00-10", False), V("2024-04-31", False), V("2024-02-30", False),
        V("20240131", False), V("2024-01-31T00:00:00Z", False),
    ]),
    "format_time": ({"type": "string", "format": "time"}, [
        V("23:59:59Z"), V("00:00:00+01:00"), V("12:30:45.5Z"), V("08:15:00-05:00"),
        V("24:00:00Z", False), V("12:60:00Z", False), V("1:00:00Z", False), V("12:00", False), V("noon", False),
    ]),
    "format_email": ({"type": "string", "format": "email"}, [
        V("user@example.com"), V("first.last+tag@sub.example.org"), V("a@b.co"),
        V("no-at-sign.example.com", False), V("", False),
    ]),
    "format_uuid": ({"type": "string", "format": "uuid"}, [
        V("123e4567-e89b-12d3-a456-426614174000"), V("00000000-0000-0000-0000-000000000000"),
        V("A987FBC9-4BED-3078-CF07-9141BA07C9F3"),
        V("123e4567e89b12d3a456426614174000", False), V("123e4567-e89b-12d3-a456-42661417400", False),
        V("g23e4567-e89b-12d3-a456-426614174000", False), V("{123e4567-e89b-12d3-a456-426614174000}", False),
    ]),
    "format_ipv4": ({"type": "string", "format": "ipv4"}, [
        V("192.168.0.1"), V("0.0.0.0"), V("255.255.255.255"), V("8.8.8.8"),
        V("256.0.0.1", False), V("1.2.3", False), V("1.2.3.4.5", False), V("01.2.3.4", False), V("a.b.c.d", False),
        V("1.2.3.4 ", False),
    ]),
    "type_union_nullable": ({
        "type": "object", "properties": {"x": {"type": ["string", "null"]}, "y": {"type": ["integer", "boolean"]}},
        "required": ["x"],
    }, [
        V({"x": None}), V({"x": "s"}), V({"x": "s", "y": 1}), V({"x": None, "y": False}),
        V({"x": 1}, False), V({"x": "s", "y": "1"}, False), V({"x": "s", "y": None}, False),
    ]),
    "empty_schema_any": ({}, [
        V(None), V(True), V(0), V(-1.5e10), V("s"), V([]), V({}), V({"a": [1, {"b": None}]}), T('  "padded"  ', True),
        T("tru", False), T("[1", False), T("{'a':1}", False), T("1 2", False), T("", False), T("nul", False),
    ]),
    "whitespace_placement": ({
        "type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {"type": "string"}},
    }, [
        T(' {"a":[1,2]}', True), T('{"a":[1,2]}\n', True), T('\t{ "a" : [ 1 , 2 ] , "b" : "x" }\r\n', True),
        T('{\n  "a": [\n    1,\n    2\n  ]\n}', True), T('{' + ' ' * 16 + '"a":[]}', True),
        T('{"a":[1 2]}', False), T('{"a"[1]}', False), T('{"a":[1,,2]}', False), T('{"a":[1], "b":"x",}', False),
        T('{"a":\v[1]}', False), T('{"a":\u00a0[1]}', False),
    ]),
    "deep_nesting": ({
        "$defs": {"v": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/v"}}]}},
        "$ref": "#/$defs/v",
    }, [
        V(1), V([]), V([[[[[[[[[[1]]]]]]]]]]), V([1, [2, [3, []]]]), V([1, [2, "x"]], False), V([[[[[[[]]]]]]], True),
        T("[[[[1]]]", False),
    ]),
}

JSON_OBJECT = [
    V({}), V({"a": 1}), V({"a": [1, {"b": None}], "c": "日本"}), T('  {"x": true}  ', True), T('{"k":{}}', True),
    T('{"a":1,"a":2}', None),  # duplicate keys: out of contract, dropped
    V([], False), V("str", False), V(1, False), V(None, False), T('{"a":}', False), T("{a:1}", False),
    T('{"a":1}x', False), T('{"a":1}{"b":2}', False), T("", False), T("{", False), T('{"a":1,}', False),
]

# (regex, [(text, intended)]): labels from re.fullmatch. Only syntax every engine
# reads alike: classes, ranges, counted repetition, alternation, groups, escapes.
REGEXES = [
    ("[a-z]+", [("abc", True), ("a", True), ("", False), ("abC", False), ("ab c", False)]),
    ("[0-9]{3}-[0-9]{4}", [("555-1234", True), ("55-1234", False), ("555-12345", False), ("555 1234", False)]),
    ("(foo|bar)+baz", [("foobaz", True), ("barfoobaz", True), ("baz", False), ("foobazbaz", False)]),
    ("[A-Z][a-z]*( [A-Z][a-z]*)*", [("Hello World", True), ("A", True), ("Hello world", False),
                                    ("Hello  World", False)]),
    ("[+-]?[0-9]+(\\.[0-9]+)?([eE][+-]?[0-9]+)?", [("-12.5e+3", True), ("0", True), ("1.", False), (".5", False),
                                                  ("+7E2", True)]),
    ("a{2,4}b?", [("aa", True), ("aaaab", True), ("a", False), ("aaaaa", False), ("aab", True), ("aabb", False)]),
    ("(ab)*c?", [("", True), ("ababc", True), ("c", True), ("abac", False), ("cc", False)]),
    ("café|日本語|😀+", [("café", True), ("日本語", True), ("😀😀😀", True), ("cafe", False), ("日本", False)]),
    (".{3}", [("abc", True), ("😀ab", True), ("é日😀", True), ("ab", False), ("abcd", False), ("a\nb", False)]),
    ("[^\\n]{0,5}", [("", True), ("hello", True), ("hi\n", False), ("123456", False)]),
    ("\\(\\d+\\)", [("(42)", True), ("()", False), ("42", False)]),
    ("[0-9a-fA-F]{8}", [("deadBEEF", True), ("deadbee", False), ("deadbeeg", False)]),
    ("\\{\"k\":\"[a-z]*\"\\}", [('{"k":"abc"}', True), ('{"k":""}', True), ('{"k":"ABC"}', False),
                                 ('{ "k":"a"}', False)]),
    ("\\s*yes|no\\s*", [("  yes", True), ("no  ", True), ("yes ", False), ("\tyes", True)]),
    ("[\\u0041-\\u0043]+x", [("ABCx", True), ("Dx", False)]),
]

# (name, GBNF source, [(text, label)]): labels hand-made.
GBNF = [
    ("arithmetic", r'''root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")"
''', [("1+2*3", True), ("(1+2)*3", True), ("((7))", True), ("1+", False), ("(1+2", False), ("1 + 2", False),
      ("12/(3-4)", True), ("", False), ("*1", False)]),
    ("yes_no", 'root ::= "yes" | "no"\n', [("yes", True), ("no", True), ("yesno", False), ("Yes", False),
                                             ("", False)]),
    ("word_list", r'''root ::= item ("," " "? item)*
item ::= [a-z]+
''', [("a", True), ("a,b", True), ("apple, pear,fig", True), ("a,,b", False), ("a, ", False), ("A", False),
      ("a,  b", False)]),
    ("key_lines", r'''root ::= line+
line ::= key "=" value "\n"
key ::= [a-z_]+
value ::= [0-9]+ | "\"" [^"\n]* "\""
''', [("a=1\n", True), ("a=1\nb_c=\"x y\"\n", True), ("a=1", False), ("=1\n", False), ("a=\"x\n", False),
      ("a=\"\"\n", True)]),
    ("counted", r'''root ::= [A-Z]{2,3} "-" digit{4} ("/" [^a-z ]?)?
digit ::= [0-9]
''', [("AB-1234", True), ("ABC-0000/", True), ("ABC-0000/#", True), ("A-1234", False), ("ABCD-1234", False),
      ("AB-123", False), ("AB-1234/a", False), ("AB-1234/ ", False)]),
    ("unicode_literals", r'''root ::= greeting " " name
greeting ::= "héllo" | "こんにちは" | "👋"
name ::= [a-zA-Zé]+
''', [("héllo Zoé", True), ("こんにちは Bob", True), ("👋 x", True), ("hello Bob", False), ("👋", False)]),
]


def _json_instances(schema, specs):
    out, seen = [], set()
    for kind, x, intended in specs:
        texts = dumps_variants(order_like_schema(x, schema) if schema else x) if kind == "value" else [x]
        for t in texts:
            if t in seen:
                continue
            lab = label_json(schema, t)
            if lab is None:
                continue
            seen.add(t)
            out.append({"text": t, "valid": lab, "intended": intended,
                        "why": "hand" if kind == "text" else "hand value"})
    return out


def build():
    cases = []
    for name, (schema, specs) in SCHEMAS.items():
        cases.append({"group": "schema", "name": name, "mode": "json-schema", "grammar": schema,
                      "instances": _json_instances(schema, specs)})
    cases.append({"group": "json_object", "name": "json_object", "mode": "json-object", "grammar": None,
                  "instances": _json_instances(None, JSON_OBJECT)})
    for i, (rx, texts) in enumerate(REGEXES):
        cases.append({"group": "regex", "name": f"regex_{i:02d}", "mode": "regex", "grammar": rx,
                      "instances": [{"text": t, "valid": label_regex(rx, t), "intended": v, "why": "hand"}
                                    for t, v in texts]})
    for name, src, texts in GBNF:
        cases.append({"group": "gbnf", "name": name, "mode": "gbnf", "grammar": src,
                      "instances": [{"text": t, "valid": v, "intended": v, "why": "hand"} for t, v in texts]})
    return cases


if __name__ == "__main__":
    cs = build()
    bad = [(c["name"], i["text"], i["intended"], i["valid"]) for c in cs for i in c["instances"]
           if i["intended"] is not None and i["intended"] != i["valid"]]
    for b in bad:
        print("LABEL MISMATCH", b)
    for g in ("schema", "json_object", "regex", "gbnf"):
        sel = [c for c in cs if c["group"] == g]
        n = sum(len(c["instances"]) for c in sel)
        v = sum(1 for c in sel for i in c["instances"] if i["valid"])
        print(f"{g}: {len(sel)} grammars, {n} instances ({v} valid)")
    print(json.dumps(len(bad)))
