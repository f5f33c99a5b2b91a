"""Vocabulary-only GGUF files for the byte-level BPE tokenizers (Llama 3, Qwen3).

Why this exists: the engine loads its tokenizer from a GGUF file's `tokenizer.ggml.*` metadata as
well as from `tokenizer.json`, and the parity tests need GGUF files whose vocabulary is the real
one. Only a real Gemma GGUF is at hand, and llama.cpp's `convert_hf_to_gguf.py` needs torch and
the model weights, neither of which the tests have. So this module writes what that converter
writes for a byte-level BPE model (`_set_vocab_gpt2`: `get_vocab_base` + `gguf.SpecialVocab`),
from `tokenizer.json` + `tokenizer_config.json` alone, with the `gguf` package's writer and no
tensors. The llama.cpp rules it follows:

- every id below the vocabulary size gets a token; an id with none becomes "[PAD{id}]", UNUSED;
- an added token is CONTROL when it is marked special *or looks special* (llama.cpp's
  `does_token_look_special`: "<|...|>", "<｜...｜>", "<unused...>", "<pad>", "<mask>", ...), so
  Qwen3's non-special "<|fim_prefix|>" is CONTROL while its "<think>" is USER_DEFINED;
- an added token that is not `normalized` is stored as the tokenizer encodes and decodes it back
  (llama.cpp expects CONTROL / USER_DEFINED text pre-normalized), and a USER_DEFINED one has
  U+2581 replaced by a space;
- merges, bos / eos / pad ids, add_bos / add_eos flags and the chat template come from
  `gguf.SpecialVocab`, the very class the converter uses (it also reads config.json when the
  directory has one, as does the vocabulary size, like the converter's `hparams["vocab_size"]`).
"""
import json
import os

import gguf
from tokenizers import Tokenizer

PRE_TOKENIZER = {"llama": "llama-bpe", "qwen3": "qwen2"}  # tokenizer.ggml.pre, as llama.cpp names them


def _looks_special(text: str) -> bool:
    return (text in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
            or (text.startswith("<|") and text.endswith("|>"))
            or (text.startswith("<\uff5c") and text.endswith("\uff5c>"))
            or (text.startswith("<unused") and text.endswith(">")))


def _read_json(path: str) -> dict:
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def vocab_lists(tokenizer_dir: str) -> tuple[list[str], list[int]]:
    """(tokens, token types) as llama.cpp's get_vocab_base makes them."""
    tok = Tokenizer.from_file(os.path.join(tokenizer_dir, "tokenizer.json"))
    tok_json = _read_json(os.path.join(tokenizer_dir, "tokenizer.json"))
    tok_config = _read_json(os.path.join(tokenizer_dir, "tokenizer_config.json"))
    # transformers' added_tokens_decoder: tokenizer.json's added tokens, tokenizer_config.json's win.
    added = {a["id"]: a for a in tok_json.get("added_tokens", [])}
    added.update({int(i): a for i, a in tok_config.get("added_tokens_decoder", {}).items()})
    by_id = {i: t for t, i in tok.get_vocab(with_added_tokens=True).items()}
    size = _read_json(os.path.join(tokenizer_dir, "config.json")).get("vocab_size", max(by_id) + 1)
    if max(by_id) >= size:
        raise ValueError(f"token id {max(by_id)} does not fit vocab_size {size}")

    tokens, types = [], []
    for i in range(size):
        if i not in by_id:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        text = by_id[i]
        if i not in added:
            kind = gguf.TokenType.NORMAL
        else:
            if not added[i].get("normalized", True):
                ids = tok.encode(text, add_special_tokens=False).ids
                text = tok.decode(ids, skip_special_tokens=False)
            if added[i].get("special", False) or _looks_special(text):
                kind = gguf.TokenType.CONTROL
            else:
                kind = gguf.TokenType.USER_DEFINED
                text = text.replace("\u2581", " ")
        tokens.append(text)
        types.append(kind)
    return tokens, [int(t) for t in types]


def write_vocab_gguf(tokenizer_dir: str, out_path: str, arch: str) -> None:
    """Write a tensorless GGUF at out_path holding tokenizer_dir's tokenizer, for arch "llama"
    or "qwen3" (byte-level BPE only: a sentencepiece tokenizer such as Gemma's is refused)."""
    if arch not in PRE_TOKENIZER:
        raise ValueError(f"no byte-level BPE pre-tokenizer known for arch {arch!r}")
    tok_json = _read_json(os.path.join(tokenizer_dir, "tokenizer.json"))
    if tok_json.get("model", {}).get("type") != "BPE" or '"ByteLevel"' not in json.dumps(tok_json.get("pre_tokenizer")):
        raise ValueError(f"{tokenizer_dir} is not a byte-level BPE tokenizer")
    tokens, types = vocab_lists(tokenizer_dir)

    writer = gguf.GGUFWriter(out_path, arch)  # writes general.architecture
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(PRE_TOKENIZER[arch])
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    # merges ("a b", tokenizer.json order), bos/eos/pad ids, add_bos/add_eos, chat template
    gguf.SpecialVocab(tokenizer_dir, load_merges=True, n_vocab=len(tokens)).add_to_gguf(writer, quiet=True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
