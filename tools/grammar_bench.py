#!/usr/bin/env python3
"""Side-by-side benchmark of structured-output engines: infer's grammar engine
(through `infer grammar --check --bench`), llguidance and XGrammar, on the same
JSON Schemas (the bfcl-derived set and the hand-written set of tests/grammar),
the same tokenizers (llama3, qwen3, gemma3 from ../shared/tokenizers) and the
same token ids, one thread each on one pinned core.

For each engine and tokenizer it reports: schemas compiled; wrong acceptances
and wrong rejections against the jsonschema labels (walking the token ids of
each instance: the mask at each position, the token checked against it, EOS
checked at the end); mask time per token position p50 / p90 / p99 (only the
mask call is timed, over all instances); compile time p50 / p99 per schema;
the tokenizer preprocessing time (llguidance's LLTokenizer, XGrammar's
TokenizerInfo), which compile times exclude. infer prints per-run percentiles
only, so its per-token figures are a masks-weighted merge of those (marked ≈);
a second table gives every engine the same per-schema statistic (the median
over schemas of each schema's own percentile), which compares like with like.

The engines are set up to accept the same language (see tests/grammar/oracle_llg.py):
flexible whitespace (runs of [ \\t\\n\\r] of at most 16 bytes, also before and
after the text), properties in `properties` order, additional properties
allowed unless the schema says otherwise (XGrammar: strict_mode=False,
max_whitespace_cnt=16, the root wrapped in outer whitespace). Compile time
includes that wrapping for llguidance and XGrammar.

Usage (with /work/gvenv or a venv from tools/grammar_bench_requirements.txt):
  tools/grammar_bench.py [--quick] [--full] [--tokenizers llama3,qwen3,gemma3]
                         [--engines infer,llguidance,xgrammar] [--infer build/infer] [--infer-flags F]
                         [--out build/grammar_bench.json] [--cpu N] [--no-raw]
--quick: 30 bfcl schemas + the hand-written set; default: the test's sample
(300 bfcl schemas) + the hand-written set; --full: every bfcl schema.
Markdown tables go to stdout, the raw numbers (per schema, and every mask time
unless --no-raw) to --out.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

for _v in ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM"):
    os.environ[_v] = "false" if _v == "TOKENIZERS_PARALLELISM" else "1"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "grammar"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import cases_bfcl  # noqa: E402
import cases_hand  # noqa: E402
import oracle_llg  # noqa: E402
from grammar_harness import checkable, run_infer  # noqa: E402

SHARED = os.environ.get("INFER_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))


def pct(xs, q):
    """Nearest-rank percentile of a list (None when empty)."""
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]


def load_cases(args):
    n = 30 if args.quick else 300
    bfcl, stats = cases_bfcl.build(full=args.full, n_schemas=n)
    hand = [c for c in cases_hand.build() if c["group"] in ("schema", "json_object")]
    return bfcl + hand, stats


# ---------------------------------------------------------------- engines

class Llguidance:
    name = "llguidance"

    def prepare(self, tok_dir):
        self.encode, self.ll, self.eos, prep = oracle_llg.load_tokenizer(tok_dir)
        return prep

    def compile(self, case):
        c = oracle_llg.Compiled(self.ll, case)
        return (None, c.error, c.compile_s) if c.error else (c, None, c.compile_s)

    def walk(self, handle, ids, eos, times):
        return handle.walk(ids, eos, times)

    def version(self):
        import importlib.metadata as md
        return md.version("llguidance")


class XGrammar:
    name = "xgrammar"
    WS = "[ \\t\\n\\r]{0,16}"

    def prepare(self, tok_dir):
        import torch
        import transformers
        import xgrammar as xgr
        torch.set_num_threads(1)
        self.xgr = xgr
        hf = transformers.AutoTokenizer.from_pretrained(tok_dir)
        self.eos = hf.eos_token_id
        self.encode = lambda text: hf.encode(text, add_special_tokens=False)
        t = time.perf_counter()
        self.info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=len(hf), stop_token_ids=[self.eos])
        self.compiler = xgr.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        return time.perf_counter() - t

    def ebnf(self, case):
        import re
        schema = {"type": "object"} if case["mode"] == "json-object" else case["grammar"]
        g = self.xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=True, strict_mode=False,
                                              max_whitespace_cnt=16)
        body = re.sub(r"\broot\b", "root_json", str(g))
        return f"root ::= {self.WS} root_json {self.WS}\n{body}"

    def compile(self, case):
        self.compiler.clear_cache()
        t = time.perf_counter()
        try:
            cg = self.compiler.compile_grammar(self.ebnf(case))
        except Exception as e:
            return None, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}", \
                time.perf_counter() - t
        return cg, None, time.perf_counter() - t

    def walk(self, cg, ids, eos, times):
        xgr = self.xgr
        m = xgr.GrammarMatcher(cg, override_stop_tokens=[eos])
        bm = xgr.allocate_token_bitmask(1, self.info.vocab_size)
        row = bm[0]
        for t in list(ids) + [eos]:
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(bm)
            times.append(time.perf_counter() - t0)
            if not (int(row[t >> 5]) & 0xFFFFFFFF) >> (t & 31) & 1:
                return False
            if t == eos:
                return True
            if not m.accept_token(t):
                return False
        raise AssertionError("unreachable")

    def version(self):
        import importlib.metadata as md
        return md.version("xgrammar")


def bench_python_engine(engine, tok_dir, cases, raw):
    prep = engine.prepare(tok_dir)
    eos = engine.eos
    per_schema, all_times = [], []
    for c in cases:
        handle, err, compile_s = engine.compile(c)
        row = {"name": f"{c['group']}/{c['name']}", "compiled": err is None, "error": err,
               "compile_ms": compile_s * 1e3, "wrong_accepts": [], "wrong_rejects": [], "instances": 0}
        if err is None:
            times = []
            for i in c["instances"]:
                v = engine.walk(handle, engine.encode(i["text"]), eos, times)
                row["instances"] += 1
                if v != i["valid"]:
                    row["wrong_accepts" if v else "wrong_rejects"].append(i["text"])
            us = [t * 1e6 for t in times]
            # the first mask of a fresh grammar: where lazy engines (llguidance) do work others do in compile
            row["first_mask_us"] = us[0] if us else None
            row.update(masks=len(us), mask_us_p50=pct(us, 50), mask_us_p90=pct(us, 90), mask_us_p99=pct(us, 99))
            if raw:
                row["mask_us"] = [round(x, 2) for x in us]
            all_times.extend(us)
        per_schema.append(row)
    return summarize(per_schema, prep, all_times)


def bench_infer(infer, tok_dir, cases, workdir, flags=()):
    per_schema, walls = [], []
    for k, c in enumerate(cases):
        inst = [i for i in c["instances"] if checkable(c, i)]
        t = time.perf_counter()
        r = run_infer(tok_dir, c, os.path.join(workdir, f"{k:04d}"), inst, bench=True, infer=infer, extra=flags)
        wall = time.perf_counter() - t
        row = {"name": f"{c['group']}/{c['name']}", "compiled": r.compiled, "error": r.error or r.problem,
               "wrong_accepts": [], "wrong_rejects": [], "instances": 0, "wall_s": wall}
        if r.compiled:
            for i, v in zip(inst, r.verdicts):
                row["instances"] += 1
                if v != i["valid"]:
                    row["wrong_accepts" if v else "wrong_rejects"].append(i["text"])
            b = r.bench
            row.update(compile_ms=b["compile_ms"], masks=b["masks"], mask_us_p50=b["mask_us_p50"],
                       mask_us_p90=b["mask_us_p90"], mask_us_p99=b["mask_us_p99"])
            walls.append(wall - (b["compile_ms"] / 1e3))
        per_schema.append(row)
    # infer's tokenizer load is inside each process: the median wall time minus compile is its
    # startup + tokenizer + masks; reported as an upper bound of the preprocessing
    return summarize(per_schema, statistics.median(walls) if walls else None, None)


def _weighted_pct(rows, key):
    """Masks-weighted median of per-schema percentile `key` (how infer's per-run
    percentiles merge into one figure)."""
    pairs = sorted((r[key], r["masks"]) for r in rows if r.get("compiled") and r.get("masks"))
    total = sum(w for _, w in pairs)
    acc = 0
    for v, w in pairs:
        acc += w
        if acc >= total / 2:
            return v
    return None


def summarize(per_schema, prep_s, all_times):
    ok = [r for r in per_schema if r["compiled"]]
    comp = [r["compile_ms"] for r in ok if r.get("compile_ms") is not None]
    s = {"schemas": len(per_schema), "compiled": len(ok),
         "instances": sum(r["instances"] for r in ok),
         "wrong_accepts": sum(len(r["wrong_accepts"]) for r in ok),
         "wrong_rejects": sum(len(r["wrong_rejects"]) for r in ok),
         "compile_ms_p50": pct(comp, 50), "compile_ms_p99": pct(comp, 99),
         "tokenizer_prep_s": prep_s, "masks": sum(r.get("masks", 0) for r in ok),
         "first_mask_us_p50": pct([r["first_mask_us"] for r in ok if r.get("first_mask_us") is not None], 50)}
    if all_times is not None:
        s.update(mask_us_p50=pct(all_times, 50), mask_us_p90=pct(all_times, 90), mask_us_p99=pct(all_times, 99),
                 mask_pooled=True)
    else:
        s.update(mask_us_p50=_weighted_pct(ok, "mask_us_p50"), mask_us_p90=_weighted_pct(ok, "mask_us_p90"),
                 mask_us_p99=_weighted_pct(ok, "mask_us_p99"), mask_pooled=False)
    for q in (50, 90, 99):
        vals = [r[f"mask_us_p{q}"] for r in ok if r.get(f"mask_us_p{q}") is not None]
        s[f"schema_median_mask_us_p{q}"] = statistics.median(vals) if vals else None
    return {"summary": s, "per_schema": per_schema}


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def tables(results):
    out = ["| engine | tokenizer | compiled | instances | wrong accepts | wrong rejects | mask µs p50 | p90 | p99 "
           "| compile ms p50 | p99 | first mask µs p50 | tokenizer prep s |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for eng, by_tok in results.items():
        for tok, r in by_tok.items():
            s = r["summary"]
            approx = "" if s["mask_pooled"] else "≈"
            prep = fmt(s["tokenizer_prep_s"], 2) + ("" if eng != "infer" else " (process, upper bound)")
            out.append(f"| {eng} | {tok} | {s['compiled']}/{s['schemas']} | {s['instances']} | {s['wrong_accepts']} "
                       f"| {s['wrong_rejects']} | {approx}{fmt(s['mask_us_p50'])} | {approx}{fmt(s['mask_us_p90'])} "
                       f"| {approx}{fmt(s['mask_us_p99'])} | {fmt(s['compile_ms_p50'], 2)} | "
                       f"{fmt(s['compile_ms_p99'], 2)} | {fmt(s.get('first_mask_us_p50'))} | {prep} |")
    out += ["", "Per-schema mask percentiles, median over compiled schemas (the same statistic for every engine):", "",
            "| engine | tokenizer | p50 µs | p90 µs | p99 µs |", "|---|---|---|---|---|"]
    for eng, by_tok in results.items():
        for tok, r in by_tok.items():
            s = r["summary"]
            out.append(f"| {eng} | {tok} | {fmt(s['schema_median_mask_us_p50'])} | "
                       f"{fmt(s['schema_median_mask_us_p90'])} | {fmt(s['schema_median_mask_us_p99'])} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="30 bfcl schemas + the hand-written set")
    ap.add_argument("--full", action="store_true", help="every bfcl schema and instance")
    ap.add_argument("--tokenizers", default="llama3,qwen3,gemma3")
    ap.add_argument("--engines", default="infer,llguidance,xgrammar")
    ap.add_argument("--infer", default=os.environ.get("INFER", os.path.join(ROOT, "build", "infer")))
    ap.add_argument("--infer-flags", default="", help="extra flags for infer grammar, e.g. --no-strict")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "grammar_bench.json"))
    ap.add_argument("--cpu", type=int, default=None, help="core to pin to (default: the first allowed)")
    ap.add_argument("--no-raw", action="store_true", help="leave every mask time out of the JSON")
    args = ap.parse_args()

    cpus = sorted(os.sched_getaffinity(0))
    cpu = args.cpu if args.cpu is not None else cpus[0]
    os.sched_setaffinity(0, {cpu})  # infer's processes inherit it
    cases, stats = load_cases(args)
    n_inst = sum(len(c["instances"]) for c in cases)
    print(f"# grammar bench: {len(cases)} schemas ({stats['chosen']} bfcl + {len(cases) - stats['chosen']} "
          f"hand-written), {n_inst} instances; pinned to cpu {cpu}", file=sys.stderr)

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    results, meta = {}, {"infer_flags": args.infer_flags, "cases": len(cases), "instances": n_inst, "cpu": cpu,
                         "quick": args.quick, "full": args.full, "machine": platform.processor() or platform.machine(),
                         "python": platform.python_version(), "versions": {}, "skipped": {}}
    try:
        with open("/proc/cpuinfo") as f:
            meta["cpu_model"] = next(x.split(":", 1)[1].strip() for x in f if x.startswith("model name"))
    except (OSError, StopIteration):
        pass
    for eng in engines:
        for fam in [t.strip() for t in args.tokenizers.split(",") if t.strip()]:
            tok_dir = os.path.join(SHARED, "tokenizers", fam)
            if not os.path.exists(os.path.join(tok_dir, "tokenizer.json")):
                meta["skipped"][f"{eng}/{fam}"] = f"{tok_dir}/tokenizer.json not found"
                continue
            t0 = time.perf_counter()
            if eng == "infer":
                probe = subprocess.run([args.infer, "grammar", "--help"], capture_output=True) \
                    if os.path.exists(args.infer) else None
                if probe is None or b"--json-schema" not in probe.stdout + probe.stderr:
                    meta["skipped"][f"infer/{fam}"] = f"{args.infer}: no `infer grammar` (not built?)"
                    continue
                with tempfile.TemporaryDirectory() as wd:
                    r = bench_infer(args.infer, tok_dir, cases, wd, args.infer_flags.split())
            elif eng == "llguidance":
                e = Llguidance()
                meta["versions"]["llguidance"] = e.version()
                r = bench_python_engine(e, tok_dir, cases, not args.no_raw)
            elif eng == "xgrammar":
                e = XGrammar()
                meta["versions"]["xgrammar"] = e.version()
                r = bench_python_engine(e, tok_dir, cases, not args.no_raw)
            else:
                sys.exit(f"grammar_bench: unknown engine {eng!r}")
            r["summary"]["wall_s"] = time.perf_counter() - t0
            results.setdefault(eng, {})[fam] = r
            s = r["summary"]
            print(f"# {eng}/{fam}: {s['compiled']}/{s['schemas']} compiled, {s['wrong_accepts']} wrong accepts, "
                  f"{s['wrong_rejects']} wrong rejects, {s['wall_s']:.0f} s", file=sys.stderr)
    for m in ("torch", "transformers", "tokenizers", "jsonschema"):
        try:
            import importlib.metadata as md
            meta["versions"][m] = md.version(m)
        except Exception:
            pass
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "results": results}, f, ensure_ascii=False)
    print(tables(results))
    for k, v in meta["skipped"].items():
        print(f"\nskipped {k}: {v}")
    print(f"\nraw numbers: {args.out}")


if __name__ == "__main__":
    main()
