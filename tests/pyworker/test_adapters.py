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
Exit status 0 when all pass, 1 otherwise, 77 when the environment is missing.
"""

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
