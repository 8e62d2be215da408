"""ds.py: the `deepspeed` engine: DeepSpeed's own rollout API
(deepspeed.runtime.rollout.HybridEngineRollout, profiling on) around a
Hugging Face checkpoint wrapped by DeepSpeed's hybrid engine.

Per case the model (transformers' AutoModelForCausalLM from the checkpoint) is
wrapped by deepspeed.initialize with the hybrid engine enabled (ZeRO stage 0,
the case's dtype, release_inference_cache from the case's cache policy,
max_out_tokens = prompt + response), once per (dtype, rows, prompt + response,
release); one rollout is one HybridEngineRollout.generate call: DeepSpeed
expands the prompts (each row repeated samples_per_prompt times), generates
exactly response_length tokens (it ignores EOS while generating; the tokenizer
it is handed has no eos id, so nothing is padded after one) and post-processes
(the masks). DeepSpeed's get_last_profile() is checked (every field present,
finite, in range, counts equal to the case's) and passed through under its
names benchctl gives them: its stage times and forwards as the protocol's
fields, the continuous-batching figures benchctl has under their names
(PROFILE_HOST), the others as metrics the hello declares (PROFILE_EXTRA,
deepspeed_<name> where benchctl's name means something else), next to what
this adapter measures around the same call (rollout_call_ms, decode_step_ms
and time_to_first_token_ms from forward pre-hooks, the peak memory).

Families: DeepSpeed's hybrid engine has kernel-injection containers for some
families (OPT, HF LLaMA, ...); they need DeepSpeed's CUDA inference ops, so on
the CPU (DS_ACCELERATOR=cpu) such a checkpoint is refused at configure, before
the first case. A family without a container (Qwen2) runs the model's own
generate inside the rollout, on the CPU or a GPU.

Version-dependent options are refused with a line naming the DeepSpeed
version that has them (FEATURES). hello, configure and describe import
nothing; begin_case imports torch, transformers and deepspeed (the first
deepspeed.initialize builds DeepSpeed's shared-memory comm op with the system
compiler, into torch's extension cache, once per machine).
"""

import gc
import os
import socket
import time

from . import models
from .protocol import Engine, WorkerError, log, setting

# The rollout API's options and the DeepSpeed release that has each:
# setting -> (first version, where the option lives, its name there).
FEATURES = {
    "rollout API": ("0.19.6", "deepspeed.runtime.rollout", "HybridEngineRollout"),
    "shared_prefill": ("0.19.6", "HybridEngineRolloutConfig", "use_shared_prefill"),
    "continuous_batch_size": ("0.19.7", "SamplingConfig", "continuous_batch_size"),
    "align_decode_fronts": ("0.19.8", "HybridEngineRolloutConfig", "align_decode_fronts"),
    "cache_trimming": ("0.19.8", "HybridEngineRolloutConfig", "enable_cache_trimming"),
}

# config.json model_type -> the family name of DeepSpeed's kernel-injection
# containers that need its CUDA inference ops (deepspeed.initialize fails on
# the CPU with "This op had not been implemented on CPU backend").
CUDA_OPS_FAMILIES = {"opt": "OPT", "llama": "HF LLaMA", "gpt2": "GPT-2", "gptj": "GPT-J", "gpt_neo": "GPT-Neo",
                     "gpt_neox": "GPT-NeoX", "bloom": "BLOOM"}
CPU_FAMILY = "qwen2"  # a family DeepSpeed serves without kernel injection

