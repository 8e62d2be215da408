"""protocol.py: the worker side of benchctl's worker protocol (docs/plugins.md,
"Worker protocol"), standard library only.

One JSON object per line on the worker's stdin (requests from the host) and
stdout (replies); stderr is free-form log. The worker speaks first with
`hello`; every later line is a request {"op", "id", ...} answered by exactly
one reply {"id", "ok": true, ...} or {"id", "ok": false, "error": {"code",
"message"}}.

An engine adapter subclasses `Engine` and fills in its hooks; `serve(engine)`
runs the loop until `shutdown` (exit status 0) or end of input (1). The hooks
raise `WorkerError(code, message)` to fail a request; any other exception
becomes an `internal` error (an out-of-memory one, `out_of_memory`) whose
message is one line, with the traceback on stderr.
"""

import json
import math
import os
import sys
import traceback

PROTOCOL_VERSION = 1
MAX_LINE_BYTES = 64 << 20

# Error codes a reply may carry.
ERROR_CODES = ("setting", "unsupported", "infeasible", "out_of_memory", "internal")

# Setting types of the hello table.
SETTING_TYPES = ("string", "int", "double", "bool")

# The keys of a case in begin_case, with their JSON types.
CASE_KEYS = {
    "batch_size": int, "samples_per_prompt": int, "prompt_length": int, "response_length": int,
    "dtype": str, "seed": int, "do_sample": bool, "temperature": (int, float), "top_k": int,
    "top_p": (int, float), "return_tokens": bool,
}
# Keys a case may carry (hosts before them send none), with their JSON types:
# release_cache, whether the case's cache policy releases the cache after each
# rollout (the host then sends release_cache / acquire_cache around them).
# return_rollout, whether every generate reply carries the rollout (sent, true,
# to an engine whose describe lists "rollout" in its capabilities).
OPTIONAL_CASE_KEYS = {"release_cache": bool, "return_rollout": bool}

# What an engine does beyond rollouts, as describe's "capabilities" lists it:
# "rollout" (generate replies carry the rollout: prompt and response ids and
# how each row stopped, when the case says return_rollout), "logprobs" (and
# each response token's log-probability; implies "rollout"), "score" (the
# score request), "refit" (the refit request).
CAPABILITIES = ("rollout", "logprobs", "score", "refit")

# How a rollout row stopped.
STOP_REASONS = ("eos", "length")

# The profile a generate reply carries: the case report's per-iteration fields
# (docs/reporters.md) a worker measures; None is sent as null (not measured).
# decode_step_ms is a list: each decode step's wall time.
PROFILE_FIELDS = (
    "prompt_expansion_ms", "generation_ms", "post_processing_ms", "prefill_forward_ms", "decode_forward_ms",
    "num_decode_forwards", "num_generated_tokens", "time_to_first_token_ms", "peak_memory_bytes", "decode_step_ms",
)


class WorkerError(Exception):
    """A request that fails with one of ERROR_CODES and a one-line message."""

    def __init__(self, code, message):
        if code not in ERROR_CODES:
            raise ValueError("unknown error code %r" % (code,))
        super().__init__(message)
        self.code = code
        self.message = one_line(message)


def one_line(text):
    """text with its line breaks folded, so a message stays one line."""
    return " ".join(str(text).split())


def setting(name, type_, default, help_, choices=None, min_=None, max_=None):
    """One entry of the hello settings table."""
    if type_ not in SETTING_TYPES:
        raise ValueError("setting %s: unknown type %r" % (name, type_))
    d = {"name": name, "type": type_, "default": default, "help": help_}
    if choices is not None:
        d["choices"] = list(choices)
    if min_ is not None:
        d["min"] = min_
    if max_ is not None:
        d["max"] = max_
    return d


