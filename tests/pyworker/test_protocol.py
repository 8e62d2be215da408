"""test_protocol.py: the worker protocol layer (plugins/worker/python/
benchctl_worker/protocol.py) with the standard library only: a fake engine
served over in-memory streams, and real worker processes for what needs one
(stdout kept for the protocol, hello of every adapter without its engine)."""

import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plugins", "worker",
                                "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchctl_worker import ds, models, protocol  # noqa: E402
from benchctl_worker.protocol import WorkerError, setting  # noqa: E402
import harness  # noqa: E402


class FakeEngine(protocol.Engine):
    name = "fake"

    def __init__(self):
        self.calls = []
        self.fail_next = None

    def settings_table(self):
        return [setting("mode", "string", "a", "a mode", choices=["a", "b"]),
                setting("n", "int", 2, "a count", min_=1, max_=8),
                setting("x", "double", 0.5, "a ratio", min_=0.0, max_=1.0),
                setting("flag", "bool", False, "a switch")]

    def engine_version(self):
        return "0.0"

    def configure(self, values):
        self.calls.append(("configure", values))

    def describe(self):
        return {"model": "fake", "parameters": 7, "dtypes": ["float32"], "vocab_size": 50}

    def begin_case(self, case, prompt_ids):
        self.calls.append(("begin_case", case["batch_size"], prompt_ids))
        if self.fail_next:
            e, self.fail_next = self.fail_next, None
            raise e

    def generate(self, iteration, warmup):
        self.calls.append(("generate", iteration, warmup))
        if self.fail_next:
            e, self.fail_next = self.fail_next, None
            raise e
        return {"generation_ms": 1.5, "num_generated_tokens": 4, "decode_step_ms": [0.5, 0.25]}, [[5, 6, 7, 8]]

    def end_case(self):
        self.calls.append(("end_case",))

    def close(self):
        self.calls.append(("close",))


def run(engine, requests):
    """Serves `requests` (dicts or raw lines) -> (status, [messages])."""
    lines = [r if isinstance(r, str) else json.dumps(r) + "\n" for r in requests]
    out = io.StringIO()
    status = protocol.serve(engine, io.StringIO("".join(lines)), out)
    return status, [json.loads(x) for x in out.getvalue().splitlines()]


def good_case(**kw):
    return harness.case(batch_size=1, prompt_length=4, **kw)


