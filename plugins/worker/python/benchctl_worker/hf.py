"""hf.py: the `transformers` engine: Hugging Face transformers' `generate` on
the model a checkpoint names (AutoModelForCausalLM: OPT, Llama, Qwen2,
Mistral; models.MODEL_TYPES) or on a built-in shape with random weights.

One rollout, as benchctl's native engine does it:
  prompt expansion  each prompt row repeated samples_per_prompt times, grouped
                    by prompt (p0s0, p0s1, ...), with its attention mask
                    (greedy generate refuses num_return_sequences > 1, so the
                    rows are expanded here, as generate would);
  generation        model.generate(min_new_tokens = max_new_tokens =
                    response_length: EOS is suppressed until the length),
                    greedy or sampled, under torch.inference_mode();
  post processing   the attention mask over prompt + response and the
                    response slice.
Prefill and decode are told apart by hooks on the model's forward: the first
call is the prefill, every later one a decode step. On a GPU every time is
taken with CUDA events and the peak memory is torch.cuda.max_memory_allocated;
on the CPU the times are perf_counter and the peak is the process's peak RSS.
"""

import gc
import os
import sys
import time

from . import models
from .protocol import Engine, WorkerError, setting


class Clock:
    """Marks on one timeline: perf_counter on the CPU, CUDA events on a GPU
    (recorded on the current stream, read after one synchronize)."""

    def __init__(self, torch, cuda):
        self.torch, self.cuda = torch, cuda

    def mark(self):
        if self.cuda:
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def ms(self, a, b):
        """Milliseconds from mark a to mark b (after sync())."""
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3


class ForwardMarks:
    """Marks the start and end of every forward call of a module."""

    def __init__(self, module, clock):
        self.clock = clock
        self.starts, self.ends = [], []
        self._hooks = [module.register_forward_pre_hook(lambda *_: self.starts.append(clock.mark())),
                       module.register_forward_hook(lambda *_: self.ends.append(clock.mark()))]

    def clear(self):
        self.starts.clear()
        self.ends.clear()

    def remove(self):
        for h in self._hooks:
            h.remove()


def torch_dtype(torch, name):
    if name not in models.TORCH_DTYPES:
        raise WorkerError("unsupported", "dtype %s: this engine runs %s" % (name, ", ".join(models.TORCH_DTYPES)))
    return getattr(torch, models.TORCH_DTYPES[name])


def build_model(torch, transformers, model, dtype, device, attention):
    """The models.Model's transformers model, in dtype, on device, in eval
    mode: the checkpoint's class (AutoModelForCausalLM), or the built-in
    shape's config with random weights seeded by weights_seed."""
    if model.checkpoint:
        m = transformers.AutoModelForCausalLM.from_pretrained(model.checkpoint, dtype=dtype,
                                                              attn_implementation=attention)
    else:
        m = random_model(torch, transformers, model, dtype, attention)
    return m.to(device).eval()


def random_model(torch, transformers, model, dtype, attention):
    """A built-in shape's model with transformers' own random initialisation,
    seeded (weights_seed)."""
    kw = dict(model.config)
    cfg = transformers.AutoConfig.for_model(kw.pop("model_type"), **kw)
    torch.manual_seed(model.seed)
    return transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=attention)


