"""ct2.py: the `ctranslate2` engine: CTranslate2's Generator.generate_batch on
an OPT, Llama, Qwen2 or Mistral model, converted with CTranslate2's own
TransformersConverter from a checkpoint directory or from a built-in shape
with random weights (built by transformers, seeded), into a cache directory
that later runs reuse.

What the converter gets wrong is refused at configure with one line (the
transformers worker runs these): RoPE scaling (CTranslate2 4.8.5's Llama
loader keeps the llama3 type but drops its original context, so its tokens
are those of the unscaled model), a head_dim other than hidden / heads for
llama and qwen2 (their loaders do not pass it), and Qwen2's sliding window.

The converted weights are float32; the case's dtype picks the compute type
(float32, bfloat16, float16), or the `compute_type` setting overrides it
(e.g. int8). A compute type CTranslate2 does not support on the device is
refused at begin_case with `unsupported`, naming the ones it does.

There is no tokenizer: the converter is given a synthetic vocabulary
(models.Vocabulary: OPT's four special tokens at ids 0-3, "t<id>" for every
other id; "t<id>" for every id of the Llama family, with bos and eos at the
config's ids), so the prompt ids the host sends map one to one to token
strings. generate_batch's end tokens are all of the model's eos ids, so
min_length suppresses each of them as transformers' min_new_tokens does.

One rollout, as benchctl's native engine does it:
  prompt expansion  each prompt row repeated samples_per_prompt times, grouped
                    by prompt (greedy search returns one hypothesis per row);
  generation        generate_batch(min_length = max_length = response_length,
                    include_prompt_in_result = False: the prompt is the
                    prefill), greedy (sampling_topk 1) or sampled;
  post processing   the attention mask over prompt + response.
CTranslate2 has no forward hook; generate_batch's per-token callback marks
when each step's tokens exist, so prefill_forward_ms is the time to the first
token (the prefill forward and the first pick) and decode_forward_ms the time
from there to the last token (each step's forward and pick). Peak memory is
the process's peak RSS on the CPU, not measured (null) on a GPU.
"""

import hashlib
import json
import os
import shutil
import tempfile
import time

from . import models
from .protocol import Engine, WorkerError, rollout, setting

DTYPE_COMPUTE_TYPE = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}
COMPUTE_TYPES = ["", "float32", "bfloat16", "float16", "int8", "int8_float32", "int8_bfloat16", "int8_float16",
                 "int16"]


def default_cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "benchctl", "ct2")


def source_key(model, versions):
    """What the converted model depends on, hashed: the checkpoint's files
    (name, size, mtime) or the shape and seed, and the packages' versions."""
    h = hashlib.sha256()
    if model.checkpoint:
        d = os.path.abspath(model.checkpoint)
        h.update(("checkpoint %s\n" % d).encode())
        for name in sorted(os.listdir(d)):
            st = os.stat(os.path.join(d, name))
            h.update(("%s %d %d\n" % (name, st.st_size, st.st_mtime_ns)).encode())
    else:
        h.update(("shape %s seed %d\n" % (model.preset, model.seed)).encode())
    h.update(("versions %s\n" % " ".join(versions)).encode())
    return h.hexdigest()[:24]


def check_convertible(model):
    """Raises WorkerError("setting") naming what CTranslate2's converter would
    get wrong for this model (the module doc lists it)."""
    cfg, s = model.config, model.shape
    if s["family"] != "llama":
        return
    where = "setting checkpoint" if model.checkpoint else "setting model: %s" % model.preset
    mt, rt = s["model_type"], models.rope_type(cfg)
    if rt != "default":
        raise WorkerError("setting", "%s: RoPE scaling %s: CTranslate2's converter drops it (its tokens would be the "
                          "unscaled model's); the transformers worker runs it" % (where, json.dumps(rt)))
    if mt in ("llama", "qwen2") and s["head_dim"] * s["n_heads"] != s["hidden_size"]:
        raise WorkerError("setting", "%s: head_dim %d with %d heads and hidden size %d: CTranslate2's %s loader "
                          "assumes hidden / heads; the transformers worker runs it"
                          % (where, s["head_dim"], s["n_heads"], s["hidden_size"], mt))
    if mt == "qwen2" and cfg.get("use_sliding_window"):
        raise WorkerError("setting", "%s: use_sliding_window: CTranslate2's qwen2 loader has no sliding window; the "
                          "transformers worker runs it" % where)


