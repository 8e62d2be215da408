"""test_scoring.py: the transformers worker's rollout log-probabilities, its
score request and its refit request, through the worker protocol
(harness.py), on two tiny random Qwen2 checkpoints (make_qwen2.py, seeds 0
and 1), in the peers' virtual environment (tools/peers-venv; skipped, exit
77, without it).

    test_scoring.py WORK_DIR [BENCHCTL]

Checks:
  - greedy float32, left-padded prompts of three lengths, 2 samples each: the
    rollout's prompts are the prompts as sent (unpadded), every row stopped
    at "length"; its log-probabilities equal the worker's own score of the
    same tokens within 1e-4, and equal a direct transformers computation
    (generate with output_logits, log_softmax, gathered) within 1e-4, with
    the same tokens;
  - sampled (temperature 0.7, top-k 20): the log-probabilities are those of
    the raw logits at temperature 1 (a direct transformers forward over the
    rollout's tokens, within 1e-4), not of the processed ones (those at
    temperature 0.7 differ by more than 0.05 somewhere);
  - bfloat16: the rollout's log-probabilities and the score are finite and
    within 0.1 of each other;
  - refit from the checkpoint and from the host copy, with refit_checkpoint
    naming the second checkpoint: the rollout before is the first
    checkpoint's, the rollout after equals a fresh worker's on the second
    (whose tokens differ from the first's); source_bytes is the second
    checkpoint's tensor bytes (its safetensors header), engine_bytes the
    model's in the run's dtype (half in bfloat16); a refit of the model's
    own weights leaves the tokens as they were;
  - the ctranslate2 engine: its rollout (no log-probabilities) has
    transformers' tokens, its score (Generator.score_batch) equals the
    transformers rollout's log-probabilities within 1e-4 in float32, and it
    refuses refit in one line;
  - with BENCHCTL, through `benchctl run` (the worker backend as rollout
    engine and as the score group's scorer, run.refit per_rollout from the
    host copy): the logprob gap of the fp32 rollout scored by the same
    checkpoint is below 1e-4 (and k3 below 1e-8), scored by the other
    checkpoint above 0.1; refit_bytes is the checkpoint's tensor bytes;
    every row ran the whole length (response_length/mean R, clip_ratio 1);
    a ctranslate2 rollout with run.refit fails its case with the one line
    that names the engine.
Exit status 0 when all pass, 1 otherwise, 77 when the environment is missing.
"""

import json
import os
import struct
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import harness  # noqa: E402

WORK = PYTHON = BENCHCTL = None

# A direct transformers computation, the reference. argv: checkpoint, a JSON
# request. "generate": greedy generate with output_logits on the left-padded
# prompts (pad 0), S samples each, R tokens -> {"tokens", "logprobs"} (the
# raw logits' log_softmax, gathered). "forward": one forward over each row's
# prompt + response (rows of one width) -> {"raw", "tempered"}: the response
# tokens' log-probabilities at temperature 1 and at the request's temperature.
REFERENCE = r"""
import json, sys, torch, transformers
transformers.logging.set_verbosity_error()
d, req = sys.argv[1], json.loads(sys.argv[2])
m = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
with torch.inference_mode():
    if req["op"] == "generate":
        S, R, prompts = req["S"], req["R"], req["prompts"]
        W = max(map(len, prompts))
        rows = [p for p in prompts for _ in range(S)]
        ids = torch.tensor([[0] * (W - len(p)) + p for p in rows])
        mask = torch.tensor([[0] * (W - len(p)) + [1] * len(p) for p in rows])
        out = m.generate(input_ids=ids, attention_mask=mask, max_new_tokens=R, min_new_tokens=R, do_sample=False,
                         pad_token_id=0, output_logits=True, return_dict_in_generate=True)
        tok = out.sequences[:, W:]
        lp = torch.stack([torch.log_softmax(l.float(), -1) for l in out.logits], 1)  # [rows, R, V]
        print(json.dumps({"tokens": tok.tolist(), "logprobs": lp.gather(2, tok.unsqueeze(2)).squeeze(2).tolist()}))
    else:
        full = torch.tensor([p + q for p, q in zip(req["prompts"], req["responses"])])
        n = len(req["responses"][0])
        logits = m(input_ids=full).logits[:, -n - 1:-1, :].float()
        tok = full[:, -n:].unsqueeze(2)
        raw = torch.log_softmax(logits, -1).gather(2, tok).squeeze(2)
        tempered = torch.log_softmax(logits / req["temperature"], -1).gather(2, tok).squeeze(2)
        print(json.dumps({"raw": raw.tolist(), "tempered": tempered.tolist()}))
"""

