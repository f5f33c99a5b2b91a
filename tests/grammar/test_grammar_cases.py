"""`infer grammar --check` against reference labels, with llguidance beside it.

Groups: bfcl (function-argument schemas from the Berkeley Function Calling
Leaderboard, cases_bfcl.py), schema (hand-written JSON Schemas), json_object,
regex, gbnf (cases_hand.py). Tokenizers: the embedded default model's GGUF
(Gemma 3 270M), and the llama3 / qwen3 / gemma3 tokenizer.json files of
../shared/tokenizers when present. llguidance walks the same texts with the same
tokenizer.json; for the default model without ../shared/tokenizers/gemma3, over a byte tokenizer
(its masks are byte-exact, so its verdicts are the same; oracle_llg.BYTES).

For each group and tokenizer, infer runs once per grammar over all of that
grammar's instances. The test fails when
- infer, having compiled a grammar, gives any instance a verdict other than
  its label (jsonschema Draft 2020-12 with formats; re.fullmatch; the GBNF
  author's), every mismatch listed;
- infer breaks the CLI contract (crash, sanitizer report, wrong line count,
  exit 2 without an `infer grammar: ` message);
- on the bfcl group, infer compiles fewer schemas than llguidance does.
What it only reports (terminal summary; all of it in $INFER_GRAMMAR_REPORT/*.json
when that names a folder): the grammars infer refuses with its message, and
every disagreement between infer and llguidance and between llguidance and the
label. Instances whose text holds a line break are not given to infer (its JSON
--check lines are the texts themselves) but are still walked by llguidance.

Knobs (grammar_harness.py): INFER (the binary), INFER_SHARED, INFER_GRAMMAR_FULL=1
(every bfcl schema and instance, about 3300 schemas and 80 000 instances, and
every hand-written grammar, for every tokenizer), INFER_GRAMMAR_BFCL /
INFER_GRAMMAR_BFCL_SHARED (bfcl sample sizes for the default model / each
../shared tokenizer: 24 / 4), INFER_GRAMMAR_HAND_SHARED=all (every hand-written
grammar for the ../shared tokenizers too, not the HAND_SHARED subset),
INFER_GRAMMAR_TOKENIZERS (default,llama3,qwen3,gemma3), INFER_GRAMMAR_FLAGS
(extra CLI flags, e.g. --no-strict), INFER_GRAMMAR_JOBS (parallel infer runs,
default: the CPU count), INFER_GRAMMAR_TIMEOUT (seconds per run, 120).
"""
import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import SUMMARY
from grammar_harness import FULL, HAND_SHARED, HAND_SHARED_ALL, TARGETS, checkable, run_infer, shared_tokenizer_dir

GROUPS = ["bfcl", "schema", "json_object", "regex", "gbnf"]
SHOW = 25  # disagreements shown per kind in the terminal summary


def _target(target):
    """(infer's --tokenizer, llguidance's tokenizer.json folder or None, note)."""
    if target == "default":
        from default_model import default_model_path
        import oracle_llg
        d = shared_tokenizer_dir("gemma3")
        # without the default model's Hugging Face tokenizer, llguidance judges the texts' bytes
        return default_model_path(), d or oracle_llg.BYTES, None
    d = shared_tokenizer_dir(target)
    if d is None:
        pytest.skip(f"../shared/tokenizers/{target}/tokenizer.json not found "
                    "(set INFER_SHARED to the folder that holds tokenizers/)")
    return d, d, None


def _llg_missing():
    for m in ("llguidance", "transformers"):
        try:
            __import__(m)
        except ImportError:
            return f"llguidance comparison skipped: {m} is not installed (tests/requirements.txt)"
    return None


def _short(text, n=160):
    r = repr(text)
    return r if len(r) <= n else r[:n] + "...'"


def test_hand_labels(hand_cases):
    """The hand-written cases' intended labels agree with the reference libraries."""
    bad = [f"{c['group']}/{c['name']}: {_short(i['text'])} meant {i['intended']}, reference says {i['valid']}"
           for c in hand_cases for i in c["instances"] if i.get("intended") is not None and i["intended"] != i["valid"]]
    assert not bad, "\n".join(bad)
    for g in ("schema", "json_object", "regex", "gbnf"):
        sel = [c for c in hand_cases if c["group"] == g]
        assert sel and all(c["instances"] for c in sel), g
        assert any(i["valid"] for c in sel for i in c["instances"]) and any(
            not i["valid"] for c in sel for i in c["instances"]), g


def test_bfcl_set(bfcl_cases):
    """The bfcl conversion produced schemas with both valid and invalid instances."""
    cases, stats = bfcl_cases["default"]
    assert stats["schemas"] > 1000, stats
    assert len(cases) == stats["chosen"] and cases
    n_valid = sum(i["valid"] for c in cases for i in c["instances"])
    n = sum(len(c["instances"]) for c in cases)
    assert 0.2 * n < n_valid < 0.8 * n, (n_valid, n)
    SUMMARY.append(("grammar bfcl set", [
        f"bfcl-eval data from {stats['source']}: {stats['functions']} function docs, {stats['schemas']} distinct "
        f"schemas ({stats['with_ground_truth']} with ground truth), {stats['conversion_errors']} conversion errors, "
        f"{stats['bad_schemas']} invalid schemas; sampled {len(cases)} schemas, {n} instances ({n_valid} valid)"]))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("group", GROUPS)