# DeepSpeed's profile fields that benchctl's profile (protocol.PROFILE_FIELDS)
# has no field for, and rollout_call_ms, this adapter's wall time of the
# generate call: declared in the hello as metrics (Engine.metrics_table), so
# each is a field of the run's reports. A DeepSpeed name that is already a
# field of benchctl's with another meaning (total_ms: DeepSpeed's own sum, not
# benchctl's timing of the round trip) or a key of the report's profiles
# (batch_size, ...) is declared as deepspeed_<name>. DeepSpeed's name ->
# (metric name, unit, better, help); every value is a number >= 0.
PROFILE_EXTRA = {
    # DeepSpeed's three stages: also sent under the protocol's names, whose
    # sum is the report's engine_total_ms (the report's fields of those names
    # are the host's own)
    "prompt_expansion_ms": ("deepspeed_prompt_expansion_ms", "ms", "lower",
                            "DeepSpeed's prompt expansion (each prompt repeated for its samples)"),
    "generation_ms": ("deepspeed_generation_ms", "ms", "lower", "DeepSpeed's generation stage (prefill and decode)"),
    "post_processing_ms": ("deepspeed_post_processing_ms", "ms", "lower",
                           "DeepSpeed's post-processing (the response masks)"),
    "generation_overhead_ms": ("deepspeed_generation_overhead_ms", "ms", "lower",
                               "DeepSpeed's generation_ms minus its prefill and decode forwards"),
    "total_ms": ("deepspeed_total_ms", "ms", "lower", "DeepSpeed's own total of the rollout"),
    "tokens_per_second": ("deepspeed_tokens_per_second", "tokens/s", "higher",
                          "DeepSpeed's generated tokens over its total_ms"),
    "batch_size": ("deepspeed_batch_size", "rows", "neither", "the prompts DeepSpeed saw"),
    "num_samples_per_prompt": ("deepspeed_num_samples_per_prompt", "rows", "neither",
                               "the samples per prompt DeepSpeed generated"),
    "prompt_length": ("deepspeed_prompt_length", "tokens", "neither", "the padded prompt width DeepSpeed saw"),
    "response_length": ("deepspeed_response_length", "tokens", "neither", "the response length DeepSpeed generated"),
    "active_batch_size": ("deepspeed_active_batch_size", "rows", "higher",
                          "continuous batching: DeepSpeed's active rows (its largest step's, not the mean)"),
    "rollout_call_ms": ("rollout_call_ms", "ms", "lower", "this adapter's wall time of the generate call"),
}
# DeepSpeed's continuous-batching fields that benchctl has with the same
# meaning: sent under their names, which the worker plugin reads itself
# (null for a static batch).
PROFILE_HOST = ("num_prefill_forwards", "scheduler_overhead_ms", "cache_management_overhead_ms",
                "continuous_batch_size")
# DeepSpeed's fields of a static batch and of a continuous one (get_last_profile()).
DS_STATIC_FIELDS = ("prompt_expansion_ms", "generation_ms", "prefill_forward_ms", "decode_forward_ms",
                    "generation_overhead_ms", "num_decode_forwards", "post_processing_ms", "total_ms",
                    "num_generated_tokens", "tokens_per_second", "batch_size", "num_samples_per_prompt",
                    "prompt_length", "response_length")
DS_CONTINUOUS_FIELDS = DS_STATIC_FIELDS + ("num_prefill_forwards", "scheduler_overhead_ms",
                                           "cache_management_overhead_ms", "active_batch_size",
                                           "continuous_batch_size")


def version_tuple(v):
    """"0.19.8" (or "0.19.8+abc", "0.20.0rc1") -> (0, 19, 8); unparsable parts end it."""
    out = []
    for part in str(v).split("+")[0].split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
        if len(digits) != len(part):
            break
    return tuple(out)


def feature_refusal(feature, installed):
    """None when DeepSpeed `installed` has `feature` (a FEATURES key), else
    the line that refuses it, naming the version that has it."""
    first, where, name = FEATURES[feature]
    if version_tuple(installed) >= version_tuple(first):
        return None
    return ("%s: DeepSpeed %s has no %s.%s; it is in DeepSpeed %s and later" % (feature, installed, where, name,
                                                                                first))


def family_refusal(model_type, device):
    """None when DeepSpeed runs a model_type on device, else the line saying why not."""
    if device != "cpu" or model_type not in CUDA_OPS_FAMILIES:
        return None
    return ("deepspeed on the CPU: %s (model_type %s) has a DeepSpeed kernel-injection container, which needs "
            "DeepSpeed's CUDA inference ops (deepspeed.initialize fails with \"This op had not been implemented on "
            "CPU backend\"); on the CPU run a family without one, e.g. a %s checkpoint, or set device = \"cuda\""
            % (CUDA_OPS_FAMILIES[model_type], model_type, CPU_FAMILY))


def eos_ids(cfg):
    """The config's eos ids as a list."""
    v = cfg.get("eos_token_id")
    if v is None:
        return []
    return [int(x) for x in v] if isinstance(v, list) else [int(v)]


