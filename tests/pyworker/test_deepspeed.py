"""test_deepspeed.py: the deepspeed worker (DeepSpeed's HybridEngineRollout)
end to end on the CPU, in the peers' environment (tools/peers-venv; skipped,
exit 77, without it), on a tiny random Qwen2 checkpoint the test makes
(make_qwen2.py).

    test_deepspeed.py BENCHCTL WORK_DIR [unittest args]

Checks:
  - greedy float32 tokens equal Hugging Face transformers' generate tokens on
    the same checkpoint and prompts (left-padded prompts of different lengths,
    2 samples each), and the transformers worker's when it runs the checkpoint;
  - tools/bench/deepspeed-qwen2.cfg, cut down to one fp32 case on the tiny
    checkpoint: the native llama engine's, the transformers worker's and the
    deepspeed worker's greedy tokens equal, in one benchctl run;
  - the device: describe's is the configured one, the report's too, and
    device cuda is refused in one line when torch sees no GPU;
  - every field of DeepSpeed's profile arrives in the generate reply (under
    the name of the metric the hello declares for it, deepspeed_<name> where
    benchctl's name means something else), finite and consistent with the
    case and with what the adapter measured around the call;
  - through `benchctl run` (worker backend, retain and release cache
    policies): the run's JSON holds DeepSpeed's stage times and forwards for
    every case, and its declared metrics with their descriptors, the release case has its cache hooks timed and its engine
    built with release_inference_cache, the tokens are the reference's;
  - shared prefill, graph capture and continuous batching are refused on the
    CPU with their lines; an OPT checkpoint is refused before the first case
    with the line that names qwen2.
Exit status 0 when all pass, 1 otherwise, 77 when the environment is missing.
"""

import json
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "plugins", "worker", "python"))

import harness  # noqa: E402
from benchctl_worker import ds, protocol  # noqa: E402  (standard library only at import)

BENCHCTL = WORK = PYTHON = CKPT = None
PROMPTS = [[17, 400, 23, 901, 5], [3, 999, 42], [250, 251, 252, 253, 254, 255, 256, 257]]
S, R = 2, 6

# The reference: transformers' greedy generate with the length forced, rows
# expanded as the workers expand them; prints the response rows as JSON.
REFERENCE = r"""
import json, sys, torch, transformers
ckpt, prompts, S, R = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(2)
m = transformers.AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32, attn_implementation="sdpa").eval()
pad = m.config.pad_token_id
w = max(map(len, prompts))
ids = torch.tensor([[pad] * (w - len(p)) + p for p in prompts]).repeat_interleave(S, 0)
mask = torch.tensor([[0] * (w - len(p)) + [1] * len(p) for p in prompts]).repeat_interleave(S, 0)
with torch.inference_mode():
    out = m.generate(input_ids=ids, attention_mask=mask, max_new_tokens=R, min_new_tokens=R, do_sample=False,
                     pad_token_id=pad, num_beams=1)
print(json.dumps(out[:, w:].tolist()))
"""


COMM_OP = r"""
import os, socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
import deepspeed
deepspeed.init_distributed()
"""


def peers_python():
    p = subprocess.run([os.path.join(SRC, "tools", "peers-venv"), "--check"], capture_output=True, text=True)
    if p.returncode != 0:
        print("SKIP: the peers' environment is missing or incomplete: %s" % p.stderr.strip())
        return None
    return p.stdout.strip()


def env():
    return dict(os.environ, DS_ACCELERATOR="cpu", OMP_NUM_THREADS="2", TOKENIZERS_PARALLELISM="false")


def worker(engine="deepspeed", **settings):
    w = harness.Worker(harness.worker_command(PYTHON, engine), timeout_s=900, env=env())
    w.request("configure", settings=dict({"threads": 2, "checkpoint": CKPT}, **settings))
    return w


_reference = {}


def reference(prompts=PROMPTS, samples=S, length=R):
    key = (json.dumps(prompts), samples, length)
    if key not in _reference:
        p = subprocess.run([PYTHON, "-c", REFERENCE, CKPT, json.dumps(prompts), str(samples), str(length)],
                           capture_output=True, text=True, timeout=900, env=env())
        if p.returncode != 0:
            raise RuntimeError("the reference generate failed: %s" % p.stderr[-2000:])
        _reference[key] = json.loads(p.stdout.strip().splitlines()[-1])
    return _reference[key]


