#!/bin/sh
# stopped.sh: a rank that stops (SIGSTOP) or dies (SIGKILL) in the middle of
# a distributed run under a real mpirun (docs/scale.md, "When a rank stops"):
# with distributed.timeout_s = 2 the ranks still running fail the case in
# progress and every later one, naming the stopped rank, rank 0 writes its
# reports and the job ends (exit 3) in seconds, not never; a killed rank ends
# the job at once. Replicate and shard, 3 ranks on loopback.
#   stopped.sh BENCHCTL MPIRUN FIXTURES SRC_ROOT WORK
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
MPIRUN=$2
FIXTURES=$3
SRC=$4
WORK=$5
bc_test_workdir "$WORK"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_rmaps_base_oversubscribe=1
export BENCHCTL_PLUGIN_PATH=$FIXTURES
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$SRC/tests/mpi/lsan-openmpi.supp"

cat >case.cfg <<'EOF'
# 2 batch sizes x 2 samples = 4 cases of about 1 s each on every rank
backend = { name = "testbackend"; settings = { expand_us = 100; generate_us = 200000; post_us = 50; mode = "sleep"; }; };
precisions = [ "testbf16" ];
cache_policies = [ "testretain" ];
matrix = { batch_sizes = [1, 2]; samples_per_prompt = [1, 2]; prompt_lengths = [8]; response_lengths = [4]; };
run = { warmup = 1; iterations = 4; };
distributed = { timeout_s = 2.0; };
reporters = ( { name = "json"; settings = { path = "report.json"; }; }, "console" );
EOF

# rank_pid DIR RANK: the pid of the benchctl process of rank RANK running in DIR
rank_pid() {
    for p in $(pgrep -f "benchctl run $WORK/case.cfg"); do
        [ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$WORK/$1" ] || continue
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

# hit NAME SIGNAL MODE: runs 3 ranks in NAME; once the first case began,
# sends SIGNAL to rank 1; waits (at most 90 s) for mpirun. Its status in
# $code, its time from the signal in $secs.
hit() {
    name=$1
    mkdir -p "$name"
    (cd "$name" && exec timeout 90 "$MPIRUN" --oversubscribe -np 3 "$BENCHCTL" run "$WORK/case.cfg" \
        --set "distributed.mode=\"$3\"" --set 'backend.settings.case_log="cases.log"' >out.txt 2>err.txt) &
    job=$!
    tries=0
    while ! grep -q '^begin ' "$name/cases.log" 2>/dev/null && [ "$tries" -lt 600 ]; do
        sleep 0.05
        tries=$((tries + 1))
    done
    victim=$(rank_pid "$name" 1) || victim=
    [ -n "$victim" ] || fail "$name: rank 1's process not found"
    [ -n "$victim" ] && kill "-$2" "$victim"
    t0=$(date +%s)
    wait "$job"
    code=$?
    secs=$(($(date +%s) - t0))
    # nothing of the job may outlive it (a stopped rank included)
    sleep 1
    left=$(pgrep -f "benchctl run $WORK/case.cfg" | while read -r p; do
        [ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$WORK/$name" ] && echo "$p"; done)
    if [ -n "$left" ]; then
        fail "$name: processes outlived the job: $left"
        for p in $left; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    fi
}

for mode in replicate shard; do
    hit "stop_$mode" STOP "$mode"
    [ "$code" -eq 124 ] && fail "stop_$mode: the job still waited after 90 s"
    [ "$code" -eq 3 ] || { fail "stop_$mode: exited $code, want 3 (cases failed)"; sed 's/^/    /' "stop_$mode/err.txt"; }
    [ "$secs" -le 40 ] || fail "stop_$mode: the job took $secs s after the stop (timeout_s is 2)"
    grep -q 'rank 1 ([^)]*) did not reach the [a-z]* within 2 s' "stop_$mode/err.txt" ||
        { fail "stop_$mode: stderr does not name rank 1"; sed 's/^/    /' "stop_$mode/err.txt"; }
    [ -s "stop_$mode/report.json" ] || fail "stop_$mode: rank 0 wrote no report"
    python3 - "stop_$mode/report.json" <<'EOF' || fail "stop_$mode: report.json does not fail the cases naming rank 1"
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
assert len(cases) == 4, len(cases)
failed = [c for c in cases if c["status"] == "failed"]
assert failed, "no case failed"
assert all("rank 1 (" in c["message"] and "did not reach" in c["message"] for c in failed), [c["message"] for c in failed]
EOF
    echo "ok: stop_$mode (exit $code, $secs s after SIGSTOP)"
done

hit kill_replicate KILL replicate
[ "$code" -ne 0 ] && [ "$code" -ne 124 ] || fail "kill_replicate: exited $code, want a failure within 90 s"
[ "$secs" -le 30 ] || fail "kill_replicate: the job took $secs s after the kill"
echo "ok: kill_replicate (exit $code, $secs s after SIGKILL)"

bc_test_finish stopped