class TestProtocol(unittest.TestCase):
    def test_hello_first_and_shutdown_exits_0(self):
        e = FakeEngine()
        status, msgs = run(e, [{"op": "shutdown", "id": 1}])
        self.assertEqual(status, 0)
        hello = msgs[0]
        self.assertEqual((hello["op"], hello["protocol"], hello["engine"], hello["engine_version"], hello["device"]),
                         ("hello", 1, "fake", "0.0", "cpu"))
        self.assertEqual([s["name"] for s in hello["settings"]], ["mode", "n", "x", "flag"])
        self.assertEqual(hello["settings"][0]["choices"], ["a", "b"])
        self.assertEqual((hello["settings"][1]["min"], hello["settings"][1]["max"]), (1, 8))
        self.assertEqual(msgs[1], {"id": 1, "ok": True})
        self.assertEqual(e.calls[-1], ("close",))
        self.assertNotIn("metrics", hello)  # an engine that declares none says nothing

    def test_hello_carries_the_engines_metrics(self):
        class WithMetrics(FakeEngine):
            def metrics_table(self):
                return [{"name": "queue_depth", "unit": "requests", "better": "lower", "help": "queued", "min": 0}]
        status, msgs = run(WithMetrics(), [{"op": "shutdown", "id": 1}])
        self.assertEqual(status, 0)
        self.assertEqual(msgs[0]["metrics"], [{"name": "queue_depth", "unit": "requests", "better": "lower",
                                               "help": "queued", "min": 0}])

    def test_the_device_follows_the_setting(self):
        class WithDevice(FakeEngine):
            def settings_table(self):
                return FakeEngine.settings_table(self) + [setting("device", "string", "cpu", "where",
                                                                  choices=["cpu", "cuda"])]

            def configure(self, values):
                self.values = values

        _, msgs = run(FakeEngine(), [{"op": "describe", "id": 1}])
        self.assertEqual((msgs[0]["device"], msgs[1]["device"]), ("cpu", "cpu"))  # no device setting: cpu
        _, msgs = run(WithDevice(), [{"op": "configure", "id": 1, "settings": {"device": "cuda"}},
                                     {"op": "describe", "id": 2},
                                     {"op": "configure", "id": 3, "settings": {}}, {"op": "describe", "id": 4}])
        self.assertEqual(msgs[0]["device"], "cpu")  # the hello: before configure, the default's
        self.assertEqual((msgs[2]["device"], msgs[4]["device"]), ("cuda", "cpu"))

        class Says(WithDevice):  # an engine's own describe device stands
            def describe(self):
                return dict(FakeEngine.describe(self), device="cuda:1")

        _, msgs = run(Says(), [{"op": "describe", "id": 1}])
        self.assertEqual(msgs[1]["device"], "cuda:1")

    def test_configure_fills_defaults(self):
        e = FakeEngine()
        status, msgs = run(e, [{"op": "configure", "id": 3, "settings": {"n": 5}}, {"op": "shutdown", "id": 4}])
        self.assertEqual(msgs[1], {"id": 3, "ok": True})
        self.assertEqual(e.calls[0], ("configure", {"mode": "a", "n": 5, "x": 0.5, "flag": False}))

    def test_configure_refusals_name_the_setting(self):
        bad = [({"nope": 1}, "nope"), ({"n": "3"}, "setting n: expected int"), ({"n": True}, "setting n"),
               ({"n": 0}, "below the minimum"), ({"n": 9}, "above the maximum"), ({"mode": "c"}, "not one of"),
               ({"x": 2}, "setting x"), ({"flag": 1}, "setting flag: expected bool")]
        for settings, words in bad:
            with self.subTest(settings=settings):
                status, msgs = run(FakeEngine(), [{"op": "configure", "id": 1, "settings": settings}])
                self.assertEqual(status, 1)  # end of input before shutdown
                self.assertFalse(msgs[1]["ok"])
                self.assertEqual(msgs[1]["error"]["code"], "setting")
                self.assertIn(words, msgs[1]["error"]["message"])

    def test_case_then_generate(self):
        e = FakeEngine()
        _, msgs = run(e, [{"op": "configure", "id": 1, "settings": {}},
                          {"op": "describe", "id": 2},
                          {"op": "begin_case", "id": 3, "case": good_case(), "prompt_ids": [[4, 5, 6]]},
                          {"op": "generate", "id": 4, "iteration": 0, "warmup": True},
                          {"op": "release_cache", "id": 5}, {"op": "acquire_cache", "id": 6},
                          {"op": "end_case", "id": 7}, {"op": "shutdown", "id": 8}])
        self.assertEqual(msgs[2], {"id": 2, "ok": True, "model": "fake", "parameters": 7, "dtypes": ["float32"],
                                   "vocab_size": 50, "device": "cpu"})
        gen = msgs[4]
        self.assertEqual(gen["tokens"], [[5, 6, 7, 8]])
        self.assertEqual(set(gen["profile"]), set(protocol.PROFILE_FIELDS))
        self.assertEqual(gen["profile"]["generation_ms"], 1.5)
        self.assertEqual(gen["profile"]["decode_step_ms"], [0.5, 0.25])
        self.assertIsNone(gen["profile"]["prefill_forward_ms"])
        self.assertEqual([m["id"] for m in msgs[1:]], list(range(1, 9)))
        self.assertTrue(all(m["ok"] for m in msgs[1:]))
        self.assertIn(("generate", 0, True), e.calls)
        self.assertIn(("end_case",), e.calls)

    def test_generate_outside_a_case(self):
        _, msgs = run(FakeEngine(), [{"op": "generate", "id": 1, "iteration": 0, "warmup": False}])
        self.assertEqual(msgs[1]["error"]["code"], "internal")
        self.assertIn("outside a case", msgs[1]["error"]["message"])

    def test_bad_cases_are_refused(self):
        bad = [(dict(good_case(), batch_size=2), [[4]], "batch_size = 2 rows"),
               (dict(good_case(), prompt_length=2), [[4, 5, 6]], "prompt_ids[0]"),
               (good_case(), [[4, -1]], "prompt_ids[0]"),
               (good_case(), [[]], "prompt_ids[0]"),
               (dict(good_case(), do_sample=1), [[4]], "case.do_sample"),
               ({k: v for k, v in good_case().items() if k != "seed"}, [[4]], "no 'seed'"),
               (dict(good_case(), response_length=0), [[4]], "response_length must be >= 1")]
        for case, prompts, words in bad:
            with self.subTest(words=words):
                e = FakeEngine()
                _, msgs = run(e, [{"op": "begin_case", "id": 1, "case": case, "prompt_ids": prompts}])
                self.assertFalse(msgs[1]["ok"])
                self.assertIn(words, msgs[1]["error"]["message"])
                self.assertNotIn("begin_case", [c[0] for c in e.calls])

    def test_engine_errors_become_replies_and_the_loop_goes_on(self):
        for exc, code in [(WorkerError("unsupported", "no\nGPU here"), "unsupported"),
                          (MemoryError("big"), "out_of_memory"),
                          (type("OutOfMemoryError", (RuntimeError,), {})("CUDA out of memory"), "out_of_memory"),
                          (ZeroDivisionError("line one\nline two"), "internal")]:
            with self.subTest(code=code):
                e = FakeEngine()
                e.fail_next = exc
                status, msgs = run(e, [
                    {"op": "begin_case", "id": 1, "case": good_case(), "prompt_ids": [[4]]},
                    {"op": "begin_case", "id": 2, "case": good_case(), "prompt_ids": [[4]]},
                    {"op": "shutdown", "id": 3}])
                self.assertEqual(status, 0)
                err = msgs[1]["error"]
                self.assertEqual(err["code"], code)
                self.assertNotIn("\n", err["message"])
                self.assertTrue(msgs[2]["ok"], msgs[2])

    def test_unknown_op_is_unsupported(self):
        _, msgs = run(FakeEngine(), [{"op": "dance", "id": 9}])
        self.assertEqual(msgs[1], {"id": 9, "ok": False, "error": {"code": "unsupported",
                                                                   "message": "unknown op \"dance\""}})

    def test_garbage_line_stops_with_status_1(self):
        for line in ["not json\n", "[1,2]\n", '{"op":"describe"}\n', '{"id":1}\n']:
            with self.subTest(line=line):
                status, msgs = run(FakeEngine(), [line, {"op": "shutdown", "id": 2}])
                self.assertEqual(status, 1)
                self.assertEqual(len(msgs), 1)  # hello only: no reply to garbage, none after it

    def test_profile_refuses_unknown_and_non_finite(self):
        with self.assertRaises(ValueError):
            protocol.profile(speed=1.0)
        with self.assertRaises(ValueError):
            protocol.profile(generation_ms=float("nan"))
        with self.assertRaises(ValueError):
            protocol.profile(decode_step_ms=[1.0, float("inf")])
        with self.assertRaises(ValueError):
            protocol.profile(num_generated_tokens=True)
        self.assertIsNone(protocol.profile()["generation_ms"])

    def test_rollout_score_and_refit(self):
        """An engine with capabilities: describe lists them, a return_rollout
        case's generate replies carry the rollout, score and refit go to the
        engine's hooks; an engine without them refuses each in one line."""
        class Scorer(FakeEngine):
            def capabilities(self):
                return ["rollout", "logprobs", "score", "refit"]

            def generate(self, iteration, warmup):
                prof, tokens = FakeEngine.generate(self, iteration, warmup)
                return prof, tokens, protocol.rollout([[1, 2, 3, 4]], tokens, ["length"], [[-1.0, -2.0, -0.5, -0.25]])

            def score(self, prompt_ids, response_ids):
                self.calls.append(("score", prompt_ids, response_ids))
                return [[-0.5] * len(r) for r in response_ids]

            def refit(self):
                return {"source_bytes": 10, "engine_bytes": 5, "source": "host"}

        c = dict(good_case(), return_rollout=True)
        reqs = [{"op": "describe", "id": 1}, {"op": "begin_case", "id": 2, "case": c, "prompt_ids": [[1, 2, 3, 4]]},
                {"op": "generate", "id": 3}, {"op": "score", "id": 4, "prompt_ids": [[1, 2]], "response_ids": [[3, 4, 5]]},
                {"op": "refit", "id": 5}, {"op": "score", "id": 6, "prompt_ids": [[1]], "response_ids": [[-3]]},
                {"op": "score", "id": 7, "prompt_ids": [[1]], "response_ids": []}]
        e = Scorer()
        _, msgs = run(e, reqs)
        self.assertEqual(msgs[1]["capabilities"], ["rollout", "logprobs", "score", "refit"])
        self.assertEqual(msgs[3]["rollout"], {"prompt_ids": [[1, 2, 3, 4]], "response_ids": [[5, 6, 7, 8]],
                                              "stop": ["length"], "logprobs": [[-1.0, -2.0, -0.5, -0.25]]})
        self.assertEqual(msgs[4], {"id": 4, "ok": True, "logprobs": [[-0.5, -0.5, -0.5]]})
        self.assertIn(("score", [[1, 2]], [[3, 4, 5]]), e.calls)
        self.assertEqual(msgs[5], {"id": 5, "ok": True, "source_bytes": 10, "engine_bytes": 5, "source": "host"})
        for m in msgs[6:8]:
            self.assertEqual(m["error"]["code"], "internal")
            self.assertIn("score: ", m["error"]["message"])
        # a plain case of the same engine has no rollout; an engine without capabilities refuses
        _, msgs = run(Scorer(), reqs[:1] + [dict(reqs[1], case=good_case()), reqs[2]])
        self.assertNotIn("rollout", msgs[3])
        _, msgs = run(FakeEngine(), [reqs[0], dict(reqs[1], case=good_case())] + reqs[2:5])
        self.assertNotIn("capabilities", msgs[1])
        self.assertEqual(msgs[4]["error"], {"code": "unsupported", "message": "the fake engine has no score request"})
        self.assertEqual(msgs[5]["error"], {"code": "unsupported", "message": "the fake engine has no refit request"})
        # an engine whose score is not a log-probability: refused, not sent
        class Liar(Scorer):
            def score(self, prompt_ids, response_ids):
                return [[float("nan")] * len(r) for r in response_ids]
        _, msgs = run(Liar(), reqs[:5])
        self.assertEqual(msgs[4]["error"]["code"], "internal")
        self.assertIn("logprobs[0][0] = nan is not a log-probability", msgs[4]["error"]["message"])
        with self.assertRaises(ValueError):
            protocol.rollout([[1]], [[2]], ["length"], [[0.5]])
        with self.assertRaises(ValueError):
            protocol.rollout([[1]], [[2]], ["stopped"])

    def test_adapters_capabilities(self):
        """Without their packages (describe loads nothing): transformers lists
        all four, ctranslate2 rollout and score, the others none (their
        refusals are the C side's one line)."""
        from benchctl_worker import ct2, hf, ov
        self.assertEqual(hf.TransformersEngine().capabilities(), ["rollout", "logprobs", "score", "refit"])
        self.assertEqual(ct2.CTranslate2Engine().capabilities(), ["rollout", "score"])
        for cls in (ds.DeepSpeedEngine, ov.OpenVINOEngine):
            self.assertEqual(cls().capabilities(), [])

    def test_describe_without_the_engine(self):
        values = {"model": "350m", "checkpoint": "", "weights_seed": 0}
        d = models.describe_reply(models.resolve_model(values, "test"), ["float32"])
        self.assertEqual((d["vocab_size"], d["max_positions"], d["n_layers"], d["hidden_size"]), (50272, 2048, 24, 1024))
        self.assertEqual(d["model_family"], "opt")
        # facebook/opt-125m and opt-350m's parameter counts (lm_head tied)
        self.assertEqual(d["parameters"], 331196416)
        d = models.describe_reply(models.resolve_model(dict(values, model="125m"), "test"), [])
        self.assertEqual(d["parameters"], 125239296)

    def test_llama_family_presets(self):
        # the published parameter counts of Qwen/Qwen2.5-0.5B, Qwen/Qwen2.5-1.5B,
        # meta-llama/Llama-3.2-1B and HuggingFaceTB/SmolLM2-135M (lm_head tied)
        want = {"qwen2.5-0.5b": (494032768, 151936, 32768, 24, 896, 14, 4864),
                "qwen2.5-1.5b": (1543714304, 151936, 131072, 28, 1536, 12, 8960),
                "llama-3.2-1b": (1235814400, 128256, 131072, 16, 2048, 32, 8192),
                "smollm2-135m": (134515008, 49152, 8192, 30, 576, 9, 1536)}
        self.assertEqual(set(want), set(models.LLAMA_PRESETS))
        for name, w in want.items():
            with self.subTest(preset=name):
                m = models.resolve_model({"model": name, "checkpoint": "", "weights_seed": 0}, "test")
                d = models.describe_reply(m, ["float32"])
                self.assertEqual((d["parameters"], d["vocab_size"], d["max_positions"], d["n_layers"],
                                  d["hidden_size"], d["n_heads"], d["ffn_size"]), w)
                self.assertEqual(d["model_family"], "llama")
                self.assertIn(name, d["model"])

    def test_a_family_no_worker_runs_is_refused_in_one_line(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump({"model_type": "gpt2", "vocab_size": 50257, "n_embd": 768}, f)
            with self.assertRaises(WorkerError) as cm:
                models.resolve_model({"model": "", "checkpoint": d, "weights_seed": 0}, "transformers")
            self.assertEqual(cm.exception.code, "setting")
            self.assertEqual(cm.exception.message,
                             "setting checkpoint: %s/config.json: model_type \"gpt2\" is not a family the transformers "
                             "worker runs (it runs model_type opt, llama, qwen2, mistral)" % d)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump({"model_type": "qwen2", "vocab_size": 512, "num_hidden_layers": 2}, f)
            with self.assertRaises(WorkerError) as cm:
                models.resolve_model({"model": "", "checkpoint": d, "weights_seed": 0}, "transformers")
            self.assertIn("config.json of model_type qwen2 has no 'hidden_size'", cm.exception.message)

    def test_pad_and_eos_ids(self):
        s = models.model_shape({"model_type": "qwen2", "vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 2,
                                "num_attention_heads": 4, "intermediate_size": 96, "eos_token_id": [7, 9],
                                "pad_token_id": None}, "x", "test")
        self.assertEqual((s["pad_id"], s["eos_ids"], s["n_kv_heads"], s["head_dim"]), (7, [7, 9], 4, 16))
        v = models.Vocabulary(s)
        self.assertEqual((v.eos_tokens, v.string(0), v.string(3), len(v.get_vocab())), (["t7", "t9"], "t0", "t3", 512))
        self.assertEqual(models.rope_type({"rope_scaling": {"type": "linear"}}), "linear")
        self.assertEqual(models.rope_type({"rope_parameters": {"rope_type": "llama3"}}), "llama3")
        self.assertEqual(models.rope_type({"rope_theta": 1e6}), "default")

    def test_left_pad(self):
        self.assertEqual(models.left_pad([[5, 6], [7, 8, 9], [4]], 1),
                         ([[1, 5, 6], [7, 8, 9], [1, 1, 4]], [[0, 1, 1], [1, 1, 1], [0, 0, 1]]))

    def test_synthetic_vocabulary_round_trips(self):
        for i in (0, 1, 2, 3, 4, 50271):
            self.assertEqual(models.token_id(models.token_string(i)), i)
        self.assertEqual(models.token_string(2), "</s>")


QWEN2_CONFIG = {"model_type": "qwen2", "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128,
                "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                "max_position_embeddings": 256, "eos_token_id": 2, "pad_token_id": 0}


class TestDeepSpeedChecks(unittest.TestCase):
    """ds.py's checks that need no DeepSpeed: versions, families, profiles."""

    def test_versions_compare_by_number(self):
        self.assertEqual(ds.version_tuple("0.19.8"), (0, 19, 8))
        self.assertEqual(ds.version_tuple("0.19.10+cu121"), (0, 19, 10))
        self.assertEqual(ds.version_tuple("0.20.0rc1"), (0, 20, 0))
        self.assertGreater(ds.version_tuple("0.19.10"), ds.version_tuple("0.19.8"))

    def test_a_feature_is_refused_naming_the_version_that_has_it(self):
        for feature, first in (("shared_prefill", "0.19.6"), ("continuous_batch_size", "0.19.7"),
                               ("align_decode_fronts", "0.19.8"), ("cache_trimming", "0.19.8")):
            self.assertIsNone(ds.feature_refusal(feature, first))
            self.assertIsNone(ds.feature_refusal(feature, "0.20.1"))
            line = ds.feature_refusal(feature, "0.19.5")
            self.assertIn("DeepSpeed %s and later" % first, line)
            self.assertIn("0.19.5", line)
            self.assertIn(ds.FEATURES[feature][2], line)
        self.assertIn("0.19.7", ds.feature_refusal("align_decode_fronts", "0.19.7"))

    def test_families_with_cuda_containers_are_refused_on_the_cpu_only(self):
        for mt in ("opt", "llama"):
            line = ds.family_refusal(mt, "cpu")
            self.assertIn("qwen2", line)
            self.assertIn("CUDA", line)
            self.assertIsNone(ds.family_refusal(mt, "cuda"))
        self.assertIsNone(ds.family_refusal("qwen2", "cpu"))

    def test_deepspeeds_profile_is_checked(self):
        good = {"prompt_expansion_ms": 0.1, "generation_ms": 10.0, "prefill_forward_ms": 2.0,
                "decode_forward_ms": 7.0, "generation_overhead_ms": 1.0, "num_decode_forwards": 3,
                "post_processing_ms": 0.1, "total_ms": 10.3, "num_generated_tokens": 16, "tokens_per_second": 1553.4,
                "batch_size": 2, "num_samples_per_prompt": 2, "prompt_length": 5, "response_length": 4}
        ds.check_ds_profile(good, ds.DS_STATIC_FIELDS, {"num_generated_tokens": 16, "response_length": 4})
        for bad, words in ((dict(good, total_ms=float("nan")), "total_ms"), (dict(good, generation_ms=None),
                                                                               "generation_ms"),
                           (dict(good, decode_forward_ms=-1.0), "decode_forward_ms"),
                           (dict(good, decode_forward_ms=9.0), "exceed its generation_ms"),
                           (dict(good, total_ms=5.0), "exceed its total_ms"),
                           (dict(good, response_length=3), "the case has 4")):
            with self.assertRaises(WorkerError) as e:
                ds.check_ds_profile(bad, ds.DS_STATIC_FIELDS, {"num_generated_tokens": 16, "response_length": 4})
            self.assertIn(words, e.exception.message)
        with self.assertRaises(WorkerError):
            ds.check_ds_profile(None, ds.DS_STATIC_FIELDS, {})

    def test_an_engines_own_profile_fields_pass_and_others_do_not(self):
        p = protocol.profile(("total_ms", "rollout_call_ms"), num_generated_tokens=4, total_ms=2.5)
        self.assertEqual((p["total_ms"], p["rollout_call_ms"], p["num_generated_tokens"]), (2.5, None, 4))
        self.assertEqual(list(p)[:len(protocol.PROFILE_FIELDS)], list(protocol.PROFILE_FIELDS))
        with self.assertRaises(ValueError):
            protocol.profile((), total_ms=2.5)
        with self.assertRaises(ValueError):
            protocol.profile(("total_ms",), total_ms=float("inf"))

    def test_release_cache_is_optional_and_typed(self):
        protocol.check_case(good_case(), [[4, 5]])
        protocol.check_case(dict(good_case(), release_cache=True), [[4, 5]])
        with self.assertRaises(WorkerError):
            protocol.check_case(dict(good_case(), release_cache=1), [[4, 5]])


class TestPeersVenv(unittest.TestCase):
    """tools/peers-venv on directories it did not make: nothing is deleted."""

    TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "peers-venv")

    def run_tool(self, venv, *args):
        return subprocess.run([self.TOOL] + list(args), capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, BENCHCTL_PEERS_VENV=venv))

    def test_a_directory_it_did_not_make_is_left_alone(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "keep.txt"), "w") as f:
                f.write("mine\n")
            for args in ((), ("--check",)):
                p = self.run_tool(d, *args)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertIn(d, p.stderr)
                self.assertEqual(os.listdir(d), ["keep.txt"])

    def test_check_lists_what_an_environment_lacks(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "bin"))
            os.symlink(sys.executable, os.path.join(d, "bin", "python"))
            with open(os.path.join(d, "keep.txt"), "w") as f:
                f.write("mine\n")
            p = self.run_tool(d, "--check")
            have = models.package_version("deepspeed")
            if p.returncode == 0:  # this python has every pin
                self.assertEqual(have, "0.19.8")
                return
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("deepspeed==0.19.8 (%s)" % ("not installed" if have is None else have + " installed"),
                          p.stderr)
            self.assertIn("pip install -r", p.stderr)
            p = self.run_tool(d)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("left as it is", p.stderr)
            self.assertEqual(sorted(os.listdir(d)), ["bin", "keep.txt"])


