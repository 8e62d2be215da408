"""ov.py: the `openvino` engine: OpenVINO through optimum-intel's
OVModelForCausalLM on an OPT, Llama, Qwen2 or Mistral model, exported from a
locally saved checkpoint directory (from_pretrained(dir, export=True): no hub
access) or from a built-in shape with random weights (built by transformers,
seeded, saved to a temporary directory and exported from there). CPU only.

optimum-intel 2.2 pins transformers below 5.6, so this engine runs in an
environment of its own (tools/peers-venv --openvino; docs/pyworkers.md).

The case's dtype picks OpenVINO's INFERENCE_PRECISION_HINT (float32 -> f32,
bfloat16 -> bf16, float16 -> f16; a hint: a CPU without the unit computes in
f32), compiled once per dtype; `threads` (> 0) is INFERENCE_NUM_THREADS and
PERFORMANCE_HINT is LATENCY.

One rollout is transformers' generate on the OpenVINO model, timed as the
transformers engine times it (hf.TorchRollout): prompt expansion, generate
with min_new_tokens = max_new_tokens = response_length (greedy or sampled),
post processing; the first forward call is the prefill, every later one a
decode step. OVModelForCausalLM is no torch module, so its forward is wrapped
(ForwardShim) to take the marks. Peak memory is the process's peak RSS.
"""

import functools
import os
import shutil
import tempfile

from . import models
from .hf import TorchRollout, random_model
from .protocol import Engine, WorkerError, setting

DTYPE_PRECISION = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


class ForwardShim:
    """Gives an OVModelForCausalLM the two torch hook methods TorchRollout's
    ForwardMarks uses, by wrapping the instance's forward (generate calls
    it through __call__ once per step)."""

    class Handle:
        def __init__(self, hooks, fn):
            self.hooks, self.fn = hooks, fn

        def remove(self):
            if self.fn in self.hooks:
                self.hooks.remove(self.fn)

    def __init__(self, model):
        self.pre, self.post = [], []
        inner = model.forward

        @functools.wraps(inner)  # generate reads forward's signature to check its arguments
        def forward(*args, **kwargs):
            for h in list(self.pre):
                h()
            out = inner(*args, **kwargs)
            for h in list(self.post):
                h()
            return out

        model.forward = forward

    def register_forward_pre_hook(self, fn):
        self.pre.append(fn)
        return ForwardShim.Handle(self.pre, fn)

    def register_forward_hook(self, fn):
        self.post.append(fn)
        return ForwardShim.Handle(self.post, fn)


class OpenVINOEngine(Engine):
    name = "openvino"

    def __init__(self):
        self.values = None
        self.model = self.model_key = self.shim = None
        self.rollout = None

    def settings_table(self):
        return models.model_settings(device_choices=("cpu",))

    def engine_version(self):
        return models.package_version("openvino") or "not installed"

    def configure(self, values):
        self.info = models.resolve_model(values, self.name)
        self.values = values
        self.model = self.model_key = self.shim = None

    def _import(self):
        models.require_packages("openvino", ["openvino", "optimum-intel", "torch", "transformers"])
        import torch
        import transformers
        transformers.logging.set_verbosity_error()
        if self.values["threads"] > 0:
            torch.set_num_threads(self.values["threads"])
        return torch, transformers

    def describe(self):
        return models.describe_reply(self.info, DTYPE_PRECISION)

    def _ov_config(self, dtype):
        cfg = {"INFERENCE_PRECISION_HINT": DTYPE_PRECISION[dtype], "PERFORMANCE_HINT": "LATENCY", "CACHE_DIR": ""}
        if self.values["threads"] > 0:
            cfg["INFERENCE_NUM_THREADS"] = str(self.values["threads"])
        return cfg

    def _load(self, torch, transformers, dtype):
        """The model exported and compiled for dtype's precision hint."""
        from optimum.intel import OVModelForCausalLM
        work = None
        try:
            src = self.info.checkpoint
            if not src:
                work = tempfile.mkdtemp(prefix="benchctl-ov-")
                m = random_model(torch, transformers, self.info, torch.float32, "eager")
                src = os.path.join(work, "hf")
                m.save_pretrained(src)
                del m
            return OVModelForCausalLM.from_pretrained(src, export=True, device="CPU", compile=True,
                                                      ov_config=self._ov_config(dtype), local_files_only=True)
        finally:
            if work:
                shutil.rmtree(work, ignore_errors=True)

    def begin_case(self, case, prompt_ids):
        torch, transformers = self._import()
        if case["dtype"] not in DTYPE_PRECISION:
            raise WorkerError("unsupported", "dtype %s: openvino runs %s" % (case["dtype"], ", ".join(DTYPE_PRECISION)))
        models.check_case_fits(case, prompt_ids, self.info.shape)
        if self.model_key != case["dtype"]:
            self.model = self.shim = None
            self.model = self._load(torch, transformers, case["dtype"])
            self.shim = ForwardShim(self.model)
            self.model_key = case["dtype"]
        self.rollout = TorchRollout(torch, self.shim, self.model.generate, case, prompt_ids, "cpu",
                                    self.info.shape["pad_id"])

    def generate(self, iteration, warmup):
        return self.rollout.run()

    def end_case(self):
        if self.rollout:
            self.rollout.close()
            self.rollout = None

    def close(self):
        self.end_case()
        self.model = self.shim = None
