#!/usr/bin/env bash
# tests/gpu/run.sh: everything of the CUDA path that needs a GPU, in one call
# (budget: 5 minutes on an H200). From the repository root:
#   tests/gpu/run.sh [build-dir]        (default build-gpu)
# 1. builds with CUDA (sm_80/sm_90 + PTX), RelWithDebInfo (-O2; Release -O3
#    trips a maybe-uninitialized warning in opt_plugin.c, reported);
# 2. runs the host-side tests (ctest -L cuda_host) and the CUDA-vs-CPU
#    comparison on the golden models (cuda_vs_cpu: logits, greedy tokens,
#    graphs on/off, both cache policies, shared prefill, EOS stop, exact
#    device accounting);
#    then, if compute-sanitizer is there, a quick comparison under memcheck;
# 3. times the decode step of OPT-125m and OPT-1.3b (fp16, B=1, graphs on
#    and off) against the HBM bound (decode_bench; prints figures);
# 4. runs a short benchmark matrix on device "cuda" (tests/gpu/bench-cuda.cfg)
#    and prints its JSON.
# A build failure stops it; after the build every step runs and a failing one
# is recorded; exits non-zero if any failed (77: no usable GPU). Every step
# is timed.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
JOBS=$(nproc 2>/dev/null || echo 4)
t0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - t0 ))s] $*"; }

# nvcc is often installed but not on PATH (CMake's check_language(CUDA) needs it)
if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$d/nvcc" ]; then PATH="$d:$PATH"; break; fi
  done
fi

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "(nvidia-smi unavailable)"
nvidia-smi 2>/dev/null | grep -o "CUDA Version: [0-9.]*" || true  # the newest runtime the driver supports
nvcc --version | tail -1 || { echo "nvcc not found (PATH or /usr/local/cuda*/bin)"; exit 1; }

step "configure + build ($BUILD, $JOBS jobs)"
cmake -S . -B "$BUILD" -DBENCHCTL_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if ! make -C "$BUILD" -j"$JOBS" --no-print-directory > "$BUILD/build.log" 2>&1; then
  grep -E "error|Error" "$BUILD/build.log" | head -30; tail -20 "$BUILD/build.log"; exit 1
fi
test -x "$BUILD/benchctl"
test -x "$BUILD/tests/cuda_host/cuda_vs_cpu"
test -x "$BUILD/tests/cuda_host/decode_bench"

# From here on a failing step is recorded and the next one still runs: one
# GPU session should bring back every figure and every failure at once.
failed=""
check() { # name command...: runs it, records a non-zero exit
  local name=$1 rc=0; shift
  "$@" || rc=$?
  if [ "$rc" -ne 0 ]; then echo "--- FAILED (exit $rc): $name"; failed="$failed $name"; fi
  return 0
}

step "host-side tests"
check host-tests bash -c "cd '$BUILD' && ctest -L cuda_host --output-on-failure"

step "CUDA vs CPU on the golden models"
rc=0
timeout 180 "$BUILD/tests/cuda_host/cuda_vs_cpu" tests/opt/golden || rc=$?
if [ "$rc" -eq 77 ]; then
  echo "no usable GPU (the SKIP line above says why; a driver older than the toolkit's runtime is the usual one):"
  echo "nothing on the device was checked"; exit 77
fi
if [ "$rc" -ne 0 ]; then echo "--- FAILED (exit $rc): cuda_vs_cpu"; failed="$failed cuda_vs_cpu"; fi

if command -v compute-sanitizer >/dev/null; then
  step "compute-sanitizer memcheck (quick comparison)"
  src=0
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 "$BUILD/tests/cuda_host/cuda_vs_cpu" --quick tests/opt/golden \
    | tail -25 || src=$?
  if [ "$src" -eq 124 ]; then echo "(memcheck timed out: not a failure)"
  elif [ "$src" -ne 0 ]; then echo "--- FAILED (exit $src): memcheck"; failed="$failed memcheck"; fi
else
  step "compute-sanitizer not found: memcheck skipped"
fi

step "decode step vs the HBM bound (figures only)"
check decode_bench timeout 120 "$BUILD/tests/cuda_host/decode_bench"

step "benchmark matrix on device cuda"
mkdir -p out/gpu
rm -f out/gpu/bench-cuda.json
rc=0
timeout 150 "$BUILD/benchctl" run tests/gpu/bench-cuda.cfg || rc=$?
step "JSON (out/gpu/bench-cuda.json)"
cat out/gpu/bench-cuda.json 2>/dev/null || echo "(no JSON written)"
echo
if [ "$rc" -ne 0 ]; then
  echo "--- FAILED: benchctl exited with $rc (3 = some case failed)"; failed="$failed bench-cuda"
fi

if [ -n "$failed" ]; then step "FAILED:$failed"; exit 1; fi
step "done: all GPU checks passed"
