"""GGUF loading against safetensors, on the tiny fixture models of all three architectures:
each fixture is written as a GGUF file the way llama.cpp's converter writes one —
Hugging Face names mapped to GGUF's, Gemma's RMSNorm weights with +1 folded in, Llama's q and
k rows permuted within each head for ggml's RoPE — using the Python `gguf` package's writer, and
`infer logits` on the GGUF must equal `infer logits` on the checkpoint directory exactly (CPU).
This proves the name map and the two layout conventions the loader undoes.

What GGUF cannot say is taken out of the fixture first (a copy of its directory): Llama 3 RoPE
scaling (llama.cpp writes it as frequency factors, which the loader refuses), and
Gemma's query_pre_attn_scalar when it is not head_dim (llama.cpp assumes head_dim).
"""
import json
import os
import shutil
import struct
import subprocess

import numpy as np
import pytest
from conftest import INFER, ROOT

gguf = pytest.importorskip("gguf")

FIX = os.path.join(ROOT, "tests", "fixtures")

LAYER = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
GEMMA_LAYER = {"post_attention_layernorm.weight": "post_attention_norm.weight",
               "pre_feedforward_layernorm.weight": "ffn_norm.weight",
               "post_feedforward_layernorm.weight": "post_ffw_norm.weight"}
OTHER_LAYER = {"post_attention_layernorm.weight": "ffn_norm.weight"}


def read_safetensors(path):
    """name -> float32 array (BF16 / F16 / F32)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        raw = data[a:b]
        if t["dtype"] == "BF16":
            v = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] == "F16":
            v = np.frombuffer(raw, np.float16).astype(np.float32)
        else:
            v = np.frombuffer(raw, np.float32).copy()
        out[name] = v.reshape(t["shape"])
    return out


def permute(w, n_head):
    """llama.cpp's q/k row order: within each head, rows i and i + D/2 become rows 2i and 2i + 1."""
    d = w.shape[0] // n_head
    return w.reshape(n_head, 2, d // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_gguf(cfg, tensors, path, extra_kv=None):
    arch = {"llama": "llama", "qwen3": "qwen3", "gemma3_text": "gemma3"}[cfg["model_type"]]
    w = gguf.GGUFWriter(path, arch)
    for key, value in (extra_kv or {}).items():
        w.add_uint32(key, value)
    heads, hidden = cfg["num_attention_heads"], cfg["hidden_size"]
    head_dim = cfg.get("head_dim") or hidden // heads
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(hidden)
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(cfg["rope_theta"])
    if arch == "gemma3":
        w.add_sliding_window(cfg["sliding_window"])
    layer_map = dict(LAYER, **(GEMMA_LAYER if arch == "gemma3" else OTHER_LAYER))
    for name, v in tensors.items():
        if name == "model.embed_tokens.weight":
            g = "token_embd.weight"
        elif name == "model.norm.weight":
            g = "output_norm.weight"
        elif name == "lm_head.weight":
            g = "output.weight"
        else:
            parts = name.split(".")
            g = f"blk.{parts[2]}.{layer_map['.'.join(parts[3:])]}"
        if arch == "gemma3" and g.endswith("norm.weight"):
            v = v + np.float32(1.0)
        if arch == "llama" and g.endswith("attn_q.weight"):
            v = permute(v, heads)
        if arch == "llama" and g.endswith("attn_k.weight"):
            v = permute(v, cfg["num_key_value_heads"])
        w.add_tensor(g, np.ascontiguousarray(v, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def logits(model, ids, out):
    subprocess.run([INFER, "logits", "--model", model, "--ids", ",".join(map(str, ids)), "--prefill", "5",
                    "--out", out, "--threads", "2"], check=True, capture_output=True)
    with open(out, "rb") as f:
        return f.read()


@pytest.mark.parametrize("fixture", ["tiny-llama", "tiny-qwen3", "tiny-gemma3"])
def test_gguf_equals_safetensors(fixture, tmp_path):
    d = tmp_path / fixture
    shutil.copytree(os.path.join(FIX, fixture), d)
    cfg = json.load(open(d / "config.json"))
    cfg.pop("rope_scaling", None)
    cfg.pop("rope_parameters", None)
    if cfg["model_type"] == "gemma3_text":
        cfg["query_pre_attn_scalar"] = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    json.dump(cfg, open(d / "config.json", "w"))
    gpath = str(tmp_path / f"{fixture}.gguf")
    write_gguf(cfg, read_safetensors(d / "model.safetensors"), gpath)
    ids = [(7 * i + 3) % cfg["vocab_size"] for i in range(9)]
    want = logits(str(d), ids, str(tmp_path / "want.safetensors"))
    got = logits(gpath, ids, str(tmp_path / "got.safetensors"))
    assert got == want, f"{fixture}: logits from the GGUF differ from the checkpoint's"


@pytest.mark.parametrize("key", ["tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                 "tokenizer.ggml.eot_token_id"])
def test_token_id_outside_the_vocabulary_is_refused(key, tmp_path):
    d = os.path.join(FIX, "tiny-qwen3")
    cfg = json.load(open(os.path.join(d, "config.json")))
    gpath = str(tmp_path / "bad.gguf")
    write_gguf(cfg, read_safetensors(os.path.join(d, "model.safetensors")), gpath, {key: cfg["vocab_size"]})
    p = subprocess.run([INFER, "info", "--model", gpath], capture_output=True, text=True)
    assert p.returncode != 0
    assert f"{key} {cfg['vocab_size']} is not a token id (the vocabulary has {cfg['vocab_size']})" in p.stderr, p.stderr