def _is_type(value, type_):
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "bool":
        return isinstance(value, bool)
    if type_ == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def resolve_settings(table, given):
    """The values of every setting of `table` (hello's list): `given`'s where
    present, else the defaults. Raises WorkerError("setting") naming the
    setting for an unknown name, a wrong type, a value outside its choices or
    range."""
    if not isinstance(given, dict):
        raise WorkerError("setting", "configure: settings must be an object")
    by_name = {d["name"]: d for d in table}
    for name in given:
        if name not in by_name:
            raise WorkerError("setting", "unknown setting %r (known: %s)" % (name, ", ".join(sorted(by_name))))
    values = {}
    for name, d in by_name.items():
        v = given.get(name, d["default"])
        if not _is_type(v, d["type"]):
            raise WorkerError("setting", "setting %s: expected %s, got %s" % (name, d["type"], json.dumps(v)))
        if "choices" in d and v not in d["choices"]:
            raise WorkerError("setting", "setting %s: %s is not one of %s"
                              % (name, json.dumps(v), ", ".join(json.dumps(c) for c in d["choices"])))
        if "min" in d and v < d["min"]:
            raise WorkerError("setting", "setting %s: %s is below the minimum %s" % (name, v, d["min"]))
        if "max" in d and v > d["max"]:
            raise WorkerError("setting", "setting %s: %s is above the maximum %s" % (name, v, d["max"]))
        values[name] = float(v) if d["type"] == "double" else v
    return values


def check_case(case, prompt_ids):
    """Checks begin_case's case object and prompt rows; raises
    WorkerError("internal") naming what is wrong (the host built them)."""
    if not isinstance(case, dict):
        raise WorkerError("internal", "begin_case: case must be an object")
    for key, t in CASE_KEYS.items():
        if key not in case:
            raise WorkerError("internal", "begin_case: case has no %r" % key)
        v = case[key]
        if not isinstance(v, t) or (t is not bool and isinstance(v, bool)):
            raise WorkerError("internal", "begin_case: case.%s has the wrong type (%s)" % (key, json.dumps(v)))
    for key, t in OPTIONAL_CASE_KEYS.items():
        if key in case and not isinstance(case[key], t):
            raise WorkerError("internal", "begin_case: case.%s has the wrong type (%s)" % (key, json.dumps(case[key])))
    for key in ("batch_size", "samples_per_prompt", "prompt_length", "response_length"):
        if case[key] < 1:
            raise WorkerError("internal", "begin_case: case.%s must be >= 1, got %d" % (key, case[key]))
    if not isinstance(prompt_ids, list) or len(prompt_ids) != case["batch_size"]:
        raise WorkerError("internal", "begin_case: prompt_ids must be a list of batch_size = %d rows"
                          % case["batch_size"])
    for i, row in enumerate(prompt_ids):
        if (not isinstance(row, list) or not row or len(row) > case["prompt_length"]
                or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in row)):
            raise WorkerError("internal", "begin_case: prompt_ids[%d] must be 1..%d token ids >= 0"
                              % (i, case["prompt_length"]))


def rollout(prompt_ids, response_ids, stop, logprobs=None):
    """A generate reply's rollout, row by row: each row's prompt ids as it
    ran (no padding), its response ids, its stop reason ("eos" or
    "length"), and optionally each response token's log-probability
    (log_softmax of the raw logits at temperature 1, natural log). Refuses
    rows of different counts, unknown stop reasons, non-finite or positive
    log-probabilities."""
    n = len(prompt_ids)
    if len(response_ids) != n or len(stop) != n or (logprobs is not None and len(logprobs) != n):
        raise ValueError("rollout: %d prompt rows, %d response rows, %d stop reasons%s"
                         % (n, len(response_ids), len(stop),
                            "" if logprobs is None else ", %d log-probability rows" % len(logprobs)))
    for r, why in enumerate(stop):
        if why not in STOP_REASONS:
            raise ValueError("rollout: stop[%d] = %r is not one of %s" % (r, why, ", ".join(STOP_REASONS)))
    out = {"prompt_ids": prompt_ids, "response_ids": response_ids, "stop": list(stop)}
    if logprobs is not None:
        for r, row in enumerate(logprobs):
            if len(row) != len(response_ids[r]):
                raise ValueError("rollout: logprobs[%d] has %d values for %d tokens" % (r, len(row), len(response_ids[r])))
            for t, v in enumerate(row):
                if not (isinstance(v, float) and math.isfinite(v) and v <= 1e-3):
                    raise ValueError("rollout: logprobs[%d][%d] = %r is not a finite log-probability" % (r, t, v))
        out["logprobs"] = logprobs
    return out


