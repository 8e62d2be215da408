#!/usr/bin/env bash
# run_performance.sh: the side-by-side performance benchmark of
# docs/performance.md, in one run:
#   1. builds the bandwidth and FMA-peak probes (one cc line each) and
#      benchctl (CMake, the project's default RelWithDebInfo (-O2 -g), tests
#      off, in $BUILD_DIR);
#   2. measures memory read bandwidth and the FMA peak of every kernel family
#      (tools/bandwidth: bandwidth.c, fmapeak.c), before the engines;
#   3. benchctl: tools/bench/performance.cfg (fp32, bf16, int8), once per
#      kernel family, model and shape (CONFIG: another file of that form,
#      e.g. tools/bench/performance-qwen2.cfg, the llama backend; the peers
#      then run its backend's `model` too);
#   3a. with a Llama-family CONFIG (backend "llama"): tools/bench/bench_b1_bound
#      on each model, B1_ROUNDS rounds per precision: the B=1 decode step
#      paired in time with read passes over the model's own weights, the
#      line that decides target 1 on a machine whose bandwidth moves between
#      minutes (docs/performance.md, "B=1 against the bound, paired");
#   4. Hugging Face transformers generate: the same file with the `worker`
#      backend running `tools/peers-worker transformers` (docs/pyworkers.md);
#   5. CTranslate2, the same way: float32, and int8 (compute_type);
#   5a. OpenVINO (`tools/peers-worker openvino`, its own environment:
#      tools/peers-venv --openvino), f32 and bf16, when that environment is
#      installed; a line says it is skipped when not;
#   5b. on an AVX-512 CPU with avx2 among KERNELS, the peers of PEERS_AVX2
#      again with their libraries restricted to AVX2 (PEER_AVX2_ENV in the
#      worker's environment: the backend's `env` setting, which the JSON
#      report records in backend_settings.env), the peers an AVX2-only CPU
#      would run, for the avx2 family's ratios and target 3 (docs/performance.md, "The targets");
#   6. both probes again, after the engines;
#   7. tools/bench/perf_table.py: the table from all the JSON reports (with
#      max(bandwidth bound, FMA bound) per row, prefill GFLOP/s, the ratios)
#      and the table of the targets, met or not.
# It prints an estimate of its run time first (est_case below: per-case costs
# measured on the development machine, scaled to the settings given).
# Every engine gets the same threads, warmup and iterations; the peers run
# OPT-125m in fp32 and bf16 (transformers) and float32 and int8 (CTranslate2),
# once on the ISA their libraries pick (native), and those of PEERS_AVX2 once
# more restricted to AVX2 (5b).
#
# Usage: tools/bench/run_performance.sh [OUTDIR]
#   OUTDIR defaults to out/performance/<UTC time>; it receives every JSON
#   report, the logs, machine.txt and table.md.
# Environment (defaults in brackets); a shape is B,S,P,R (prompts, samples
# per prompt, prompt tokens, response tokens):
#   THREADS [2]  WARMUP [1]  ITERATIONS [3]
#   MODELS ["125m 1.3b"] benchctl's OPT presets (synthetic weights)
#   SHAPES_125m ["1,1,128,128 4,4,128,128 16,4,128,128"] benchctl's OPT-125m
#       shapes: B=1, 16 rows and 64 rows
#   SHAPES_1_3b ["1,1,128,128 4,4,128,128"] OPT-1.3b's (64 rows is too slow
#       on 2 cores); SHAPES_<model> for any other preset, "." and "-" read as "_"
#   SHAPES_HF ["1,1,128,128 4,4,128,128"] transformers' shapes (no 64 rows:
#       about 4 minutes there, and no target compares with it)
#   SHAPES_CT2 [the OPT-125m shapes] CTranslate2's (float32 and int8)
#   SHAPES_OV [SHAPES_HF] OpenVINO's (f32 and bf16)
#   PEERS ["hf ct2 ct2int8 ov"] the peers that run (ov: OpenVINO, skipped
#       with a line when tools/peers-venv --openvino --check fails)
#   SHAPES: when set, every model's and the peers' shapes (for quick checks)
#   PRECISIONS_<model>, WARMUP_<model>, ITERATIONS_<model>: one model's
#       precisions, warmup and iterations (default: all three precisions,
#       WARMUP, ITERATIONS); OPT-1.3b's defaults are "fp32 bf16", 0 and 1, so
#       that both families fit the benchmark's ~35 minutes on 2 cores
#   KERNELS ["auto avx2"] benchctl's kernel families, one run of every model
#       and shape each (the backend's `kernels` setting: avx2 runs the AVX2
#       path on an AVX-512 machine; on a CPU without AVX-512, avx2 is auto
#       and runs once). Tags and logs name the family: benchctl_125m_avx2_b1s1
#   PEERS_AVX2 ["ct2 ct2int8" on a CPU with AVX-512 when KERNELS has avx2,
#       else ""] the peers (of hf, ct2, ct2int8) run a second time restricted
#       to AVX2, tagged hf_avx2, ct2_avx2, ct2int8_avx2 (CTranslate2's two
#       add about 5 minutes to the estimate); transformers is left out by
#       default (about 6 more minutes: its bf16 matmul has no oneDNN kernel
#       below AVX-512 and falls back to ATen's own, and no target
#       compares with it), "hf ct2 ct2int8" adds it, "" runs none
#   PEER_AVX2_ENV ["ATEN_CPU_CAPABILITY=avx2 CT2_FORCE_CPU_ISA=AVX2
#       MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2"] what restricts
#       them: PyTorch's ATen kernels, CTranslate2's own kernels, oneMKL's and
#       oneDNN's dispatch (each library reads its own; docs/performance.md)
#   The peers need the environment tools/peers-venv makes (run it once).
#   CONFIG [tools/bench/performance.cfg] the file every engine runs (its
#       backend's settings, `model` included, are the peers' too)
#   BUILD_DIR [build-perf]  BUILD_TYPE [RelWithDebInfo]  CC [cc]
#   B1_ROUNDS [24] bench_b1_bound's rounds per precision (3a); 0 leaves it out
#   SKIP_BENCHCTL=1 / SKIP_PEERS=1 leave the native / the peers' rows out.
#   ESTIMATE_ONLY=1 prints the estimate and exits.
# Exit status: 0 when every step ran; 1 when one failed (the tables are still
# printed with what was measured).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1

