"""test_adapters.py: the transformers and CTranslate2 workers end to end, on
tiny checkpoints, through the worker protocol (harness.py), in the peers'
virtual environment (tools/peers-venv; skipped, exit 77, without it).

    test_adapters.py ENGINE BENCHCTL WORK_DIR

Checks, for ENGINE (transformers or ctranslate2):
  - greedy float32 tokens equal Hugging Face's golden generate() tokens
    (tests/opt/golden: three model layouts, an unpadded prompt and
    left-padded prompts of different lengths, 3 samples per prompt);
  - greedy float32 tokens equal the native OPT engine's on the same
    checkpoint and prompts (BENCHCTL run with the opt backend's save_tokens);
  - the profile's counts and times are consistent (tokens = rows x length,
    R - 1 decode forwards and steps, the forwards within generation);
  - sampled generation is reproducible for a seed and stays in the vocabulary;
  - bf16 runs or is refused as unsupported, as describe's dtypes say; an
    unknown dtype is unsupported, a case past the model's positions infeasible;
  - transformers only: a built-in shape with random weights (125m, bf16).
The Llama family (TestLlamaFamily), on tiny random checkpoints that
tools/peers-tiny-checkpoint saves (qwen2: grouped-query, q/k/v biases, tied;
llama: one KV head, untied, pad 0; mistral; llama3: llama3 RoPE scaling and
head_dim 32):
  - greedy float32 tokens of left-padded prompts, 2 samples each, equal a
    plain transformers generate() on the same checkpoint (run in the peers'
    environment), and describe's parameter count equals transformers';
  - through benchctl (the worker backend, save_tokens, the json reporter):
    the tokens of benchctl's own synthetic prompts equal transformers', the
    report's model shape is the checkpoint's;
  - CTranslate2 refuses the llama3 checkpoint in one line at configure, and
    benchctl stops before the first case saying so; transformers runs it;
  - transformers only: a built-in shape of the family (qwen2.5-0.5b, vocab
    151936) through benchctl, and the four shapes' parameter counts equal
    transformers' on the meta device;
  - transformers only: configs/peers-qwen2.cfg, cut down: the native llama
    engine's, transformers' and CTranslate2's greedy tokens are equal.
Exit status 0 when all pass, 1 otherwise, 77 when the environment is missing.
"""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
GOLDEN = os.path.join(SRC, "tests", "opt", "golden")
sys.path.insert(0, HERE)

import golden  # noqa: E402
import harness  # noqa: E402

TINY = os.path.join(SRC, "tools", "peers-tiny-checkpoint")
WORKER_PY = os.path.join(SRC, "plugins", "worker", "python")

# A plain transformers generate(): the reference for the Llama family. argv:
# checkpoint, prompts (JSON), samples per prompt, response length. Prints
# {"tokens", "parameters"}. Rows are left-padded with id 0 (masked out).
REFERENCE = r"""
import json, sys, torch, transformers
transformers.logging.set_verbosity_error()
d, prompts, S, R = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
m = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
W = max(map(len, prompts))
rows = [p for p in prompts for _ in range(S)]
ids = torch.tensor([[0] * (W - len(p)) + p for p in rows])
mask = torch.tensor([[0] * (W - len(p)) + [1] * len(p) for p in rows])
with torch.inference_mode():
    out = m.generate(input_ids=ids, attention_mask=mask, max_new_tokens=R, min_new_tokens=R, do_sample=False,
                     pad_token_id=0)
print(json.dumps({"tokens": out[:, W:].tolist(), "parameters": m.num_parameters()}))
"""

# transformers' own parameter count of the built-in shapes, built on the meta
# device (no memory): {name: count}.
META_COUNT = r"""
import json, sys, torch, transformers
sys.path.insert(0, sys.argv[1])
from benchctl_worker import models
out = {}
for name in models.LLAMA_PRESETS:
    kw = models.preset_config(name)
    cfg = transformers.AutoConfig.for_model(kw.pop("model_type"), **kw)
    with torch.device("meta"):
        out[name] = transformers.AutoModelForCausalLM.from_config(cfg).num_parameters()
print(json.dumps(out))
"""


