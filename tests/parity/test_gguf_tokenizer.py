"""The tokenizer infer builds from a GGUF file's metadata, against the Python
`tokenizers` library on the same family's tokenizer.json:

- Gemma 3 ("llama" SentencePiece vocabulary with scores and byte fallback): the real embedded
  default model's file.
- Llama 3 and Qwen3 ("gpt2" byte-level BPE with merges): vocabulary-only GGUF files written the
  way llama.cpp's converter writes them (gguf_vocab.py), from ../shared/tokenizers.

Encode (with and without BOS) and decode (with and without skipping specials) over the tokenizer
parity corpus. Where a GGUF file says something other than tokenizer.json, infer follows the file,
and every such difference must equal what transformers' own GGUF tokenizer
(transformers.integrations.gguf) gives. The differences there are, and why:

- decode with skip_special: llama.cpp marks tokens CONTROL that tokenizer.json keeps non-special
  (Gemma's <start_of_turn>, <mask>, <unusedN>, image tokens; Qwen3's <|fim_prefix|> and friends,
  by llama.cpp's "looks special" rule), and control tokens are skipped;
- Qwen3 encode: tokenizer.json NFC-normalizes, a GGUF vocabulary records no normalizer (llama.cpp
  does not normalize either), so decomposed accents encode as their parts.
"""
import random

import pytest
from tokenizers import Tokenizer

from conftest import run_lines, tokenizer_dir
from gguf_vocab import write_vocab_gguf
from tokenizer_corpus import corpus

CORPUS = corpus()


def transformers_gguf_tokenizer(path):
    """transformers' tokenizer for a GGUF file, built from its metadata (needs no torch)."""
    from gguf import GGUFReader
    from transformers.integrations.gguf.gguf_tokenizer_mapping import convert_gguf_tokenizer

    r = GGUFReader(path)

    def field(key):
        return r.fields[key].contents() if key in r.fields else None

    d = {"tokenizer_type": field("tokenizer.ggml.model"), "pre_tokenizer_type": field("tokenizer.ggml.pre"),
         "tokens": field("tokenizer.ggml.tokens"), "token_type": field("tokenizer.ggml.token_type")}
    for key, name in (("tokenizer.ggml.scores", "scores"), ("tokenizer.ggml.merges", "merges")):
        if field(key) is not None:
            d[name] = field(key)
    tok, _ = convert_gguf_tokenizer(field("general.architecture"), d)
    return tok


@pytest.fixture(scope="module", params=["gemma3", "llama3", "qwen3"])
def family(request, tmp_path_factory):
    name = request.param
    d = tokenizer_dir(name)
    if name == "gemma3":
        path = request.getfixturevalue("gguf_path")
    else:
        path = str(tmp_path_factory.mktemp("vocab") / f"{name}.gguf")
        write_vocab_gguf(d, path, {"llama3": "llama", "qwen3": "qwen3"}[name])
    return name, path, Tokenizer.from_file(d + "/tokenizer.json"), transformers_gguf_tokenizer(path)


def check(name, what, inputs, expected, got, reference):
    """Every difference from tokenizer.json must be transformers' GGUF tokenizer's too; returns
    how many there were."""
    differ = [i for i, (e, g) in enumerate(zip(expected, got)) if e != g]
    unexplained = [i for i in differ if got[i] != reference[i]]
    report = "\n".join(f"#{i} {inputs[i]!r}:\n  tokenizer.json {expected[i]}\n  infer          {got[i]}\n"
                       f"  transformers' GGUF tokenizer {reference[i]}" for i in unexplained[:8])
    assert not unexplained, f"{name} {what}: {len(unexplained)} of {len(inputs)} differ unexplained\n{report}"
    print(f"{name} {what}: {len(inputs) - len(differ)} of {len(inputs)} equal tokenizer.json, "
          f"{len(differ)} differ as transformers' GGUF tokenizer does")
    return len(differ)


@pytest.mark.parametrize("add_special", [True, False])
def test_encode(family, add_special, tmp_path):
    name, path, tok, ref = family
    expected = [tok.encode(s, add_special_tokens=add_special).ids for s in CORPUS]
    reference = [ref.encode(s, add_special_tokens=add_special).ids for s in CORPUS]
    got = run_lines(["tokenize", "--model", path] + ([] if add_special else ["--no-special"]), CORPUS, tmp_path,
                    "corpus.jsonl")
    n = check(name, "encode", CORPUS, expected, got, reference)
    if name != "qwen3":  # only Qwen3's tokenizer.json has a normalizer the file cannot record
        assert n == 0


def id_sequences(tok, n_random=100):
    seqs = [tok.encode(s).ids for s in CORPUS]
    rng = random.Random(20261126)
    size = tok.get_vocab_size(with_added_tokens=True)
    for _ in range(n_random):
        seqs.append([rng.randrange(600) if rng.random() < 0.5 else rng.randrange(size)
                     for _ in range(rng.randrange(1, 40))])
    return seqs


@pytest.mark.parametrize("skip_special", [False, True])
def test_decode(family, skip_special, tmp_path):
    name, path, tok, ref = family
    seqs = id_sequences(tok)
    expected = [tok.decode(ids, skip_special_tokens=skip_special) for ids in seqs]
    reference = [ref.decode(ids, skip_special_tokens=skip_special) for ids in seqs]
    got = run_lines(["detokenize", "--model", path] + (["--skip-special"] if skip_special else []), seqs, tmp_path,
                    "ids.jsonl")
    n = check(name, "decode", seqs, expected, got, reference)
    if not skip_special:
        assert n == 0


def test_streaming_detokenizer(family, tmp_path):
    name, path, tok, _ = family
    seqs = id_sequences(tok, 40)
    whole = run_lines(["detokenize", "--model", path], seqs, tmp_path, "ids.jsonl")
    pieces = run_lines(["detokenize", "--model", path, "--stream"], seqs, tmp_path, "ids.jsonl")
    bad = [(ids, p) for ids, p, w in zip(seqs, pieces, whole) if len(p) != len(ids) + 1 or "".join(p) != w]
    assert not bad, f"{name}: {len(bad)} streams differ from one-shot decode, e.g. {bad[0]}"