THREADS=${THREADS:-2}
WARMUP=${WARMUP:-1}
ITERATIONS=${ITERATIONS:-3}
MODELS=${MODELS:-125m 1.3b}
CONFIG=${CONFIG:-tools/bench/performance.cfg}
SHAPES_125m=${SHAPES_125m:-1,1,128,128 4,4,128,128 16,4,128,128}
SHAPES_1_3b=${SHAPES_1_3b:-1,1,128,128 4,4,128,128}
SHAPES_HF=${SHAPES_HF:-1,1,128,128 4,4,128,128}
SHAPES_CT2=${SHAPES_CT2:-$SHAPES_125m}
SHAPES_OV=${SHAPES_OV:-$SHAPES_HF}
SHAPES=${SHAPES:-}
if [[ -n "$SHAPES" ]]; then
    SHAPES_HF=$SHAPES
    SHAPES_CT2=$SHAPES
    SHAPES_OV=$SHAPES
fi
PEERS=${PEERS-hf ct2 ct2int8 ov}
for p in $PEERS; do
    [[ " hf ct2 ct2int8 ov " == *" $p "* ]] || { echo "run_performance: PEERS: '$p' is no peer (hf, ct2, ct2int8, ov)" >&2; exit 2; }
done
# OpenVINO runs only where its environment is installed (tools/peers-venv --openvino)
OV_SKIPPED=""
if [[ " $PEERS " == *" ov "* ]] && ! tools/peers-venv --openvino --check >/dev/null 2>&1; then
    OV_SKIPPED="OpenVINO skipped: no environment (tools/peers-venv --openvino makes it)"
    printf '== %s\n' "$OV_SKIPPED" >&2
    PEERS=$(echo " $PEERS " | sed 's/ ov / /; s/^ *//; s/ *$//')
