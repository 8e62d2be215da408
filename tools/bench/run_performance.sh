#!/usr/bin/env bash
# run_performance.sh: the side-by-side performance benchmark of
# docs/performance.md (issue 3, section 8), in one run:
#   1. builds the bandwidth probe (one cc line) and benchctl (CMake, the
#      project's default RelWithDebInfo (-O2 -g), tests off, in $BUILD_DIR);
#   2. measures memory read bandwidth (tools/bandwidth), before the engines;
#   3. benchctl: tools/bench/performance.cfg, once per shape;
#   4. Hugging Face transformers generate: the same file with the `worker`
#      backend running `tools/peers-worker transformers` (docs/pyworkers.md);
#   5. CTranslate2, the same way: float32, and int8 (compute_type);
#   6. the bandwidth probe again, after the engines;
#   7. tools/bench/perf_table.py: one table from all the JSON reports.
# Every engine gets the same threads, shapes, warmup and iterations.
#
# Usage: tools/bench/run_performance.sh [OUTDIR]
#   OUTDIR defaults to out/performance/<UTC time>; it receives every JSON
#   report, the logs, machine.txt and table.md.
# Environment (defaults in brackets):
#   THREADS [2]  WARMUP [1]  ITERATIONS [3]
#   SHAPES ["4,4,128,128 1,1,128,128"] B,S,P,R per shape (for quick checks;
#       the documented benchmark uses the default)
#   The peers need the environment tools/peers-venv makes (run it once).
#   BUILD_DIR [build-perf]  BUILD_TYPE [RelWithDebInfo]  CC [cc]
#   SKIP_BENCHCTL=1 / SKIP_PEERS=1 leave the native / the peers' rows out.
# Exit status: 0 when every step ran; 1 when one failed (the table is still
# printed with what was measured).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1