def splitmix_finalize(z):
    M = (1 << 64) - 1
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)


def synthetic_prompt(seed, b, V, Tp):
    """Prompt b of a case seeded with seed, as plugins/common/synthetic_prompts.h
    makes it for every backend (ids uniform in [3, V))."""
    M, G = (1 << 64) - 1, 0x9e3779b97f4a7c15
    row_key = splitmix_finalize((b + 0x5eed + G) & M)
    state = splitmix_finalize((((seed ^ 0x70726f6d7074) ^ row_key) + G) & M)
    ids = []
    for _ in range(Tp):
        state = (state + G) & M
        ids.append(3 + splitmix_finalize(state) % (V - 3))
    return ids

ENGINE = BENCHCTL = WORK = PYTHON = None


def peers_python():
    """The environment's python, or None with the reason printed."""
    p = subprocess.run([os.path.join(SRC, "tools", "peers-venv"), "--check"], capture_output=True, text=True)
    if p.returncode != 0:
        print("SKIP: the peers' environment is missing: %s" % p.stderr.strip())
        return None
    return p.stdout.strip()


def worker(**settings):
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(WORK, "cache"), OMP_NUM_THREADS="2")
    w = harness.Worker(harness.worker_command(PYTHON, ENGINE), timeout_s=600, env=env)
    w.request("configure", settings=dict({"threads": 2}, **settings))
    return w


def run_case(w, case, prompts, iterations=1):
    w.request("begin_case", case=case, prompt_ids=prompts)
    replies = [w.request("generate", iteration=i, warmup=False) for i in range(iterations)]
    w.request("end_case")
    return replies