fi
PRECISIONS_1_3b=${PRECISIONS_1_3b:-fp32 bf16}
WARMUP_1_3b=${WARMUP_1_3b:-0}
ITERATIONS_1_3b=${ITERATIONS_1_3b:-1}
KERNELS=${KERNELS:-auto avx2}
BUILD_DIR=${BUILD_DIR:-build-perf}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
CC=${CC:-cc}
OUT=${1:-out/performance/$(date -u +%Y%m%dT%H%M%SZ)}
failed=()

say() { printf '== %s\n' "$*" >&2; }
fail() { printf 'run_performance: %s\n' "$*" >&2; failed+=("$1"); }

# shapes_of MODEL: that model's benchctl shapes (SHAPES when set, else
# SHAPES_<model> with "." and "-" as "_"; OPT-125m's for a preset without its own).
shapes_of() {
    if [[ -n "$SHAPES" ]]; then
        echo "$SHAPES"
        return
    fi
    local var="SHAPES_${1//[.-]/_}"
    echo "${!var:-$SHAPES_125m}"
}

# per_model NAME MODEL DEFAULT: NAME_<model> ("." and "-" as "_") when set, else DEFAULT.
per_model() {
    local var="${1}_${2//[.-]/_}"
    echo "${!var:-$3}"
}
precisions_of() { per_model PRECISIONS "$1" "fp32 bf16 int8"; }
# "fp32 bf16" -> ["fp32","bf16"], for --set precisions=
precision_list() { local p=($1); local IFS=,; echo "[\"${p[*]//,/}\"]" | sed 's/,/","/g'; }

# On a CPU without AVX-512, auto picks the avx2 kernels: run that family once.
if ! grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    fams=()
    for k in $KERNELS; do
        [[ "$k" == avx2 && " $KERNELS " == *" auto "* ]] || fams+=("$k")
    done
    KERNELS="${fams[*]}"
fi
# The peers rerun restricted to AVX2 (5b): only where the CPU has more than
# AVX2 for their libraries to pick, and a benchctl family to compare with.
if grep -qw avx512f /proc/cpuinfo 2>/dev/null && [[ " $KERNELS " == *" avx2 "* ]]; then
    PEERS_AVX2=${PEERS_AVX2-ct2 ct2int8}
else
    PEERS_AVX2=${PEERS_AVX2-}
fi
PEER_AVX2_ENV=${PEER_AVX2_ENV:-ATEN_CPU_CAPABILITY=avx2 CT2_FORCE_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2}
for p in $PEERS_AVX2; do
    [[ " hf ct2 ct2int8 " == *" $p "* ]] || { echo "run_performance: PEERS_AVX2: '$p' is no peer (hf, ct2, ct2int8)" >&2; exit 2; }
done

# PEER_RUNS: "NAME ISA" for every run of a peer: each one native and, when in
# PEERS_AVX2, on avx2 right after it (the two side by side).
PEER_RUNS=()
for p in $PEERS; do
    PEER_RUNS+=("$p native")
    [[ " $PEERS_AVX2 " == *" $p "* ]] && PEER_RUNS+=("$p avx2")
done
peer_shapes() { case $1 in hf) echo "$SHAPES_HF" ;; ov) echo "$SHAPES_OV" ;; *) echo "$SHAPES_CT2" ;; esac; }
# peer_precisions NAME: the precisions est_case knows a peer's rows by.
peer_precisions() { case $1 in hf | ov) echo "fp32 bf16" ;; ct2) echo fp32 ;; ct2int8) echo int8 ;; esac; }

