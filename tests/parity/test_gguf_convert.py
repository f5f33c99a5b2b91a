"""GGUF loading against safetensors, on the tiny fixture models of all three architectures:
each fixture is written as a GGUF file the way llama.cpp's converter writes one —
Hugging Face names mapped to GGUF's, Gemma's RMSNorm weights with +1 folded in, Llama's q and
k rows permuted within each head for ggml's RoPE — using the Python `gguf` package's writer, and
`infer logits` on the GGUF must equal `infer logits` on the checkpoint directory exactly (the CPU
reference backend).
This proves the name map and the two layout conventions the loader undoes.

What GGUF cannot say is taken out of the fixture first (a copy of its directory): Gemma's
query_pre_attn_scalar when it is not head_dim (llama.cpp assumes head_dim). RoPE scaling comes
as llama.cpp's converter writes it: Llama 3's as one factor per frequency (tensor
rope_freqs.weight, computed here the converter's way), linear as rope.scaling.type and factor;
their logits must match the checkpoint's (the factors within float32 rounding of each factor).
"""
import json
import math
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


def rope_factors(cfg):
    """Llama 3's RoPE scaling as llama.cpp's converter writes it: a factor per frequency, f32."""
    r = cfg["rope_scaling"]
    dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    freqs = 1.0 / (cfg["rope_theta"] ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    old = r["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / r["low_freq_factor"], old / r["high_freq_factor"]
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(r["factor"])
        else:
            smooth = (old / wavelen - r["low_freq_factor"]) / (r["high_freq_factor"] - r["low_freq_factor"])
            out.append(1 / ((1 - smooth) / r["factor"] + smooth))
    return np.array(out, dtype=np.float32)


def write_gguf(cfg, tensors, path, extra_kv=None, extra_tensors=None, strings=None, qtype=None):
    arch = {"llama": "llama", "qwen3": "qwen3", "gemma3_text": "gemma3"}[cfg["model_type"]]
    w = gguf.GGUFWriter(path, arch)
    for key, value in (extra_kv or {}).items():
        w.add_float32(key, value) if isinstance(value, float) else w.add_uint32(key, value)
    for key, value in (strings or {}).items():
        w.add_string(key, value)
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
        v = np.ascontiguousarray(v, dtype=np.float32)
        if qtype is not None and v.ndim == 2 and v.shape[1] % 32 == 0:
            w.add_tensor(g, gguf.quants.quantize(v, qtype), raw_dtype=qtype)
        elif qtype is not None and v.ndim == 2:  # rows that are not whole blocks: F16, as the converter falls back
            w.add_tensor(g, v.astype(np.float16))
        else:
            w.add_tensor(g, v)
    for g, v in (extra_tensors or {}).items():
        w.add_tensor(g, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def logits(model, ids, out, device="cpu-reference"):
    subprocess.run([INFER, "logits", "--model", model, "--ids", ",".join(map(str, ids)), "--prefill", "5",
                    "--out", out, "--threads", "2", "--device", device], check=True, capture_output=True)
    with open(out, "rb") as f:
        return f.read()


def logits_array(raw):
    n = struct.unpack("<Q", raw[:8])[0]
    t = json.loads(raw[8:8 + n])["logits"]
    a, b = t["data_offsets"]
    return np.frombuffer(raw[8 + n + a:8 + n + b], np.float32).reshape(t["shape"])


def gguf_ready_copy(fixture, tmp_path):
    """A copy of the fixture's directory and its config without what GGUF cannot say (RoPE scaling;
    Gemma's query_pre_attn_scalar when it is not head_dim)."""
    d = tmp_path / fixture
    shutil.copytree(os.path.join(FIX, fixture), d)
    cfg = json.load(open(d / "config.json"))
    cfg.pop("rope_scaling", None)
    cfg.pop("rope_parameters", None)
    if cfg["model_type"] == "gemma3_text":
        cfg["query_pre_attn_scalar"] = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return d, cfg


# The fast CPU backend keeps these blocks as the file has them (int8 activations); the reference
# dequantises them to bf16 (f32 activations). Per row, max |fast - reference| / max |reference|.
BLOCKS_REL_ERR = 0.05


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"])
@pytest.mark.parametrize("fixture", ["tiny-llama", "tiny-qwen3", "tiny-gemma3"])
def test_fast_backend_keeps_blocks(fixture, qtype, tmp_path):
    """The fast CPU backend on a GGUF of block-quantised matrices (mixed with F16 where rows are not
    whole blocks; Llama's permuted q and k rows moved back in their blocks) against the reference."""
    d, cfg = gguf_ready_copy(fixture, tmp_path)
    gpath = str(tmp_path / f"{fixture}.gguf")
    write_gguf(cfg, read_safetensors(d / "model.safetensors"), gpath, qtype=gguf.GGMLQuantizationType[qtype])
    ids = [(7 * i + 3) % cfg["vocab_size"] for i in range(9)]
    ref = logits_array(logits(gpath, ids, str(tmp_path / "ref.safetensors")))
    fast = logits_array(logits(gpath, ids, str(tmp_path / "fast.safetensors"), "cpu"))
    err = (np.abs(fast - ref).max(axis=1) / np.abs(ref).max(axis=1)).max()
    assert err < BLOCKS_REL_ERR, f"{fixture} {qtype}: relative error {err:.4f}"
    info = subprocess.run([INFER, "info", "--model", gpath, "--json"], capture_output=True, text=True, check=True)
    assert qtype in json.loads(info.stdout)["weight_bytes_by_type"], info.stdout


@pytest.mark.parametrize("fixture", ["tiny-llama", "tiny-qwen3", "tiny-gemma3"])
def test_gguf_equals_safetensors(fixture, tmp_path):
    d, cfg = gguf_ready_copy(fixture, tmp_path)
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


def logit_values(path):
    return read_safetensors(path)["logits"]


def _llama_with(tmp_path, rope):
    d = tmp_path / "tiny-llama"
    shutil.copytree(os.path.join(FIX, "tiny-llama"), d)
    cfg = json.load(open(d / "config.json"))
    cfg.pop("rope_parameters", None)
    if rope is None:
        cfg.pop("rope_scaling", None)
    else:
        cfg["rope_scaling"] = rope
    json.dump(cfg, open(d / "config.json", "w"))
    return d, cfg


def test_llama3_rope_scaling_as_frequency_factors(tmp_path):
    d, cfg = _llama_with(tmp_path, json.load(open(os.path.join(FIX, "tiny-llama", "config.json")))["rope_scaling"])
    assert cfg["rope_scaling"]["rope_type"] == "llama3"
    tensors = read_safetensors(d / "model.safetensors")
    gpath = str(tmp_path / "llama3.gguf")
    write_gguf(cfg, tensors, gpath, extra_tensors={"rope_freqs.weight": rope_factors(cfg)})
    plain = str(tmp_path / "plain.gguf")
    write_gguf(cfg, tensors, plain)
    ids = [(7 * i + 3) % cfg["vocab_size"] for i in range(40)]
    logits(str(d), ids, str(tmp_path / "want.safetensors"))
    logits(gpath, ids, str(tmp_path / "got.safetensors"))
    logits(plain, ids, str(tmp_path / "plain.safetensors"))
    want, got = logit_values(tmp_path / "want.safetensors"), logit_values(tmp_path / "got.safetensors")
    unscaled = logit_values(tmp_path / "plain.safetensors")
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < 1e-4, f"logits with rope_freqs.weight differ from the checkpoint's by {err:.2e} (relative)"
    # the factors matter at these positions: without them the logits move by far more
    assert np.abs(unscaled - want).max() / np.abs(want).max() > 100 * max(err, 1e-7)


def test_linear_rope_scaling(tmp_path):
    d, cfg = _llama_with(tmp_path, {"rope_type": "linear", "factor": 4.0})
    gpath = str(tmp_path / "linear.gguf")
    write_gguf(cfg, read_safetensors(d / "model.safetensors"), gpath, {"llama.rope.scaling.factor": 4.0},
               strings={"llama.rope.scaling.type": "linear"})
    ids = [(7 * i + 3) % cfg["vocab_size"] for i in range(12)]
    want = logits(str(d), ids, str(tmp_path / "want.safetensors"))
    assert logits(gpath, ids, str(tmp_path / "got.safetensors")) == want


@pytest.mark.parametrize("case", ["yarn", "freqs of the wrong length", "a zero factor", "both"])
def test_rope_scaling_refusals(case, tmp_path):
    d, cfg = _llama_with(tmp_path, None)
    tensors = read_safetensors(d / "model.safetensors")
    half = (cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]) // 2
    kv, strings, extra, expect = {}, {}, {}, ""
    if case == "yarn":
        strings, expect = {"llama.rope.scaling.type": "yarn"}, "llama.rope.scaling.type 'yarn' is not supported"
    elif case == "freqs of the wrong length":
        extra, expect = {"rope_freqs.weight": np.ones(half + 1, np.float32)}, "not F32 [%d]" % half
    elif case == "a zero factor":
        f = np.ones(half, np.float32)
        f[3] = 0
        extra, expect = {"rope_freqs.weight": f}, "rope_freqs.weight[3] is 0"
    else:
        kv, strings = {"llama.rope.scaling.factor": 2.0}, {"llama.rope.scaling.type": "linear"}
        extra, expect = {"rope_freqs.weight": np.ones(half, np.float32)}, "both scale RoPE"
    gpath = str(tmp_path / "bad.gguf")
    write_gguf(cfg, tensors, gpath, kv, extra, strings)
    p = subprocess.run([INFER, "info", "--model", gpath], capture_output=True, text=True)
    assert p.returncode != 0 and expect in p.stderr, p.stderr
