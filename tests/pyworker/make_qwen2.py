"""make_qwen2.py: writes a Qwen2 checkpoint with random weights
(transformers' own initialisation, seeded) for the deepspeed worker's tests and
measurements; run it with the peers' environment's python.

    make_qwen2.py DIR [tiny|qwen2.5-0.5b] [SEED]

tiny: vocab 1000, hidden 64, 2 layers, 4 heads (2 KV heads), ffn 128, 256
positions, untied lm_head; qwen2.5-0.5b: Qwen/Qwen2.5-0.5B's config.json shape
(494,032,768 parameters). In both the lm_head row of the EOS id is zero, so its
logit is 0 and greedy decoding never picks it in practice (every other logit
is a random projection; the largest of them is positive): engines that stop
or pad at EOS and engines that suppress it (min_new_tokens) then produce the
same tokens, and the comparison is of the forward passes alone.
Prints the directory; leaves an existing complete one (same shape and seed) as it is.
"""

import json
import os
import sys

SHAPES = {
    "tiny": dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False, bos_token_id=1,
                 eos_token_id=2, pad_token_id=0, rms_norm_eps=1e-6),
    "qwen2.5-0.5b": dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                         rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, tie_word_embeddings=True, use_sliding_window=False,
                         sliding_window=32768, max_window_layers=24, bos_token_id=151643, eos_token_id=151643),
}


def main(argv):
    if len(argv) < 2 or (len(argv) > 2 and argv[2] not in SHAPES):
        sys.stderr.write("usage: make_qwen2.py DIR [%s] [SEED]\n" % "|".join(SHAPES))
        return 2
    out, shape = argv[1], argv[2] if len(argv) > 2 else "tiny"
    seed = int(argv[3]) if len(argv) > 3 else 0
    stamp = os.path.join(out, "benchctl-made.json")
    want = {"shape": shape, "seed": seed}
    if os.path.isfile(stamp):
        with open(stamp) as f:
            if json.load(f) == want:
                print(out)
                return 0
    import torch
    import transformers
    transformers.logging.set_verbosity_error()
    torch.manual_seed(seed)
    cfg = transformers.Qwen2Config(**SHAPES[shape])
    model = transformers.Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():
        if cfg.tie_word_embeddings:
            # tied: the row is also the EOS embedding; a zero input embedding is harmless
            model.model.embed_tokens.weight[cfg.eos_token_id].zero_()
        else:
            model.lm_head.weight[cfg.eos_token_id].zero_()
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out)
    with open(stamp, "w") as f:
        json.dump(want, f)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