def free_port():
    """A TCP port free on the loopback now (torch.distributed's rendezvous of a
    one-process group)."""
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


class Tokenizer:
    """What HybridEngineRollout reads of a tokenizer: pad_token_id, and
    eos_token_id None (the case's responses have exactly response_length
    tokens, so nothing is padded after an EOS)."""

    def __init__(self, pad_token_id):
        self.pad_token_id = pad_token_id
        self.eos_token_id = None


class StepMarks:
    """The start of every forward call of a module (perf_counter on the CPU,
    CUDA events on a GPU): the decode steps and the first token."""

    def __init__(self, torch, module, cuda):
        self.torch, self.cuda = torch, cuda
        self.starts = []
        self._hook = module.register_forward_pre_hook(lambda *_: self.starts.append(self.mark()))

    def mark(self):
        if self.cuda:
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def ms(self, a, b):
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3

    def remove(self):
        self._hook.remove()


def finite_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v not in (float("inf"),
                                                                                         float("-inf"))


def check_ds_profile(p, fields, want):
    """Raises WorkerError("internal") naming the first field of DeepSpeed's
    profile `p` that is missing, not finite, negative, or not equal to the
    case's value in `want` (name -> value)."""
    if not isinstance(p, dict):
        raise WorkerError("internal", "deepspeed: get_last_profile() gave %r, not a dict" % (type(p).__name__,))
    for k in fields:
        v = p.get(k)
        if not finite_number(v) or v < 0:
            raise WorkerError("internal", "deepspeed: profile field %s = %r is not a finite number >= 0" % (k, v))
    for k, v in want.items():
        if p[k] != v:
            raise WorkerError("internal", "deepspeed: profile field %s = %r, the case has %r" % (k, p[k], v))
    if "prefill_forward_ms" in fields and \
            p["prefill_forward_ms"] + p["decode_forward_ms"] > p["generation_ms"] * 1.0001 + 1e-3:
        raise WorkerError("internal", "deepspeed: profile's forwards (%.3f + %.3f ms) exceed its generation_ms "
                          "(%.3f)" % (p["prefill_forward_ms"], p["decode_forward_ms"], p["generation_ms"]))
    stages = p["prompt_expansion_ms"] + p["generation_ms"] + p["post_processing_ms"]
    if stages > p["total_ms"] * 1.0001 + 1e-3:
        raise WorkerError("internal", "deepspeed: profile's stages (%.3f ms) exceed its total_ms (%.3f)"
                          % (stages, p["total_ms"]))


