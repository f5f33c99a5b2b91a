#!/usr/bin/env python3
"""Every flag's bad values through every subcommand that takes it: the run
must exit non-zero, name the flag on stderr, print nothing on stdout and
write no file. The subcommands' flags are read from their --help, so a new
typed flag without bad values listed here fails the test (add its values, or
its reason to FREE_TEXT).

Usage: INFER=path/to/infer python3 tests/cli/bad_flags.py
Prints one line per subcommand and the verdict; exits non-zero on any miss."""
import os
import re
import subprocess
import sys
import tempfile

INFER = os.environ.get("INFER", "build/infer")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
MODEL = os.path.join(FIX, "tiny-llama")
TOKENIZER = os.path.join(os.environ.get("INFER_SHARED", os.path.join(ROOT, "..", "shared")), "tokenizers", "llama3")

# Bad values per flag: negative, zero, non-numeric, out of range, unknown
# names, broken lists, as the flag's type allows.
NUMBER = ["x", "1x", ""]
BAD = {
    "max-tokens": ["-1", "0", "1.5", "99999999999"] + NUMBER,
    "temperature": ["-1", "nan", "inf"] + NUMBER,
    "top-p": ["0", "-0.5", "1.5", "nan"] + NUMBER,
    "top-k": ["-1", "1.5", "99999999999"] + NUMBER,
    "min-p": ["-0.5", "1.5", "nan"] + NUMBER,
    "seed": ["-1", "1.5", "99999999999999999999999"] + NUMBER,
    "top-logprobs": ["-1", "21", "1.5"] + NUMBER,
    "threads": ["-1", "5000", "1.5"] + NUMBER,
    "device": ["tpu", "CUDA", ""],
    "max-num-batched-tokens": ["-1", "0", "99999999999"] + NUMBER,
    "max-num-seqs": ["-1", "0", "99999999999"] + NUMBER,
    "max-model-len": ["-1", "1", "100000", "99999999999"] + NUMBER,
    "max-total-tokens": ["-1", "99999999999"] + NUMBER,  # below one context: tests/cli/run.sh
    "speculative": ["bogus", "NGRAM", ""],
    "num-speculative-tokens": ["-1", "0", "33"] + NUMBER,
    "prompt-lookup-min": ["-1", "0", "65"] + NUMBER,
    "prompt-lookup-max": ["-1", "0", "65"] + NUMBER,
    "suffix-max-depth": ["-1", "1", "65"] + NUMBER,
    "suffix-spec-factor": ["0", "-1", "nan", "inf", "2000"] + NUMBER,
    "suffix-min-prob": ["-0.1", "1.5", "nan"] + NUMBER,
    "suffix-cache-tokens": ["-1", "10", "99999999999"] + NUMBER,
    "gpu-memory-utilization": ["-1", "0", "1.5", "nan"] + NUMBER,
    "cuda-graph-mode": ["bogus", "FULL", ""],
    "cuda-graph-max-bs": ["-1", "0", "99999999999"] + NUMBER,
    "cuda-graph-bs": ["0", "-1", "4,2", "2,2", "1,x", "1,", ""],
    "piecewise-cuda-graph-tokens": ["0", "-16", "32,16", "16,x", ""],
    "piecewise-cuda-graph-max-tokens": ["-1", "0", "99999999999"] + NUMBER,
    "prompt-ids": ["-1", "1,x", "1,,2", "1,", "99999", ""],
    "ids": ["-1", "1,x", "1,,2", "9999999", ""],
    "prefill": ["-1", "0", "99"] + NUMBER,
    "stop": [""],
    "batch": ["0,1", "-1", "1,x", "99999999"],
    "input-len": ["-1", "0"] + NUMBER,
    "output-len": ["-1", "0", "1"] + NUMBER,
    "prompt-len": ["-1", "99999999999"] + NUMBER,
    "port": ["-1", "70000"] + NUMBER,
    "max-queued-requests": ["-1", "0"] + NUMBER,
    "max-body-mb": ["-1", "0", "2000"] + NUMBER,
    "drain-seconds": ["-1", "nan", "1e9"] + NUMBER,
    "max-connections": ["-1", "0", "99999999999"] + NUMBER,
    "host": ["no.such.host.invalid", "999.1.1.1"],
    "tensor-parallel-size": ["0", "-1", "3", "99999", "1.5"] + NUMBER,
    "nnodes": ["0", "-1", "3"] + NUMBER,
    "node-rank": ["-1", "1", "1.5"] + NUMBER,
    "dist-init-addr": ["nohost", "127.0.0.1:99999", ":80", "127.0.0.1:", "no.such.host.invalid:80"],
    "dist-backend": ["bogus", "NCCL", "nccl", ""],
    "dist-timeout": ["0", "-1", "nan", "1e9"] + NUMBER,
    "rank": ["0", "-1", "1024"] + NUMBER,
    "url": ["https://x:1", "ftp://x", "http://", "http://h:0", "http://h:99999", "http://h:x", ""],
    "workload": ["nope", "BASELINE", ""],
    "num-prompts": ["-1", "99999999999"] + NUMBER,
    "request-rate": ["-1", "nan", "1e9", "1,", ",", "1,,2", "infinity", "x", "1x", ""],
    "max-concurrency": ["-1", "99999999999"] + NUMBER,
    "vocab": ["-1", "0", "1", "99999999999"] + NUMBER,
    "max-context": ["-1", "99999999999"] + NUMBER,
    "warmup": ["-1", "5000"] + NUMBER,
    "ignore-eos": ["2", "-1"] + NUMBER,
    "time-limit": ["0", "-1", "nan", "inf"] + NUMBER,
    "slo-ttft-ms": ["-1", "nan", "inf"] + NUMBER,
    "slo-tpot-ms": ["-1", "nan", "inf"] + NUMBER,
    "report": ["/proc/no/such/dir"],
}
# String flags without a value that is bad as such: paths (a missing one is
# refused naming the path, tests/cli/run.sh), free text and names.
FREE_TEXT = {"model", "speculative-model", "prompt", "input", "out", "ids-file", "config", "tokenizer", "text", "file", "messages",
             "api-key", "served-model-name", "label"}


