#!/usr/bin/env bash
# tests/gpu/check_nocuda.sh BENCHCTL SOURCE_DIR: on a machine WITHOUT a GPU,
# `benchctl run` with device "cuda" must stop before the first case with one
# line "... could not start: prepare: no CUDA device: ..." and exit 1 (the
# backend could not start) - no crash, no case run.
# Exits 77 (skip) where a GPU is visible or ran the case: there the GPU path
# is cuda_vs_cpu's and bench-cuda.cfg's to check, and a GPU case failing here
# must not stop tests/gpu/run.sh (ctest -L cuda_host) before cuda_vs_cpu.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
SRC=$2
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q "^GPU "; then
  bc_test_skip "a GPU is visible: this check is for machines without one"
fi
out=$("$BENCHCTL" run "$SRC/tests/gpu/bench-nocuda.cfg" 2>&1)
rc=$?
echo "$out"
if [ "$rc" -eq 0 ]; then bc_test_skip "a GPU ran the case: this check is for machines without one"; fi
[ "$rc" -eq 1 ] || { echo "FAIL: exit code $rc, want 1"; exit 1; }
n=$(printf '%s\n' "$out" | grep -c "could not start: prepare: no CUDA device: ")
[ "$n" -eq 1 ] || { echo "FAIL: no single 'could not start: prepare: no CUDA device:' line"; exit 1; }
echo "ok: the backend did not start, cleanly"