def convert(model, out_dir):
    """Converts the models.Model into out_dir (created here)."""
    import torch
    import transformers
    from ctranslate2.converters import TransformersConverter
    from .hf import random_model
    transformers.logging.set_verbosity_error()
    work = tempfile.mkdtemp(prefix=".convert-", dir=os.path.dirname(out_dir))
    try:
        src = model.checkpoint
        if not src:
            m = random_model(torch, transformers, model, torch.float32, "eager")
            src = os.path.join(work, "hf")
            m.save_pretrained(src)
            del m
        vocab = models.Vocabulary(model.shape)

        class Converter(TransformersConverter):
            def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
                return vocab

        tmp_out = os.path.join(work, "ct2")
        Converter(src).convert(tmp_out, quantization="float32", force=True)
        os.replace(tmp_out, out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)


class CTranslate2Engine(Engine):
    name = "ctranslate2"

    def __init__(self):
        self.values = None
        self.model_dir = None
        self.generator = self.generator_key = None
        self.case = None

    def settings_table(self):
        return models.model_settings() + [
            setting("compute_type", "string", "", "CTranslate2 compute type (\"\" = the case's dtype)",
                    choices=COMPUTE_TYPES),
            setting("cache_dir", "string", "", "where converted models are kept (\"\" = "
                    "$XDG_CACHE_HOME/benchctl/ct2, else ~/.cache/benchctl/ct2)"),
        ]

    def engine_version(self):
        return models.package_version("ctranslate2") or "not installed"

    def configure(self, values):
        self.info = models.resolve_model(values, self.name)
        check_convertible(self.info)
        self.vocab = models.Vocabulary(self.info.shape)
        self.values = values
        self.model_dir = None
        self.generator = self.generator_key = None

    def _import(self):
        models.require_packages("ctranslate2", ["ctranslate2", "torch", "transformers"])
        import ctranslate2
        if self.values["device"] == "cuda" and ctranslate2.get_cuda_device_count() == 0:
            raise WorkerError("unsupported", "device cuda: ctranslate2 %s sees no CUDA GPU" % ctranslate2.__version__)
        return ctranslate2

    def _converted(self):
        """The converted model's directory, converting it on first use."""
        if self.model_dir:
            return self.model_dir
        versions = [models.package_version(p) or "-" for p in ("ctranslate2", "transformers", "torch")]
        cache = self.values["cache_dir"] or default_cache_dir()
        os.makedirs(cache, exist_ok=True)
        d = os.path.join(cache, "%s-%s" % (self.info.shape["model_type"], source_key(self.info, versions)))
        if not os.path.isfile(os.path.join(d, "model.bin")):
            t0 = time.perf_counter()
            convert(self.info, d)
            import sys
            sys.stderr.write("benchctl_worker: converted %s into %s in %.1f s\n"
                             % (self.info.desc, d, time.perf_counter() - t0))
        self.model_dir = d
        return d

    def describe(self):
        dtypes = list(DTYPE_COMPUTE_TYPE)
        if models.package_version("ctranslate2") and not self.values["compute_type"]:
            import ctranslate2
            try:
                supported = ctranslate2.get_supported_compute_types(self.values["device"])
            except (RuntimeError, ValueError):  # no such device: begin_case says so
                supported = set(DTYPE_COMPUTE_TYPE.values())
            dtypes = [d for d, ct in DTYPE_COMPUTE_TYPE.items() if ct in supported]
        return models.describe_reply(self.info, dtypes)

    def begin_case(self, case, prompt_ids):
        ctranslate2 = self._import()
        device = self.values["device"]
        compute_type = self.values["compute_type"] or DTYPE_COMPUTE_TYPE.get(case["dtype"])
        if compute_type is None:
            raise WorkerError("unsupported", "dtype %s: ctranslate2 runs %s" % (case["dtype"],
                                                                                ", ".join(DTYPE_COMPUTE_TYPE)))
        supported = ctranslate2.get_supported_compute_types(device)
        if compute_type not in supported:
            raise WorkerError("unsupported", "compute type %s is not supported on this %s (supported: %s)"
                              % (compute_type, device, ", ".join(sorted(supported))))
        models.check_case_fits(case, prompt_ids, self.info.shape)
        model_dir = self._converted()
        if case["do_sample"]:
            # The seed reaches a Generator's threads when they start: a
            # sampled case gets new ones, so its draws follow its seed.
            ctranslate2.set_random_seed(case["seed"])
            self.generator_key = None
        if self.generator_key != compute_type:
            self.generator = None
            self.generator = ctranslate2.Generator(model_dir, device=device, compute_type=compute_type,
                                                   intra_threads=self.values["threads"], inter_threads=1)
            self.generator_key = compute_type
        models.reset_peak_rss()  # the peak is since begin_case
        self.case = case
        self.prompts = [[self.vocab.string(t) for t in row] for row in prompt_ids]
        self.prompt_ids = [list(row) for row in prompt_ids]

    def capabilities(self):
        # no "logprobs": generate_batch's per-step log_prob is of the
        # processed distribution (min_length's EOS mask, the sampling
        # temperature), its scores a sum; no "refit": a Generator loads its
        # converted model whole (a refit would be a new Generator)
        return ["rollout", "score"]

    def score(self, prompt_ids, response_ids):
        """Generator.score_batch over each row's prompt + response (token
        strings of the synthetic vocabulary): its log_probs, one per token
        after the first, natural log at temperature 1; the last
        len(response) of each row."""
        V = self.info.shape["vocab_size"]
        rows = []
        for r, (p, q) in enumerate(zip(prompt_ids, response_ids)):
            if any(t >= V for t in p + q):
                raise WorkerError("infeasible", "score: row %d has an id outside the vocabulary [0, %d)" % (r, V))
            rows.append([self.vocab.string(t) for t in p + q])
        results = self.generator.score_batch(rows, max_batch_size=0, max_input_length=0)
        out = []
        for r, (res, q) in enumerate(zip(results, response_ids)):
            lp = list(res.log_probs)
            if len(lp) != len(rows[r]) - 1:
                raise WorkerError("internal", "score_batch gave %d log-probabilities for %d tokens"
                                  % (len(lp), len(rows[r])))
            out.append([float(v) for v in lp[len(lp) - len(q):]])
        return out

    def _options(self, step_marks, row_marks):
        c = self.case
        R = c["response_length"]

        def on_token(step):
            t = time.perf_counter()
            step_marks.setdefault(step.step, t)
            row_marks.setdefault(step.batch_id, t)

        opts = dict(max_length=R, min_length=R, include_prompt_in_result=False, beam_size=1, max_batch_size=0,
                    end_token=self.vocab.eos_tokens, callback=on_token)
        if c["do_sample"]:
            opts.update(sampling_topk=c["top_k"], sampling_topp=c["top_p"], sampling_temperature=c["temperature"])
        else:
            opts.update(sampling_topk=1)
        return opts

    def generate(self, iteration, warmup):
        c = self.case
        S, R = c["samples_per_prompt"], c["response_length"]
        on_cpu = self.values["device"] == "cpu"
        # perf_counter when each decoding step's first token was reported, and
        # each row's first token (rows with shorter prompts start earlier:
        # CTranslate2 feeds the rest of the longer prompts step by step)
        step_marks, row_marks = {}, {}
        opts = self._options(step_marks, row_marks)
        t0 = time.perf_counter()
        rows = [p for p in self.prompts for _ in range(S)]
        t1 = time.perf_counter()
        results = self.generator.generate_batch(rows, **opts)
        t2 = time.perf_counter()
        ids = [r.sequences_ids[0] for r in results]                        # [B*S][R]
        mask = [[1] * (len(p) + len(r)) for p, r in zip(rows, ids)]      # prompt + response
        t3 = time.perf_counter()
        del mask
        if (len(ids) != len(rows) or any(len(r) != R for r in ids) or len(step_marks) < R
                or len(row_marks) != len(rows)):
            raise WorkerError("internal", "generate_batch made %s tokens a row in %d steps, wanted %d"
                              % (sorted({len(r) for r in ids}), len(step_marks), R))
        steps = [step_marks[k] for k in sorted(step_marks)]
        step_ms = [(steps[k] - steps[k - 1]) * 1e3 for k in range(1, len(steps))]
        expand_ms = (t1 - t0) * 1e3
        prof = dict(
            prompt_expansion_ms=expand_ms, generation_ms=(t2 - t1) * 1e3, post_processing_ms=(t3 - t2) * 1e3,
            prefill_forward_ms=(steps[0] - t1) * 1e3, decode_forward_ms=(steps[-1] - steps[0]) * 1e3,
            num_decode_forwards=len(steps) - 1, num_generated_tokens=len(ids) * R,
            time_to_first_token_ms=expand_ms + (max(row_marks.values()) - t1) * 1e3,
            decode_step_ms=step_ms,
            peak_memory_bytes=models.peak_rss_bytes() if on_cpu else None)
        tokens = ids if c["return_tokens"] else None
        if not c.get("return_rollout"):
            return prof, tokens
        prompts = [self.prompt_ids[r // S] for r in range(len(ids))]
        return prof, tokens, rollout(prompts, [list(r) for r in ids], ["length"] * len(ids))

    def end_case(self):
        self.case = None

    def close(self):
        self.generator = None