class TestAdapter(unittest.TestCase):
    def check_profile(self, prof, rows, R, prompts):
        """CTranslate2 feeds the part of a longer prompt past the shortest one
        step by step: more steps than R - 1 when the lengths differ."""
        self.assertEqual(prof["num_generated_tokens"], rows * R)
        spread = max(map(len, prompts)) - min(map(len, prompts)) if ENGINE == "ctranslate2" else 0
        self.assertEqual(prof["num_decode_forwards"], R - 1 + spread)
        self.assertEqual(len(prof["decode_step_ms"]), R - 1 + spread)
        for k in ("prompt_expansion_ms", "generation_ms", "post_processing_ms", "prefill_forward_ms",
                  "decode_forward_ms", "time_to_first_token_ms"):
            self.assertGreaterEqual(prof[k], 0.0, k)
        self.assertLessEqual(prof["prefill_forward_ms"] + prof["decode_forward_ms"], prof["generation_ms"] * 1.0001)
        self.assertGreater(prof["peak_memory_bytes"], 1 << 20)

    def test_greedy_tokens_equal_golden(self):
        for model in ("preln", "postln_proj", "hd80"):
            arrays = golden.read(os.path.join(GOLDEN, model, "golden.bin"))
            with worker(checkpoint=os.path.join(GOLDEN, model)) as w:
                for name in ("single", "padded"):
                    with self.subTest(model=model, case=name):
                        prompts = golden.prompt_rows(arrays, name)
                        want = golden.rows(arrays, name + ".generate_tokens")
                        S = arrays[name + ".num_return_sequences"][1][0]
                        R = len(want[0])
                        case = harness.case(batch_size=len(prompts), samples_per_prompt=S,
                                            prompt_length=max(map(len, prompts)), response_length=R)
                        got = run_case(w, case, prompts)[0]
                        self.assertEqual(got["tokens"], want)
                        self.check_profile(got["profile"], len(want), R, prompts)
                self.assertEqual(w.shutdown(), 0)

    def test_greedy_tokens_equal_the_native_engine(self):
        prompts = [[17, 400, 23, 901, 5], [3, 999, 42], [250, 251, 252, 253, 254, 255, 256, 257]]
        S, R = 2, 10
        os.makedirs(WORK, exist_ok=True)
        with open(os.path.join(WORK, "prompts.txt"), "w") as f:
            f.write("".join(" ".join(map(str, p)) + "\n" for p in prompts))
        cfg = os.path.join(WORK, "native.cfg")
        with open(cfg, "w") as f:
            f.write('backend = { name = "opt"; settings = { checkpoint = "%s"; threads = 2; prompts_file = "%s";'
                    ' save_tokens = "%s"; }; };\n' % (os.path.join(GOLDEN, "preln"), os.path.join(WORK, "prompts.txt"),
                                                      os.path.join(WORK, "native_tokens.txt")))
            f.write('precisions = [ "fp32" ];\ncache_policies = [ "retain" ];\n'
                    'matrix = { batch_sizes = [3]; samples_per_prompt = [%d]; response_lengths = [%d]; };\n'
                    'sampling = { temperature = 0.0; top_p = 1.0; top_k = 0; seed = 1234; };\n'
                    'run = { warmup = 0; iterations = 1; };\n'
                    'reporters = ( { name = "json"; settings = { path = "%s"; }; } );\n'
                    % (S, R, os.path.join(WORK, "native.json")))
        p = subprocess.run([BENCHCTL, "run", cfg], capture_output=True, text=True, cwd=WORK, timeout=600,
                           env=dict(os.environ, BENCHCTL_PLUGIN_PATH=""))
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(WORK, "native_tokens.txt")) as f:
            native = [[int(t) for t in line.split()] for line in f if line.strip()]
        self.assertEqual(len(native), 3 * S)
        with worker(checkpoint=os.path.join(GOLDEN, "preln")) as w:
            case = harness.case(batch_size=3, samples_per_prompt=S, prompt_length=8, response_length=R)
            got = run_case(w, case, prompts, iterations=2)
            for reply in got:
                self.assertEqual(reply["tokens"], native)
                self.check_profile(reply["profile"], 3 * S, R, prompts)

    def test_sampling_is_seeded(self):
        prompts = [[17, 400, 23, 901, 5], [3, 999, 42, 7, 8]]
        with worker(checkpoint=os.path.join(GOLDEN, "preln")) as w:
            runs = {}
            for seed in (1, 1, 2):
                case = harness.case(batch_size=2, samples_per_prompt=2, prompt_length=5, response_length=12,
                                    seed=seed, do_sample=True, temperature=1.5, top_k=50, top_p=0.95)
                tokens = run_case(w, case, prompts)[0]["tokens"]
                self.assertEqual([len(r) for r in tokens], [12] * 4)
                self.assertTrue(all(0 <= t < 1000 for r in tokens for t in r))
                runs.setdefault(seed, []).append(tokens)
            self.assertEqual(runs[1][0], runs[1][1])
            self.assertNotEqual(runs[1][0], runs[2][0])

    def test_dtypes_and_refusals(self):
        with worker(checkpoint=os.path.join(GOLDEN, "preln")) as w:
            dtypes = w.request("describe")["dtypes"]
            self.assertIn("float32", dtypes)
            prompts = [[17, 400, 23]]
            r = w.call("begin_case", case=harness.case(prompt_length=3, dtype="bfloat16"), prompt_ids=prompts)
            if "bfloat16" in dtypes:
                self.assertTrue(r["ok"], r)
                tokens = w.request("generate", iteration=0, warmup=True)["tokens"]
                self.assertEqual([len(t) for t in tokens], [4])
            else:
                self.assertEqual(r["error"]["code"], "unsupported", r)
                self.assertIn("bfloat16", r["error"]["message"])
            w.request("end_case")
            r = w.call("begin_case", case=harness.case(prompt_length=3, dtype="float64"), prompt_ids=prompts)
            self.assertEqual(r["error"]["code"], "unsupported", r)
            w.request("end_case")
            r = w.call("begin_case", case=harness.case(prompt_length=3, response_length=62), prompt_ids=prompts)
            self.assertEqual(r["error"]["code"], "infeasible", r)
            w.request("end_case")
            r = w.call("begin_case", case=harness.case(prompt_length=3), prompt_ids=[[17, 1000, 3]])
            self.assertEqual(r["error"]["code"], "infeasible", r)
            w.request("end_case")
            self.assertEqual(w.shutdown(), 0)

    def test_builtin_shape(self):
        if ENGINE != "transformers":
            self.skipTest("converting a 125m shape takes too long for CI")
        with worker(model="125m", weights_seed=3) as w:
            d = w.request("describe")
            self.assertEqual((d["parameters"], d["vocab_size"]), (125239296, 50272))
            case = harness.case(batch_size=1, samples_per_prompt=2, prompt_length=8, response_length=4,
                                dtype="bfloat16")
            prompts = [[2, 100, 200, 300, 400, 500, 600, 700]]
            got = run_case(w, case, prompts)[0]
            self.assertEqual([len(t) for t in got["tokens"]], [4, 4])
            self.check_profile(got["profile"], 2, 4, prompts)
            self.assertEqual(w.shutdown(), 0)


