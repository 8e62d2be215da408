#!/usr/bin/env bash
# step_parts.sh: profiles OPT-125m decode steps with perf and prints, per
# kernel family, precision and shape, the time of the step's parts (linear,
# attention, rest) against each part's own bound (tools/bench/step_parts.py
# says how; docs/performance.md "A decode step, part by part" has a run).
#
# Each case runs two rollouts of tools/bench/performance.cfg under
# `perf record -e cpu-clock`: R response tokens (the "long" one) and 2 (the
# "short" one, the same prefill), so that the decode steps' samples are the
# difference. Needs perf (Debian linux-perf) and a built benchctl.
#
# Usage: tools/bench/step_parts.sh OUTDIR
# Environment (defaults in brackets):
#   BENCHCTL [build-perf/benchctl]   THREADS [2]   R [128]
#   KERNELS ["auto avx2"]  PRECISIONS ["fp32 bf16 int8"]
#   SHAPES ["4,4 16,4"]    prompts,samples per prompt (P = 128)
#   PROBES [the newest out/performance/* with probe JSONs]: a
#       run_performance.sh directory whose bandwidth_*.json and fmapeak_*.json
#       give the bounds; STEPS=1 also takes each case's decode step from that
#       directory's quiet run instead of the profiled one.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${1:?usage: tools/bench/step_parts.sh OUTDIR}
BENCHCTL=${BENCHCTL:-build-perf/benchctl}
THREADS=${THREADS:-2}
R=${R:-128}
KERNELS=${KERNELS:-auto avx2}
PRECISIONS=${PRECISIONS:-fp32 bf16 int8}
SHAPES=${SHAPES:-4,4 16,4}
if [[ -z "${PROBES:-}" ]]; then
    PROBES=$(ls -td out/performance/*/ 2>/dev/null | while read -r d; do
        compgen -G "$d/fmapeak_*.json" >/dev/null && { echo "${d%/}"; break; }; done)
fi
[[ -x "$BENCHCTL" ]] || { echo "step_parts.sh: no benchctl at $BENCHCTL (build it, or set BENCHCTL)" >&2; exit 1; }
command -v perf >/dev/null || { echo "step_parts.sh: perf not found (apt-get install linux-perf)" >&2; exit 1; }
[[ -n "$PROBES" ]] || { echo "step_parts.sh: no probe JSONs (run tools/bench/run_performance.sh, or set PROBES)" >&2; exit 1; }
mkdir -p "$OUT"

for fam in $KERNELS; do
    for dt in $PRECISIONS; do
        for shape in $SHAPES; do
            IFS=, read -r b s <<<"$shape"
            for run in long short; do
                [[ $run == long ]] && r=$R || r=2
                tag="$OUT/${fam}_${dt}_b${b}s${s}_$run"
                echo "step_parts: $fam $dt ${b}x$s R=$r ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg))"
                if ! perf record -q -e cpu-clock -F 999 -o "$tag.data" "$BENCHCTL" run tools/bench/performance.cfg \
                    --set "precisions=[\"$dt\"]" --set "matrix.batch_sizes=[$b]" \
                    --set "matrix.samples_per_prompt=[$s]" --set "matrix.response_lengths=[$r]" \
                    --set "backend.settings.kernels=\"$fam\"" --set "backend.settings.threads=$THREADS" \
                    --set run.warmup=0 --set run.iterations=1 \
                    --set "reporters=({name=\"json\"; settings={path=\"$tag.json\";};})" >"$tag.log" 2>&1; then
                    echo "step_parts: $tag failed (see $tag.log)" >&2
                fi
            done
        done
    done
done

args=()
for f in "$PROBES"/bandwidth_*.json; do args+=(--bandwidth "$f"); done
for f in "$PROBES"/fmapeak_*.json; do args+=(--fmapeak "$f"); done
[[ "${STEPS:-0}" == 1 ]] && args+=(--steps "$PROBES")
python3 tools/bench/step_parts.py "$OUT" --threads "$THREADS" "${args[@]}" | tee "$OUT/parts.md"