PROMPTS = [[17, 400, 23, 91, 5, 60, 61, 62], [3, 99, 42], [250, 251, 252, 253, 254]]


def peers_python():
    p = subprocess.run([os.path.join(SRC, "tools", "peers-venv"), "--check"], capture_output=True, text=True)
    if p.returncode != 0:
        print("SKIP: the peers' environment is missing: %s" % p.stderr.strip())
        return None
    return p.stdout.strip()


def worker(engine="transformers", **settings):
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(WORK, "cache"), OMP_NUM_THREADS="2")
    w = harness.Worker(harness.worker_command(PYTHON, engine), timeout_s=600, env=env)
    w.request("configure", settings=dict({"threads": 2}, **settings))
    return w


def rollout_case(**kw):
    c = harness.case(**kw)
    c["return_rollout"] = True
    return c


def max_gap(a, b):
    """max |a - b| over two equal-shaped lists of rows (NaN-safe: inf when shapes differ)."""
    if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b)):
        return float("inf")
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def tensor_bytes(path):
    """The tensors' bytes of a safetensors file, from its header."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items() if k != "__metadata__")


class TestScoring(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.a, cls.b = os.path.join(WORK, "qwen2-a"), os.path.join(WORK, "qwen2-b")
        for d, seed in ((cls.a, "0"), (cls.b, "1")):
            subprocess.run([PYTHON, os.path.join(HERE, "make_qwen2.py"), d, "tiny", seed], check=True,
                           capture_output=True, timeout=600)

    def reference(self, ckpt, req):
        p = subprocess.run([PYTHON, "-c", REFERENCE, ckpt, json.dumps(req)], capture_output=True, text=True,
                           timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def rollout(self, w, case, prompts):
        w.request("begin_case", case=case, prompt_ids=prompts)
        return w.request("generate", iteration=0, warmup=False)

    def test_greedy_logprobs_equal_score_and_transformers(self):
        S, R = 2, 12
        with worker(checkpoint=self.a) as w:
            d = w.request("describe")
            self.assertEqual(d["capabilities"], ["rollout", "logprobs", "score", "refit"])
            g = self.rollout(w, rollout_case(batch_size=3, samples_per_prompt=S, prompt_length=8, response_length=R),
                             PROMPTS)
            ro = g["rollout"]
            self.assertEqual(ro["prompt_ids"], [p for p in PROMPTS for _ in range(S)])
            self.assertEqual(ro["response_ids"], g["tokens"])
            self.assertEqual(ro["stop"], ["length"] * (3 * S))
            s = w.request("score", prompt_ids=ro["prompt_ids"], response_ids=ro["response_ids"])
            gap = max_gap(ro["logprobs"], s["logprobs"])
            print("fp32 rollout vs score: max |delta log p| = %.3g" % gap)
            self.assertLessEqual(gap, 1e-4)
            self.assertTrue(all(v < 0 for row in ro["logprobs"] for v in row))
            # a row with no response has nothing to score; the others are scored as before
            s2 = w.request("score", prompt_ids=ro["prompt_ids"][:2], response_ids=[ro["response_ids"][0], []])
            self.assertEqual(s2["logprobs"][1], [])
            self.assertLessEqual(max_gap(s2["logprobs"][:1], s["logprobs"][:1]), 1e-6)
            self.assertEqual(w.shutdown(), 0)
        want = self.reference(self.a, {"op": "generate", "S": S, "R": R, "prompts": PROMPTS})
        self.assertEqual(ro["response_ids"], want["tokens"])
        gap = max_gap(ro["logprobs"], want["logprobs"])
        print("fp32 rollout vs transformers' output_logits: max |delta log p| = %.3g" % gap)
        self.assertLessEqual(gap, 1e-4)

    def test_sampled_logprobs_are_the_raw_logits(self):
        R, T = 10, 0.7
        prompts = [PROMPTS[0], [9, 8, 7, 6, 5, 4, 3, 40]]
        with worker(checkpoint=self.a) as w:
            g = self.rollout(w, rollout_case(batch_size=2, samples_per_prompt=2, prompt_length=8, response_length=R,
                                             do_sample=True, temperature=T, top_k=20, seed=7), prompts)
            ro = g["rollout"]
            s = w.request("score", prompt_ids=ro["prompt_ids"], response_ids=ro["response_ids"])
            self.assertLessEqual(max_gap(ro["logprobs"], s["logprobs"]), 1e-4)
        want = self.reference(self.a, {"op": "forward", "prompts": ro["prompt_ids"], "responses": ro["response_ids"],
                                       "temperature": T})
        self.assertLessEqual(max_gap(ro["logprobs"], want["raw"]), 1e-4)
        self.assertGreater(max_gap(ro["logprobs"], want["tempered"]), 0.05)

    def test_bf16(self):
        with worker(checkpoint=self.a) as w:
            g = self.rollout(w, rollout_case(batch_size=3, samples_per_prompt=2, prompt_length=8, response_length=8,
                                             dtype="bfloat16", return_tokens=False), PROMPTS)
            ro = g["rollout"]
            self.assertNotIn("tokens", g)
            s = w.request("score", prompt_ids=ro["prompt_ids"], response_ids=ro["response_ids"])
            gap = max_gap(ro["logprobs"], s["logprobs"])
            print("bf16 rollout vs score: max |delta log p| = %.3g" % gap)
            self.assertLessEqual(gap, 0.1)

    def tokens(self, ckpt, dtype="float32"):
        with worker(checkpoint=ckpt) as w:
            return self.rollout(w, rollout_case(batch_size=3, samples_per_prompt=1, prompt_length=8,
                                                response_length=12, dtype=dtype), PROMPTS)["rollout"]["response_ids"]

    def test_refit(self):
        fresh_a, fresh_b = self.tokens(self.a), self.tokens(self.b)
        self.assertNotEqual(fresh_a, fresh_b)  # so the refit must change them
        b_bytes = tensor_bytes(os.path.join(self.b, "model.safetensors"))
        for source in ("checkpoint", "host"):
            for dtype, size in (("float32", 4), ("bfloat16", 2)):
                with self.subTest(source=source, dtype=dtype), \
                        worker(checkpoint=self.a, refit_source=source, refit_checkpoint=self.b) as w:
                    case = rollout_case(batch_size=3, samples_per_prompt=1, prompt_length=8, response_length=12,
                                        dtype=dtype)
                    before = self.rollout(w, case, PROMPTS)["rollout"]["response_ids"]
                    r = w.request("refit")
                    after = w.request("generate", iteration=1, warmup=False)["rollout"]["response_ids"]
                    self.assertEqual(r["source"], source)
                    self.assertEqual(r["engine_bytes"], b_bytes * size // 4)
                    self.assertEqual(r["source_bytes"], b_bytes if source == "checkpoint" else b_bytes * size // 4)
                    if dtype == "float32":
                        self.assertEqual(before, fresh_a)
                        self.assertEqual(after, fresh_b)
                    else:
                        self.assertEqual(after, self.tokens(self.b, dtype))
        # the model's own weights: nothing changes
        for source in ("checkpoint", "host"):
            with self.subTest(source=source, own=True), worker(checkpoint=self.a, refit_source=source) as w:
                case = rollout_case(batch_size=3, samples_per_prompt=1, prompt_length=8, response_length=12)
                self.rollout(w, case, PROMPTS)
                w.request("refit")
                self.assertEqual(w.request("generate", iteration=1, warmup=False)["rollout"]["response_ids"], fresh_a)

    def test_refit_of_a_builtin_shape_needs_a_source(self):
        with worker(model="125m") as w:
            w.request("begin_case", case=rollout_case(prompt_length=4, response_length=2), prompt_ids=[[5, 6, 7, 8]])
            rep = w.call("refit")
            self.assertFalse(rep["ok"])
            self.assertEqual(rep["error"]["code"], "setting")
            self.assertIn("set refit_checkpoint, or refit_source", rep["error"]["message"])

    def test_ctranslate2_scores_as_transformers(self):
        S, R = 2, 10
        case = rollout_case(batch_size=3, samples_per_prompt=S, prompt_length=8, response_length=R)
        with worker(checkpoint=self.a) as w:
            ref = self.rollout(w, case, PROMPTS)["rollout"]
        with worker("ctranslate2", checkpoint=self.a) as w:
            d = w.request("describe")
            self.assertEqual(d["capabilities"], ["rollout", "score"])
            g = self.rollout(w, case, PROMPTS)
            ro = g["rollout"]
            self.assertEqual(ro["prompt_ids"], ref["prompt_ids"])
            self.assertEqual(ro["response_ids"], ref["response_ids"])
            self.assertNotIn("logprobs", ro)
            s = w.request("score", prompt_ids=ro["prompt_ids"], response_ids=ro["response_ids"])
            gap = max_gap(s["logprobs"], ref["logprobs"])
            print("ctranslate2 score vs the transformers rollout, fp32: max |delta log p| = %.3g" % gap)
            self.assertLessEqual(gap, 1e-4)
            rep = w.call("refit")
            self.assertFalse(rep["ok"])
            self.assertEqual(rep["error"], {"code": "unsupported", "message": "the ctranslate2 engine has no refit request"})


class TestThroughBenchctl(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not BENCHCTL:
            raise unittest.SkipTest("no BENCHCTL given")
        TestScoring.setUpClass()
        cls.a, cls.b = TestScoring.a, TestScoring.b

    def run_cfg(self, name, engine, ckpt, scorer_ckpt, refit="per_rollout", R=6):
        worker_cmd = "%s -m benchctl_worker" % PYTHON
        cfg = os.path.join(WORK, name + ".cfg")
        out = os.path.join(WORK, name + ".json")
        with open(cfg, "w") as f:
            f.write("""
