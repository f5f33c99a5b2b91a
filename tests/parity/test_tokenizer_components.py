"""Tokenizer components the three real tokenizers do not use (other Split
behaviours, inverted splits, added-token flags, other normalizers and
decoders, unk handling), checked against the `tokenizers` library on small
tokenizers built here, plus refusal of unsupported components by name."""
import json
import subprocess

import pytest
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from conftest import INFER, run_lines

TEXTS = [
    "hello world", "Hello  World!!", "  lead and trail  ", "a-b-c--d", "x,y;z", "don't stop", "ab ab ab",
    "<sp>x<sp> y <sp>", " <sp> ", "word<sp>word", "end<sp>", "<sp>", "héllo wörld", "e\u0301 \ufb01",
    "123 456", "tab\there", "new\nline", "hello<sp>", "mid<mid>dle <mid> x", "zzz qqq", "", " ",
]


def small_bpe(**kw):
    alphabet = sorted(set("".join(TEXTS) + "▁Ġ<>spmid"))
    vocab = {c: i for i, c in enumerate(alphabet)}
    if kw.get("unk_token"):
        vocab[kw["unk_token"]] = len(vocab)
    merges = []
    for a, b in [("h", "e"), ("he", "l"), ("hel", "l"), ("hell", "o"), ("w", "o"), ("wo", "r"), ("l", "d"),
                 ("a", "b"), ("ab", " "), ("▁", "a"), ("▁", "w"), (" ", "w"), ("d", "o")]:
        for tok in (a, b):
            vocab.setdefault(tok, len(vocab))
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
        merges.append((a, b))
    return models.BPE(vocab=vocab, merges=merges, **kw)


def build(model=None, normalizer=None, pre=None, decoder=None, added=()):
    tok = Tokenizer(model or small_bpe(unk_token=None))
    if normalizer is not None:
        tok.normalizer = normalizer
    if pre is not None:
        tok.pre_tokenizer = pre
    if decoder is not None:
        tok.decoder = decoder
    if added:
        tok.add_tokens(list(added))
    return tok


def unk_model(fuse):
    return small_bpe(unk_token="<unk>", fuse_unk=fuse)


CASES = {
    "split_removed": dict(pre=pre_tokenizers.Split(" ", "removed")),
    "split_isolated_regex": dict(pre=pre_tokenizers.Split(Regex(r"\w+|[^\w\s]+"), "isolated")),
    "split_merged_prev": dict(pre=pre_tokenizers.Split("-", "merged_with_previous")),
    "split_merged_next": dict(pre=pre_tokenizers.Split("-", "merged_with_next")),
    "split_contiguous": dict(pre=pre_tokenizers.Split("-", "contiguous")),
    "split_inverted": dict(pre=pre_tokenizers.Split(Regex(r"[a-z]+"), "isolated", invert=True)),
    "bytelevel_prefix_regex": dict(pre=pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True),
                                   decoder=decoders.ByteLevel()),
    "nfkc_prepend": dict(normalizer=normalizers.Sequence([normalizers.NFKC(), normalizers.Prepend("▁")])),
    "nfd": dict(normalizer=normalizers.NFD()),
    "replace_regex": dict(normalizer=normalizers.Replace(Regex(r"\s+"), "▁"),
                          decoder=decoders.Sequence([decoders.Replace("▁", " "), decoders.Strip(" ", 1, 0)])),
    "added_flags": dict(added=[AddedToken("<sp>", lstrip=True, rstrip=True, normalized=False, special=True),
                               AddedToken("<mid>", single_word=True, normalized=False),
                               AddedToken("world", normalized=True)],
                        normalizer=normalizers.NFC()),
    "added_normalized_lowercase_match": dict(added=[AddedToken("▁x", normalized=True)],
                                             normalizer=normalizers.Replace(" ", "▁")),
    "unk_fused": dict(model="unk_fused"),
    "unk_unfused": dict(model="unk_unfused"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_component(case, tmp_path):
    spec = dict(CASES[case])
    m = spec.pop("model", None)
    if m:
        spec["model"] = unk_model(m == "unk_fused")  # characters outside the alphabet become <unk>
    tok = build(**spec)
    d = tmp_path / case
    d.mkdir()
    tok.save(str(d / "tokenizer.json"))
    texts = TEXTS + ["ÿ unknown ☃☃ chars 漢字"]
    for add_special in (True, False):
        expected = [tok.encode(t, add_special_tokens=add_special).ids for t in texts]
        got = run_lines(["tokenize", "--model", str(d)] + ([] if add_special else ["--no-special"]), texts,
                        tmp_path, "texts.jsonl")
        bad = [(t, e, g) for t, e, g in zip(texts, expected, got) if e != g]
        assert not bad, f"{case}: {len(bad)} differ, e.g. {bad[:3]}"
    seqs = [tok.encode(t).ids for t in texts]
    for skip in (False, True):
        expected = [tok.decode(ids, skip_special_tokens=skip) for ids in seqs]
        got = run_lines(["detokenize", "--model", str(d)] + (["--skip-special"] if skip else []), seqs,
                        tmp_path, "ids.jsonl")
        bad = [(ids, e, g) for ids, e, g in zip(seqs, expected, got) if e != g]
        assert not bad, f"{case}: {len(bad)} decode differently, e.g. {bad[:3]}"


@pytest.mark.parametrize("component,needle", [
    ({"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}},
     "Metaspace"),
    ({"normalizer": {"type": "Lowercase"}}, "Lowercase"),
    ({"decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True}}, "WordPiece"),
    ({"post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 1], "cls": ["[CLS]", 0]}}, "BertProcessing"),
    ({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["a", 0.0]]}}, "Unigram"),
])
def test_unsupported_components_are_refused_by_name(component, needle, tmp_path):
    tok = build()
    d = tmp_path / "t"
    d.mkdir()
    tok.save(str(d / "tokenizer.json"))
    j = json.loads((d / "tokenizer.json").read_text())
    j.update(component)
    (d / "tokenizer.json").write_text(json.dumps(j))
    proc = subprocess.run([INFER, "tokenize", "--model", str(d), "--text", "x"], capture_output=True, text=True)
    assert proc.returncode != 0
    assert needle in proc.stderr and "tokenizer.json" in proc.stderr, proc.stderr