# --- the estimate ------------------------------------------------------------
# est_case ENGINE MODEL DTYPE FAMILY B S P R RUNS: seconds one case takes,
# RUNS (warmup + iterations) included: per run, prefill (ms per prompt token, over
# every row) + R x the decode step (the B=1 step, or ms per row at 16 rows
# and more, whichever is larger), plus building the weights once (benchctl:
# synthesis; the peers: starting the worker and making the model). The
# constants were measured with this script scaled down (P = 64, R = 16,
# warmup 0, one iteration) on the 2-core development VM (Intel Xeon,
# AVX-512 with AVX512-BF16) at load average 10 to 13, then divided by 3 (see
# slow): an estimate for a quiet machine like that one, good to perhaps +-30%;
# a slower machine takes longer.
est_case() {
    awk -v e="$1" -v m="$2" -v d="$3" -v f="$4" -v B="$5" -v S="$6" -v P="$7" -v R="$8" \
        -v it="$9" -v th="$THREADS" '
    BEGIN {
        # engine model dtype family: prefill ms/token, B=1 step ms, step ms/row at 64 rows (OPT-1.3b on
        # avx2: its auto figure x the avx2 / auto ratio of OPT-125m), build s; measured at load 10 to 13,
        # so divided by slow: how much slower that run was than the quiet run of docs/performance.md
        # (2026-11-29 23:23) on the same rows, 3 for benchctl (auto), 6.5 for transformers and
        # CTranslate2 (their threads suffer more from load). The avx2 rows have no quiet reference and
        # get 3: at load they took 2 to 5x the auto rows, more than the FMA peaks explain (1.4x for
        # fp32), so their share of the estimate is likely long.
        slow = (e == "benchctl") ? 3 : 6.5
        c["benchctl 125m fp32 auto"] = "2.123 31.95 3.550 2.0"
        c["benchctl 125m bf16 auto"] = "4.284 21.30 3.104 2.0"
        c["benchctl 125m int8 auto"] = "1.251 10.07 1.662 2.0"
        c["benchctl 125m fp32 avx2"] = "11.597 86.48 14.027 5.6"
        c["benchctl 125m bf16 avx2"] = "10.368 67.20 13.123 5.6"
        c["benchctl 125m int8 avx2"] = "10.533 35.75 16.851 5.6"
        c["benchctl 1.3b fp32 auto"] = "64.611 730.83 116.142 44.4"
        c["benchctl 1.3b bf16 auto"] = "87.604 256.15 102.115 44.4"
        c["benchctl 1.3b int8 auto"] = "66.949 452.55 95.630 44.4"
        c["benchctl 1.3b fp32 avx2"] = "160.269 1311.50 459 44.3"
        c["benchctl 1.3b bf16 avx2"] = "130.310 690.56 432 44.3"
        c["benchctl 1.3b int8 avx2"] = "129.447 384.87 970 44.3"
        c["hf 125m fp32 -"] = "2.606 205.98 30.769 7.6"
        c["hf 125m bf16 -"] = "3.759 193.77 66.827 7.6"
        c["ct2 125m fp32 -"] = "2.823 79.85 8.271 8.9"
        c["ct2int8 125m int8 -"] = "1.890 14.07 5.994 6.7"
        # OpenVINO (ov): the same scaled-down run (B=1 and 16 rows; the per-row step at 16 rows, prefill
        # per token at 16 rows, build = exporting and compiling the model, once per dtype) at load average
        # 13 to 18 (2026-12-02), divided by the slow of the other peers: no quiet run of it to scale by
        c["ov 125m fp32 -"] = "17.268 491.43 70.805 133"
        c["ov 125m bf16 -"] = "8.513 400.97 40.475 133"
        # the peers held to AVX2 (PEERS_AVX2): the native figures above x the ratios (avx2 / native:
        # prefill, B=1 step, step per row at 16 or 64 rows) of one scaled-down run of both, back to back
        # at load average 4.7, rounded: CT2 float32 1.5 1.15 2.3, int8 2.8 1.9 2.4; HF fp32 1.4 2.6 3.6,
        # bf16 3.8 1.0 1.35 (no oneDNN bf16 matmul below AVX-512)
        c["ct2 125m fp32 avx2"] = "4.235 91.83 19.02 8.9"
        c["ct2int8 125m int8 avx2"] = "5.292 26.73 14.39 6.7"
        c["hf 125m fp32 avx2"] = "3.648 535.5 110.8 7.6"
        c["hf 125m bf16 avx2"] = "14.28 193.77 90.2 7.6"
        k = e " " m " " d " " f
        if (!(k in c)) k = e " 125m " d " " (f == "avx2" ? "avx2" : "auto")
        if (!(k in c)) { print 0; exit }
        split(c[k], v, " ")
        rows = B * S
        step = rows * v[3] > v[2] ? rows * v[3] : v[2]
        s = (v[4] + it * (rows * P * v[1] + R * step) / 1000) / slow
        print s * 2 / (th < 2 ? th : 2)
    }'
}