backend = { name = "worker"; settings = { command = "%(w)s %(engine)s"; env = "%(env)s"; checkpoint = "%(a)s";
                                          threads = 1;%(extra)s }; };
precisions = [ "fp32" ];
matrix = { batch_sizes = [2]; samples_per_prompt = [2]; prompt_lengths = [8]; response_lengths = [%(R)d]; };
run = { warmup = 1; iterations = 2; quiet_check = "off"; refit = "%(refit)s"; };
score = { backend = "worker"; precision = "fp32";
          settings = { command = "%(w)s transformers"; env = "%(env)s"; checkpoint = "%(s)s"; threads = 1; }; };
reporters = ( { name = "json"; settings = { path = "%(out)s"; }; } );
""" % dict(w=worker_cmd, env="PYTHONPATH=%s XDG_CACHE_HOME=%s OMP_NUM_THREADS=1" % (os.path.abspath(harness.PYTHON_DIR),
                                                                         os.path.join(WORK, "cache")), engine=engine, a=ckpt, s=scorer_ckpt, refit=refit, R=R, out=out,
           extra=' refit_source = "host";' if engine == "transformers" else ""))
        p = subprocess.run([BENCHCTL, "run", cfg], capture_output=True, text=True, timeout=1200, cwd=WORK)
        rep = None
        if os.path.isfile(out):
            with open(out) as f:
                rep = json.load(f)
        return p, rep

    @staticmethod
    def stat(rep, name):
        return rep["cases"][0]["extended"]["stats"][name]["mean"]

    def test_zero_and_nonzero_gap_refit_and_rl_fields(self):
        p, rep = self.run_cfg("same", "transformers", self.a, self.a)
        self.assertEqual(p.returncode, 0, p.stderr)
        gap_mean, gap_max, k3 = (self.stat(rep, k) for k in ("logprob_gap_mean", "logprob_gap_max", "kl_k3"))
        print("benchctl, fp32 scored by itself: logprob_gap_mean %.3g, max %.3g, kl_k3 %.3g" % (gap_mean, gap_max, k3))
        self.assertLessEqual(gap_max, 1e-4)
        self.assertLessEqual(abs(k3), 1e-8)
        self.assertGreater(self.stat(rep, "score_ms"), 0)
        self.assertGreater(self.stat(rep, "refit_ms"), 0)
        self.assertEqual(self.stat(rep, "refit_bytes"), tensor_bytes(os.path.join(self.a, "model.safetensors")))
        self.assertEqual(self.stat(rep, "response_length/mean"), 6)
        self.assertEqual(self.stat(rep, "response_length/clip_ratio"), 1)
        p, rep = self.run_cfg("other", "transformers", self.a, self.b, refit="off")
        self.assertEqual(p.returncode, 0, p.stderr)
        print("benchctl, scored by the other checkpoint: logprob_gap_mean %.3g, max %.3g"
              % (self.stat(rep, "logprob_gap_mean"), self.stat(rep, "logprob_gap_max")))
        self.assertGreater(self.stat(rep, "logprob_gap_max"), 0.1)

    def test_an_engine_without_refit_fails_its_case_in_one_line(self):
        p, _ = self.run_cfg("ct2_refit", "ctranslate2", self.a, self.a)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("worker engine 'ctranslate2' has no refit request", p.stderr + p.stdout)


def main():
    global WORK, PYTHON, BENCHCTL
    if len(sys.argv) < 2:
        print("usage: test_scoring.py WORK_DIR [unittest args]")
        return 2
    WORK = os.path.abspath(sys.argv[1])
    args = sys.argv[2:]
    if args and not args[0].startswith("Test") and not args[0].startswith("-"):
        BENCHCTL, args = os.path.abspath(args[0]), args[1:]
    PYTHON = peers_python()
    if PYTHON is None:
        return 77
    os.makedirs(WORK, exist_ok=True)
    prog = unittest.main(argv=[sys.argv[0]] + args, exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