THREADS=${THREADS:-2}
WARMUP=${WARMUP:-1}
ITERATIONS=${ITERATIONS:-3}
SHAPES=${SHAPES:-4,4,128,128 1,1,128,128}
BUILD_DIR=${BUILD_DIR:-build-perf}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
CC=${CC:-cc}
OUT=${1:-out/performance/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT" || exit 1
failed=()

say() { printf '== %s\n' "$*" >&2; }
fail() { printf 'run_performance: %s\n' "$*" >&2; failed+=("$1"); }

# --- machine -----------------------------------------------------------------
{
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "git: $(git rev-parse --short=12 HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | grep -q . && echo '(dirty)')"
    echo "uname: $(uname -srm)"
    echo "loadavg_start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "build: $BUILD_TYPE, $("$CC" --version | head -n 1)"
    echo "threads: $THREADS  warmup: $WARMUP  iterations: $ITERATIONS  shapes (B,S,P,R): $SHAPES"
    lscpu
} >"$OUT/machine.txt" 2>&1

# --- 1. build ----------------------------------------------------------------
say "building the bandwidth probe"
mkdir -p "$BUILD_DIR"
if ! "$CC" -O2 -std=c11 -Wall -Wextra -Werror -pthread -o "$BUILD_DIR/bandwidth" tools/bandwidth/bandwidth.c; then
    fail "bandwidth-build"
fi

# every engine runs through benchctl (the peers as `worker` backends)
BENCHCTL=""
say "building benchctl in $BUILD_DIR ($BUILD_TYPE, tests off)"
if cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DBENCHCTL_TESTS=OFF >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j2 >>"$OUT/build.log" 2>&1; then
    BENCHCTL=$(find "$BUILD_DIR" -maxdepth 3 -type f -name benchctl -perm -u+x | head -n 1)
    [[ -n "$BENCHCTL" ]] || fail "benchctl-build (no benchctl executable in $BUILD_DIR)"
else
    fail "benchctl-build (see $OUT/build.log)"
fi

bandwidth() { # $1: tag
    if [[ -x "$BUILD_DIR/bandwidth" ]]; then
        say "bandwidth probe ($1)"
        "$BUILD_DIR/bandwidth" --threads "$THREADS" --reps 5 --json "$OUT/bandwidth_$1.json" |
            tee "$OUT/bandwidth_$1.log" >&2 || fail "bandwidth-$1"
    fi
}

# --- 2. bandwidth, before -------------------------------------------------------
bandwidth before

# --- 3, 4, 5. the engines -----------------------------------------------------------
# engine TAG EXTRA_SET...: tools/bench/performance.cfg once per shape, with
# the --set overrides given (the backend, for a peer), into $OUT/TAG_bBsS.json.
engine() {
    local tag=$1
    shift
    for shape in $SHAPES; do
        IFS=, read -r b s p r <<<"$shape"
        say "$tag: B=$b S=$s P=$p R=$r"
        rm -f out/performance/benchctl.json
        if "$BENCHCTL" run tools/bench/performance.cfg "$@" \
            --set "matrix.batch_sizes=[$b]" --set "matrix.samples_per_prompt=[$s]" \
            --set "matrix.prompt_lengths=[$p]" --set "matrix.response_lengths=[$r]" \
            --set "backend.settings.threads=$THREADS" \
            --set "run.warmup=$WARMUP" --set "run.iterations=$ITERATIONS" \
            >"$OUT/${tag}_b${b}s${s}.log" 2>&1 && [[ -f out/performance/benchctl.json ]]; then
            mv out/performance/benchctl.json "$OUT/${tag}_b${b}s${s}.json"
        else
            fail "$tag-b${b}s${s} (see $OUT/${tag}_b${b}s${s}.log)"
            tail -n 5 "$OUT/${tag}_b${b}s${s}.log" >&2
            [[ -f out/performance/benchctl.json ]] && mv out/performance/benchctl.json "$OUT/${tag}_b${b}s${s}.json"
        fi
    done
}
if [[ -n "$BENCHCTL" && "${SKIP_BENCHCTL:-0}" != 1 ]]; then
    engine benchctl
fi
if [[ -n "$BENCHCTL" && "${SKIP_PEERS:-0}" != 1 ]]; then
    if ! tools/peers-venv --check >/dev/null; then
        fail "peers (no environment: run tools/peers-venv)"
    else
        OMP_NUM_THREADS=$THREADS engine hf --set 'backend.name="worker"' \
            --set 'backend.settings.command="tools/peers-worker transformers"'
        # CTranslate2 4.8.5 has no bfloat16 on a CPU without it (describe
        # leaves it out, and benchctl refuses a run with a case the engine
        # cannot run), so float32 only, and int8 beside it
        OMP_NUM_THREADS=$THREADS engine ct2 --set 'backend.name="worker"' \
            --set 'backend.settings.command="tools/peers-worker ctranslate2"' --set 'precisions=["fp32"]'
        OMP_NUM_THREADS=$THREADS engine ct2int8 --set 'backend.name="worker"' \
            --set 'backend.settings.command="tools/peers-worker ctranslate2"' \
            --set 'backend.settings.compute_type="int8"' --set 'precisions=["fp32"]'
    fi
fi

# --- 6. bandwidth, after ------------------------------------------------------------
bandwidth after
echo "loadavg_end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"

# --- 7. the table ---------------------------------------------------------------------
reports=()
for f in "$OUT"/benchctl_*.json "$OUT"/hf_*.json "$OUT"/ct2_*.json "$OUT"/ct2int8_*.json; do
    [[ -f "$f" ]] && reports+=("$f")
done
bws=()
for f in "$OUT"/bandwidth_*.json; do
    [[ -f "$f" ]] && bws+=(--bandwidth "$f")
done
if ((${#reports[@]})); then
    say "table ($OUT/table.md)"
    python3 tools/bench/perf_table.py "${bws[@]}" --threads "$THREADS" --markdown "$OUT/table.md" "${reports[@]}" ||
        fail "compare"
else
    fail "compare (no reports)"
fi

if ((${#failed[@]})); then
    printf 'run_performance: failed steps: %s\n' "${failed[*]}" >&2
    exit 1
fi
exit 0