def reply_name(ds_name):
    """The generate reply's key of DeepSpeed's profile field ds_name: the
    metric the hello declares for it, else its own name."""
    return ds.PROFILE_EXTRA[ds_name][0] if ds_name in ds.PROFILE_EXTRA else ds_name


DECLARED = [m[0] for m in ds.PROFILE_EXTRA.values()]
# the JSON summary holds the declared rows better higher or lower (docs/reporters.md)
SUMMARISED = [m[0] for m in ds.PROFILE_EXTRA.values() if m[2] != "neither"]


class TestDeepSpeed(unittest.TestCase):
    def check_profile(self, prof, B, samples, width, length):
        rows = B * samples
        for name in ds.DS_STATIC_FIELDS + ("rollout_call_ms", "time_to_first_token_ms", "peak_memory_bytes"):
            v = prof.get(reply_name(name))
            self.assertIsInstance(v, (int, float), name)
            self.assertTrue(v == v and v >= 0, "%s = %r" % (name, v))
        for name in set(ds.DS_CONTINUOUS_FIELDS) - set(ds.DS_STATIC_FIELDS):
            self.assertIn(reply_name(name), prof)  # null: a static batch
            self.assertIsNone(prof[reply_name(name)], name)
        for name in ds.PROFILE_EXTRA:  # a declared one only under its metric's name
            if reply_name(name) != name and name not in protocol.PROFILE_FIELDS:
                self.assertNotIn(name, prof)
        for name in ("prompt_expansion_ms", "generation_ms", "post_processing_ms"):  # and under the protocol's
            self.assertEqual(prof[name], prof[reply_name(name)], name)
        p = {k: prof[reply_name(k)] for k in ds.DS_STATIC_FIELDS + ("rollout_call_ms",)}
        self.assertEqual((p["batch_size"], p["num_samples_per_prompt"], p["prompt_length"],
                          p["response_length"]), (B, samples, width, length))
        self.assertEqual(p["num_generated_tokens"], rows * length)
        self.assertEqual(p["num_decode_forwards"], length - 1)
        self.assertEqual(len(prof["decode_step_ms"]), length - 1)
        self.assertLessEqual(p["prefill_forward_ms"] + p["decode_forward_ms"], p["generation_ms"] * 1.0001)
        self.assertLessEqual(p["prompt_expansion_ms"] + p["generation_ms"] + p["post_processing_ms"],
                             p["total_ms"] * 1.0001)
        self.assertLessEqual(p["total_ms"], p["rollout_call_ms"] + 1e-3)
        self.assertAlmostEqual(p["tokens_per_second"], rows * length / (p["total_ms"] / 1e3),
                               delta=1e-6 * p["tokens_per_second"])
        self.assertAlmostEqual(p["generation_overhead_ms"],
                               p["generation_ms"] - p["prefill_forward_ms"] - p["decode_forward_ms"],
                               delta=1e-6 * p["generation_ms"])
        self.assertGreater(prof["peak_memory_bytes"], 1 << 20)

    def test_greedy_tokens_equal_transformers(self):
        want = reference()
        width = max(map(len, PROMPTS))
        with worker() as w:
            self.assertEqual(w.hello["engine_version"], "0.19.8")
            w.request("begin_case", case=harness.case(batch_size=3, samples_per_prompt=S, prompt_length=width,
                                                      response_length=R), prompt_ids=PROMPTS)
            for i in range(2):
                got = w.request("generate", iteration=i, warmup=False)
                self.assertEqual(got["tokens"], want)
                self.check_profile(got["profile"], 3, S, width, R)
            w.request("end_case")
            self.assertEqual(w.shutdown(), 0)
        # the transformers worker, where it runs a Qwen2 checkpoint
        with harness.Worker(harness.worker_command(PYTHON, "transformers"), timeout_s=900, env=env()) as t:
            r = t.call("configure", settings={"checkpoint": CKPT, "threads": 2})
            if r["ok"]:
                r = t.call("describe")
            if not r["ok"]:
                print("transformers worker does not run the qwen2 checkpoint here (%s): compared with transformers' "
                      "generate only" % r["error"]["message"])
                return
            t.request("begin_case", case=harness.case(batch_size=3, samples_per_prompt=S, prompt_length=width,
                                                      response_length=R), prompt_ids=PROMPTS)
            self.assertEqual(t.request("generate", iteration=0, warmup=False)["tokens"], want)

    def test_sampling_is_seeded(self):
        prompts = [[17, 400, 23, 901, 5], [3, 999, 42, 7, 8]]
        with worker() as w:
            runs = {}
            for seed in (1, 1, 2):
                case = harness.case(batch_size=2, samples_per_prompt=2, prompt_length=5, response_length=8,
                                    seed=seed, do_sample=True, temperature=1.5, top_k=50, top_p=0.95)
                w.request("begin_case", case=case, prompt_ids=prompts)
                tokens = w.request("generate", iteration=0, warmup=False)["tokens"]
                w.request("end_case")
                self.assertEqual([len(r) for r in tokens], [8] * 4)
                self.assertTrue(all(0 <= t < 1000 for r in tokens for t in r))
                runs.setdefault(seed, []).append(tokens)
            self.assertEqual(runs[1][0], runs[1][1])
            self.assertNotEqual(runs[1][0], runs[2][0])

    def test_cache_release_round_trips(self):
        width = max(map(len, PROMPTS))
        with worker() as w:
            case = dict(harness.case(batch_size=3, samples_per_prompt=S, prompt_length=width, response_length=R),
                        release_cache=True)
            w.request("begin_case", case=case, prompt_ids=PROMPTS)
            first = w.request("generate", iteration=0, warmup=False)["tokens"]
            w.request("release_cache")
            w.request("acquire_cache")
            self.assertEqual(w.request("generate", iteration=1, warmup=False)["tokens"], first)
            w.request("end_case")
            self.assertEqual(w.shutdown(), 0)
        self.assertIn("release_inference_cache true", w.stderr_text())
        self.assertEqual(first, reference())

    def test_options_refused_with_their_lines(self):
        with harness.Worker(harness.worker_command(PYTHON, "deepspeed"), timeout_s=900, env=env()) as w:
            for settings, words in (({"shared_prefill": True}, "kernel-injection containers"),
                                    ({"graph_capture": True}, "CUDA graphs need device"),
                                    ({"cache_trimming": True}, "set continuous_batch_size"),
                                    ({"checkpoint": os.path.join(SRC, "tests", "opt", "golden", "preln")}, "qwen2")):
                with self.subTest(settings=settings):
                    r = w.call("configure", settings=dict({"checkpoint": CKPT}, **settings))
                    self.assertEqual(r["error"]["code"], "setting", r)
                    self.assertIn(words, r["error"]["message"])
                    self.assertNotIn("\n", r["error"]["message"])
            # continuous batching: DeepSpeed refuses sampling, several samples;
            # this DeepSpeed with this transformers cannot run it (the line says why) or runs it greedily
            w.request("configure", settings={"checkpoint": CKPT, "threads": 2, "continuous_batch_size": 2})
            r = w.call("begin_case", case=harness.case(batch_size=3, samples_per_prompt=2, prompt_length=5),
                       prompt_ids=[[5, 6, 7, 8, 9]] * 3)
            self.assertEqual(r["error"]["code"], "unsupported", r)
            self.assertIn("one sample a prompt", r["error"]["message"])
            w.request("end_case")
            r = w.call("begin_case", case=harness.case(batch_size=3, prompt_length=5), prompt_ids=[[5, 6, 7, 8, 9]] * 3)
            if r["ok"]:
                got = w.request("generate", iteration=0, warmup=False)
                self.assertEqual(got["tokens"], reference([[5, 6, 7, 8, 9]] * 3, 1, 4))
                self.assertEqual(got["profile"]["continuous_batch_size"], 2)
            else:
                self.assertEqual(r["error"]["code"], "unsupported", r)
                self.assertIn("get_query_offset", r["error"]["message"])
            w.request("end_case")
            self.assertEqual(w.shutdown(), 0)

    def run_benchctl(self, name, backend_settings, policies='"retain", "release"', batch="2", samples="1, 2"):
        cfg = os.path.join(WORK, name + ".cfg")
        settings = " ".join('%s = %s;' % (k, json.dumps(v)) for k, v in backend_settings.items())
        with open(cfg, "w") as f:
            f.write('backend = { name = "worker"; settings = { %s }; };\n' % settings)
            f.write('precisions = [ "fp32" ];\ncache_policies = [ %s ];\n'
                    'matrix = { batch_sizes = [%s]; samples_per_prompt = [%s]; prompt_lengths = [8];'
                    ' response_lengths = [%d]; };\n'
                    'sampling = { temperature = 0.0; top_p = 1.0; top_k = 0; seed = 1234; };\n'
                    'run = { warmup = 0; iterations = 1; };\n'
                    'reporters = ( { name = "json"; settings = { path = "%s"; }; } );\n'
                    % (policies, batch, samples, R, os.path.join(WORK, name + ".json")))
        return subprocess.run([BENCHCTL, "run", cfg], capture_output=True, text=True, cwd=WORK, timeout=1800,
                              env=dict(env(), BENCHCTL_PLUGIN_PATH=""))

    def ds_backend(self, **more):
        pydir = os.path.join(SRC, "plugins", "worker", "python")
        return dict({"command": "%s -m benchctl_worker deepspeed" % PYTHON, "checkpoint": CKPT, "threads": 2,
                     "timeout_s": 1500.0,
                     "env": "PYTHONPATH=%s DS_ACCELERATOR=cpu OMP_NUM_THREADS=2" % pydir,
                     "save_tokens": os.path.join(WORK, "ds_tokens_{case}.txt")}, **more)

    def test_benchctl_run_holds_deepspeeds_profile(self):
        p = self.run_benchctl("ds_run", self.ds_backend())
        self.assertEqual(p.returncode, 0, p.stderr[-4000:])
        with open(os.path.join(WORK, "ds_run.json")) as f:
            report = json.load(f)
        cases = report["cases"]
        self.assertEqual(len(cases), 4)
        for c in cases:
            with self.subTest(case=c["index"]):
                self.assertEqual(c["status"], "ok", c["message"])
                self.assertEqual(c["release_inference_cache"], c["cache_policy"] == "release")
                prof = c["profiles"][0]
                self.assertEqual((prof["batch_size"], prof["response_length"]), (2, R))
                for name in ("engine_total_ms", "prefill_forward_ms", "decode_forward_ms", "num_decode_forwards",
                             "time_to_first_token_ms", "protocol_overhead_ms", "decode_ms_per_token_p50"):
                    self.assertIsNotNone(prof.get(name), name)
                self.assertEqual(prof["num_decode_forwards"], R - 1)
                self.assertEqual(prof["num_generated_tokens"], 2 * c["samples_per_prompt"] * R)
                self.assertGreater(prof["engine_total_ms"], 0.0)
                self.assertLessEqual(prof["engine_total_ms"], prof["total_ms"])
                self.assertLessEqual(prof["prefill_forward_ms"] + prof["decode_forward_ms"], prof["total_ms"])
                if c["cache_policy"] == "release":
                    self.assertIsNotNone(prof["cache_release_ms"])
                else:
                    self.assertIsNone(prof["cache_release_ms"])
                # DeepSpeed's own figures, declared in the hello: fields of every profile and their stats
                for name in DECLARED:
                    self.assertIn(name, prof)
                    self.assertEqual(name in c["summary"], name in SUMMARISED, name)
                self.assertEqual((prof["deepspeed_batch_size"], prof["deepspeed_num_samples_per_prompt"],
                                  prof["deepspeed_response_length"]), (2, c["samples_per_prompt"], R))
                self.assertEqual(prof["deepspeed_prompt_length"], prof["prompt_length"])  # full synthetic prompts
                self.assertIsNone(prof["deepspeed_active_batch_size"])  # a static batch
                self.assertGreater(prof["deepspeed_total_ms"], 0.0)
                self.assertLessEqual(prof["engine_total_ms"], prof["deepspeed_total_ms"] * 1.0001)
                self.assertLessEqual(prof["deepspeed_total_ms"], prof["rollout_call_ms"] + 1e-3)
                self.assertLessEqual(prof["rollout_call_ms"], prof["generation_ms"])
                self.assertAlmostEqual(prof["deepspeed_tokens_per_second"],
                                       prof["num_generated_tokens"] / (prof["deepspeed_total_ms"] / 1e3),
                                       delta=1e-3 * prof["deepspeed_tokens_per_second"])
                self.assertIsNotNone(prof["deepspeed_generation_overhead_ms"])
                stages = [prof["deepspeed_%s_ms" % k] for k in ("prompt_expansion", "generation", "post_processing")]
                self.assertTrue(all(v is not None and v >= 0 for v in stages), stages)
                self.assertAlmostEqual(sum(stages), prof["engine_total_ms"], delta=1e-6 * prof["engine_total_ms"])
                self.assertLessEqual(prof["prefill_forward_ms"] + prof["decode_forward_ms"],
                                     prof["deepspeed_generation_ms"] * 1.0001)
        # the run's metric descriptors: the hello's rows, after the host's fields
        metrics = {m["name"]: m for m in report["metrics"]}
        for name, unit, better, _ in ds.PROFILE_EXTRA.values():
            self.assertEqual((metrics[name]["unit"], metrics[name]["better"], metrics[name]["scope"]),
                             (unit, better, "iteration"), name)
        self.assertEqual(report["fields"][-len(DECLARED):], DECLARED)
        ds_tokens = {}
        for c in cases:
            with open(os.path.join(WORK, "ds_tokens_%d.txt" % c["index"])) as f:
                ds_tokens[c["index"]] = [[int(t) for t in line.split()] for line in f if line.strip()]
            self.assertEqual([len(r) for r in ds_tokens[c["index"]]], [R] * (2 * c["samples_per_prompt"]))
        # the same cases on the transformers worker, where it runs a Qwen2 checkpoint: the same tokens
        with harness.Worker(harness.worker_command(PYTHON, "transformers"), timeout_s=900, env=env()) as t:
            r = t.call("configure", settings={"checkpoint": CKPT})
            if r["ok"]:
                r = t.call("describe")
        if not r["ok"]:
            print("transformers worker does not run the qwen2 checkpoint here (%s): its tokens are not compared "
                  "through benchctl" % r["error"]["message"])
            return
        hf = self.ds_backend(command="%s -m benchctl_worker transformers" % PYTHON,
                             save_tokens=os.path.join(WORK, "hf_tokens_{case}.txt"))
        p = self.run_benchctl("hf_run", hf)
        self.assertEqual(p.returncode, 0, p.stderr[-4000:])
        for c in cases:
            with open(os.path.join(WORK, "hf_tokens_%d.txt" % c["index"])) as f:
                self.assertEqual([[int(t) for t in line.split()] for line in f if line.strip()],
                                 ds_tokens[c["index"]])

    def test_bench_config_native_transformers_deepspeed_tokens_agree(self):
        """tools/bench/deepspeed-qwen2.cfg itself on the tiny Qwen2
        checkpoint, cut down to one fp32 case: the native llama engine, the
        transformers worker and the deepspeed worker in one benchctl run, with
        the same greedy tokens (each its own, saved by save_tokens), and each
        reported on the device its settings name."""
        out = os.path.join(WORK, "bench_cfg")
        os.makedirs(out, exist_ok=True)
        backends = ("native", "transformers", "deepspeed")  # backends.[0], [1], [2] of the config
        for i in range(len(backends)):  # no token file of an earlier run stands in for this one's
            if os.path.exists(os.path.join(out, "tokens_%d.txt" % i)):
                os.remove(os.path.join(out, "tokens_%d.txt" % i))
        sets = []
        for i in range(len(backends)):
            sets += ["--set", 'backends.[%d].settings.checkpoint="%s"' % (i, CKPT),
                     "--set", 'backends.[%d].settings.save_tokens="%s/tokens_{case}.txt"' % (i, out),
                     "--set", "backends.[%d].settings.threads=2" % i]
        sets += ["--set", 'precisions=["fp32"]', "--set", "matrix.batch_sizes=[2]",
                 "--set", "matrix.samples_per_prompt=[2]", "--set", "matrix.prompt_lengths=[8]",
                 "--set", "matrix.response_lengths=[10]",
                 "--set", 'reporters=({name="json"; settings={path="%s/report.json";};})' % out]
        p = subprocess.run([BENCHCTL, "run", os.path.join(SRC, "tools", "bench", "deepspeed-qwen2.cfg")] + sets,
                           capture_output=True, text=True, cwd=SRC, timeout=1800,
                           env=dict(env(), BENCHCTL_PLUGIN_PATH=""))
        self.assertEqual(p.returncode, 0, p.stderr[-4000:])
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
        # the backend is the outermost axis: case i is backends.[i]'s one case
        self.assertEqual([c["backend"] for c in rep["cases"]], list(backends))
        for c in rep["cases"]:
            self.assertEqual(c["status"], "ok", c.get("message"))
        rows = []
        for case in range(len(backends)):
            with open(os.path.join(out, "tokens_%d.txt" % case)) as f:
                rows.append([[int(t) for t in line.split()] for line in f if line.strip()])
        self.assertEqual([len(r) for r in rows[0]], [10] * 4)
        self.assertGreater(len({t for r in rows[0] for t in r}), 4)  # not one token repeated
        for case in (1, 2):
            self.assertEqual(rows[case], rows[0], "%s's tokens against %s's" % (backends[case], backends[0]))
            self.assertEqual(rep["cases"][case]["extended"]["token_agreement"], 1.0)  # the host's own check agrees
        # DeepSpeed's stage times beside benchctl's timing, in the deepspeed case only
        prof = rep["cases"][2]["profiles"][0]
        for name in ("engine_total_ms", "prefill_forward_ms", "decode_forward_ms", "deepspeed_total_ms",
                     "deepspeed_generation_overhead_ms", "rollout_call_ms"):
            self.assertIsNotNone(prof.get(name), name)
        self.assertIsNone(rep["cases"][0]["profiles"][0].get("deepspeed_total_ms"))

    def test_the_device_is_the_configured_one(self):
        """describe's reply carries the configured device (the hello, written
        before configure, has the default's): cpu here, and cuda refused at
        begin_case with one line when torch sees no GPU."""
        with harness.Worker(harness.worker_command(PYTHON, "deepspeed"), timeout_s=900, env=env()) as w:
            self.assertEqual(w.hello["device"], "cpu")
            w.request("configure", settings={"checkpoint": CKPT, "device": "cpu"})
            self.assertEqual(w.request("describe")["device"], "cpu")
            w.request("configure", settings={"checkpoint": CKPT, "device": "cuda"})
            self.assertEqual(w.request("describe")["device"], "cuda")
            r = w.call("begin_case", case=harness.case(batch_size=1, prompt_length=5), prompt_ids=[[5, 6, 7, 8, 9]])
            probe = subprocess.run([PYTHON, "-c", "import torch; print(torch.cuda.is_available())"],
                                   capture_output=True, text=True, timeout=300, env=env())
            if probe.stdout.strip() == "False":
                self.assertEqual(r["error"]["code"], "unsupported", r)
                self.assertIn("device cuda: torch", r["error"]["message"])
                self.assertIn("sees no CUDA GPU", r["error"]["message"])
                self.assertNotIn("\n", r["error"]["message"])
            w.request("end_case")
            self.assertEqual(w.shutdown(), 0)
        # through benchctl: the report's backend device is the configured one
        p = self.run_benchctl("ds_device", self.ds_backend(), policies='"retain"', samples="1")
        self.assertEqual(p.returncode, 0, p.stderr[-4000:])
        with open(os.path.join(WORK, "ds_device.json")) as f:
            report = json.load(f)
        self.assertEqual(report["cases"][0]["status"], "ok")
        self.assertEqual(report["device"], "cpu")
        if probe.stdout.strip() == "False":
            p = self.run_benchctl("ds_device_cuda", self.ds_backend(device="cuda"), policies='"retain"', samples="1")
            self.assertIn("device cuda: torch", p.stdout + p.stderr)
            path = os.path.join(WORK, "ds_device_cuda.json")
            if os.path.exists(path):
                with open(path) as f:
                    report = json.load(f)
                self.assertEqual(report["device"], "cuda")
                for c in report["cases"]:
                    self.assertNotEqual(c["status"], "ok")

    def test_shared_prefill_round_trips_on_a_gpu(self):
        """Shared prefill needs DeepSpeed's kernel-injection containers, whose
        ops are CUDA's: on a CUDA GPU, on the OPT checkpoint (a family with a
        container), greedy tokens with shared prefill equal those without,
        and the release policy is refused with it. Skipped without a GPU
        (the CPU refusal is test_options_refused_with_their_lines')."""
        probe = subprocess.run([PYTHON, "-c", "import torch; print(torch.cuda.is_available())"],
                               capture_output=True, text=True, timeout=300, env=env())
        if probe.stdout.strip() != "True":
            self.skipTest("needs a CUDA GPU torch sees (shared prefill runs on DeepSpeed's CUDA inference ops)")
        opt = os.path.join(SRC, "tests", "opt", "golden", "preln")
        prompts = [[2, 17, 400, 23, 901, 5], [2, 3, 999, 42], [2, 250, 251, 252, 253, 254, 255]]
        width = max(map(len, prompts))
        gpu_env = dict(env(), DS_ACCELERATOR="cuda")
        tokens = {}
        for shared in (False, True):
            with harness.Worker(harness.worker_command(PYTHON, "deepspeed"), timeout_s=900, env=gpu_env) as w:
                w.request("configure", settings={"checkpoint": opt, "device": "cuda", "shared_prefill": shared})
                self.assertEqual(w.request("describe")["device"], "cuda")
                case = harness.case(batch_size=3, samples_per_prompt=S, prompt_length=width, response_length=R)
                w.request("begin_case", case=case, prompt_ids=prompts)
                got = w.request("generate", iteration=0, warmup=False)
                tokens[shared] = got["tokens"]
                self.assertEqual(got["profile"]["num_generated_tokens"], 3 * S * R)
                w.request("end_case")
                if shared:
                    r = w.call("begin_case", case=dict(case, release_cache=True), prompt_ids=prompts)
                    self.assertEqual(r["error"]["code"], "unsupported", r)
                    self.assertIn("shared prefill does not support release_inference_cache", r["error"]["message"])
                    w.request("end_case")
                self.assertEqual(w.shutdown(), 0)
        self.assertEqual(tokens[True], tokens[False])
        self.assertEqual([len(r) for r in tokens[True]], [R] * (3 * S))

    def test_benchctl_refuses_opt_before_the_first_case(self):
        p = self.run_benchctl("ds_opt", self.ds_backend(checkpoint=os.path.join(SRC, "tests", "opt", "golden",
                                                                                 "preln")), policies='"retain"',
                              samples="1")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("kernel-injection container", p.stderr)
        self.assertIn("qwen2", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(WORK, "ds_opt.json")) and
                         json.load(open(os.path.join(WORK, "ds_opt.json"))).get("cases"))