NOISY_WORKER = r"""
import os, sys
from benchctl_worker import protocol
class Noisy(protocol.Engine):
    name = "noisy"
    def settings_table(self): return []
    def engine_version(self): print("stray print at hello"); return "1"
    def configure(self, values): os.write(1, b"native write to fd 1\n"); print("stray print")
inp, out = protocol.protocol_streams()
sys.exit(protocol.serve(Noisy(), inp, out))
"""


class TestProcesses(unittest.TestCase):
    def test_stray_output_goes_to_stderr(self):
        with harness.Worker([sys.executable, "-c", NOISY_WORKER], timeout_s=60) as w:
            self.assertEqual(w.hello["engine"], "noisy")
            w.request("configure", settings={})
            self.assertEqual(w.shutdown(), 0)
        err = w.stderr_text()
        self.assertIn("native write to fd 1", err)
        self.assertIn("stray print at hello", err)

    def test_every_adapter_says_hello_and_why_it_cannot_run(self):
        for engine in ("transformers", "ctranslate2", "openvino"):
            with self.subTest(engine=engine), harness.Worker(harness.worker_command(sys.executable, engine),
                                                              timeout_s=120) as w:
                self.assertEqual(w.hello["engine"], engine)
                names = [s["name"] for s in w.hello["settings"]]
                self.assertIn("model", names)
                self.assertIn("checkpoint", names)
                w.request("configure", settings={"model": "125m"})
                r = w.call("configure", settings={"model": "125m", "checkpoint": "/nonexistent"})
                self.assertEqual(r["error"]["code"], "setting")
                w.request("configure", settings={})
                needs = {"transformers": ["torch", "transformers"],
                         "ctranslate2": ["ctranslate2", "torch", "transformers"],
                         "openvino": ["openvino", "optimum-intel", "torch", "transformers"]}[engine]
                missing = [p for p in needs if models.package_version(p) is None]
                if engine in missing:
                    self.assertEqual(w.hello["engine_version"], "not installed")
                if missing:
                    r = w.call("begin_case", case=good_case(), prompt_ids=[[4, 5]])
                    self.assertFalse(r["ok"])
                    self.assertEqual(r["error"]["code"], "unsupported")
                    self.assertIn(missing[0], r["error"]["message"])
                self.assertEqual(w.shutdown(), 0)

    def test_deepspeed_says_hello_and_checks_its_settings_without_importing(self):
        with tempfile.TemporaryDirectory() as d:
            qwen2, opt = os.path.join(d, "qwen2"), os.path.join(d, "opt")
            for path, cfg in ((qwen2, QWEN2_CONFIG), (opt, dict(QWEN2_CONFIG, model_type="opt"))):
                os.makedirs(path)
                with open(os.path.join(path, "config.json"), "w") as f:
                    json.dump(cfg, f)
            with harness.Worker(harness.worker_command(sys.executable, "deepspeed"), timeout_s=120) as w:
                self.assertEqual(w.hello["engine"], "deepspeed")
                # DeepSpeed's own profile fields are declared metrics, none under a name the plugin reads itself
                metrics = {m["name"]: m for m in w.hello["metrics"]}
                self.assertEqual(sorted(metrics), sorted(m[0] for m in ds.PROFILE_EXTRA.values()))
                for name in ("total_ms", "tokens_per_second", "generation_overhead_ms", "batch_size",
                             "active_batch_size", "rollout_call_ms"):
                    self.assertIn(ds.PROFILE_EXTRA[name][0], metrics)
                self.assertEqual(metrics["deepspeed_total_ms"]["unit"], "ms")
                self.assertEqual(metrics["deepspeed_total_ms"]["better"], "lower")
                for m in metrics.values():
                    self.assertIn(m["better"], ("higher", "lower", "neither"))
                    self.assertEqual(m["min"], 0)
                    self.assertNotIn(m["name"], protocol.PROFILE_FIELDS + ds.PROFILE_HOST)
                self.assertEqual(w.hello["engine_version"], models.package_version("deepspeed") or "not installed")
                names = [x["name"] for x in w.hello["settings"]]
                for name in ("checkpoint", "device", "shared_prefill", "graph_capture", "continuous_batch_size",
                             "align_decode_fronts", "cache_trimming"):
                    self.assertIn(name, names)
                r = w.call("configure", settings={})
                self.assertEqual(r["error"]["code"], "setting")
                self.assertIn("checkpoint", r["error"]["message"])
                r = w.call("configure", settings={"checkpoint": opt})
                self.assertEqual(r["error"]["code"], "setting")
                self.assertIn("qwen2", r["error"]["message"])
                w.request("configure", settings={"checkpoint": opt, "device": "cuda"})  # refused only on the CPU
                r = w.call("configure", settings={"checkpoint": qwen2, "graph_capture": True})
                self.assertIn("CUDA graphs need device", r["error"]["message"])
                w.request("configure", settings={"checkpoint": qwen2})
                d_ = w.request("describe")
                self.assertEqual((d_["model_family"], d_["vocab_size"], d_["ffn_size"]), ("qwen2", 1000, 128))
                missing = [p for p in ("torch", "transformers", "deepspeed") if models.package_version(p) is None]
                if missing:
                    r = w.call("begin_case", case=good_case(), prompt_ids=[[4, 5]])
                    self.assertEqual(r["error"]["code"], "unsupported")
                    self.assertIn(missing[0], r["error"]["message"])
                self.assertEqual(w.shutdown(), 0)

    def test_describe_says_the_configured_device(self):
        """The hello, written before configure, has the device setting's
        default; describe's reply has the device of the configured settings
        (the host reports that one), for every adapter, without a GPU and
        without the engines' packages (nothing is loaded)."""
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(QWEN2_CONFIG, f)
            for engine, base in (("transformers", {"model": "125m"}), ("ctranslate2", {"model": "125m"}),
                                 ("deepspeed", {"checkpoint": d})):
                with self.subTest(engine=engine), harness.Worker(harness.worker_command(sys.executable, engine),
                                                                  timeout_s=120) as w:
                    self.assertEqual(w.hello["device"], "cpu")
                    for device in ("cuda", "cpu", "cuda"):
                        w.request("configure", settings=dict(base, device=device))
                        self.assertEqual(w.request("describe")["device"], device)
                    self.assertEqual(w.shutdown(), 0)

    def test_usage(self):
        env = dict(os.environ, PYTHONPATH=harness.PYTHON_DIR)
        p = subprocess.run([sys.executable, "-m", "benchctl_worker", "nope"], env=env, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("usage", p.stderr)
        self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    unittest.main()
