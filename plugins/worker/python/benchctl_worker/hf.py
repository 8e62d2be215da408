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
call is the prefill, every later one a decode step.

Log-probabilities (TokenLogprobs): a forward hook takes log_softmax, in
float32, of the logits each forward returns (the model's raw logits at
temperature 1, before generate's processors: min_new_tokens' EOS mask,
temperature, top-k, top-p), and the next forward's pre-hook gathers the
token generate picked from them (its input_ids); the last step's from
generate's output. One step's [rows, vocab] is kept at a time. The hook runs
after the forward's end mark, so it is in the decode step times and
generation_ms, not in the forward times.

score: one forward over each row's prompt + response, the rows left-padded
to one width with their attention mask and position ids as generate makes
them (cumulative mask - 1), logits kept for the last max(response) + 1
positions only, log_softmax in float32, the response tokens gathered.

refit (refit_source): "host" keeps a CPU copy of the weights at load, in the
run's dtype (of refit_checkpoint when set, else of the model as loaded), and
refit is model.load_state_dict from it; "checkpoint" reads the safetensors
files of refit_checkpoint (else of the model's checkpoint) and loads them
into the model (the dtype conversion included). Only the load is in the
request; a GPU is synchronized before the reply. On a GPU every time is
taken with CUDA events and the peak memory is torch.cuda.max_memory_allocated;
on the CPU the times are perf_counter and the peak is the process's peak RSS.
"""

import gc
import os
import sys
import time

from . import models
from .protocol import Engine, WorkerError, rollout, setting


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


class TokenLogprobs:
    """The log-probability of each generated token under the model's raw
    logits at temperature 1, from hooks on the model's forward (the module
    doc). Per rollout: clear(), generate, finish(response) -> [rows][R]."""

    def __init__(self, torch, module):
        self.torch = torch
        self.steps, self.picked, self.pending = [], [], None
        self._hooks = [module.register_forward_pre_hook(self._pre, with_kwargs=True),
                       module.register_forward_hook(self._post)]

    def clear(self):
        self.steps, self.picked, self.pending = [], [], None

    def _pre(self, module, args, kwargs):
        if self.pending is None:
            return None
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            raise WorkerError("internal", "logprobs: a decode forward without input_ids")
        tok = ids[:, -1]
        self.picked.append(tok)
        self.steps.append(self.pending.gather(1, tok.view(-1, 1)).squeeze(1))
        self.pending = None
        return None

    def _post(self, module, args, output):
        logits = output.logits if hasattr(output, "logits") else output[0]
        self.pending = self.torch.log_softmax(logits[:, -1, :].float(), dim=-1)  # [rows, V]

    def finish(self, response):
        """response [rows, R] -> the log-probabilities [rows][R] (lists);
        checks that the tokens gathered are the response's."""
        torch = self.torch
        if self.pending is None:
            raise WorkerError("internal", "logprobs: no logits after the last forward")
        last = response[:, -1]
        self.picked.append(last)
        self.steps.append(self.pending.gather(1, last.view(-1, 1)).squeeze(1))
        self.pending = None
        picked = torch.stack(self.picked, dim=1)
        if picked.shape != response.shape or not torch.equal(picked, response):
            raise WorkerError("internal", "logprobs: the tokens the forwards were fed are not generate's output")
        lp = torch.stack(self.steps, dim=1)  # [rows, R]
        if not bool(torch.isfinite(lp).all()):
            raise WorkerError("internal", "logprobs: a non-finite log-probability")
        return lp.tolist()

    def remove(self):
        for h in self._hooks:
            h.remove()