def check_score_request(req):
    """score's prompt_ids and response_ids: lists of as many rows of ids >=
    0, each prompt non-empty (a response may be: nothing to score). Returns
    them; raises WorkerError("internal")."""
    prompts, responses = req.get("prompt_ids"), req.get("response_ids")
    def ids(row, empty=False):
        return (isinstance(row, list) and (row or empty)
                and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in row))
    if not isinstance(prompts, list) or not isinstance(responses, list) or len(prompts) != len(responses) or not prompts:
        raise WorkerError("internal", "score: prompt_ids and response_ids must be lists of as many rows")
    for r, (p, q) in enumerate(zip(prompts, responses)):
        if not ids(p) or not ids(q, empty=True):
            raise WorkerError("internal", "score: row %d must have prompt ids and a list of response ids (integers "
                              ">= 0)" % r)
    return prompts, responses


def profile(extra_names=(), **fields):
    """A generate reply's profile: every PROFILE_FIELDS name and every one of
    the engine's extra_names (its own profile fields, Engine.profile_extra_fields),
    None where not given; refuses other names and non-finite numbers."""
    unknown = set(fields) - set(PROFILE_FIELDS) - set(extra_names)
    if unknown:
        raise ValueError("unknown profile fields: %s" % ", ".join(sorted(unknown)))
    def finite(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    out = {}
    for name in PROFILE_FIELDS + tuple(n for n in extra_names if n not in PROFILE_FIELDS):
        v = fields.get(name)
        if v is not None and not (all(finite(x) for x in v) if isinstance(v, list) else finite(v)):
            raise ValueError("profile field %s is not finite: %r" % (name, v))
        out[name] = v
    return out


class Engine:
    """An engine adapter. The class attributes and hooks below are what
    serve() calls; each hook's comment says what it must do and its default."""

    name = "engine"  # hello's "engine"
    # Names of the engine's own numbers a generate profile may carry beside
    # PROFILE_FIELDS (numbers or null; the host reads those it knows).
    profile_extra_fields = ()

    def settings_table(self):
        """Required: the hello settings table, a list of setting() dicts."""
        raise NotImplementedError

    def engine_version(self):
        """Required: hello's engine_version (a string; "not installed" when
        the engine's package is missing: hello must work regardless)."""
        raise NotImplementedError

    def device(self):
        """Where the engine runs: "cpu", "cuda", ... The hello's is this
        before configure (the default of the `device` setting); describe's
        reply carries it after configure, from the configured settings, and
        the host reports that one. Default: the `device` setting of the
        values configure kept in self.values, else "cpu"."""
        values = getattr(self, "values", None)
        if isinstance(values, dict) and isinstance(values.get("device"), str) and values["device"]:
            return values["device"]
        for s in self.settings_table():
            if s.get("name") == "device" and isinstance(s.get("default"), str) and s["default"]:
                return s["default"]
        return "cpu"

    def metrics_table(self):
        """hello's "metrics": the profile keys of this engine's own beyond the
        protocol's, each {"name", "unit", "better" ("higher", "lower",
        "neither"), "help", optional "min", "max"} (docs/plugins.md); every
        generate profile may then carry them, a number in range or None.
        Default: none."""
        return []

    def configure(self, values):
        """Required: takes every setting's value (checked by
        resolve_settings); may raise WorkerError("setting")."""
        raise NotImplementedError

    def describe(self):
        """Required: describe's reply for the configured model: "model",
        "dtypes", "vocab_size" required; "parameters", "max_positions", the
        shape fields optional. Keep it light (no weights)."""
        raise NotImplementedError

    def begin_case(self, case, prompt_ids):
        """Required: prepares a case (checked by check_case); raises
        WorkerError("unsupported"/"infeasible") when it cannot run it."""
        raise NotImplementedError

    def generate(self, iteration, warmup):
        """Required: one rollout; returns (profile dict, token rows or None),
        or (profile, tokens, rollout) with rollout a rollout() dict.
        Tokens are returned when the case asked for them, the rollout when
        it said return_rollout."""
        raise NotImplementedError

    def capabilities(self):
        """describe's "capabilities": the CAPABILITIES this configured
        engine has (default: none)."""
        return []

    def score(self, prompt_ids, response_ids):
        """With "score": the natural-log probability (temperature 1) of each
        response token given everything before it, one forward pass over
        each row's prompt + response; returns a list of rows, row r of
        len(response_ids[r]) floats. Called inside a case (its dtype)."""
        raise WorkerError("unsupported", "the %s engine has no score request" % self.name)

    def refit(self):
        """With "refit": loads the model's weights anew from the source the
        engine's settings name, so the next rollout runs on them; returns
        {"source_bytes", "engine_bytes", "source"}. Called inside a case."""
        raise WorkerError("unsupported", "the %s engine has no refit request" % self.name)

    def release_cache(self):
        """Frees what the engine keeps between rollouts (default: nothing)."""

    def acquire_cache(self):
        """Takes back what release_cache freed (default: nothing)."""

    def end_case(self):
        """Drops the case's state (default: nothing)."""

    def close(self):
        """Before exit (default: nothing)."""


class Session:
    """The request loop's state: which requests are allowed now, and the
    dispatch of one request to the engine's hooks."""

    def __init__(self, engine):
        self.engine = engine
        self.table = engine.settings_table()
        self.configured = False
        self.in_case = False
        self.case = None

    def hello(self):
        hello = {"op": "hello", "protocol": PROTOCOL_VERSION, "engine": self.engine.name,
                 "engine_version": self.engine.engine_version(), "device": self.engine.device(),
                 "settings": self.table}
        metrics = self.engine.metrics_table()
        if metrics:
            hello["metrics"] = metrics
        return hello

    def _need_configured(self):
        if not self.configured:  # the host always configures first; defaults otherwise
            self.engine.configure(resolve_settings(self.table, {}))
            self.configured = True

    def _need_case(self, op):
        if not self.in_case:
            raise WorkerError("internal", "%s outside a case (no begin_case)" % op)

    def handle(self, req):
        """The reply's payload (without id/ok) for one request; raises
        WorkerError. Returns (payload, stop)."""
        op = req.get("op")
        if op == "configure":
            if self.in_case:
                raise WorkerError("internal", "configure inside a case")
            self.engine.configure(resolve_settings(self.table, req.get("settings", {})))
            self.configured = True
            return {}, False
        if op == "describe":
            self._need_configured()
            d = self.engine.describe()
            for key in ("model", "dtypes", "vocab_size"):
                if key not in d:
                    raise WorkerError("internal", "describe: the engine gave no %s" % key)
            d.setdefault("device", self.engine.device())  # the configured one; the hello's is the default's
            caps = list(self.engine.capabilities())
            unknown = [c for c in caps if c not in CAPABILITIES]
            if unknown:
                raise WorkerError("internal", "describe: unknown capabilities %s" % ", ".join(map(str, unknown)))
            if caps:
                d["capabilities"] = caps
            return d, False
        if op == "begin_case":
            self._need_configured()
            if self.in_case:
                raise WorkerError("internal", "begin_case inside a case (no end_case)")
            case, prompt_ids = req.get("case"), req.get("prompt_ids")
            check_case(case, prompt_ids)
            self.engine.begin_case(case, prompt_ids)
            self.in_case = True
            self.case = case
            return {}, False
        if op == "generate":
            self._need_case(op)
            it, warm = req.get("iteration", 0), req.get("warmup", False)
            if not isinstance(it, int) or isinstance(it, bool) or not isinstance(warm, bool):
                raise WorkerError("internal", "generate: iteration must be an int and warmup a bool")
            got = self.engine.generate(it, warm)
            prof, tokens = got[0], got[1]
            ro = got[2] if len(got) > 2 else None
            out = {"profile": profile(self.engine.profile_extra_fields, **prof)}
            if tokens is not None:
                out["tokens"] = tokens
            if self.case.get("return_rollout"):
                if ro is None:
                    raise WorkerError("internal", "generate: the case asked for the rollout and the engine made none")
                if "logprobs" in self.engine.capabilities() and ro.get("logprobs") is None:
                    raise WorkerError("internal", "generate: the engine lists logprobs and its rollout has none")
                out["rollout"] = ro
            return out, False
        if op == "score":
            self._need_case(op)
            if "score" not in self.engine.capabilities():
                raise WorkerError("unsupported", "the %s engine has no score request" % self.engine.name)
            prompts, responses = check_score_request(req)
            lp = self.engine.score(prompts, responses)
            if len(lp) != len(responses) or any(len(a) != len(b) for a, b in zip(lp, responses)):
                raise WorkerError("internal", "score: the engine gave log-probabilities of another shape")
            for r, row in enumerate(lp):
                for t, v in enumerate(row):
                    if not (isinstance(v, float) and math.isfinite(v) and v <= 1e-3):
                        raise WorkerError("internal", "score: logprobs[%d][%d] = %r is not a log-probability" % (r, t, v))
            return {"logprobs": lp}, False
        if op == "refit":
            self._need_case(op)
            if "refit" not in self.engine.capabilities():
                raise WorkerError("unsupported", "the %s engine has no refit request" % self.engine.name)
            got = self.engine.refit()
            return {"source_bytes": int(got["source_bytes"]), "engine_bytes": int(got["engine_bytes"]),
                    "source": str(got["source"])}, False
        if op in ("release_cache", "acquire_cache"):
            self._need_case(op)
            getattr(self.engine, op)()
            return {}, False
        if op == "end_case":
            if self.in_case:
                self.in_case = False
                self.case = None
                self.engine.end_case()
            return {}, False
        if op == "shutdown":
            return {}, True
        raise WorkerError("unsupported", "unknown op %s" % json.dumps(op))


def error_reply(req_id, exc):
    """The reply for an exception a hook raised."""
    if isinstance(exc, WorkerError):
        code, msg = exc.code, exc.message
    elif isinstance(exc, MemoryError) or "OutOfMemory" in type(exc).__name__:
        code, msg = "out_of_memory", "%s: %s" % (type(exc).__name__, one_line(exc))
    else:
        code, msg = "internal", "%s: %s" % (type(exc).__name__, one_line(exc))
    return {"id": req_id, "ok": False, "error": {"code": code, "message": msg[:2000]}}


def write_message(out, obj):
    """One protocol line: compact JSON, no NaN (refused), then a newline."""
    out.write(json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")
    out.flush()


def read_request(line):
    """Parses one request line; returns (id, request) or raises ValueError
    saying why the line is not a request."""
    if len(line) > MAX_LINE_BYTES:
        raise ValueError("request line of %d bytes is over the %d limit" % (len(line), MAX_LINE_BYTES))
    req = json.loads(line)
    if not isinstance(req, dict):
        raise ValueError("a request must be a JSON object")
    rid = req.get("id")
    if not isinstance(rid, int) or isinstance(rid, bool):
        raise ValueError("a request needs an integer id")
    if not isinstance(req.get("op"), str):
        raise ValueError("request %d has no op" % rid)
    return rid, req


def log(msg):
    """One line of the worker's free-form log (stderr)."""
    sys.stderr.write("benchctl_worker: %s\n" % one_line(msg))
    sys.stderr.flush()


def serve(engine, inp, out):
    """Runs the protocol on text streams `inp`/`out` until shutdown (returns
    0) or end of input or an unreadable line (returns 1, said on stderr)."""
    session = Session(engine)
    write_message(out, session.hello())
    status = 1
    try:
        for line in inp:
            if not line.strip():
                continue
            try:
                rid, req = read_request(line)
            except ValueError as e:
                log("not a request: %s" % e)
                return 1
            try:
                payload, stop = session.handle(req)
                reply = {"id": rid, "ok": True}
                reply.update(payload)
            except Exception as e:  # noqa: BLE001 - every failure becomes a reply
                if not isinstance(e, WorkerError):
                    traceback.print_exc(file=sys.stderr)
                reply, stop = error_reply(rid, e), False
            write_message(out, reply)
            if stop:
                status = 0
                break
        else:
            log("end of input before shutdown")
    finally:
        try:
            engine.close()
        except Exception:  # noqa: BLE001 - exiting anyway
            traceback.print_exc(file=sys.stderr)
    return status


def protocol_streams():
    """Keeps the real stdout for the protocol and points both sys.stdout and
    file descriptor 1 at stderr, so stray prints (of Python code or of native
    libraries) cannot corrupt the protocol. Returns (inp, out)."""
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    out = os.fdopen(proto_fd, "w", encoding="utf-8", newline="\n")
    inp = open(sys.stdin.fileno(), "r", encoding="utf-8", newline="\n", closefd=False)
    return inp, out