def main():
    global BENCHCTL, WORK, PYTHON, CKPT
    if len(sys.argv) < 3:
        print("usage: test_deepspeed.py BENCHCTL WORK_DIR [unittest args]")
        return 2
    BENCHCTL, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    PYTHON = peers_python()
    if PYTHON is None:
        return 77
    os.makedirs(WORK, exist_ok=True)
    t0 = time.perf_counter()
    p = subprocess.run([PYTHON, os.path.join(HERE, "make_qwen2.py"), os.path.join(WORK, "qwen2-tiny")],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        print("the tiny checkpoint could not be made: %s" % p.stderr[-2000:])
        return 1
    CKPT = p.stdout.strip().splitlines()[-1]
    print("tiny qwen2 checkpoint at %s (%.1f s)" % (CKPT, time.perf_counter() - t0))
    # DeepSpeed builds its shared-memory comm op with the system compiler at
    # the first init_distributed on a machine (minutes on a loaded one; cached
    # in torch's extension directory after): done here, timed, not in a test
    t0 = time.perf_counter()
    p = subprocess.run([PYTHON, "-c", COMM_OP], capture_output=True, text=True, timeout=1500, env=env())
    if p.returncode != 0:
        print("DeepSpeed's init_distributed failed: %s" % p.stderr[-2000:])
        return 1
    print("DeepSpeed's comm op ready in %.1f s" % (time.perf_counter() - t0))
    prog = unittest.main(argv=[sys.argv[0]] + sys.argv[3:], exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