def flags_of(cmd):
    """(name, takes_value) of every option in `infer cmd --help`."""
    p = subprocess.run([INFER, cmd, "--help"], capture_output=True, text=True)
    return [(m.group(1), bool(m.group(2))) for m in re.finditer(r"^  --([a-z0-9-]+)( [SN])?", p.stdout, re.M)]


def main():
    tmp = tempfile.mkdtemp()
    out_file = os.path.join(tmp, "out.safetensors")
    mk_dir = os.path.join(tmp, "mk")
    base = {
        "generate": ["--model", MODEL, "--prompt-ids", "1,2", "--max-tokens", "1"],
        "logits": ["--model", MODEL, "--ids", "1,2,3", "--out", out_file],
        "bench": ["--model", MODEL, "--batch", "1", "--input-len", "2", "--output-len", "2", "--prompt-len", "0"],
        "serve": ["--model", MODEL, "--port", "0"],
        "mkmodel": ["--config", os.path.join(MODEL, "config.json"), "--out", mk_dir],
        "info": ["--model", MODEL],
        "tokenize": ["--model", MODEL, "--text", "hi"],
        "detokenize": ["--model", TOKENIZER, "--ids", "1"],
        "template": ["--model", MODEL, "--messages", os.path.join(tmp, "none.json")],
        # nothing listens on port 1: a good run counts one failed request and exits 3
        "bench-serve": ["--url", "http://127.0.0.1:1", "--model", "m", "--num-prompts", "1", "--warmup", "0",
                        "--time-limit", "5"],
        # nothing listens on port 1: a good worker gives up after a second
        "worker": ["--dist-init-addr", "127.0.0.1:1", "--rank", "1", "--dist-timeout", "1"],
    }
    failures, runs = [], 0
    if not os.path.exists(os.path.join(TOKENIZER, "tokenizer.json")):
        print(f"[SKIP] bad flags: detokenize: {TOKENIZER}/tokenizer.json not found (set INFER_SHARED)")
        del base["detokenize"]
    for cmd, args in base.items():
        # an unknown option: refused, named, and the message's "infer CMD:" said once
        p = subprocess.run([INFER, cmd, "--no-such-flag"] + args, capture_output=True, text=True, timeout=60)
        runs += 1
        first = p.stderr.strip().splitlines()[:1]
        if p.returncode == 0 or not first or "--no-such-flag" not in first[0]:
            failures.append(f"{cmd} --no-such-flag: exit {p.returncode}, stderr {p.stderr.strip()[-200:]!r}")
        elif re.match(r"(infer [\w-]+[^:]*: )\1", first[0]):
            failures.append(f"{cmd} --no-such-flag: the prefix twice: {first[0]!r}")
        n = 0
        for name, takes_value in flags_of(cmd):
            if not takes_value or name in FREE_TEXT:
                continue
            if name not in BAD:
                failures.append(f"{cmd} --{name}: no bad values listed in tests/cli/bad_flags.py")
                continue
            for value in BAD[name]:
                # the flag replaces the base's own value of it
                a = list(args)
                if f"--{name}" in a:
                    i = a.index(f"--{name}")
                    del a[i:i + 2]
                try:
                    p = subprocess.run([INFER, cmd] + a + [f"--{name}", value], capture_output=True, text=True,
                                       timeout=60)
                    rc, out, err = p.returncode, p.stdout, p.stderr
                except subprocess.TimeoutExpired:
                    rc, out, err = "timeout", "", "(still running after 60 s: the value was accepted)"
                runs += 1
                n += 1
                what = f"{cmd} --{name} {value!r}"
                if rc == 0 or rc == "timeout":
                    failures.append(f"{what}: accepted (exit {rc}) {err[-200:]}")
                elif f"--{name}" not in err:
                    failures.append(f"{what}: stderr does not name the flag: {err.strip()[-300:]}")
                elif out:
                    failures.append(f"{what}: printed on stdout: {out[:200]}")
                elif os.path.exists(out_file) or os.path.exists(mk_dir):
                    failures.append(f"{what}: wrote a file")
                for p in (out_file,):
                    if os.path.exists(p):
                        os.remove(p)
        print(f"bad flags: {cmd}: {n} bad values refused" if n else f"bad flags: {cmd}: no typed flags")
    for f in failures:
        print(f"[FAIL] {f}")
    print(f"bad flags: {runs} runs, {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
