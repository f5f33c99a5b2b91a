"""Tokenizer parity with the Python `tokenizers` library, for the three real
tokenizer.json files: encode (with and without special tokens), decode (with
and without skipping specials), and the streaming detokenizer."""
import random

import pytest
from tokenizers import Tokenizer

from conftest import FAMILIES, run_lines, tokenizer_dir
from tokenizer_corpus import corpus

CORPUS = corpus()


def mismatches(expected, got, inputs):
    bad = [(i, inputs[i], e, g) for i, (e, g) in enumerate(zip(expected, got)) if e != g]
    return "\n".join(f"#{i} {s!r}:\n  tokenizers {e}\n  infer      {g}" for i, s, e, g in bad[:10]), len(bad)


@pytest.fixture(scope="module", params=FAMILIES)
def family(request):
    d = tokenizer_dir(request.param)
    return request.param, d, Tokenizer.from_file(d + "/tokenizer.json")


@pytest.mark.parametrize("add_special", [True, False])
def test_encode(family, add_special, tmp_path):
    name, d, tok = family
    assert len(CORPUS) >= 300
    expected = [tok.encode(s, add_special_tokens=add_special).ids for s in CORPUS]
    args = ["tokenize", "--model", d] + ([] if add_special else ["--no-special"])
    got = run_lines(args, CORPUS, tmp_path, "corpus.jsonl")
    report, n = mismatches(expected, got, CORPUS)
    assert n == 0, f"{name}: {n} of {len(CORPUS)} strings encode differently\n{report}"


def id_sequences(tok, n_random=60):
    """Ids of the corpus, plus random id sequences (specials, byte tokens,
    broken UTF-8 included) that no encoder would produce."""
    seqs = [tok.encode(s).ids for s in CORPUS]
    rng = random.Random(20261125)
    size = tok.get_vocab_size(with_added_tokens=True)
    low = [i for i in range(min(size, 600))]  # specials and byte tokens live low in these vocabularies
    for _ in range(n_random):
        seqs.append([rng.choice(low) if rng.random() < 0.5 else rng.randrange(size) for _ in range(rng.randrange(1, 40))])
    return seqs


@pytest.mark.parametrize("skip_special", [False, True])
def test_decode(family, skip_special, tmp_path):
    name, d, tok = family
    seqs = id_sequences(tok)
    expected = [tok.decode(ids, skip_special_tokens=skip_special) for ids in seqs]
    args = ["detokenize", "--model", d] + (["--skip-special"] if skip_special else [])
    got = run_lines(args, seqs, tmp_path, "ids.jsonl")
    report, n = mismatches(expected, got, seqs)
    assert n == 0, f"{name}: {n} of {len(seqs)} id sequences decode differently\n{report}"


@pytest.mark.parametrize("skip_special", [False, True])
def test_streaming_detokenizer(family, skip_special, tmp_path):
    name, d, tok = family
    seqs = id_sequences(tok)
    args = ["detokenize", "--model", d, "--stream"] + (["--skip-special"] if skip_special else [])
    got = run_lines(args, seqs, tmp_path, "ids.jsonl")
    bad = []
    for ids, pieces in zip(seqs, got):
        assert len(pieces) == len(ids) + 1  # one piece per id, then the flush
        if "".join(pieces) != tok.decode(ids, skip_special_tokens=skip_special):
            bad.append((ids, pieces))
    assert not bad, f"{name}: {len(bad)} streams differ from one-shot decode, e.g. {bad[0]}"
