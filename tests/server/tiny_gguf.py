"""A tiny Gemma 3 GGUF with a real vocabulary, for the server tests: the tokenizer metadata of the
embedded default model (Gemma 3 270M: 262,144 tokens, scores, types, BOS/EOS) and random weights
of a 2-layer, 64-wide model, written with the `gguf` package. Its answers are noise, but they are
deterministic, fast on 2 CPU cores, and every text round-trips through a real tokenizer."""
import numpy as np
from gguf import GGUFReader, GGUFWriter

HIDDEN, LAYERS, FFN, HEADS, KV_HEADS, HEAD_DIM = 64, 2, 128, 2, 1, 32


def write_tiny_gemma(real_gguf, out, seed=0, context=2048):
    r = GGUFReader(real_gguf)

    def field(key):
        return r.fields[key].contents() if key in r.fields else None

    w = GGUFWriter(out, "gemma3")
    w.add_context_length(context)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    w.add_sliding_window(512)
    tokens = field("tokenizer.ggml.tokens")
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(field("tokenizer.ggml.scores"))
    w.add_token_types(field("tokenizer.ggml.token_type"))
    w.add_bos_token_id(field("tokenizer.ggml.bos_token_id"))
    w.add_eos_token_id(field("tokenizer.ggml.eos_token_id"))
    w.add_unk_token_id(field("tokenizer.ggml.unknown_token_id"))
    w.add_pad_token_id(field("tokenizer.ggml.padding_token_id"))
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)
    rng = np.random.default_rng(seed)

    def rand(*shape, scale=0.05):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def norm(n):  # Gemma's RMSNorm weight with llama.cpp's +1 folded in
        return (1.0 + rand(n, scale=0.1)).astype(np.float32)

    w.add_tensor("token_embd.weight", rand(len(tokens), HIDDEN, scale=1.0).astype(np.float16))
    w.add_tensor("output.weight", rand(len(tokens), HIDDEN, scale=1.0).astype(np.float16))  # untied: varied text
    w.add_tensor("output_norm.weight", norm(HIDDEN))
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    for i in range(LAYERS):
        b = f"blk.{i}."
        for name, shape in (("attn_q", (q, HIDDEN)), ("attn_k", (kv, HIDDEN)), ("attn_v", (kv, HIDDEN)),
                            ("attn_output", (HIDDEN, q)), ("ffn_gate", (FFN, HIDDEN)), ("ffn_up", (FFN, HIDDEN)),
                            ("ffn_down", (HIDDEN, FFN))):
            w.add_tensor(b + name + ".weight", rand(*shape))
        for name, n in (("attn_norm", HIDDEN), ("attn_q_norm", HEAD_DIM), ("attn_k_norm", HEAD_DIM),
                        ("post_attention_norm", HIDDEN), ("ffn_norm", HIDDEN), ("post_ffw_norm", HIDDEN)):
            w.add_tensor(b + name + ".weight", norm(n))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