class TestLlamaFamily(unittest.TestCase):
    """The Llama family on tiny checkpoints (the module doc)."""

    @classmethod
    def setUpClass(cls):
        cls.ckpt = {}
        for kind in ("qwen2", "llama", "mistral", "llama3"):
            d = os.path.join(WORK, "tiny-" + kind)
            if not os.path.isfile(os.path.join(d, "model.safetensors")):
                subprocess.run([PYTHON, TINY, kind, d], check=True, capture_output=True, timeout=600)
            cls.ckpt[kind] = d

    def reference(self, kind, prompts, S, R):
        p = subprocess.run([PYTHON, "-c", REFERENCE, self.ckpt[kind], json.dumps(prompts), str(S), str(R)],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def kinds(self):
        return ("qwen2", "llama", "mistral") + (("llama3",) if ENGINE == "transformers" else ())

    def test_greedy_tokens_equal_transformers(self):
        prompts = [[17, 400, 23, 91, 5], [3, 99, 42], [250, 251, 252, 253, 254, 255, 256, 257]]
        S, R = 2, 20
        for kind in self.kinds():
            with self.subTest(kind=kind):
                want = self.reference(kind, prompts, S, R)
                with worker(checkpoint=self.ckpt[kind]) as w:
                    d = w.request("describe")
                    self.assertEqual((d["model_family"], d["parameters"], d["vocab_size"], d["max_positions"]),
                                     ("llama", want["parameters"], 512, 256))
                    case = harness.case(batch_size=3, samples_per_prompt=S, prompt_length=8, response_length=R)
                    got = run_case(w, case, prompts)[0]
                    self.assertEqual(got["tokens"], want["tokens"])
                    self.check_profile(got["profile"], 3 * S, R, prompts)
                    self.assertEqual(w.shutdown(), 0)

    check_profile = TestAdapter.check_profile

    def benchctl(self, name, settings, matrix):
        """benchctl run with the worker backend on ENGINE -> (process, report
        or None, saved token rows or None)."""
        tokens, report = os.path.join(WORK, name + "_tokens.txt"), os.path.join(WORK, name + ".json")
        for f in (tokens, report):
            if os.path.exists(f):
                os.remove(f)
        cfg = os.path.join(WORK, name + ".cfg")
        extra = "".join(' %s = "%s";' % kv if isinstance(kv[1], str) else " %s = %d;" % kv for kv in settings.items())
        with open(cfg, "w") as f:
            f.write('backend = { name = "worker"; settings = { command = "%s -m benchctl_worker %s"; '
                    'env = "PYTHONPATH=%s XDG_CACHE_HOME=%s OMP_NUM_THREADS=2"; threads = 2;'
                    ' save_tokens = "%s";%s }; };\n'
                    % (PYTHON, ENGINE, WORKER_PY, os.path.join(WORK, "cache"), tokens, extra))
            f.write('precisions = [ "fp32" ];\ncache_policies = [ "retain" ];\nmatrix = { %s };\n'
                    'sampling = { temperature = 0.0; top_p = 1.0; top_k = 0; seed = 1234; };\n'
                    'run = { warmup = 0; iterations = 1; };\n'
                    'reporters = ( { name = "json"; settings = { path = "%s"; }; } );\n' % (matrix, report))
        p = subprocess.run([BENCHCTL, "run", cfg], capture_output=True, text=True, cwd=WORK, timeout=900,
                           env=dict(os.environ, BENCHCTL_PLUGIN_PATH=""))
        rep = None
        if os.path.exists(report):
            with open(report) as f:
                rep = json.load(f)
        rows = None
        if os.path.exists(tokens):
            with open(tokens) as f:
                rows = [[int(t) for t in line.split()] for line in f if line.strip()]
        return p, rep, rows

    def test_through_benchctl(self):
        B, S, Tp, R = 2, 2, 6, 12
        matrix = "batch_sizes = [%d]; samples_per_prompt = [%d]; prompt_lengths = [%d]; response_lengths = [%d];" % (
            B, S, Tp, R)
        for kind in ("qwen2", "llama"):
            with self.subTest(kind=kind):
                prompts = [synthetic_prompt(1234, b, 512, Tp) for b in range(B)]
                want = self.reference(kind, prompts, S, R)
                p, rep, rows = self.benchctl("bench_" + kind, {"checkpoint": self.ckpt[kind]}, matrix)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(rows, want["tokens"])
                shape = rep["model_shape"]
                self.assertEqual((shape["family"], shape["parameters"], shape["vocab_size"], shape["layers"],
                                  shape["hidden_size"], shape["heads"], shape["ffn_size"], shape["max_positions"]),
                                 ("llama", want["parameters"], 512, 2, 64, 4, 96, 256))
                self.assertIn("(%s)" % kind, rep["model"])
                self.assertEqual(rep["cases"][0]["profiles"][0]["num_generated_tokens"], B * S * R)

    def test_a_family_the_worker_cannot_convert_is_refused(self):
        with harness.Worker(harness.worker_command(PYTHON, ENGINE), timeout_s=120) as w:
            r = w.call("configure", settings={"checkpoint": self.ckpt["llama3"]})
            if ENGINE == "ctranslate2":
                self.assertEqual(r["error"]["code"], "setting", r)
                self.assertEqual(r["error"]["message"], "setting checkpoint: RoPE scaling \"llama3\": CTranslate2's "
                                 "converter drops it (its tokens would be the unscaled model's); the transformers "
                                 "worker runs it")
                r = w.call("configure", settings={"model": "llama-3.2-1b"})
                self.assertIn("setting model: llama-3.2-1b: RoPE scaling \"llama3\"", r["error"]["message"])
            else:
                self.assertTrue(r["ok"], r)
            self.assertEqual(w.shutdown(), 0)
        if ENGINE != "ctranslate2":
            return
        p, rep, rows = self.benchctl("refused", {"checkpoint": self.ckpt["llama3"]},
                                     "batch_sizes = [1]; samples_per_prompt = [1]; prompt_lengths = [4]; "
                                     "response_lengths = [2];")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("RoPE scaling \"llama3\": CTranslate2's converter drops it", p.stderr)
        self.assertIsNone(rows)

    def test_builtin_shape(self):
        if ENGINE != "transformers":
            self.skipTest("converting a 0.5b shape takes too long for CI")
        p = subprocess.run([PYTHON, "-c", META_COUNT, WORKER_PY], capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        counts = json.loads(p.stdout)
        for name, n in counts.items():
            d = models_describe(name)
            self.assertEqual(d["parameters"], n, name)
        Tp, R = 4, 3
        p, rep, rows = self.benchctl("preset", {"model": "qwen2.5-0.5b"},
                                     "batch_sizes = [1]; samples_per_prompt = [2]; prompt_lengths = [%d]; "
                                     "response_lengths = [%d];" % (Tp, R))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(rep["model_shape"]["vocab_size"], 151936)
        self.assertEqual(rep["model_shape"]["parameters"], counts["qwen2.5-0.5b"])
        self.assertEqual([len(r) for r in rows], [R, R])
        self.assertTrue(all(0 <= t < 151936 for r in rows for t in r))
        self.assertEqual(rows[0], rows[1])  # greedy: both samples of the prompt

    def test_peers_qwen2_cfg(self):
        """configs/peers-qwen2.cfg itself on the tiny Qwen2 checkpoint, the
        matrix cut down: the native llama engine and both workers run, and
        their greedy tokens agree."""
        if ENGINE != "transformers":
            self.skipTest("runs both workers: once, in pyworker_transformers")
        out = os.path.join(WORK, "peers_qwen2")
        os.makedirs(out, exist_ok=True)
        backends = ("native", "transformers", "ctranslate2")  # backends.[0], [1], [2] of the config
        for i in range(len(backends)):  # no token file of an earlier run stands in for this one's
            if os.path.exists(os.path.join(out, "tokens_%d.txt" % i)):
                os.remove(os.path.join(out, "tokens_%d.txt" % i))
        sets = []
        for i in range(len(backends)):
            sets += ["--set", 'backends.[%d].settings.checkpoint="%s"' % (i, self.ckpt["qwen2"]),
                     "--set", 'backends.[%d].settings.save_tokens="%s/tokens_{case}.txt"' % (i, out)]
        sets += ["--set", 'backends.[2].settings.cache_dir="%s"' % os.path.join(WORK, "cache", "benchctl", "ct2")]
        sets += ["--set", "matrix.batch_sizes=[2]", "--set", "matrix.samples_per_prompt=[2]",
                 "--set", "matrix.prompt_lengths=[8]", "--set", "matrix.response_lengths=[10]",
                 "--set", "run.iterations=1", "--set", "run.warmup=0",
                 "--set", 'reporters=({name="json"; settings={path="%s/report.json";};})' % out]
        env = dict(os.environ, BENCHCTL_PLUGIN_PATH="", OMP_NUM_THREADS="2")
        p = subprocess.run([BENCHCTL, "run", os.path.join(SRC, "configs", "peers-qwen2.cfg")] + sets,
                           capture_output=True, text=True, cwd=SRC, timeout=900, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
        # the backend is the outermost axis: case i is backends.[i]'s one case
        self.assertEqual([c["backend"] for c in rep["cases"]], list(backends))
        rows = []
        for case in range(len(backends)):
            with open(os.path.join(out, "tokens_%d.txt" % case)) as f:
                rows.append([[int(t) for t in line.split()] for line in f if line.strip()])
        self.assertEqual([len(r) for r in rows[0]], [10] * 4)
        for case in (1, 2):
            self.assertEqual(rows[case], rows[0], "%s's tokens against %s's" % (backends[case], backends[0]))


def models_describe(name):
    sys.path.insert(0, WORKER_PY)
    from benchctl_worker import models
    return models.describe_reply(models.resolve_model({"model": name, "checkpoint": "", "weights_seed": 0}, "x"), [])


def main():
    global ENGINE, BENCHCTL, WORK, PYTHON
    if len(sys.argv) < 4 or sys.argv[1] not in ("transformers", "ctranslate2"):
        print("usage: test_adapters.py {transformers,ctranslate2} BENCHCTL WORK_DIR [unittest args]")
        return 2
    ENGINE, BENCHCTL, WORK = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    PYTHON = peers_python()
    if PYTHON is None:
        return 77
    os.makedirs(WORK, exist_ok=True)
    prog = unittest.main(argv=[sys.argv[0]] + sys.argv[4:], exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
