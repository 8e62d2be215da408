"""ct2.py: the `ctranslate2` engine: CTranslate2's Generator.generate_batch on
an OPT model, converted with CTranslate2's own TransformersConverter from a
checkpoint directory or from a built-in shape with random weights (built by
transformers, seeded), into a cache directory that later runs reuse.

The converted weights are float32; the case's dtype picks the compute type
(float32, bfloat16, float16), or the `compute_type` setting overrides it
(e.g. int8). A compute type CTranslate2 does not support on the device is
refused at begin_case with `unsupported`, naming the ones it does.

There is no tokenizer: the converter is given a synthetic vocabulary (OPT's
four special tokens at ids 0-3, "t<id>" for every other id), so the prompt
ids the host sends map one to one to token strings.

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
import os
import shutil
import tempfile
import time

from . import models
from .protocol import Engine, WorkerError, setting

DTYPE_COMPUTE_TYPE = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}
COMPUTE_TYPES = ["", "float32", "bfloat16", "float16", "int8", "int8_float32", "int8_bfloat16", "int8_float16",
                 "int16"]


def default_cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "benchctl", "ct2")


def source_key(values, versions):
    """What the converted model depends on, hashed: the checkpoint's files
    (name, size, mtime) or the shape and seed, and the packages' versions."""
    h = hashlib.sha256()
    if values["checkpoint"]:
        d = os.path.abspath(values["checkpoint"])
        h.update(("checkpoint %s\n" % d).encode())
        for name in sorted(os.listdir(d)):
            st = os.stat(os.path.join(d, name))
            h.update(("%s %d %d\n" % (name, st.st_size, st.st_mtime_ns)).encode())
    else:
        h.update(("shape %s seed %d\n" % (values["model"] or "125m", values["weights_seed"])).encode())
    h.update(("versions %s\n" % " ".join(versions)).encode())
    return h.hexdigest()[:24]


class SyntheticTokenizer:
    """What TransformersConverter's OPT loader reads from a tokenizer."""

    bos_token, eos_token, unk_token, pad_token = "</s>", "</s>", "<unk>", "<pad>"

    def __init__(self, vocab_size):
        self.vocab_size = vocab_size

    def get_vocab(self):
        return {models.token_string(i): i for i in range(self.vocab_size)}


def convert(values, out_dir):
    """Converts the model of the settings into out_dir (created here)."""
    import torch
    import transformers
    from ctranslate2.converters import TransformersConverter
    transformers.logging.set_verbosity_error()
    work = tempfile.mkdtemp(prefix=".convert-", dir=os.path.dirname(out_dir))
    try:
        src = values["checkpoint"]
        if not src:
            cfg = transformers.OPTConfig(**models.opt_config_kwargs(values["model"] or "125m"))
            torch.manual_seed(values["weights_seed"])
            model = transformers.OPTForCausalLM._from_config(cfg, dtype=torch.float32)
            src = os.path.join(work, "hf")
            model.save_pretrained(src)
            del model
        vocab_size = models.read_checkpoint_config(src)["vocab_size"]

        class Converter(TransformersConverter):
            def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
                return SyntheticTokenizer(vocab_size)

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
        self.desc = models.check_model_settings(values)
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
        d = os.path.join(cache, "opt-" + source_key(self.values, versions))
        if not os.path.isfile(os.path.join(d, "model.bin")):
            t0 = time.perf_counter()
            convert(self.values, d)
            import sys
            sys.stderr.write("benchctl_worker: converted %s into %s in %.1f s\n"
                             % (self.desc, d, time.perf_counter() - t0))
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
        return models.describe_reply(self.desc, self.values, dtypes)

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
        models.check_case_fits(case, prompt_ids, models.model_config(self.values))
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
        self.prompts = [[models.token_string(t) for t in row] for row in prompt_ids]

    def _options(self, step_marks, row_marks):
        c = self.case
        R = c["response_length"]

        def on_token(step):
            t = time.perf_counter()
            step_marks.setdefault(step.step, t)
            row_marks.setdefault(step.batch_id, t)

        opts = dict(max_length=R, min_length=R, include_prompt_in_result=False, beam_size=1, max_batch_size=0,
                    callback=on_token)
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
        return prof, (ids if c["return_tokens"] else None)

    def end_case(self):
        self.case = None

    def close(self):
        self.generator = None

