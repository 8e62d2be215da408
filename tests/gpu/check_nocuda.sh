#!/usr/bin/env bash
# tests/gpu/check_nocuda.sh BENCHCTL SOURCE_DIR: on a machine WITHOUT a GPU,
# `benchctl run` with device "cuda" must record the case as failed with one
# line "no CUDA device: ..." and exit 3 (some case failed) - no crash.
# Exits 77 (skip) where a GPU ran the case.
set -u
BENCHCTL=$1
SRC=$2
out=$("$BENCHCTL" run "$SRC/tests/gpu/bench-nocuda.cfg" 2>&1)
rc=$?
echo "$out"
if [ "$rc" -eq 0 ]; then echo "a GPU ran the case: skip"; exit 77; fi
[ "$rc" -eq 3 ] || { echo "FAIL: exit code $rc, want 3"; exit 1; }
n=$(printf '%s\n' "$out" | grep -c "failed: begin_case: no CUDA device: ")
[ "$n" -ge 1 ] || { echo "FAIL: no 'no CUDA device:' line"; exit 1; }
echo "ok: the case failed cleanly"