estimate() {
    local total=30 # the build (when up to date) and the probes, before and after
    local model fam shape b s p r d
    if [[ "${SKIP_BENCHCTL:-0}" != 1 ]]; then
        for fam in $KERNELS; do
            for model in $MODELS; do
                local runs=$(($(per_model WARMUP "$model" "$WARMUP") + $(per_model ITERATIONS "$model" "$ITERATIONS")))
                for shape in $(shapes_of "$model"); do
                    IFS=, read -r b s p r <<<"$shape"
                    for d in $(precisions_of "$model"); do
                        total=$(awk -v t="$total" \
                            -v x="$(est_case benchctl "$model" "$d" "$fam" "$b" "$s" "$p" "$r" "$runs")" \
                            'BEGIN { print t + x }')
                    done
                done
            done
        done
    fi
    if [[ "${SKIP_PEERS:-0}" != 1 ]]; then
        local peer isa run
        for run in "${PEER_RUNS[@]}"; do
            read -r peer isa <<<"$run"
            [[ $isa == native ]] && fam=- || fam=$isa
            for shape in $(peer_shapes "$peer"); do
                IFS=, read -r b s p r <<<"$shape"
                for d in $(peer_precisions "$peer"); do
                    total=$(awk -v t="$total" \
                        -v x="$(est_case "$peer" 125m "$d" "$fam" "$b" "$s" "$p" "$r" $((WARMUP + ITERATIONS)))" \
                        'BEGIN { print t + x }')
                done
            done
        done
    fi
    awk -v t="$total" 'BEGIN { printf "%.0f min", t / 60 }'
}
say "estimated run time: about $(estimate) on a quiet 2-core machine like the development VM (kernels: $KERNELS; models: $MODELS; est_case in the script)"
[[ "${ESTIMATE_ONLY:-0}" == 1 ]] && exit 0
mkdir -p "$OUT" || exit 1

# --- machine -----------------------------------------------------------------
{
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "git: $(git rev-parse --short=12 HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | grep -q . && echo '(dirty)')"
    echo "uname: $(uname -srm)"
    echo "loadavg_start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "build: $BUILD_TYPE, $("$CC" --version | head -n 1)"
    echo "threads: $THREADS  warmup: $WARMUP  iterations: $ITERATIONS"
    for model in $MODELS; do
        echo "benchctl $model: shapes (B,S,P,R) $(shapes_of "$model"); precisions $(precisions_of "$model");" \
            "warmup $(per_model WARMUP "$model" "$WARMUP"), iterations $(per_model ITERATIONS "$model" "$ITERATIONS")"
    done
    echo "transformers' shapes: $SHAPES_HF; CTranslate2's: $SHAPES_CT2; OpenVINO's: $SHAPES_OV"
    echo "peers: ${PEERS:-none}${OV_SKIPPED:+ ($OV_SKIPPED)}"
    echo "peers again restricted to AVX2: ${PEERS_AVX2:-none} ($PEER_AVX2_ENV)"
    echo "config: $CONFIG  benchctl models: $MODELS  kernels: $KERNELS"
    echo "estimate: $(estimate)"
    lscpu
} >"$OUT/machine.txt" 2>&1

