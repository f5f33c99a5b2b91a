"""Running `infer grammar --check` on a case record, and where things are:
the binary ($INFER, default build/infer), ../shared/tokenizers ($INFER_SHARED
overrides the folder that holds tokenizers/), the knobs of the case set.

The CLI contract this follows:
  infer grammar --tokenizer PATH (--json-schema FILE | --json-object | --regex RE | --gbnf FILE)
                [--check FILE.jsonl] [--bench] [--whitespace compact|flexible] [--no-strict]
  --check: one input per line (JSON modes: the line is the text; regex / GBNF: the line is a
  JSON string literal); prints `accept` / `reject` per line, exit 0; a grammar it cannot
  compile: exit 2 and `infer grammar: <message>` on stderr; --bench adds one line
  `bench compile_ms=F mask_us_p50=F mask_us_p90=F mask_us_p99=F masks=N`.
"""
import json
import os
import re
import shlex
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("INFER_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
INFER = os.environ.get("INFER", os.path.join(ROOT, "build", "infer"))
FAMILIES = ["llama3", "qwen3", "gemma3"]
FULL = os.environ.get("INFER_GRAMMAR_FULL", "") not in ("", "0")
# Sizes. One `infer grammar` run per grammar; under the sanitizer build a run costs 2-7 s (the
# tokenizer load alone: 1.5 s llama3, 2.5 s the GGUF, 4 s gemma3's tokenizer.json; compiling a
# bfcl schema 1-4 s), so the default keeps `make test` to a few minutes on 2 cores: the embedded
# default model gets 24 bfcl schemas and every hand-written grammar (51); each ../shared
# tokenizer 4 bfcl schemas and the hand-written subset HAND_SHARED. INFER_GRAMMAR_FULL=1:
# everything for every tokenizer.
N_BFCL = int(os.environ.get("INFER_GRAMMAR_BFCL", "24"))
N_BFCL_SHARED = int(os.environ.get("INFER_GRAMMAR_BFCL_SHARED", "4"))
HAND_SHARED_ALL = os.environ.get("INFER_GRAMMAR_HAND_SHARED", "") == "all"
HAND_SHARED = {"enum_unicode", "string_escapes", "defs_tree", "json_object", "regex_08", "unicode_literals"}
TARGETS = [t for t in os.environ.get("INFER_GRAMMAR_TOKENIZERS", "default,llama3,qwen3,gemma3").split(",") if t]
EXTRA_FLAGS = shlex.split(os.environ.get("INFER_GRAMMAR_FLAGS", ""))  # e.g. "--no-strict"
TIMEOUT = float(os.environ.get("INFER_GRAMMAR_TIMEOUT", "120"))
BENCH_RE = re.compile(r"^bench compile_ms=(\S+) mask_us_p50=(\S+) mask_us_p90=(\S+) mask_us_p99=(\S+) masks=(\d+)$")


def shared_tokenizer_dir(family):
    d = os.path.join(SHARED, "tokenizers", family)
    return d if os.path.exists(os.path.join(d, "tokenizer.json")) else None


def checkable(case, inst):
    """Whether the CLI's --check file can carry this instance: JSON modes read the
    line itself, so a text holding a line break cannot be one."""
    if case["mode"] in ("json-schema", "json-object"):
        return "\n" not in inst["text"] and "\r" not in inst["text"]
    return True


class InferResult:
    """rc, verdicts (list of bool, one per checked instance, or None), error
    (stderr of a refusal), problem (a broken contract: crash, bad output), bench (dict)."""

    def __init__(self):
        self.rc, self.verdicts, self.error, self.problem, self.bench = None, None, None, None, None

    @property
    def compiled(self):
        return self.rc == 0 and self.problem is None


def run_infer(tokenizer, case, workdir, instances, bench=False, extra=(), infer=None):
    """Runs the CLI on case's grammar with the given instances in one --check file."""
    infer = infer or INFER
    os.makedirs(workdir, exist_ok=True)
    # flexible whitespace (bounded runs, also around the text): what the labels and llguidance's
    # setup (oracle_llg.py) mean; the server's default, lines, accepts a subset of it
    args = [infer, "grammar", "--tokenizer", tokenizer, "--whitespace", "flexible"]
    mode, g = case["mode"], case["grammar"]
    if mode == "json-schema":
        p = os.path.join(workdir, "schema.json")
        with open(p, "w", encoding="utf-8") as f:
            json.dump(g, f, ensure_ascii=False)
        args += ["--json-schema", p]
    elif mode == "json-object":
        args += ["--json-object"]
    elif mode == "regex":
        args += ["--regex", g]
    elif mode == "gbnf":
        p = os.path.join(workdir, "grammar.gbnf")
        with open(p, "w", encoding="utf-8") as f:
            f.write(g)
        args += ["--gbnf", p]
    check = os.path.join(workdir, "check.jsonl")
    with open(check, "w", encoding="utf-8", newline="") as f:
        for i in instances:
            f.write((i["text"] if mode in ("json-schema", "json-object") else json.dumps(i["text"])) + "\n")
    args += ["--check", check] + (["--bench"] if bench else []) + list(EXTRA_FLAGS) + list(extra)
    r = InferResult()
    try:
        p = subprocess.run(args, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        r.problem = f"timed out after {TIMEOUT:.0f} s"
        return r
    except OSError as e:  # no binary at INFER
        r.problem = f"cannot run {infer}: {e}"
        return r
    r.rc = p.returncode
    out = p.stdout.decode("utf-8", errors="replace")
    err = p.stderr.decode("utf-8", errors="replace")
    if p.returncode == 2:
        r.error = err.strip()
        if not r.error.startswith("infer grammar: "):
            r.problem = f"exit 2 without an `infer grammar: ` message: {err.strip()[-400:]!r}"
        if out.strip():
            r.problem = (r.problem or "") + f" (and stdout {out[:200]!r})"
        return r
    if p.returncode != 0:
        r.problem = f"exit {p.returncode}: {err.strip()[-1500:]}"
        return r
    lines = out.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if bench:
        m = BENCH_RE.match(lines[-1]) if lines else None
        if not m:
            r.problem = f"no bench line last: {lines[-1:]!r}"
            return r
        r.bench = {"compile_ms": float(m.group(1)), "mask_us_p50": float(m.group(2)),
                   "mask_us_p90": float(m.group(3)), "mask_us_p99": float(m.group(4)), "masks": int(m.group(5))}
        lines.pop()
    if len(lines) != len(instances) or any(x not in ("accept", "reject") for x in lines):
        r.problem = f"{len(lines)} output lines for {len(instances)} inputs: {lines[:5]!r}"
        return r
    r.verdicts = [x == "accept" for x in lines]
    return r