class TorchRollout:
    """One case's rollouts through `generate_fn(**kwargs)` of a transformers
    model (or of an engine that wraps one), timed as the module doc says.
    `module` is what the forward hooks go on."""

    def __init__(self, torch, module, generate_fn, case, prompt_ids, device, pad_id):
        self.torch, self.case, self.device = torch, case, device
        self.generate_fn = generate_fn
        self.cuda = device.startswith("cuda")
        self.clock = Clock(torch, self.cuda)
        self.marks = ForwardMarks(module, self.clock)
        ids, mask = models.left_pad(prompt_ids, pad_id)
        self.prompt_ids = torch.tensor(ids, dtype=torch.long, device=device)      # [B, Tp]
        self.prompt_mask = torch.tensor(mask, dtype=torch.long, device=device)    # [B, Tp]
        self.pad_id = pad_id
        torch.manual_seed(case["seed"])
        if self.cuda:
            torch.cuda.manual_seed_all(case["seed"])
            torch.cuda.reset_peak_memory_stats()
        else:
            models.reset_peak_rss()  # the peak is since begin_case

    def gen_kwargs(self):
        c = self.case
        kw = dict(max_new_tokens=c["response_length"], min_new_tokens=c["response_length"], use_cache=True,
                  pad_token_id=self.pad_id, num_beams=1, do_sample=c["do_sample"])
        if c["do_sample"]:
            # top_k 0 is off for transformers too (None would take its default, 50)
            kw.update(temperature=c["temperature"], top_k=c["top_k"], top_p=c["top_p"])
        return kw

    def run(self):
        """One rollout -> (profile kwargs, token rows [B*S][R] or None)."""
        torch, c, clock = self.torch, self.case, self.clock
        S, R = c["samples_per_prompt"], c["response_length"]
        self.marks.clear()
        with torch.inference_mode():
            m0 = clock.mark()
            ids = self.prompt_ids.repeat_interleave(S, dim=0)     # [B*S, Tp]
            mask = self.prompt_mask.repeat_interleave(S, dim=0)   # [B*S, Tp]
            m1 = clock.mark()
            out = self.generate_fn(input_ids=ids, attention_mask=mask, **self.gen_kwargs())  # [B*S, Tp+R]
            m2 = clock.mark()
            Tp = ids.shape[1]
            response = out[:, Tp:]                                # [B*S, R]
            full_mask = torch.cat([mask, torch.ones_like(response)], dim=1)  # [B*S, Tp+R]
            m3 = clock.mark()
        clock.sync()
        del full_mask
        n_fwd = len(self.marks.starts)
        if response.shape[1] != R or n_fwd != R or len(self.marks.ends) != R:
            raise WorkerError("internal", "generate made %d tokens in %d forwards, wanted %d"
                              % (response.shape[1], n_fwd, R))
        starts, ends = self.marks.starts, self.marks.ends
        fwd_ms = [clock.ms(s, e) for s, e in zip(starts, ends)]
        # step k (k >= 1) runs from the start of forward k to the start of the
        # next (the end of generate for the last): forward + token pick.
        step_ms = [clock.ms(starts[k], starts[k + 1] if k + 1 < R else m2) for k in range(1, R)]
        first_token = starts[1] if R > 1 else m2
        expand_ms = clock.ms(m0, m1)
        if self.cuda:
            peak = torch.cuda.max_memory_allocated()
        else:
            peak = models.peak_rss_bytes()
        prof = dict(
            prompt_expansion_ms=expand_ms, generation_ms=clock.ms(m1, m2), post_processing_ms=clock.ms(m2, m3),
            prefill_forward_ms=fwd_ms[0], decode_forward_ms=sum(fwd_ms[1:]), num_decode_forwards=R - 1,
            num_generated_tokens=response.shape[0] * R, time_to_first_token_ms=expand_ms + clock.ms(m1, first_token),
            decode_step_ms=step_ms, peak_memory_bytes=peak)
        tokens = response.tolist() if c["return_tokens"] else None
        return prof, tokens

    def close(self):
        self.marks.remove()


def free_memory(torch, cuda):
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()


class TransformersEngine(Engine):
    name = "transformers"

    def __init__(self):
        self.values = None
        self.model = self.model_key = None
        self.rollout = None

    def settings_table(self):
        return models.model_settings() + [
            setting("attention", "string", "sdpa", "transformers' attention implementation",
                    choices=["sdpa", "eager"]),
        ]

    def engine_version(self):
        return models.package_version("transformers") or "not installed"

    def configure(self, values):
        self.info = models.resolve_model(values, self.name)
        self.values = values
        self.model = self.model_key = None

    def _import(self):
        models.require_packages("transformers", ["torch", "transformers"])
        import torch
        import transformers
        transformers.logging.set_verbosity_error()
        if self.values["threads"] > 0:
            torch.set_num_threads(self.values["threads"])
        if self.values["device"] == "cuda" and not torch.cuda.is_available():
            raise WorkerError("unsupported", "device cuda: torch %s sees no CUDA GPU" % torch.__version__)
        return torch, transformers

    def describe(self):
        return models.describe_reply(self.info, models.TORCH_DTYPES)

    def begin_case(self, case, prompt_ids):
        torch, transformers = self._import()
        dtype = torch_dtype(torch, case["dtype"])
        models.check_case_fits(case, prompt_ids, self.info.shape)
        module, generate_fn = self._prepare(torch, transformers, case, dtype)
        self.rollout = TorchRollout(torch, module, generate_fn, case, prompt_ids, self.values["device"],
                                    self.info.shape["pad_id"])

    def _prepare(self, torch, transformers, case, dtype):
        """The case's model, built once per dtype -> (the module the forward
        hooks go on, the generate function)."""
        device = self.values["device"]
        if self.model_key != case["dtype"]:
            self.model = None
            free_memory(torch, device.startswith("cuda"))
            self.model = build_model(torch, transformers, self.info, dtype, device, self.values["attention"])
            self.model_key = case["dtype"]
        return self.model, self.model.generate

    def generate(self, iteration, warmup):
        return self.rollout.run()

    def release_cache(self):
        import torch
        free_memory(torch, self.values["device"].startswith("cuda"))

    def end_case(self):
        if self.rollout:
            self.rollout.close()
            self.rollout = None

    def close(self):
        self.end_case()
        self.model = None