# --- 1. build ----------------------------------------------------------------
say "building the bandwidth and FMA-peak probes"
mkdir -p "$BUILD_DIR"
for probe in bandwidth fmapeak; do
    if ! "$CC" -O2 -std=c11 -Wall -Wextra -Werror -pthread -o "$BUILD_DIR/$probe" "tools/bandwidth/$probe.c"; then
        fail "$probe-build"
    fi
done

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

probes() { # $1: tag
    for probe in bandwidth fmapeak; do
        if [[ -x "$BUILD_DIR/$probe" ]]; then
            say "$probe probe ($1)"
            "$BUILD_DIR/$probe" --threads "$THREADS" --reps 5 --json "$OUT/${probe}_$1.json" |
                tee "$OUT/${probe}_$1.log" >&2 || fail "$probe-$1"
        fi
    done
}

# --- 2. bandwidth and FMA peak, before --------------------------------------------
probes before

# Cores, not vCPUs: the FMA peak with $THREADS threads over the peak with 1, per
# kernel family, into machine.txt beside sysfs's topology. Near $THREADS: the
# threads got cores of their own; near 1: they share one core's FMA units (SMT
# siblings, or a VM's vCPUs that sysfs reports as separate cores).
smt_check() { # $1: fmapeak's JSON
    python3 - "$1" "$THREADS" <<'PY'
import json, sys
res, T = json.load(open(sys.argv[1]))["results"], int(sys.argv[2])
one = {r["kernel"]: r["best_gflop_per_s"] for r in res if r["threads"] == 1}
for r in res:
    if r["threads"] == T and T > 1 and one.get(r["kernel"], 0) > 0:
        print("fma_scaling: %s %d threads / 1 thread = %.2f (best %.1f / %.1f GFLOP/s; %d: separate cores, "
              "1: one core shared)" % (r["kernel"], T, r["best_gflop_per_s"] / one[r["kernel"]],
                                      r["best_gflop_per_s"], one[r["kernel"]], T))
PY
}
{
    echo "sysfs topology: $(cat /sys/devices/system/cpu/cpu*/topology/thread_siblings_list 2>/dev/null | sort -u |
        tr '\n' ' ')(sibling lists); $(sort -u /sys/devices/system/cpu/cpu*/topology/core_id 2>/dev/null |
        wc -l) core ids; hypervisor flag: $(grep -qw hypervisor /proc/cpuinfo && echo yes || echo no)"
    if [[ -f "$OUT/fmapeak_before.json" ]]; then smt_check "$OUT/fmapeak_before.json"; fi
} >>"$OUT/machine.txt" 2>&1

