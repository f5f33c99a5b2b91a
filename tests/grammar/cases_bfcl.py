"""JSON Schema cases from the Berkeley Function Calling Leaderboard (PyPI
`bfcl-eval`): every function doc in its data files becomes the JSON Schema of
that function's arguments object, converted the way bfcl converts functions
for OpenAI-style tools; the instances are bfcl's ground-truth arguments
(possible_answer), written with json.dumps in several ways, plus mutations.

The conversion is bfcl's own code: `_func_doc_language_specific_pre_processing`
(bfcl_eval/utils.py: Java / JavaScript parameters become strings) and
`_cast_to_openai_type` (bfcl_eval/model_handler/utils.py, with
constants/type_mappings.py's GORILLA_TO_OPENAPI: dict->object, float->number
plus "format": "float", tuple->array, any->string, ...), lifted out of the
package's source with `ast` and run as they are, followed by the steps of
`convert_to_tool` for the OpenAI completions style (parameters "type" set to
"object"). The package is not imported: importing bfcl_eval.model_handler pulls
in tree-sitter, tenacity and a hundred other packages (numpy==1.26.4,
sentence-transformers, faiss...), so the data come from the installed package
when its version is BFCL_VERSION, else from its wheel, fetched once with
`pip download --no-deps` into the cache ($INFER_CACHE, else
$XDG_CACHE_HOME/infer, else ~/.cache/infer) and read as a zip.
"""
import ast
import copy
import json
import os
import subprocess
import sys
import zipfile

from cases_common import check_schema, instances_for, resolve_ref, rng_for, validator

BFCL_VERSION = "2026.3.23"
WHEEL = f"bfcl_eval-{BFCL_VERSION}-py3-none-any.whl"
SEED = 20260323


class BfclUnavailable(RuntimeError):
    pass


def _cache_dir():
    if os.environ.get("INFER_CACHE"):
        base = os.environ["INFER_CACHE"]
    else:
        base = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                            "infer")
    return os.path.join(base, "bfcl")


class _Source:
    """Reads bfcl_eval/<rel> from the installed package or from the wheel."""

    def __init__(self):
        self.root, self.zip = None, None
        try:
            import importlib.metadata as md
            if md.version("bfcl-eval") == BFCL_VERSION:
                spec = __import__("importlib.util").util.find_spec("bfcl_eval")
                if spec and spec.origin:
                    self.root = os.path.dirname(spec.origin)
                    self.where = self.root
                    return
        except Exception:
            pass
        d = _cache_dir()
        path = os.path.join(d, WHEEL)
        if not os.path.exists(path):
            os.makedirs(d, exist_ok=True)
            r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                                "-q", "-d", d, f"bfcl-eval=={BFCL_VERSION}"], capture_output=True, text=True)
            if r.returncode != 0 or not os.path.exists(path):
                raise BfclUnavailable(f"pip download bfcl-eval=={BFCL_VERSION} failed: {r.stderr.strip()[-300:]}")
        self.zip = zipfile.ZipFile(path)
        self.where = path

    def names(self, prefix):
        if self.root:
            base = os.path.join(self.root, prefix)
            return sorted(os.path.join(prefix, n) for n in os.listdir(base) if n.endswith(".json"))
        return sorted(n[len("bfcl_eval/"):] for n in self.zip.namelist()
                      if n.startswith("bfcl_eval/" + prefix + "/") and n.endswith(".json")
                      and "/" not in n[len("bfcl_eval/" + prefix + "/"):])

    def read(self, rel):
        if self.root:
            with open(os.path.join(self.root, rel), encoding="utf-8") as f:
                return f.read()
        return self.zip.read("bfcl_eval/" + rel).decode("utf-8")


def _lift(source, names, namespace):
    """Runs the top-level functions `names` of a module's source in namespace."""
    tree = ast.parse(source)
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            exec(compile(ast.Module([node], []), "<bfcl_eval>", "exec"), namespace)
            found.append(node.name)
    missing = set(names) - set(found)
    if missing:
        raise BfclUnavailable(f"bfcl_eval {BFCL_VERSION} source lacks {sorted(missing)}")


def _mapping(source):
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "GORILLA_TO_OPENAPI" for t in node.targets):
            return ast.literal_eval(node.value)
    raise BfclUnavailable("GORILLA_TO_OPENAPI not found")


class Converter:
    def __init__(self, src):
        self.mapping = _mapping(src.read("constants/type_mappings.py"))
        ns = {"json": json, "GORILLA_TO_OPENAPI": self.mapping}
        _lift(src.read("utils.py"), ["_get_language_specific_hint", "is_java", "is_js",
                                     "_func_doc_language_specific_pre_processing"], ns)
        _lift(src.read("model_handler/utils.py"), ["_cast_to_openai_type"], ns)
        self.ns = ns

    def arguments_schema(self, function, category):
        """The JSON Schema of the arguments of one bfcl function doc (convert_to_tool,
        OpenAI completions style, after the language-specific preprocessing)."""
        item = copy.deepcopy(function)
        item.setdefault("description", "")
        item = self.ns["_func_doc_language_specific_pre_processing"]([item], category)[0]
        item["parameters"]["type"] = "object"
        item["parameters"]["properties"] = self.ns["_cast_to_openai_type"](item["parameters"]["properties"],
                                                                           self.mapping)
        return item["parameters"]


