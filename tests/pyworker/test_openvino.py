#!/usr/bin/env python3
"""test_openvino.py: the openvino worker (benchctl_worker/ov.py) end to end
through the worker protocol (harness.py), in its own environment
(tools/peers-venv --openvino), on two tiny checkpoints: OPT (the golden
fixture tests/opt/golden/preln) and Qwen2 (tools/peers-tiny-checkpoint qwen2).

The reference is the transformers worker in the peers' environment
(tools/peers-venv: transformers as pinned there) on the same checkpoint,
case and prompts: greedy tokens in float32 must be equal, row for row, with
prompts of different lengths (left padding) and two samples per prompt. A
bfloat16 case must run and make its tokens, with a profile whose parts add
up (no token comparison: bf16 rounding may change a pick).

argv: WORK_DIR. Exits 77 (skipped) and says why when either environment is
missing.
"""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import harness  # noqa: E402

OPT_CKPT = os.path.join(SRC, "tests", "opt", "golden", "preln")
WORK = OV_PY = PEERS_PY = None
CKPT = {}


def env_python(args, what):
    p = subprocess.run([os.path.join(SRC, "tools", "peers-venv")] + args, capture_output=True, text=True)
    if p.returncode != 0:
        print("SKIP: %s is missing: %s" % (what, p.stderr.strip()))
        return None
    return p.stdout.strip()


def worker(python, engine, **settings):
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(WORK, "cache"), OMP_NUM_THREADS="2")
    w = harness.Worker(harness.worker_command(python, engine), timeout_s=900, env=env)
    w.request("configure", settings=dict({"threads": 2}, **settings))
    return w


def rollout(python, engine, checkpoint, case, prompts):
    """(generate's reply, the worker's hello) of one case."""
    with worker(python, engine, checkpoint=checkpoint) as w:
        w.request("begin_case", case=case, prompt_ids=prompts)
        reply = w.request("generate", iteration=0, warmup=False)
        w.request("end_case")
        hello = w.hello
        w.shutdown()
    return reply, hello


# prompts of 3, 7 and 5 ids (vocabularies of 1000 and 512 both hold them)
PROMPTS = [[5, 17, 301], [40, 41, 42, 43, 200, 9, 311], [77, 3, 150, 8, 499]]


class TestOpenVINO(unittest.TestCase):
    def check_profile(self, prof, rows, R):
        self.assertEqual(prof["num_generated_tokens"], rows * R)
        self.assertEqual(prof["num_decode_forwards"], R - 1)
        self.assertEqual(len(prof["decode_step_ms"]), R - 1)
        for k in ("prompt_expansion_ms", "generation_ms", "post_processing_ms", "prefill_forward_ms",
                  "decode_forward_ms", "time_to_first_token_ms"):
            self.assertTrue(prof[k] >= 0.0, "%s = %r" % (k, prof[k]))  # fails on NaN
        self.assertTrue(prof["prefill_forward_ms"] + prof["decode_forward_ms"] <= prof["generation_ms"] * 1.001)
        self.assertTrue(prof["peak_memory_bytes"] > 0)

    def check_equal_to_transformers(self, kind):
        S, R = 2, 8
        case = harness.case(batch_size=len(PROMPTS), samples_per_prompt=S, prompt_length=7, response_length=R)
        ov, hello = rollout(OV_PY, "openvino", CKPT[kind], case, PROMPTS)
        hf, _ = rollout(PEERS_PY, "transformers", CKPT[kind], case, PROMPTS)
        self.assertEqual(hello.get("engine"), "openvino")
        self.check_profile(ov["profile"], len(PROMPTS) * S, R)
        self.assertEqual(len(ov["tokens"]), len(PROMPTS) * S)
        for i, (a, b) in enumerate(zip(ov["tokens"], hf["tokens"])):
            self.assertEqual(a, b, "%s row %d: openvino %s, transformers %s" % (kind, i, a, b))
        print("%s: %d rows x %d tokens equal to transformers'; openvino generation %.1f ms"
              % (kind, len(ov["tokens"]), R, ov["profile"]["generation_ms"]))

    def test_opt_fp32_tokens(self):
        self.check_equal_to_transformers("opt")

    def test_qwen2_fp32_tokens(self):
        self.check_equal_to_transformers("qwen2")

    def test_bf16_runs(self):
        R = 6
        case = harness.case(batch_size=2, samples_per_prompt=1, prompt_length=7, response_length=R, dtype="bfloat16")
        ov, _ = rollout(OV_PY, "openvino", CKPT["qwen2"], case, PROMPTS[:2])
        self.check_profile(ov["profile"], 2, R)
        self.assertEqual([len(r) for r in ov["tokens"]], [R, R])

    def test_refuses_cuda(self):
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(WORK, "cache"))
        with harness.Worker(harness.worker_command(OV_PY, "openvino"), timeout_s=300, env=env) as w:
            r = w.call("configure", settings={"checkpoint": CKPT["opt"], "device": "cuda"})
            self.assertFalse(r["ok"])
            self.assertEqual(r["error"]["code"], "setting")
            w.shutdown()


def main():
    global WORK, OV_PY, PEERS_PY
    OV_PY = env_python(["--openvino", "--check"], "the openvino environment (tools/peers-venv --openvino)")
    if not OV_PY:
        return 77
    PEERS_PY = env_python(["--check"], "the peers' environment (tools/peers-venv)")
    if not PEERS_PY:
        return 77
    WORK = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="pyworker-openvino-")
    os.makedirs(WORK, exist_ok=True)
    CKPT["opt"] = OPT_CKPT
    CKPT["qwen2"] = os.path.join(WORK, "tiny-qwen2")
    if not os.path.isfile(os.path.join(CKPT["qwen2"], "config.json")):
        subprocess.run([PEERS_PY, os.path.join(SRC, "tools", "peers-tiny-checkpoint"), "qwen2", CKPT["qwen2"]],
                       check=True)
    prog = unittest.main(argv=[sys.argv[0], "-v"], exit=False)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