# --- 3, 4, 5. the engines -----------------------------------------------------------
# engine TAG SHAPES EXTRA_SET...: $CONFIG once per shape
# of SHAPES, with the --set overrides given (the backend, for a peer), into
# $OUT/TAG_bBsS.json (and its log beside it).
engine() {
    local tag=$1 shapes=$2
    shift 2
    for shape in $shapes; do
        IFS=, read -r b s p r <<<"$shape"
        say "$tag: B=$b S=$s P=$p R=$r"
        rm -f out/performance/benchctl.json
        if "$BENCHCTL" run "$CONFIG" "$@" \
            --set "matrix.batch_sizes=[$b]" --set "matrix.samples_per_prompt=[$s]" \
            --set "matrix.prompt_lengths=[$p]" --set "matrix.response_lengths=[$r]" \
            --set "backend.settings.threads=$THREADS" \
            --set "run.warmup=${RUN_WARMUP:-$WARMUP}" --set "run.iterations=${RUN_ITERATIONS:-$ITERATIONS}" \
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
    for fam in $KERNELS; do
        for model in $MODELS; do
            RUN_WARMUP=$(per_model WARMUP "$model" "$WARMUP") RUN_ITERATIONS=$(per_model ITERATIONS "$model" "$ITERATIONS") \
                engine "benchctl_${model}_$fam" "$(shapes_of "$model")" --set "backend.settings.model=\"$model\"" \
                --set "backend.settings.kernels=\"$fam\"" --set "precisions=$(precision_list "$(precisions_of "$model")")"
        done
    done
fi
B1_ROUNDS=${B1_ROUNDS:-24}
if [[ -n "$BENCHCTL" && "${SKIP_BENCHCTL:-0}" != 1 && "$B1_ROUNDS" != 0 ]] &&
    grep -Eq '^[[:space:]]*name[[:space:]]*=[[:space:]]*"llama"' "$CONFIG"; then
    for model in $MODELS; do
        dtypes=$(for d in $(precisions_of "$model"); do case $d in fp32 | bf16 | int8) printf '%s,' "$d" ;; esac; done)
        [[ -n "$dtypes" ]] || continue
        say "bench_b1_bound: $model, $B1_ROUNDS rounds per precision (${dtypes%,})"
        "$BUILD_DIR/tools/bench/bench_b1_bound" --preset "$model" --threads "$THREADS" --rounds "$B1_ROUNDS" \
            --dtype "${dtypes%,}" >"$OUT/b1_$model.txt" 2>&1 || fail "b1-$model (see $OUT/b1_$model.txt)"
    done
fi
if [[ -n "$BENCHCTL" && "${SKIP_PEERS:-0}" != 1 ]]; then
    if ! tools/peers-venv --check >/dev/null; then
        fail "peers (no environment: run tools/peers-venv)"
    else
        for run in "${PEER_RUNS[@]}"; do
            read -r peer isa <<<"$run"
            tag=$peer env=""
            [[ $isa == avx2 ]] && tag=${peer}_avx2 env=$PEER_AVX2_ENV
            case $peer in
            hf) peer_args=(--set 'backend.settings.command="tools/peers-worker transformers"' --set 'precisions=["fp32","bf16"]') ;;
            # CTranslate2 4.8.5 has no bfloat16 on a CPU without it (describe
            # leaves it out, and benchctl refuses a run with a case the engine
            # cannot run), so float32 only, and int8 beside it
            ct2) peer_args=(--set 'backend.settings.command="tools/peers-worker ctranslate2"' --set 'precisions=["fp32"]') ;;
            ct2int8) peer_args=(--set 'backend.settings.command="tools/peers-worker ctranslate2"'
                --set 'backend.settings.compute_type="int8"' --set 'precisions=["fp32"]') ;;
            # OpenVINO: INFERENCE_PRECISION_HINT f32 and bf16 (ov.py)
            ov) peer_args=(--set 'backend.settings.command="tools/peers-worker openvino"' --set 'precisions=["fp32","bf16"]') ;;
            esac
            OMP_NUM_THREADS=$THREADS engine "$tag" "$(peer_shapes "$peer")" --set 'backend.name="worker"' \
                --set "backend.settings.env=\"$env\"" "${peer_args[@]}"
        done
    fi
fi

# --- 6. bandwidth and FMA peak, after ---------------------------------------------------
probes after
echo "loadavg_end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"

# --- 7. the table ---------------------------------------------------------------------
reports=()
for f in "$OUT"/benchctl_*.json "$OUT"/hf_*.json "$OUT"/ct2_*.json "$OUT"/ct2int8_*.json "$OUT"/ov_*.json; do
    [[ -f "$f" ]] && reports+=("$f")
done
bws=()
for f in "$OUT"/bandwidth_*.json; do
    [[ -f "$f" ]] && bws+=(--bandwidth "$f")
done
for f in "$OUT"/fmapeak_*.json; do
    [[ -f "$f" ]] && bws+=(--fmapeak "$f")
done
for f in "$OUT"/b1_*.txt; do
    [[ -f "$f" ]] && grep -q '^b1 ' "$f" && bws+=(--b1 "$f")
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