# ------------------------------------------------------------ ground truth

def _is_option_dict(x):
    return isinstance(x, dict) and x and all(isinstance(v, list) for v in x.values())


def _pick(options, rng):
    """One acceptable value from bfcl's list of options (rng None: the first);
    _ABSENT for "" (the argument left out)."""
    if not isinstance(options, list) or not options:
        return options
    o = options[0] if rng is None else rng.choice(options)
    return _resolve(o, rng)


_ABSENT = object()


def _resolve(o, rng):
    if isinstance(o, str) and o == "":
        return _ABSENT
    if _is_option_dict(o):
        out = {}
        for k, opts in o.items():
            v = _pick(opts, rng)
            if v is not _ABSENT:
                out[k] = v
        return out
    if isinstance(o, list):
        return [x if not _is_option_dict(x) else _resolve(x, rng) for x in o]
    return o


def gt_values(args, rng):
    """Argument objects from one ground-truth call: all-first picks, then a random pick."""
    out = []
    for r in (None, rng):
        v = {}
        for k, opts in args.items():
            x = _pick(opts, r)
            if x is not _ABSENT:
                v[k] = x
        if v not in out:
            out.append(v)
    return out


def _call_kwargs(text):
    """keyword arguments of a multi-turn ground truth like "cd(folder='x')"."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None, None
    if not isinstance(node, ast.Call) or node.args:
        return None, None
    name = ast.unparse(node.func)
    try:
        return name, {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    except ValueError:
        return None, None


# ------------------------------------------------------------ synthesis

def synth(schema, root, depth=0, full=True):
    """A plausible value for schemas without ground truth (its label still comes
    from jsonschema)."""
    if not isinstance(schema, dict) or depth > 6:
        return "x"
    if isinstance(schema.get("$ref"), str):
        t = resolve_ref(root, schema["$ref"])
        if isinstance(t, dict) and t is not schema:
            return synth(t, root, depth + 1, full)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema and schema["default"] is not None:
        try:
            if validator(schema).is_valid(schema["default"]):
                return schema["default"]
        except Exception:  # a $ref the bare subschema cannot resolve
            pass
    for k in ("anyOf", "oneOf"):
        if isinstance(schema.get(k), list) and schema[k]:
            return synth(schema[k][0], root, depth + 1, full)
    t = schema.get("type")
    if isinstance(t, list):
        t = t[0] if t else None
    if t == "object" or "properties" in schema:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        req = schema.get("required") if isinstance(schema.get("required"), list) else []
        return {k: synth(s, root, depth + 1, full) for k, s in props.items() if full or k in req}
    if t == "array":
        n = max(1, schema.get("minItems", 1) if isinstance(schema.get("minItems"), int) else 1)
        return [synth(schema.get("items", {}), root, depth + 1, full) for _ in range(min(n, 3))]
    if t == "integer":
        lo = schema.get("minimum", schema.get("exclusiveMinimum"))
        return int(lo) + 1 if isinstance(lo, (int, float)) and not isinstance(lo, bool) else 3
    if t == "number":
        lo = schema.get("minimum", schema.get("exclusiveMinimum"))
        return float(lo) + 0.5 if isinstance(lo, (int, float)) and not isinstance(lo, bool) else 2.5
    if t == "boolean":
        return True
    if t == "null":
        return None
    n = schema.get("minLength", 0) if isinstance(schema.get("minLength"), int) else 0
    return "example" + "x" * max(0, n - 7)


# ------------------------------------------------------------ the case set

def _category(entry_id):
    return entry_id.split(":")[0].rsplit("_", 1)[0]


def load_all():
    """Every distinct converted schema with its ground-truth argument objects:
    (cases, stats). cases: list of {"name", "schema", "gt": [call args...]}, in a
    fixed order."""
    src = _Source()
    conv = Converter(src)
    answers = {}
    for rel in src.names("data/possible_answer"):
        for line in src.read(rel).splitlines():
            if line.strip():
                e = json.loads(line)
                answers[e["id"]] = e["ground_truth"]
    by_key, order, bad = {}, [], set()
    stats = {"functions": 0, "conversion_errors": 0, "bad_schemas": 0, "source": src.where}

    def add(name, function, category, calls):
        stats["functions"] += 1
        try:
            schema = conv.arguments_schema(function, category)
        except Exception as e:  # bfcl's converter itself fails on a few docs (e.g. a float without description)
            stats["conversion_errors"] += 1
            stats.setdefault("conversion_error_names", []).append(f"{name}: {type(e).__name__} {e}")
            return
        key = json.dumps(schema, sort_keys=True)
        if key in bad:
            return
        if key not in by_key:
            err = check_schema(schema)
            if err:
                bad.add(key)
                stats["bad_schemas"] += 1
                stats.setdefault("bad_schema_names", []).append(f"{name}: {err[:120]}")
                return
            by_key[key] = {"name": name, "schema": schema, "gt": []}
            order.append(key)
        for c in calls:
            if c not in by_key[key]["gt"]:
                by_key[key]["gt"].append(c)
        return key

    for rel in src.names("data"):
        for line in src.read(rel).splitlines():
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue  # format_sensitivity.json is one pretty-printed object, not JSON lines
            if not isinstance(e, dict) or not isinstance(e.get("function"), list):
                continue
            cat = _category(e["id"])
            gts = answers.get(e["id"])
            for f in e["function"]:
                calls = []
                if isinstance(gts, list):
                    for call in gts:
                        if isinstance(call, dict) and f["name"] in call and isinstance(call[f["name"]], dict):
                            calls.append(call[f["name"]])
                add(f"{e['id']}/{f['name']}", f, cat, calls)
    # multi-turn function docs: ground truth is Python call text, keyword arguments only
    mt_calls = {}
    for rel in src.names("data/possible_answer"):
        if "multi_turn" not in rel:
            continue
        for line in src.read(rel).splitlines():
            if not line.strip():
                continue
            for turn in json.loads(line)["ground_truth"]:
                for text in turn if isinstance(turn, list) else []:
                    name, kw = _call_kwargs(text)
                    if name and kw and len(mt_calls.setdefault(name, [])) < 6:
                        opts = {k: [v] for k, v in kw.items()}
                        if opts not in mt_calls[name]:
                            mt_calls[name].append(opts)
    for rel in src.names("data/multi_turn_func_doc"):
        api = os.path.basename(rel)[:-5]
        for line in src.read(rel).splitlines():
            if line.strip():
                f = json.loads(line)
                add(f"multi_turn/{api}/{f['name']}", f, "multi_turn", mt_calls.get(f["name"], []))
    cases = [by_key[k] for k in order]
    stats["schemas"] = len(cases)
    stats["with_ground_truth"] = sum(1 for c in cases if c["gt"])
    return cases, stats


def build(full=False, n_schemas=300, seed=SEED):
    """The bfcl case group: (cases, stats). Quick form: n_schemas sampled with a
    fixed seed (two thirds with ground truth when there are enough), about six
    instances each; full form (full=True): every schema, every ground-truth call
    in every serialization, every mutation."""
    all_cases, stats = load_all()
    rng = rng_for(seed, "sample")
    if full or n_schemas >= len(all_cases):
        chosen = all_cases
    else:
        with_gt = [c for c in all_cases if c["gt"]]
        without = [c for c in all_cases if not c["gt"]]
        k = min(len(with_gt), (2 * n_schemas) // 3)
        chosen = rng.sample(with_gt, k) + rng.sample(without, min(len(without), n_schemas - k))
        idx = {id(c): i for i, c in enumerate(all_cases)}
        chosen.sort(key=lambda c: idx[id(c)])
    out = []
    for c in chosen:
        r = rng_for(seed, c["name"])
        schema = c["schema"]
        values = []
        for args in c["gt"]:
            values.extend(gt_values(args, r))
        why = "ground truth"
        if not values:
            why = "synthesized"
            values = [synth(schema, schema, full=True), synth(schema, schema, full=False)]
        if not full:
            values = values[:2]
        inst = instances_for(schema, values, r, None if full else 3, why_valid=why)
        if not full:
            valid = [i for i in inst if i["valid"]]
            invalid = [i for i in inst if not i["valid"]]
            if len(valid) > 3:  # one multi-line (indented) text at most: infer's --check lines cannot carry it
                flat = [i for i in valid if "\n" not in i["text"]]
                multi = [i for i in valid if "\n" in i["text"]]
                valid = r.sample(flat, min(3, len(flat)))
                valid += r.sample(multi, min(len(multi), 4 - len(valid), 1))
            inst = valid + invalid
        out.append({"group": "bfcl", "name": c["name"], "mode": "json-schema", "grammar": schema,
                    "instances": inst})
    stats["chosen"] = len(out)
    return out, stats


if __name__ == "__main__":
    full = "--full" in sys.argv
    cases, stats = build(full=full)
    n = sum(len(c["instances"]) for c in cases)
    v = sum(1 for c in cases for i in c["instances"] if i["valid"])
    print(json.dumps({k: v for k, v in stats.items() if not k.endswith("_names")}, indent=1))
    print(f"{len(cases)} schemas, {n} instances ({v} valid, {n - v} invalid)")
    for k in ("conversion_error_names", "bad_schema_names"):
        for x in stats.get(k, [])[:10]:
            print(k, x)