class DeepSpeedEngine(Engine):
    name = "deepspeed"
    profile_extra_fields = tuple(m[0] for m in PROFILE_EXTRA.values()) + PROFILE_HOST

    def __init__(self):
        self.values = self.cfg = None
        self.ds = self.torch = None
        self.engine = self.engine_key = None
        self.case = None

    def metrics_table(self):
        return [{"name": name, "unit": unit, "better": better, "help": help_, "min": 0}
                for name, unit, better, help_ in PROFILE_EXTRA.values()]

    def settings_table(self):
        return [
            setting("checkpoint", "string", "", "Hugging Face causal-LM checkpoint directory (config.json + "
                    "weights), loaded with AutoModelForCausalLM; on the CPU a family without a DeepSpeed "
                    "kernel-injection container (%s)" % CPU_FAMILY),
            setting("device", "string", "cpu", "where the model runs (cpu: DS_ACCELERATOR=cpu)",
                    choices=["cpu", "cuda"]),
            setting("threads", "int", 0, "CPU threads (torch.set_num_threads; 0 = torch's default)", min_=0,
                    max_=1024),
            setting("attention", "string", "sdpa", "transformers' attention implementation", choices=["sdpa", "eager"]),
            setting("shared_prefill", "bool", False, "HybridEngineRolloutConfig.use_shared_prefill: one prefill a "
                    "prompt, its cache repeated for the samples (DeepSpeed >= 0.19.6; needs the kernel-injection "
                    "containers, so a CUDA GPU and a family that has one, e.g. OPT)"),
            setting("graph_capture", "bool", False, "HybridEngineRolloutConfig.use_graph_capture: greedy decode "
                    "replayed from a CUDA graph (device cuda)"),
            setting("continuous_batch_size", "int", 0, "SamplingConfig.continuous_batch_size: rows decoding at "
                    "once in DeepSpeed's continuous batching (greedy, 1 sample a prompt; DeepSpeed >= 0.19.7); "
                    "0 = a static batch", min_=0, max_=1 << 20),
            setting("align_decode_fronts", "bool", False, "HybridEngineRolloutConfig.align_decode_fronts "
                    "(continuous batching; DeepSpeed >= 0.19.8)"),
            setting("cache_trimming", "bool", False, "HybridEngineRolloutConfig.enable_cache_trimming "
                    "(continuous batching; DeepSpeed >= 0.19.8)"),
        ]

    def engine_version(self):
        return models.package_version("deepspeed") or "not installed"

    def configure(self, v):
        """Checks the checkpoint and every option against the device and the
        installed DeepSpeed; imports nothing."""
        if not v["checkpoint"]:
            raise WorkerError("setting", "setting checkpoint: the deepspeed engine runs a checkpoint directory "
                              "(config.json + weights); none given")
        cfg = models.read_checkpoint_config(v["checkpoint"])
        for key in ("model_type", "vocab_size", "max_position_embeddings", "hidden_size", "num_hidden_layers",
                    "num_attention_heads"):
            if key not in cfg:
                raise WorkerError("setting", "setting checkpoint: %s/config.json has no %s" % (v["checkpoint"], key))
        why = family_refusal(cfg["model_type"], v["device"])
        if why:
            raise WorkerError("setting", "setting checkpoint: " + why)
        installed = models.package_version("deepspeed")
        options = {"shared_prefill": v["shared_prefill"], "continuous_batch_size": v["continuous_batch_size"] > 0,
                   "align_decode_fronts": v["align_decode_fronts"], "cache_trimming": v["cache_trimming"]}
        for name, on in options.items():
            why = feature_refusal(name, installed) if on and installed else None
            if why:
                raise WorkerError("setting", "setting " + why)
        if v["graph_capture"] and v["device"] != "cuda":
            raise WorkerError("setting", "setting graph_capture: CUDA graphs need device = \"cuda\"")
        if v["shared_prefill"]:
            if v["device"] != "cuda" or cfg["model_type"] not in CUDA_OPS_FAMILIES:
                raise WorkerError("setting", "setting shared_prefill: DeepSpeed's shared prefill needs the hybrid "
                                  "engine's kernel-injection containers (device cuda and a family that has one, e.g. "
                                  "OPT); %s on %s runs the model's own generate"
                                  % (cfg["model_type"], v["device"]))
            if v["graph_capture"]:
                raise WorkerError("setting", "setting shared_prefill: DeepSpeed's shared prefill does not support "
                                  "graph_capture")
            if v["continuous_batch_size"] > 0:
                raise WorkerError("setting", "setting shared_prefill: DeepSpeed's continuous batching does not "
                                  "support shared prefill")
        if (v["align_decode_fronts"] or v["cache_trimming"]) and v["continuous_batch_size"] == 0:
            raise WorkerError("setting", "settings align_decode_fronts and cache_trimming apply to continuous "
                              "batching: set continuous_batch_size")
        if v["graph_capture"] and v["continuous_batch_size"] > 0 and (v["align_decode_fronts"] or
                                                                       v["cache_trimming"]):
            raise WorkerError("setting", "setting graph_capture: DeepSpeed's continuous CUDA graph supports neither "
                              "align_decode_fronts nor cache_trimming")
        self.values, self.cfg = v, cfg
        self.engine = self.engine_key = None

    def describe(self):
        cfg = self.cfg
        d = {"model": "checkpoint %s" % os.path.abspath(self.values["checkpoint"]),
             "dtypes": list(models.TORCH_DTYPES), "vocab_size": cfg["vocab_size"],
             "max_positions": cfg["max_position_embeddings"], "model_family": cfg["model_type"],
             "n_layers": cfg["num_hidden_layers"], "hidden_size": cfg["hidden_size"],
             "n_heads": cfg["num_attention_heads"]}
        ffn = cfg.get("intermediate_size", cfg.get("ffn_dim"))
        if isinstance(ffn, int):
            d["ffn_size"] = ffn
        if self.values["device"] == "cpu":
            d["dtypes"] = ["float32", "bfloat16"]  # DeepSpeed's CPU accelerator has no float16
        return d

    # ------------------------------------------------------------ the case

    def _import(self):
        models.require_packages("deepspeed", ["torch", "transformers", "deepspeed"])
        v = self.values
        os.environ["DS_ACCELERATOR"] = v["device"]
        # a one-process group: without these deepspeed.initialize looks for MPI
        for key, val in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")):
            os.environ.setdefault(key, val)
        os.environ.setdefault("MASTER_PORT", str(free_port()))
        import torch
        import transformers
        transformers.logging.set_verbosity_error()
        if v["threads"] > 0:
            torch.set_num_threads(v["threads"])
        if v["device"] == "cuda" and not torch.cuda.is_available():
            raise WorkerError("unsupported", "deepspeed: device cuda: torch %s sees no CUDA GPU" % torch.__version__)
        import deepspeed
        try:
            from deepspeed.runtime import rollout
            from deepspeed.runtime.rollout import hybrid_engine_rollout
        except ImportError:
            raise WorkerError("unsupported", "deepspeed " + (feature_refusal("rollout API", deepspeed.__version__) or
                                                             "%s has no deepspeed.runtime.rollout" % deepspeed.__version__))
        self.torch, self.transformers, self.ds = torch, transformers, deepspeed
        self.rollout_mod, self.her = rollout, hybrid_engine_rollout
        return torch

    def _rollout_config(self):
        v, her = self.values, self.her
        kw = {"use_graph_capture": v["graph_capture"], "enable_profiling": True}
        fields = her.HybridEngineRolloutConfig.__dataclass_fields__
        for setting_name, attr in (("shared_prefill", "use_shared_prefill"),
                                   ("align_decode_fronts", "align_decode_fronts"),
                                   ("cache_trimming", "enable_cache_trimming")):
            if v[setting_name]:
                if attr not in fields:
                    raise WorkerError("setting", "setting " + feature_refusal(setting_name, self.ds.__version__))
                kw[attr] = True
        return her.HybridEngineRolloutConfig(**kw)

    def _check_continuous(self, case, widths):
        """Refuses a case DeepSpeed's continuous batching cannot run, with its reason."""
        v = self.values
        if case["do_sample"]:
            raise WorkerError("unsupported", "deepspeed: continuous batching is greedy only (DeepSpeed %s); this "
                              "case samples" % self.ds.__version__)
        if case["samples_per_prompt"] != 1:
            raise WorkerError("unsupported", "deepspeed: continuous batching runs one sample a prompt (DeepSpeed "
                              "%s); this case has %d" % (self.ds.__version__, case["samples_per_prompt"]))
        if len(set(widths)) != 1:
            raise WorkerError("unsupported", "deepspeed: continuous batching needs prompts of one length")
        if "continuous_batch_size" not in self.rollout_mod.SamplingConfig.__dataclass_fields__:
            raise WorkerError("setting", "setting " + feature_refusal("continuous_batch_size", self.ds.__version__))
        try:
            from deepspeed.utils.static_cache import DeepSpeedStaticCache
            from transformers.cache_utils import Cache
        except ImportError as e:
            raise WorkerError("unsupported", "deepspeed: continuous batching: %s" % e)
        if hasattr(Cache, "get_query_offset") and not hasattr(DeepSpeedStaticCache, "get_query_offset"):
            raise WorkerError("unsupported", "deepspeed %s: continuous batching's DeepSpeedStaticCache has no "
                              "get_query_offset, which transformers %s's attention masks call; use a DeepSpeed "
                              "whose cache has it, or continuous_batch_size = 0"
                              % (self.ds.__version__, self.transformers.__version__))
        if v["graph_capture"] and v["device"] != "cuda":
            raise WorkerError("setting", "setting graph_capture: CUDA graphs need device = \"cuda\"")

    def _engine_for(self, case, dtype, width):
        """The hybrid engine of the case, built when its key changes."""
        torch, v = self.torch, self.values
        rows = case["batch_size"] * case["samples_per_prompt"]
        release = bool(case.get("release_cache", False))
        if release and v["shared_prefill"]:
            raise WorkerError("unsupported", "deepspeed: shared prefill does not support release_inference_cache "
                              "(the case's cache policy releases the cache)")
        key = (case["dtype"], rows, width + case["response_length"], release)
        if self.engine_key == key:
            return self.engine
        self.engine = self.engine_key = None
        gc.collect()
        model = self.transformers.AutoModelForCausalLM.from_pretrained(
            v["checkpoint"], dtype=dtype, attn_implementation=v["attention"])
        model = model.to(v["device"]).eval()
        config = {
            "train_batch_size": rows, "train_micro_batch_size_per_gpu": rows,
            "zero_optimization": {"stage": 0},
            "bf16": {"enabled": case["dtype"] == "bfloat16"}, "fp16": {"enabled": case["dtype"] == "float16"},
            "hybrid_engine": {"enabled": True, "max_out_tokens": width + case["response_length"],
                              "inference_tp_size": 1, "release_inference_cache": release,
                              "enable_cuda_graph": False},
            "steps_per_print": 1 << 30, "wall_clock_breakdown": False,
        }
        t0 = time.perf_counter()
        try:
            engine, *_ = self.ds.initialize(model=model, config=config)
        except ValueError as e:
            if "not been implemented on CPU" in str(e):
                raise WorkerError("unsupported", family_refusal(self.cfg["model_type"], "cpu") or
                                  "deepspeed on the CPU: %s: %s; run a %s checkpoint" % (
                                      self.cfg["model_type"], e, CPU_FAMILY))
            raise
        engine.eval()
        log("deepspeed %s: hybrid engine built in %.1f s (%s, dtype %s, rows %d, max_out_tokens %d, "
            "release_inference_cache %s, kernel-injection containers %d)"
            % (self.ds.__version__, time.perf_counter() - t0, type(engine).__name__, case["dtype"], rows,
               width + case["response_length"], str(release).lower(), len(getattr(engine, "_inference_containers",
                                                                                  ()))))
        self.engine, self.engine_key = engine, key
        return engine

    def begin_case(self, case, prompt_ids):
        torch = self._import()
        if case["dtype"] not in self.describe()["dtypes"]:
            raise WorkerError("unsupported", "dtype %s: deepspeed on %s runs %s" % (
                case["dtype"], self.values["device"], ", ".join(self.describe()["dtypes"])))
        dtype = getattr(torch, models.TORCH_DTYPES[case["dtype"]])
        top = max(max(r) for r in prompt_ids)
        if top >= self.cfg["vocab_size"]:
            raise WorkerError("infeasible", "prompt ids reach %d, the model's vocabulary has %d"
                              % (top, self.cfg["vocab_size"]))
        widths = [len(r) for r in prompt_ids]
        width = max(widths)
        if width + case["response_length"] > self.cfg["max_position_embeddings"]:
            raise WorkerError("infeasible", "prompt + response = %d tokens, the model has %d positions"
                              % (width + case["response_length"], self.cfg["max_position_embeddings"]))
        if self.values["continuous_batch_size"] > 0:
            self._check_continuous(case, widths)
        elif self.values["graph_capture"] and case["do_sample"]:
            log("deepspeed: graph_capture applies to greedy cases; this one samples (model.generate)")
        engine = self._engine_for(case, dtype, width)
        pad = self.cfg.get("pad_token_id")
        if pad is None:
            pad = (eos_ids(self.cfg) or [0])[0]
        ids, mask = models.left_pad(prompt_ids, pad)
        dev = self.values["device"]
        self.case = case
        self.width = width
        self.request = self.rollout_mod.RolloutRequest(torch.tensor(ids, dtype=torch.long, device=dev),
                                                       torch.tensor(mask, dtype=torch.long, device=dev))
        kw = dict(max_new_tokens=case["response_length"], n_samples_per_prompt=case["samples_per_prompt"])
        if case["do_sample"]:
            kw.update(temperature=case["temperature"], top_k=case["top_k"] if case["top_k"] > 0 else -1,
                      top_p=case["top_p"])
        else:
            kw.update(temperature=0.0)
        if self.values["continuous_batch_size"] > 0:
            kw["continuous_batch_size"] = self.values["continuous_batch_size"]
        self.sampling = self.rollout_mod.SamplingConfig(**kw)
        self.rollout = self.her.HybridEngineRollout(engine, Tokenizer(pad), self._rollout_config())
        torch.manual_seed(case["seed"])
        self.cuda = dev == "cuda"
        if self.cuda:
            torch.cuda.manual_seed_all(case["seed"])
            torch.cuda.reset_peak_memory_stats()
        else:
            models.reset_peak_rss()

    def generate(self, iteration, warmup):
        torch, c = self.torch, self.case
        B, S, R = c["batch_size"], c["samples_per_prompt"], c["response_length"]
        rows = B * S
        marks = StepMarks(torch, self.engine.module, self.cuda)
        try:
            if self.cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            m0 = marks.mark()
            out = self.rollout.generate(self.request, self.sampling)
            m1 = marks.mark()
            if self.cuda:
                torch.cuda.synchronize()
            call_ms = (time.perf_counter() - t0) * 1e3
        finally:
            marks.remove()
        p = self.rollout.get_last_profile()
        continuous = self.values["continuous_batch_size"] > 0
        graph = self.values["graph_capture"] and not c["do_sample"]
        fields = DS_CONTINUOUS_FIELDS if continuous else DS_STATIC_FIELDS
        if graph and not continuous:
            # DeepSpeed's CUDA-graph decode has no forward hooks: no forward split
            fields = tuple(k for k in fields if k not in ("prefill_forward_ms", "decode_forward_ms",
                                                          "generation_overhead_ms"))
        want = {"num_generated_tokens": rows * R, "batch_size": B, "prompt_length": self.width,
                "num_samples_per_prompt": S, "response_length": R}
        if continuous:
            want["continuous_batch_size"] = self.values["continuous_batch_size"]
        elif not graph:
            want["num_decode_forwards"] = R - 1
        check_ds_profile(p, fields, want)
        ids = out.input_ids
        if tuple(ids.shape) != (rows, self.width + R):
            raise WorkerError("internal", "deepspeed: the rollout's input_ids are %s, wanted [%d, %d]"
                              % (list(ids.shape), rows, self.width + R))
        response = ids[:, self.width:]                                    # [B*S, R]
        lo, hi = int(response.min()), int(response.max())
        if lo < 0 or hi >= self.cfg["vocab_size"]:
            raise WorkerError("internal", "deepspeed: generated ids span %d..%d, the vocabulary has %d"
                              % (lo, hi, self.cfg["vocab_size"]))
        if call_ms + 1e-3 < p["total_ms"]:
            raise WorkerError("internal", "deepspeed: its total_ms %.3f exceeds the call's %.3f ms"
                              % (p["total_ms"], call_ms))
        prof = {k: p.get(k) for k in ("prompt_expansion_ms", "generation_ms", "post_processing_ms",
                                      "prefill_forward_ms", "decode_forward_ms", "num_decode_forwards",
                                      "num_generated_tokens")}
        prof.update({m[0]: p.get(k) for k, m in PROFILE_EXTRA.items() if k != "rollout_call_ms"})
        prof.update({k: p.get(k) for k in PROFILE_HOST})
        prof[PROFILE_EXTRA["rollout_call_ms"][0]] = call_ms
        starts = marks.starts
        if not continuous and len(starts) == R:
            # step k (k >= 1): start of forward k to the start of the next
            # (the end of the call for the last): forward + token pick
            prof["decode_step_ms"] = [marks.ms(starts[k], starts[k + 1] if k + 1 < R else m1) for k in range(1, R)]
            prof["time_to_first_token_ms"] = marks.ms(m0, starts[1] if R > 1 else m1)
        prof["peak_memory_bytes"] = torch.cuda.max_memory_allocated() if self.cuda else models.peak_rss_bytes()
        tokens = response.tolist() if c["return_tokens"] else None
        return prof, tokens

    def release_cache(self):
        """The hybrid engine releases its inference workspace itself after each
        generate when the case's policy releases (release_inference_cache);
        here the collector runs and the accelerator's cache is emptied."""
        gc.collect()
        if self.ds is not None:
            from deepspeed.accelerator import get_accelerator
            get_accelerator().empty_cache()

    def end_case(self):
        self.rollout = self.request = self.case = None

    def close(self):
        self.end_case()
        self.engine = None
