"""What every grammar case shares: the case record, labels from the reference
libraries (jsonschema for JSON Schema, re.fullmatch for regexes), the JSON
serializations an instance is written in, and schema-driven mutations that
turn a valid value into (probably) invalid ones.

A label never comes from the generator's intent: a mutation only proposes a
text, label_json() decides. Texts that fall outside infer's grammar contract
(a whitespace run over 16 bytes, duplicate keys, lone surrogates, NaN) are
dropped at generation time, so a label is always one both sides can agree on.

The case record (a dict) is what the test and tools/grammar_bench.py read:
    group      "bfcl" | "schema" | "json_object" | "regex" | "gbnf"
    name       unique within the group
    mode       "json-schema" | "json-object" | "regex" | "gbnf"
    grammar    the schema (dict), or the regex / GBNF source (str)
    instances  list of {"text": str, "valid": bool, "why": str}
"""
import copy
import json
import random
import re

import jsonschema
from jsonschema import Draft202012Validator

MAX_WS = 16  # infer's bound on one whitespace run (flexible mode)


def format_checker():
    """The 2020-12 format checker; refuses to run when date-time / time are not
    really checked (jsonschema skips them silently without rfc3339-validator)."""
    fc = Draft202012Validator.FORMAT_CHECKER
    missing = [f for f in ("date-time", "time", "date", "email", "uuid", "ipv4") if f not in fc.checkers]
    if missing:
        raise RuntimeError(f"jsonschema cannot check formats {missing}: install rfc3339-validator")
    return fc


_VALIDATORS = {}


def validator(schema):
    key = json.dumps(schema, sort_keys=True)
    v = _VALIDATORS.get(key)
    if v is None:
        v = Draft202012Validator(schema, format_checker=format_checker())
        _VALIDATORS[key] = v
    return v


class NotInContract(ValueError):
    """A text both sides could legitimately disagree on; never used as a case."""


