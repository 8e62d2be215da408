"""harness.py: drives a worker process through the worker protocol, as the
host does (docs/plugins.md, "Worker protocol"): reads its hello, sends
requests with increasing ids and reads one reply each, with a timeout on
every read so a test cannot hang.

    with Worker([python, "-m", "benchctl_worker", "transformers"]) as w:
        w.hello                      # the hello object
        w.request("configure", settings={...})   # the reply; raises on ok: false
        w.call("begin_case", ...)    # the reply, ok or not
"""

import json
import os
import queue
import subprocess
import threading

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plugins", "worker", "python")


class ProtocolError(Exception):
    pass


class RequestFailed(Exception):
    def __init__(self, op, error):
        super().__init__("%s: %s: %s" % (op, error.get("code"), error.get("message")))
        self.code, self.message = error.get("code"), error.get("message")


def worker_command(python, engine):
    return [python, "-m", "benchctl_worker", engine]


class Worker:
    def __init__(self, argv, timeout_s=600, env=None):
        e = dict(os.environ if env is None else env)
        e["PYTHONPATH"] = os.path.abspath(PYTHON_DIR) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
        self.timeout_s = timeout_s
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=e, text=True, encoding="utf-8")
        self.lines = queue.Queue()
        self.stderr = []
        self.pumps = [threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True),
                      threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr.append), daemon=True)]
        for t in self.pumps:
            t.start()
        self.next_id = 1
        self.hello = self.read()
        if self.hello.get("op") != "hello":
            raise ProtocolError("first message is not hello: %r" % self.hello)

    @staticmethod
    def _pump(stream, put):
        for line in stream:
            put(line)
        put(None)

    def read(self):
        try:
            line = self.lines.get(timeout=self.timeout_s)
        except queue.Empty:
            raise ProtocolError("no message within %d s; stderr: %s" % (self.timeout_s, self.stderr_tail()))
        if line is None:
            raise ProtocolError("worker closed stdout; stderr: %s" % self.stderr_tail())
        try:
            return json.loads(line)
        except ValueError:
            raise ProtocolError("not JSON on stdout: %r" % line[:200])

    def stderr_text(self):
        return "".join(x for x in self.stderr if x)

    def stderr_tail(self, n=20):
        return "".join(x for x in self.stderr[-n:] if x)

    def call(self, op, **fields):
        rid = self.next_id
        self.next_id += 1
        self.send(dict(op=op, id=rid, **fields))
        reply = self.read()
        if reply.get("id") != rid or not isinstance(reply.get("ok"), bool):
            raise ProtocolError("reply %r does not answer request %d (%s)" % (reply, rid, op))
        return reply

    def send(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def request(self, op, **fields):
        reply = self.call(op, **fields)
        if not reply["ok"]:
            raise RequestFailed(op, reply["error"])
        return reply

    def shutdown(self):
        self.request("shutdown")
        return self.proc.wait(timeout=self.timeout_s)

    def close(self):
        """Kills the worker if it still runs; waits until its output is read."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for t in self.pumps:
            t.join(timeout=10)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def case(batch_size=1, samples_per_prompt=1, prompt_length=8, response_length=4, dtype="float32", seed=1234,
         do_sample=False, temperature=1.0, top_k=0, top_p=1.0, return_tokens=True):
    return dict(batch_size=batch_size, samples_per_prompt=samples_per_prompt, prompt_length=prompt_length,
                response_length=response_length, dtype=dtype, seed=seed, do_sample=do_sample,
                temperature=temperature, top_k=top_k, top_p=top_p, return_tokens=return_tokens)