def test_cases(group, target, hand_cases, bfcl_cases, llg_tokenizers, tmp_path):
    infer_tok, llg_dir, note = _target(target)
    if group == "bfcl":
        cases = bfcl_cases["default" if target == "default" else "shared"][0]
    else:
        cases = [c for c in hand_cases if c["group"] == group]
        if target != "default" and not (FULL or HAND_SHARED_ALL):
            cases = [c for c in cases if c["name"] in HAND_SHARED]
    note = note or _llg_missing()
    jobs = int(os.environ.get("INFER_GRAMMAR_JOBS", str(os.cpu_count() or 2)))
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(run_infer, infer_tok, c, str(tmp_path / f"{k:04d}"),
                               [i for i in c["instances"] if checkable(c, i)]) for k, c in enumerate(cases)]
        llg = [None] * len(cases)
        if not note:  # llguidance in this thread while infer runs in the pool (it drops the GIL)
            import oracle_llg
            encode, ll, eos, _ = llg_tokenizers.get(llg_dir)
            llg = [oracle_llg.run_case(ll, encode, eos, c)[:2] for c in cases]
        results = [f.result() for f in futures]

    problems, mismatches, refusals, llg_refusals = [], [], [], []
    llg_vs_label, infer_vs_llg = [], []
    n_inst = n_checked = 0
    for c, r, lg in zip(cases, results, llg):
        name = f"{c['group']}/{c['name']}"
        checked = [i for i in c["instances"] if checkable(c, i)]
        n_inst += len(c["instances"])
        if r.problem:
            problems.append(f"{name}: {r.problem}")
        elif r.rc == 2:
            refusals.append(f"{name}: {r.error}")
        infer_by_text = {}
        llg_by_text = {} if not lg or lg[0] else {i["text"]: v for i, v in zip(c["instances"], lg[1])}
        if r.compiled:
            n_checked += len(checked)
            for i, v in zip(checked, r.verdicts):
                infer_by_text[i["text"]] = v
                if v != i["valid"]:
                    g = llg_by_text.get(i["text"])
                    mismatches.append(f"{name} [{i['why']}] {_short(i['text'])}: label "
                                      f"{'valid' if i['valid'] else 'invalid'}, infer {'accept' if v else 'reject'}"
                                      + ("" if g is None else f", llguidance {'accept' if g else 'reject'}"))
        if lg is None:
            continue
        err, verdicts = lg
        if err:
            llg_refusals.append(f"{name}: {err.splitlines()[0][:300]}")
            continue
        for i, v in zip(c["instances"], verdicts):
            if v != i["valid"]:
                llg_vs_label.append(f"{name} [{i['why']}] {_short(i['text'])}: label "
                                    f"{'valid' if i['valid'] else 'invalid'}, llguidance {'accept' if v else 'reject'}")
            if i["text"] in infer_by_text and infer_by_text[i["text"]] != v:
                infer_vs_llg.append(f"{name} [{i['why']}] {_short(i['text'])}: infer "
                                    f"{'accept' if infer_by_text[i['text']] else 'reject'}, llguidance "
                                    f"{'accept' if v else 'reject'}, label {'valid' if i['valid'] else 'invalid'}")

    n_compiled = sum(r.compiled for r in results)
    lines = [f"{len(cases)} grammars, {n_inst} instances; infer checked {n_checked} "
             f"(on the grammars it compiled; texts with a line break are not given to infer)",
             f"infer: compiled {n_compiled}/{len(cases)}, refused {len(refusals)}, contract problems {len(problems)}, "
             f"label mismatches {len(mismatches)}"]
    if note:
        lines.append(note)
    else:
        wa = sum(" llguidance accept" in x for x in llg_vs_label)
        lines.append(f"llguidance: compiled {len(cases) - len(llg_refusals)}/{len(cases)}, vs label wrong accepts "
                     f"{wa}, wrong rejects {len(llg_vs_label) - wa}; infer vs llguidance disagreements "
                     f"{len(infer_vs_llg)}")
    for title, xs in (("infer refused", refusals), ("llguidance refused", llg_refusals),
                      ("infer vs llguidance", infer_vs_llg), ("llguidance vs label", llg_vs_label)):
        for x in xs[:SHOW]:
            lines.append(f"  {title}: {x}")
        if len(xs) > SHOW:
            lines.append(f"  {title}: ... {len(xs) - SHOW} more")
    SUMMARY.append((f"grammar {group} / {target}", lines))
    report = os.environ.get("INFER_GRAMMAR_REPORT")
    if report:
        os.makedirs(report, exist_ok=True)
        with open(os.path.join(report, f"{group}-{target}.json"), "w", encoding="utf-8") as f:
            json.dump({"summary": lines, "problems": problems, "mismatches": mismatches, "infer_refused": refusals,
                       "llguidance_refused": llg_refusals, "infer_vs_llguidance": infer_vs_llg,
                       "llguidance_vs_label": llg_vs_label,
                       "bench": [r.bench for r in results]}, f, indent=1, ensure_ascii=False)

    failures = []
    if problems:
        failures.append(f"{len(problems)} grammars broke the CLI contract:\n  " + "\n  ".join(problems))
    if mismatches:
        failures.append(f"{len(mismatches)} verdicts differ from the label:\n  " + "\n  ".join(mismatches))
    if group == "bfcl" and not note and n_compiled < len(cases) - len(llg_refusals):
        failures.append(f"infer compiled {n_compiled} bfcl schemas, llguidance {len(cases) - len(llg_refusals)}; "
                        "infer refused:\n  " + "\n  ".join(refusals))
    assert not failures, f"{group} / {target}:\n" + "\n".join(failures)