def _pairs(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise NotInContract("duplicate key")
    return dict(pairs)


def _no_constant(name):
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


def has_lone_surrogate(v):
    if isinstance(v, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in v)
    if isinstance(v, list):
        return any(has_lone_surrogate(x) for x in v)
    if isinstance(v, dict):
        return any(has_lone_surrogate(k) or has_lone_surrogate(x) for k, x in v.items())
    return False


def ws_runs_ok(text):
    """True when no run of JSON whitespace outside string literals exceeds MAX_WS
    bytes (only meaningful for texts that are JSON or close to it)."""
    run, in_str, esc = 0, False, False
    for c in text:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
            continue
        if c in " \t\n\r":
            run += 1
            if run > MAX_WS:
                return False
            continue
        run = 0
        if c == '"':
            in_str = True
    return True


def parse_json(text):
    """The value of text as strict JSON (RFC 8259), or raises ValueError;
    NotInContract for texts no label can be trusted on."""
    if not ws_runs_ok(text):
        raise NotInContract("whitespace run over 16 bytes")
    v = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    if has_lone_surrogate(v):
        raise NotInContract("lone surrogate")
    return v


def label_json(schema, text):
    """True / False from jsonschema (Draft 2020-12, formats checked); None when the
    text is outside the contract. schema None means json_object mode."""
    try:
        v = parse_json(text)
    except NotInContract:
        return None
    except ValueError:
        return False
    if schema is None:
        return isinstance(v, dict)
    return validator(schema).is_valid(v)


def label_regex(pattern, text):
    return re.fullmatch(pattern, text) is not None


def dumps_variants(value):
    """The distinct texts json.dumps writes value as: default and compact
    separators, ASCII-escaped or not, and indented by 2 (when its runs fit)."""
    out = []
    for sep in (None, (",", ":")):
        for ea in (True, False):
            try:
                t = json.dumps(value, separators=sep, ensure_ascii=ea, allow_nan=False)
            except ValueError:
                return []
            if t not in out:
                out.append(t)
    t = json.dumps(value, indent=2, ensure_ascii=False)
    if t not in out and ws_runs_ok(t):
        out.append(t)
    return out


def order_like_schema(value, schema, root=None):
    """A copy of value whose object keys follow the schema's `properties` order
    (unknown keys after, in their own order), recursively through properties,
    items, prefixItems and local $refs."""
    root = root if root is not None else schema
    if not isinstance(schema, dict):
        return value
    if "$ref" in schema and isinstance(schema["$ref"], str) and schema["$ref"].startswith("#"):
        target = resolve_ref(root, schema["$ref"])
        if target is not None and target is not schema:
            return order_like_schema(value, target, root)
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        keys = [k for k in props if k in value] + [k for k in value if k not in props]
        return {k: order_like_schema(value[k], props.get(k, {}), root) for k in keys}
    if isinstance(value, list):
        pre = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        return [order_like_schema(x, pre[i] if i < len(pre) else items, root) for i, x in enumerate(value)]
    return value


def resolve_ref(root, ref):
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


# ---------------------------------------------------------------- mutations

def _types(s):
    t = s.get("type") if isinstance(s, dict) else None
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return list(t)
    return []


_NONE = object()


def _other_type_value(types):
    """A value of a JSON type outside types (_NONE when every type is allowed)."""
    for cand in ("zz", 12345, True, None, [1], {"q": 1}, 1.5):
        t = {str: "string", bool: "boolean", type(None): "null", list: "array", dict: "object",
             int: "integer", float: "number"}[type(cand)]
        if t in types or (t == "integer" and "number" in types):
            continue
        return cand
    return _NONE


def _leaf_paths(value, schema, root, path=()):
    """(path, subschema) for each property value reachable through properties."""
    out = []
    if isinstance(schema, dict) and "$ref" in schema:
        target = resolve_ref(root, schema["$ref"]) if isinstance(schema["$ref"], str) else None
        if isinstance(target, dict) and target is not schema and len(path) < 6:
            schema = target
    if isinstance(value, dict) and isinstance(schema, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        for k, v in value.items():
            if k in props and isinstance(props[k], dict):
                out.append((path + (k,), props[k]))
                out.extend(_leaf_paths(v, props[k], root, path + (k,)))
    elif isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value[:2]):
            out.append((path + (i,), schema["items"]))
            out.extend(_leaf_paths(v, schema["items"], root, path + (i,)))
    return out


def _set(value, path, new):
    v = copy.deepcopy(value)
    node = v
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = new
    return v


def _drop(value, path):
    v = copy.deepcopy(value)
    node = v
    for p in path[:-1]:
        node = node[p]
    del node[path[-1]]
    return v


def mutations(value, schema):
    """(why, mutated value) pairs proposed from a valid value; their labels come
    from jsonschema later (most are invalid, some turn out valid)."""
    out = []
    if isinstance(value, dict):
        for k in schema.get("required", []) if isinstance(schema.get("required"), list) else []:
            if k in value:
                out.append((f"drop required {k!r}", _drop(value, (k,))))
        extra = "zz_unknown_key"
        while extra in value:
            extra += "_"
        v2 = dict(value)
        v2[extra] = 1
        out.append(("add unknown key" + (" (additionalProperties false)"
                                         if schema.get("additionalProperties") is False else ""), v2))
    for path, sub in _leaf_paths(value, schema, schema):
        name = "/".join(map(str, path))
        types = _types(sub)
        if types:
            bad = _other_type_value(types)
            if bad is not _NONE:
                out.append((f"wrong type at {name}", _set(value, path, bad)))
        if isinstance(sub.get("enum"), list) and sub["enum"]:
            e = sub["enum"]
            s = [x for x in e if isinstance(x, str)]
            if s:
                bad = s[0] + "_not_in_enum"
            else:
                nums = [x for x in e if isinstance(x, (int, float)) and not isinstance(x, bool)]
                bad = (max(nums) + 1) if nums else "not_in_enum"
            out.append((f"enum violation at {name}", _set(value, path, bad)))
        if "const" in sub:
            c = sub["const"]
            out.append((f"const violation at {name}", _set(value, path, (c + "_x") if isinstance(c, str) else "x")))
        for kw, delta in (("minimum", -1), ("exclusiveMinimum", 0), ("maximum", 1), ("exclusiveMaximum", 0)):
            b = sub.get(kw)
            if isinstance(b, (int, float)) and not isinstance(b, bool):
                step = delta if delta else 0
                out.append((f"{kw} violation at {name}", _set(value, path, b + step)))
        if "integer" in types:
            out.append((f"fraction for integer at {name}", _set(value, path, 1.5)))
        for kw, n in (("minLength", -1), ("maxLength", 1)):
            b = sub.get(kw)
            if isinstance(b, int) and b + n >= 0:
                out.append((f"{kw} violation at {name}", _set(value, path, "a" * (b + n))))
        for kw, n in (("minItems", -1), ("maxItems", 1)):
            b = sub.get(kw)
            if isinstance(b, int) and b + n >= 0:
                cur = value
                for p in path:
                    cur = cur[p]
                if isinstance(cur, list) and cur:
                    out.append((f"{kw} violation at {name}", _set(value, path, (cur * (b + 1))[:b + n])))
    return out


def text_mutations(text, rng):
    """Byte-level breakages of a valid text."""
    out = []
    if len(text) > 2:
        cut = rng.randrange(1, len(text) - 1)
        out.append((f"truncated at {cut}", text[:cut]))
        out.append(("truncated last byte", text[:-1]))
    out.append(("trailing garbage", text + rng.choice(["x", "}", ",", "]", "0", '"'])))
    out.append(("trailing second value", text + " " + text))
    return out


def one_line(texts):
    """The texts without a line break (the ones infer's JSON --check lines can
    carry), or all of them when none is."""
    return [t for t in texts if "\n" not in t and "\r" not in t] or texts


def instances_for(schema, values, rng, n_invalid, why_valid="ground truth"):
    """Instances for one schema from valid-looking values: each value in its
    dumps variants, then up to n_invalid mutations sampled with rng; every
    instance labelled by jsonschema, duplicates and out-of-contract texts dropped.
    n_invalid None keeps every mutation."""
    seen, out = set(), []

    def add(text, why):
        if text in seen:
            return
        lab = label_json(schema, text)
        if lab is None:
            return
        seen.add(text)
        out.append({"text": text, "valid": lab, "why": why})

    base_texts = []
    for i, v in enumerate(values):
        v = order_like_schema(v, schema)
        texts = dumps_variants(v)
        for t in texts:
            add(t, f"{why_valid} #{i}")
        if texts:
            base_texts.append((v, texts))
    proposals = []
    for v, texts in base_texts[:2]:
        for why, mv in mutations(v, schema):
            mts = one_line(dumps_variants(order_like_schema(mv, schema)))
            if mts:
                proposals.append((why, rng.choice(mts)))
        for why, mt in text_mutations(rng.choice(one_line(texts)), rng):
            proposals.append((why, mt))
    if n_invalid is not None and len(proposals) > n_invalid:
        proposals = rng.sample(proposals, n_invalid)
    for why, t in proposals:
        add(t, why)
    return out


def check_schema(schema):
    """None when schema is a valid 2020-12 schema, else jsonschema's message."""
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        return e.message
    return None


def rng_for(seed, name):
    return random.Random(f"{seed}:{name}")