class TorchRollout:
    """One case's rollouts through `generate_fn(**kwargs)` of a transformers
    model (or of an engine that wraps one), timed as the module doc says.
    `module` is what the forward hooks go on."""

    def __init__(self, torch, module, generate_fn, case, prompt_ids, device, pad_id, logprobs=False):
        self.torch, self.case, self.device = torch, case, device
        self.generate_fn = generate_fn
        self.cuda = device.startswith("cuda")
        self.clock = Clock(torch, self.cuda)
        self.marks = ForwardMarks(module, self.clock)
        # after the marks' hooks, so its work is outside the forward times
        self.logprobs = TokenLogprobs(torch, module) if logprobs and case.get("return_rollout") else None
        self.prompt_rows = [list(r) for r in prompt_ids]
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
        if self.logprobs:
            self.logprobs.clear()
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
        if not c.get("return_rollout"):
            return prof, tokens
        rows = response.tolist()
        lp = self.logprobs.finish(response) if self.logprobs else None
        prompts = [self.prompt_rows[r // S] for r in range(len(rows))]
        return prof, tokens, rollout(prompts, rows, ["length"] * len(rows), lp)

    def close(self):
        self.marks.remove()
        if self.logprobs:
            self.logprobs.remove()


def score_rows(torch, model, prompts, responses, pad_id, device):
    """The log-probability of each response token of each row given its
    prompt and the tokens before it: one forward (the module doc) -> a list
    of rows of floats."""
    full = [list(p) + list(q) for p, q in zip(prompts, responses)]
    ids, mask = models.left_pad(full, pad_id)
    ids = torch.tensor(ids, dtype=torch.long, device=device)    # [rows, T]
    mask = torch.tensor(mask, dtype=torch.long, device=device)  # [rows, T]
    pos = mask.cumsum(-1) - 1
    pos.masked_fill_(mask == 0, 1)                              # as generate makes them
    K = max(len(q) for q in responses) + 1
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False, logits_to_keep=K)
        logits = out.logits[:, -K:, :]                          # [rows, K, V]
        lsm = torch.log_softmax(logits.float(), dim=-1)
        T = ids.shape[1]
        rows = []
        for r, q in enumerate(responses):
            n = len(q)
            if n == 0:
                rows.append(lsm.new_empty(0))
                continue
            # response token t sits at T - n + t and is predicted at T - n - 1 + t, kept index K - n - 1 + t
            pred = lsm[r, K - n - 1:K - 1, :]                   # [n, V]
            tok = ids[r, T - n:]                                # [n]
            rows.append(pred.gather(1, tok.view(-1, 1)).squeeze(1))
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        out = [x.tolist() for x in rows]
    for r, row in enumerate(out):
        for t, v in enumerate(row):
            if not (v == v and abs(v) != float("inf")):
                raise WorkerError("internal", "score: row %d token %d: log-probability %r" % (r, t, v))
    return out


def safetensors_files(directory):
    """The checkpoint's safetensors files (one, or the shards its index
    names), in order; refuses a directory without them."""
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.isfile(index):
        import json
        with open(index) as f:
            names = sorted(set(json.load(f)["weight_map"].values()))
        return [os.path.join(directory, n) for n in names]
    single = os.path.join(directory, "model.safetensors")
    if os.path.isfile(single):
        return [single]
    raise WorkerError("setting", "refit: %s has no model.safetensors (or its index)" % directory)


def storage_groups(model):
    """The model's state-dict keys grouped by the tensor they name (tied
    weights: two names of one storage): {(data_ptr, shape): set of keys}."""
    groups = {}
    for k, v in model.state_dict().items():
        groups.setdefault((v.data_ptr(), tuple(v.shape)), set()).add(k)
    return groups


def unloaded(groups, loaded):
    """The first key of each group none of whose names was loaded."""
    return sorted(min(g) for g in groups.values() if not (g & loaded))


def load_into(torch, model, tensors, loaded, where):
    """Copies tensors (name -> tensor) into the model's weights (a key the
    model lacks refused, naming it), adding their names to loaded -> the
    bytes written, each storage once."""
    state = model.state_dict()
    unknown = [k for k in tensors if k not in state]
    if unknown:
        raise WorkerError("internal", "refit: %s has weights the model lacks: %s" % (where, ", ".join(sorted(unknown)[:5])))
    written, seen = 0, set()
    with torch.no_grad():
        for k, v in tensors.items():
            dst = state[k]
            dst.copy_(v)
            ptr = dst.data_ptr()
            if ptr not in seen:
                seen.add(ptr)
                written += dst.numel() * dst.element_size()
            loaded.add(k)
    return written


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
        self.host_copy = None

    def settings_table(self):
        return models.model_settings() + [
            setting("attention", "string", "sdpa", "transformers' attention implementation",
                    choices=["sdpa", "eager"]),
            setting("refit_source", "string", "checkpoint",
                    "where a refit request loads the weights from: checkpoint (the safetensors files, read at each "
                    "refit) or host (a CPU copy in the run's dtype, made when the model is loaded)",
                    choices=["checkpoint", "host"]),
            setting("refit_checkpoint", "string", "",
                    "the checkpoint directory of the weights a refit loads; \"\" = the model's own (checkpoint, "
                    "or for host the weights as loaded)"),
        ]

    def capabilities(self):
        return ["rollout", "logprobs", "score", "refit"]

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
                                    self.info.shape["pad_id"], logprobs=True)
        self.torch = torch

    def _prepare(self, torch, transformers, case, dtype):
        """The case's model, built once per dtype -> (the module the forward
        hooks go on, the generate function)."""
        device = self.values["device"]
        if self.model_key != case["dtype"]:
            self.model = None
            free_memory(torch, device.startswith("cuda"))
            self.host_copy = None
            self.model = build_model(torch, transformers, self.info, dtype, device, self.values["attention"])
            self.model_key = case["dtype"]
            if self.values["refit_source"] == "host":
                self.host_copy = self._host_copy(torch, dtype)
        return self.model, self.model.generate

    def _host_copy(self, torch, dtype):
        """The weights a host refit loads, in CPU memory in the run's dtype:
        refit_checkpoint's, else the model's as loaded (each storage once)."""
        src = self.values["refit_checkpoint"]
        if src:
            from safetensors.torch import load_file
            out = {}
            for f in safetensors_files(src):
                for k, v in load_file(f, device="cpu").items():
                    out[k] = v.to(dtype) if v.is_floating_point() else v
            return out
        out, seen = {}, {}
        for k, v in self.model.state_dict().items():
            key = (v.data_ptr(), v.shape)
            if key not in seen:
                seen[key] = v.detach().to("cpu", copy=True)
            out[k] = seen[key]
        return out

    def score(self, prompt_ids, response_ids):
        V = self.info.shape["vocab_size"]
        for r, (p, q) in enumerate(zip(prompt_ids, response_ids)):
            bad = [t for t in p + q if t >= V]
            if bad:
                raise WorkerError("infeasible", "score: row %d has id %d outside the vocabulary [0, %d)" % (r, bad[0], V))
            if len(p) + len(q) > self.info.shape["max_positions"]:
                raise WorkerError("infeasible", "score: row %d's %d + %d tokens exceed the model's %d positions"
                                  % (r, len(p), len(q), self.info.shape["max_positions"]))
        return score_rows(self.torch, self.model, prompt_ids, response_ids, self.info.shape["pad_id"],
                          self.values["device"])

    def refit(self):
        torch, model = self.torch, self.model
        groups, loaded = storage_groups(model), set()
        source = self.values["refit_source"]
        if source == "host":
            if self.host_copy is None:
                raise WorkerError("internal", "refit: no host copy of the weights was made at load")
            seen, source_bytes = set(), 0
            for v in self.host_copy.values():
                if v.data_ptr() not in seen:
                    seen.add(v.data_ptr())
                    source_bytes += v.numel() * v.element_size()
            engine_bytes = load_into(torch, model, self.host_copy, loaded, "the host copy")
        else:
            src = self.values["refit_checkpoint"] or self.info.checkpoint
            if not src:
                raise WorkerError("setting", "refit: refit_source checkpoint needs a checkpoint (the model is a "
                                  "built-in shape): set refit_checkpoint, or refit_source = \"host\"")
            from safetensors.torch import load_file
            source_bytes = engine_bytes = 0
            for f in safetensors_files(src):
                tensors = load_file(f, device="cpu")
                source_bytes += sum(v.numel() * v.element_size() for v in tensors.values())
                engine_bytes += load_into(torch, model, tensors, loaded, src)
                del tensors
        missing = unloaded(groups, loaded)
        if missing:
            raise WorkerError("internal", "refit: the source has no %s" % ", ".join(missing[:5]))
        if self.values["device"].startswith("cuda"):
            torch.cuda.synchronize()
        return {"source_bytes": source_bytes, "engine_bytes": engine_bytes, "source": source}

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
        self.host_copy = None

