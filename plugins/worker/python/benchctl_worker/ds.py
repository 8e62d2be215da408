"""ds.py: the `deepspeed` engine: DeepSpeed's HybridEngine rollout, as the
seed benchmark drives it, on a GPU.

The OPT model (a checkpoint or a built-in shape with random weights, as the
transformers engine builds it) is wrapped by deepspeed.initialize with the
hybrid engine enabled (inference kernels for generation, ZeRO stage 0), and
one rollout is the seed's: expand the prompts (each row repeated
samples_per_prompt times), engine.generate with forced length (EOS suppressed
until response_length), post-process (the mask over prompt + response). The
stages, the prefill/decode split (hooks on the wrapped model's forward), the
peak memory (torch.cuda.max_memory_allocated) and the tokens are measured as
in hf.py, with CUDA events, so the profile fields map one to one.

Without a CUDA GPU, or without the deepspeed package, `hello` still works and
begin_case fails with one line saying why.
"""

from . import hf, models
from .protocol import Engine, WorkerError, setting


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


class DeepSpeedEngine(Engine):
    name = "deepspeed"

    def __init__(self):
        self.values = None
        self.engine = self.engine_key = None
        self.rollout = None

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

    def configure(self, values):
        self.desc = models.check_model_settings(values)
        self.values = values
        self.engine = self.engine_key = None

    def _import(self):
        models.require_packages("deepspeed", ["torch", "transformers", "deepspeed"])
        import torch
        if not torch.cuda.is_available():
            raise WorkerError("unsupported", "deepspeed: the hybrid engine needs a CUDA GPU; torch %s sees none"
                              % torch.__version__)
        import deepspeed
        import transformers
        transformers.logging.set_verbosity_error()
        return torch, transformers, deepspeed

    def describe(self):
        return models.describe_reply(self.desc, self.values, models.TORCH_DTYPES)

    def begin_case(self, case, prompt_ids):
        torch, transformers, deepspeed = self._import()
        dtype = hf.torch_dtype(torch, case["dtype"])
        models.check_case_fits(case, prompt_ids, models.model_config(self.values))
        rows = case["batch_size"] * case["samples_per_prompt"]
        key = (case["dtype"], rows)
        if self.engine_key != key:
            self.engine = None
            hf.free_memory(torch, True)
            model = hf.build_model(torch, transformers, self.values, dtype, "cuda")
            self.engine, *_ = deepspeed.initialize(model=model, config=ds_config(case["dtype"], rows))
            self.engine.eval()
            self.engine_key = key
        module = self.engine.module
        self.rollout = hf.TorchRollout(torch, module, self.engine.generate, case, prompt_ids, "cuda",
                                       module.config.pad_token_id)

    def generate(self, iteration, warmup):
        return self.rollout.run()

    def release_cache(self):
        import torch
        hf.free_memory(torch, True)

    def end_case(self):
        if self.rollout:
            self.rollout.close()
            self.rollout = None

    def close(self):
        self.end_case()
        self.engine = None
