"""ds.py: the `deepspeed` engine: DeepSpeed's HybridEngine rollout, as the
seed benchmark drives it, on a GPU.

The model (a checkpoint or a built-in shape with random weights, as the
transformers engine builds it; DeepSpeed has kernel containers for OPT and
HF Llama, and runs plain generate inside the hybrid engine for the others) is wrapped by deepspeed.initialize with the
hybrid engine enabled (inference kernels for generation, ZeRO stage 0), and
one rollout is the seed's: expand the prompts (each row repeated
samples_per_prompt times), engine.generate with forced length (EOS suppressed
until response_length), post-process (the mask over prompt + response). The
rollout is the transformers engine's (hf.TorchRollout): stages, the
prefill/decode split (hooks on the wrapped model's forward), peak memory
(torch.cuda.max_memory_allocated) and tokens are measured the same way, with
CUDA events, so the profile fields map one to one.

Without a CUDA GPU, or without the deepspeed package, `hello` still works and
begin_case fails with one line saying why.
"""

from . import models
from .hf import TransformersEngine, build_model, free_memory
from .protocol import WorkerError, setting


def ds_config(dtype_name, batch_rows):
    """The DeepSpeed config of a generation-only hybrid engine."""
    return {
        "train_batch_size": batch_rows,
        "train_micro_batch_size_per_gpu": batch_rows,
        "zero_optimization": {"stage": 0},
        "bf16": {"enabled": dtype_name == "bfloat16"},
        "fp16": {"enabled": dtype_name == "float16"},
        "hybrid_engine": {"enabled": True, "max_out_tokens": 4096, "inference_tp_size": 1,
                          "release_inference_cache": False, "pin_parameters": True, "tp_gather_partition_size": 8},
        "steps_per_print": 1 << 30,
        "wall_clock_breakdown": False,
    }


class DeepSpeedEngine(TransformersEngine):
    name = "deepspeed"

    def settings_table(self):
        table = models.model_settings(device_choices=("cuda",))
        for d in table:
            if d["name"] == "device":
                d["default"] = "cuda"
        return table + [setting("attention", "string", "eager", "transformers' attention implementation of the "
                                "wrapped model", choices=["eager", "sdpa"])]

    def engine_version(self):
        return models.package_version("deepspeed") or "not installed"

    def device(self):
        return "cuda"

    def _import(self):
        models.require_packages("deepspeed", ["torch", "transformers", "deepspeed"])
        import torch
        if not torch.cuda.is_available():
            raise WorkerError("unsupported", "deepspeed: the hybrid engine needs a CUDA GPU; torch %s sees none"
                              % torch.__version__)
        return super()._import()

    def _prepare(self, torch, transformers, case, dtype):
        """The hybrid engine around the case's model, made once per dtype and
        row count (its batch size)."""
        import deepspeed
        rows = case["batch_size"] * case["samples_per_prompt"]
        if self.model_key != (case["dtype"], rows):
            self.model = None
            free_memory(torch, True)
            model = build_model(torch, transformers, self.info, dtype, "cuda", self.values["attention"])
            self.model, *_ = deepspeed.initialize(model=model, config=ds_config(case["dtype"], rows))
            self.model.eval()
            self.model_key = (case["dtype"], rows)
        return self.model.module, self.model.generate

