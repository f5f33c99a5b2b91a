#!/usr/bin/env python3
"""Golden greedy outputs of the embedded default model (Gemma 3 270M, GGUF Q4_K_M) from Hugging
Face transformers, for tests/parity/test_gguf_generate.py. Runs where torch is (the GPU
machine; CPU is fine too: the model is small).

Which weights transformers runs: the GGUF's tensors dequantised by the Python `gguf` package,
each matrix rounded to bf16 and each RMSNorm weight given back its -1 (llama.cpp's converter
folds Gemma's +1 in), in float32 — exactly the weights infer loads (its dequantisation equals the
package's bit for bit: tests/unit/test_gguf_quant.c and tools/check_gguf_dequant.py), so the
comparison is of the forward passes alone. The configuration is Gemma3TextConfig filled from the
GGUF metadata plus what Gemma 3 fixes (every sixth layer global, local RoPE base 10000, attention
scale head_dim^-0.5, tied embeddings).

The prompts go through the chat template of ../shared/tokenizers/gemma3 (the same 262k
vocabulary as the GGUF's), so the fixture holds token ids: the test runs infer on those ids.

Usage: python3 tools/make_gguf_golden.py GGUF OUT.json [--tokenizer ../shared/tokenizers/gemma3]
       [--max-new-tokens 32] [--device cpu|cuda] [--dtype float32|bfloat16] [--cases CASES.json]
--cases: the prompts already templated and tokenized ([{"prompt", "prompt_ids"}], as
`--write-cases` writes them where the tokenizer is), for a machine without ../shared."""
import argparse
import hashlib
import json
import os
import re

import numpy as np
from transformers import AutoTokenizer

try:  # not needed for --write-cases
    import torch
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
except ImportError:
    torch = None

PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "List three primary colors.",
    "Explain in one sentence what a CPU does.",
    "Translate 'good morning' into Spanish.",
]

LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
    "post_attention_norm.weight": "post_attention_layernorm.weight",
    "ffn_norm.weight": "pre_feedforward_layernorm.weight",
    "post_ffw_norm.weight": "post_feedforward_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}


def field(r, key, default=None):
    f = r.fields.get(key)
    return default if f is None else f.contents()


def config_of(r):
    a = "gemma3"
    assert field(r, "general.architecture") == a, "a gemma3 GGUF is expected"
    layers = int(field(r, f"{a}.block_count"))
    heads = int(field(r, f"{a}.attention.head_count"))
    hidden = int(field(r, f"{a}.embedding_length"))
    head_dim = int(field(r, f"{a}.attention.key_length", hidden // heads))
    vocab = next(t for t in r.tensors if t.name == "token_embd.weight").shape[1]
    return Gemma3TextConfig(
        vocab_size=int(vocab), hidden_size=hidden, intermediate_size=int(field(r, f"{a}.feed_forward_length")),
        num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=int(field(r, f"{a}.attention.head_count_kv", heads)), head_dim=head_dim,
        max_position_embeddings=int(field(r, f"{a}.context_length")),
        rms_norm_eps=float(field(r, f"{a}.attention.layer_norm_rms_epsilon", 1e-6)),
        rope_theta=float(field(r, f"{a}.rope.freq_base", 10000.0)), rope_local_base_freq=10000.0,
        sliding_window=int(field(r, f"{a}.attention.sliding_window")), query_pre_attn_scalar=head_dim,
        layer_types=["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(layers)],
        hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True, attn_logit_softcapping=None,
        final_logit_softcapping=None, bos_token_id=2, eos_token_id=[1, 106], pad_token_id=0)


def state_dict_of(r):
    sd = {}
    for t in r.tensors:
        w = torch.from_numpy(np.ascontiguousarray(dequantize(t.data, t.tensor_type), dtype=np.float32))
        w = w.reshape([int(d) for d in reversed(t.shape)])  # ggml lists the contiguous dim first
        if w.dim() == 2:
            w = w.to(torch.bfloat16).to(torch.float32)  # what infer keeps of a matrix
        elif t.name.endswith("_norm.weight"):
            w = w - 1.0  # the converter's folded +1
        if t.name == "token_embd.weight":
            name = "model.embed_tokens.weight"
        elif t.name == "output_norm.weight":
            name = "model.norm.weight"
        else:
            m = re.fullmatch(r"blk\.(\d+)\.(.+)", t.name)
            name = f"model.layers.{m.group(1)}.{LAYER_NAMES[m.group(2)]}"
        sd[name] = w
    return sd


def prompt_ids(tok, p):
    ids = tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf")
    ap.add_argument("out")
    ap.add_argument("--tokenizer", default=os.path.join(os.path.dirname(__file__), "../../shared/tokenizers/gemma3"))
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                    help="compute dtype (the fixture is float32; bfloat16 shows what bf16 rounding alone changes)")
    ap.add_argument("--cases", help="templated prompt ids to run instead of tokenizing PROMPTS")
    ap.add_argument("--write-cases", action="store_true", help="only write the templated prompt ids to OUT")
    a = ap.parse_args()
    if a.write_cases:
        tok = AutoTokenizer.from_pretrained(a.tokenizer)
        with open(a.out, "w") as f:
            json.dump([{"prompt": p, "prompt_ids": prompt_ids(tok, p)} for p in PROMPTS], f)
        return
    r = GGUFReader(a.gguf)
    cfg = config_of(r)
    cfg._attn_implementation = "eager"
    model = Gemma3ForCausalLM(cfg).to(torch.float32)
    missing, unexpected = model.load_state_dict(state_dict_of(r), strict=False)
    missing = [k for k in missing if k != "lm_head.weight"]  # tied
    assert not missing and not unexpected, (missing, unexpected)
    model.tie_weights()
    model = model.to(device=a.device, dtype=getattr(torch, a.dtype)).eval()
    if a.cases:
        todo = json.load(open(a.cases))
    else:
        tok = AutoTokenizer.from_pretrained(a.tokenizer)
        todo = [{"prompt": p, "prompt_ids": prompt_ids(tok, p)} for p in PROMPTS]
    cases = []
    for c in todo:
        p, ids = c["prompt"], c["prompt_ids"]
        with torch.no_grad():
            out = model.generate(torch.tensor([ids], device=a.device), max_new_tokens=a.max_new_tokens,
                                 do_sample=False, eos_token_id=[1, 106], pad_token_id=0)
        new = out[0, len(ids):].tolist()
        print(f"{p!r} -> {new}")
        cases.append({"prompt": p, "prompt_ids": list(ids), "output_ids": new})
    sha = hashlib.sha256(open(a.gguf, "rb").read()).hexdigest()
    with open(a.out, "w") as f:
        json.dump({"model": os.path.basename(a.gguf), "sha256": sha, "max_new_tokens": a.max_new_tokens,
                   "dtype": a.dtype,
                   "transformers": __import__("transformers").__version__, "torch": torch.__version__,
                   "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
