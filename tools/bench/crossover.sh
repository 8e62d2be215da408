#!/usr/bin/env bash
# crossover.sh: the decode step's time against its rows, for every kernel
# family and weight precision this CPU runs, in one run (the crossover table
# of docs/kernels.md): `bench_kernels --step MODEL --rows ROWS` per model and
# family (every linear of the model's decode step, the lm_head included, each
# layer's weights in their own buffer so they stream from memory), with the
# read bandwidth (tools/bandwidth) before and after, the load average beside
# every family's figures, then tools/bench/crossover_table.py's tables.
#
# Usage: tools/bench/crossover.sh [OUTDIR]
#   OUTDIR defaults to out/crossover/<UTC time>: machine.txt, the logs,
#   step.txt (every bench_kernels line, with the load average before and after
#   each call) and table.md.
# Environment (defaults in brackets):
#   MODELS ["125m qwen0.5b"] bench_kernels --step's shapes (OPT-125m, Qwen2.5-0.5B)
#   ROWS ["1,2,4,8,16,32,64"] the decode step's rows
#   KERNELS [every family bench_kernels has and this CPU runs, but portable]
#       a family named that the engine lacks (e.g. amx: bench_kernels --help
#       lists the engine's families) or the CPU cannot run gets a line saying
#       so and no column; when the engine has it, its columns come like the
#       others'
#   DTYPES ["float32 bfloat16 int8"]  THREADS [1] (bench_kernels times 1..THREADS)
#   CPU_TIME [1] bench_kernels --cpu-time: the process's CPU time, which on a
#       shared machine leaves out the time a thread waited for a core (with
#       THREADS 1 only: more threads' CPU times add up); 0: the wall clock
#   QUICK [1] bench_kernels --quick (medians of 3 batches of >= 20 ms; 0: 7 of >= 100 ms)
#   BUILD_DIR [build] where bench_kernels is built (cmake --build BUILD_DIR --target bench_kernels)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
MODELS=${MODELS:-125m qwen0.5b}
ROWS=${ROWS:-1,2,4,8,16,32,64}
DTYPES=${DTYPES:-float32 bfloat16 int8}
THREADS=${THREADS:-1}
CPU_TIME=${CPU_TIME:-1}
QUICK=${QUICK:-1}
BUILD_DIR=${BUILD_DIR:-build}
CC=${CC:-cc}
OUT=${1:-out/crossover/$(date -u +%Y%m%dT%H%M%SZ)}
BK="$BUILD_DIR/tools/bench/bench_kernels"
failed=0

say() { printf '== %s\n' "$*" >&2; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

if [[ $CPU_TIME == 1 && $THREADS != 1 ]]; then
    echo "crossover: CPU_TIME=1 times one thread (THREADS=1); CPU_TIME=0 for $THREADS threads on the wall clock" >&2
    exit 2
fi
if [[ ! -x "$BK" ]] && ! cmake --build "$BUILD_DIR" --target bench_kernels >/dev/null; then
    echo "crossover: no $BK (configure $BUILD_DIR with cmake first)" >&2
    exit 1
fi
mkdir -p "$OUT" || exit 1
# the engine's families: bench_kernels' usage line ("--isa portable|avx2|...")
ENGINE_FAMILIES=$("$BK" --no-such-option 2>&1 | sed -n 's/.*--isa \([a-z0-9_|]*\).*/\1/p' | tr '|' ' ')
CPU_BEST=$("$BK" --step 125m --rows 1 --isa none --threads 1 --quick 2>/dev/null | sed -n 's/^detected ISA: \([a-z0-9_]*\);.*/\1/p')
# the families this CPU runs: those up to the detected one, in the engine's order
CPU_FAMILIES=""
for f in $ENGINE_FAMILIES; do
    CPU_FAMILIES+="$f "
    [[ $f == "$CPU_BEST" ]] && break
done
KERNELS=${KERNELS:-$(for f in $CPU_FAMILIES; do [[ $f == portable ]] || printf '%s ' "$f"; done)}

{
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "git: $(git rev-parse --short=12 HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | grep -q . && echo '(dirty)')"
    echo "uname: $(uname -srm)"
    echo "cpu: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1); $(nproc) CPUs online"
    echo "isa flags: $(grep -o -w 'avx2\|avx512f\|avx512_bf16\|avx512_vnni\|avx_vnni\|amx_[a-z0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
    echo "engine families: $ENGINE_FAMILIES; this CPU's best: $CPU_BEST; measured: $KERNELS"
    echo "command: $BK --step MODEL --rows $ROWS --isa FAMILY --dtype DTYPE --threads $THREADS$([[ $QUICK == 1 ]] && echo ' --quick')$([[ $CPU_TIME == 1 ]] && echo ' --cpu-time')"
    echo "models: $MODELS; dtypes: $DTYPES"
    echo "loadavg_start: $(load)"
} >"$OUT/machine.txt"

# the read bandwidth, before and after (the bound of a step at few rows)
bandwidth() {
    if "$CC" -O2 -std=c11 -Wall -Wextra -Werror -pthread -o "$OUT/bandwidth" tools/bandwidth/bandwidth.c; then
        say "bandwidth ($1)"
        echo "loadavg_bandwidth_$1: $(load)" >>"$OUT/machine.txt"
        "$OUT/bandwidth" --threads "$THREADS" --reps 5 --json "$OUT/bandwidth_$1.json" >"$OUT/bandwidth_$1.log" 2>&1 ||
            failed=1
    else
        failed=1
    fi
}
bandwidth before

: >"$OUT/step.txt"
for fam in $KERNELS; do
    if [[ " $ENGINE_FAMILIES " != *" $fam "* ]]; then
        echo "crossover: kernels '$fam': the engine has no such family (it has: $ENGINE_FAMILIES);" \
            "its columns need an engine that has it, on a CPU that runs it" | tee -a "$OUT/machine.txt" >&2
        continue
    fi
    if [[ " $CPU_FAMILIES " != *" $fam "* ]]; then
        echo "crossover: kernels '$fam': this CPU runs at most $CPU_BEST" | tee -a "$OUT/machine.txt" >&2
        continue
    fi
    for model in $MODELS; do
        for dt in $DTYPES; do
            say "$model $fam $dt"
            echo "# load $(load) before $model $fam $dt" >>"$OUT/step.txt"
            if ! "$BK" --step "$model" --rows "$ROWS" --isa "$fam" --dtype "$dt" --threads "$THREADS" \
                $([[ $QUICK == 1 ]] && echo --quick) $([[ $CPU_TIME == 1 ]] && echo --cpu-time) \
                >"$OUT/step_${model}_${fam}_$dt.log" 2>&1; then
                echo "crossover: bench_kernels failed ($OUT/step_${model}_${fam}_$dt.log)" >&2
                failed=1
            fi
            grep '^step ' "$OUT/step_${model}_${fam}_$dt.log" >>"$OUT/step.txt"
            echo "# load $(load) after" >>"$OUT/step.txt"
        done
    done
done

bandwidth after
echo "loadavg_end: $(load)" >>"$OUT/machine.txt"
python3 tools/bench/crossover_table.py "$OUT" >"$OUT/table.md" || failed=1
cat "$OUT/table.md"
exit $failed
