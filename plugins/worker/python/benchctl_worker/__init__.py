"""benchctl_worker: Python workers for benchctl's `worker` backend.

`python3 -m benchctl_worker ENGINE` (with this folder's parent on PYTHONPATH)
speaks the worker protocol (docs/plugins.md, "Worker protocol") on stdin and
stdout for one engine: transformers, deepspeed or ctranslate2. protocol.py
needs only the standard library; each adapter imports its engine when a case
needs it, so `hello` works where the engine is not installed.
"""
