#!/usr/bin/env bash
# tests/gpu/check_nocuda.sh BENCHCTL SOURCE_DIR: on a machine WITHOUT a GPU,
# `benchctl run` with device "cuda" must record the case as failed with one
# line "no CUDA device: ..." and exit 3 (some case failed) - no crash.
# Exits 77 (skip) where a GPU is visible or ran the case: there the GPU path
# is cuda_vs_cpu's and bench-cuda.cfg's to check, and a GPU case failing here
# must not stop tests/gpu/run.sh (ctest -L cuda_host) before cuda_vs_cpu.
set -u
BENCHCTL=$1
SRC=$2
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q "^GPU "; then
  echo "a GPU is visible: this check is for machines without one: skip"; exit 77
fi
out=$("$BENCHCTL" run "$SRC/tests/gpu/bench-nocuda.cfg" 2>&1)
rc=$?
echo "$out"
if [ "$rc" -eq 0 ]; then echo "a GPU ran the case: skip"; exit 77; fi
[ "$rc" -eq 3 ] || { echo "FAIL: exit code $rc, want 3"; exit 1; }
n=$(printf '%s\n' "$out" | grep -c "failed: begin_case: no CUDA device: ")
[ "$n" -ge 1 ] || { echo "FAIL: no 'no CUDA device:' line"; exit 1; }
echo "ok: the case failed cleanly"
