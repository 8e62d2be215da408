#!/bin/sh
# mpirun.sh: benchctl under a real mpirun on this machine's loopback
# (docs/scale.md), 2 and 3 ranks, oversubscribed, against the fixture backend
# (tests/fixtures/testbackend.c: rank_us, straggler_rank/us, fail_rank,
# short_rank) and the OPT engine.
#   mpirun.sh BENCHCTL CHECK MPIRUN FIXTURES NEXT_MINOR_PLUGINS SRC_ROOT WORK
# CHECK is check_distributed; NEXT_MINOR_PLUGINS the tests/abi plugins built
# one ABI minor ahead (a rank running other plugin versions).
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
CHECK=$2
MPIRUN=$3
FIXTURES=$4
NEXT=$5
SRC=$6
WORK=$7
bc_test_workdir "$WORK"
# Open MPI refuses root without these (CI runs as root)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# loopback only, no other transport probing, quiet about it
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_rmaps_base_oversubscribe=1
export BENCHCTL_PLUGIN_PATH=$FIXTURES
# under ASan: Open MPI's own allocations are not ours (lsan-openmpi.supp);
# full stacks, so that a suppression sees the library frames
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$SRC/tests/mpi/lsan-openmpi.supp"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"

# mpi NAME NP ARGS...: runs benchctl on NP ranks in WORK/NAME (timeout 120 s);
# status in $code, output in NAME/out.txt and NAME/err.txt
mpi() {
    name=$1
    np=$2
    shift 2
    mkdir -p "$name"
    (cd "$name" && timeout 120 "$MPIRUN" --oversubscribe -np "$np" "$@" >out.txt 2>err.txt)
    code=$?
}

cat >case.cfg <<'EOF'
# 2 batch sizes x 2 samples = 4 cases; generate sleeps, so ranks share the cores fairly
backend = { name = "testbackend"; settings = { expand_us = 100; generate_us = 200; post_us = 50; mode = "sleep"; }; };
precisions = [ "testbf16" ];
cache_policies = [ "testretain" ];
matrix = { batch_sizes = [1, 2]; samples_per_prompt = [1, 2]; prompt_lengths = [8]; response_lengths = [4]; };
run = { warmup = 1; iterations = 3; };
reporters = ( { name = "json"; settings = { path = "report.json"; }; }, { name = "csv"; settings = { path = "report.csv"; }; }, "console" );
EOF
CFG=$WORK/case.cfg

# 1. replicate, 2 and 3 ranks, the last rank a straggler (100 ms per rollout)
for np in 2 3; do
    last=$((np - 1))
    mpi "straggler$np" "$np" "$BENCHCTL" run "$CFG" \
        --set "backend.settings.straggler_rank=$last" --set backend.settings.straggler_us=100000
    [ "$code" -eq 0 ] || { fail "straggler$np: exited $code"; sed 's/^/    /' "straggler$np/err.txt"; }
    # with 3 ranks the median is a normal rank, so the tax is the whole gap
    tax=25
    [ "$np" -eq 3 ] && tax=50
    "$CHECK" "straggler$np/report.json" "$np" replicate "slowest=$last" gap_ms=50 "tax_ms=$tax" failed=0 forced=1 ||
        fail "straggler$np: report"
    grep -q 'straggler' "straggler$np/report.csv" || fail "straggler$np: report.csv has no straggler columns"
    [ "$(grep -c '^[0-9]' "straggler$np/report.csv")" -eq 4 ] || fail "straggler$np: report.csv should have 4 rows"
    grep -q "ranks: $np" "straggler$np/out.txt" || fail "straggler$np: the console does not say 'ranks: $np'"
    # the console's case tables are rank 0's figures, and say so
    [ "$(grep -c '^rank 0:$' "straggler$np/out.txt")" -ge 2 ] || fail "straggler$np: the console's tables are not labelled rank 0"
    # only rank 0 reports: one summary line on stderr
    [ "$(grep -c 'cases: 4 ok' "straggler$np/err.txt")" -eq 1 ] || fail "straggler$np: not exactly one summary line"
done

# the html report draws one bar per rank and case, the straggler's the darker one
mpi html 2 "$BENCHCTL" run "$CFG" --set backend.settings.straggler_rank=1 --set backend.settings.straggler_us=100000 \
    --reporter html --set 'reporters.[0].settings.path="report.html"'
[ "$code" -eq 0 ] || { fail "html: exited $code"; sed 's/^/    /' html/err.txt; }
[ "$(grep -o '<section id="ranks">' html/report.html | wc -l)" -eq 1 ] || fail "html: no ranks section"
[ "$(grep -o '<rect class="f[01]" [^>]*><title>[^<]*: rank [01] ' html/report.html | wc -l)" -eq 8 ] ||
    fail "html: not 8 rank bars (4 cases x 2 ranks)"
[ "$(grep -o '<rect class="f1" [^>]*><title>[^<]*: rank 1 ' html/report.html | wc -l)" -eq 4 ] ||
    fail "html: rank 1 is not the darker bar of every case"
if command -v xmllint >/dev/null 2>&1; then xmllint --noout html/report.html || fail "html: not well-formed"; fi

# benchctl report renders a saved distributed run with its blocks (json, html)
"$BENCHCTL" report straggler3/report.json --reporter json -o replay.json >/dev/null 2>replay.err ||
    { fail "report straggler3: exited non-zero"; sed 's/^/    /' replay.err; }
"$CHECK" replay.json 3 replicate slowest=2 gap_ms=50 tax_ms=50 failed=0 forced=1 || fail "report straggler3: replayed report"
"$BENCHCTL" report straggler2/report.json --reporter html -o replay.html >/dev/null 2>&1 || fail "report html: exited non-zero"
[ "$(grep -o '<rect class="f1" [^>]*><title>[^<]*: rank 1 ' replay.html | wc -l)" -eq 4 ] ||
    fail "report html: the replayed page lacks the rank bars"

# 2. rank-dependent timings: rank r waits r x 40 ms; rank 2 is the slowest
mpi ranked 3 "$BENCHCTL" run "$CFG" --set backend.settings.rank_us=40000
[ "$code" -eq 0 ] || { fail "ranked: exited $code"; sed 's/^/    /' ranked/err.txt; }
"$CHECK" ranked/report.json 3 replicate slowest=2 gap_ms=20 failed=0 || fail "ranked: report"

# 3. a case that fails on rank 1 only fails everywhere, with rank 1's error; the run goes on
mpi fail_one 2 "$BENCHCTL" run "$CFG" --set backend.settings.fail_on_batch=2 --set backend.settings.fail_rank=1
[ "$code" -eq 3 ] || { fail "fail_one: exited $code, want 3"; sed 's/^/    /' fail_one/err.txt; }
"$CHECK" fail_one/report.json 2 replicate failed=2 failed_rank=1 || fail "fail_one: report"
grep -q 'rank 1 (.*): generate: injected failure for batch_size 2' fail_one/report.json ||
    fail "fail_one: the failed cases do not carry rank 1's error"

# 4. sampled lengths: rank 1 stops a token early, so the lengths were not forced
mpi short 2 "$BENCHCTL" run "$CFG" --set backend.settings.short_rank=1
[ "$code" -eq 0 ] || { fail "short: exited $code"; sed 's/^/    /' short/err.txt; }
"$CHECK" short/report.json 2 replicate forced=0 || fail "short: report"

# 5. shard, 3 ranks: every rank runs a share, largest effective batch first
mpi shard 3 "$BENCHCTL" run "$CFG" --set 'distributed.mode="shard"' \
    --set 'matrix.batch_sizes=[1, 2, 3]'
[ "$code" -eq 0 ] || { fail "shard: exited $code"; sed 's/^/    /' shard/err.txt; }
"$CHECK" shard/report.json 3 shard all_ranks largest_on=0 failed=0 || fail "shard: report"
[ "$(grep -c '^[0-9]' shard/report.csv)" -eq 6 ] || fail "shard: report.csv should have 6 rows"
"$BENCHCTL" report shard/report.json --reporter json -o shard_replay.json >/dev/null 2>&1 || fail "report shard: exited non-zero"
"$CHECK" shard_replay.json 3 shard all_ranks largest_on=0 failed=0 || fail "report shard: replayed report"

# 6. shard, 2 ranks, a case failing on rank 1 (where it ran) only
mpi shard_fail 2 "$BENCHCTL" run "$CFG" --set 'distributed.mode="shard"' \
    --set backend.settings.fail_on_batch=1 --set backend.settings.fail_rank=1
"$CHECK" shard_fail/report.json 2 shard all_ranks || fail "shard_fail: report"

# 6b. a backends list (docs/config.md): replicate runs every backend's cases on
# every rank, shard spreads the cases of both backends over the ranks
sed -e 's/^backend = { name = "testbackend"; settings = \(.*\) };$/backends = ( { name = "testbackend"; label = "a"; settings = \1 }, { name = "testbackend"; label = "b"; settings = \1 } );/' case.cfg >backends.cfg
grep -q '^backends = ' backends.cfg || fail "backends: could not write backends.cfg"
mpi backends 2 "$BENCHCTL" run "$WORK/backends.cfg"
[ "$code" -eq 0 ] || { fail "backends: exited $code"; sed 's/^/    /' backends/err.txt; }
"$CHECK" backends/report.json 2 replicate failed=0 || fail "backends: report"
[ "$(grep -c '"backend": "b"' backends/report.json)" -eq 4 ] || fail "backends: not 4 cases of backend b"
[ "$(grep -c '^[0-9].*,b[[:space:]]*$' backends/report.csv)" -eq 4 ] || fail "backends: report.csv should have 4 rows of b"
mpi backends_shard 3 "$BENCHCTL" run "$WORK/backends.cfg" --set 'distributed.mode="shard"'
[ "$code" -eq 0 ] || { fail "backends_shard: exited $code"; sed 's/^/    /' backends_shard/err.txt; }
"$CHECK" backends_shard/report.json 3 shard all_ranks failed=0 || fail "backends_shard: report"
[ "$(grep -c '^[0-9].*,a[[:space:]]*$' backends_shard/report.csv)" -eq 4 ] || fail "backends_shard: report.csv should have 4 rows of a"
[ "$(grep -c '^[0-9].*,b[[:space:]]*$' backends_shard/report.csv)" -eq 4 ] || fail "backends_shard: report.csv should have 4 rows of b"

# 7. a rank with other plugin versions (built one ABI minor ahead): refused, naming the rank and the difference
mpi mismatch 2 -x BENCHCTL_PLUGIN_PATH="$FIXTURES" "$BENCHCTL" run "$CFG" : \
    -np 1 -x BENCHCTL_PLUGIN_PATH="$NEXT" "$BENCHCTL" run "$CFG"
[ "$code" -eq 2 ] || fail "mismatch: exited $code, want 2"
grep -q "rank 2 (.*) does not run what rank 0 (.*) runs: rank 0 has 'backend testbackend .* abi 2\.[0-9]*', rank 2 has 'backend testbackend .* abi 2\.[0-9]*'" mismatch/err.txt ||
    { fail "mismatch: no line naming rank 2 and the difference"; sed 's/^/    /' mismatch/err.txt; }
[ "$(grep -c 'does not run what' mismatch/err.txt)" -eq 1 ] || fail "mismatch: the error is not printed once (rank 0)"

# 8. a config error is read and reported by rank 0 alone
sed 's/batch_sizes = \[1, 2\]/batch_sizes = [0]/' case.cfg >bad.cfg
mpi bad 2 "$BENCHCTL" run "$WORK/bad.cfg"
[ "$code" -eq 2 ] || fail "bad: exited $code, want 2"
[ "$(grep -c 'bad.cfg:[0-9]*: matrix.batch_sizes' bad/err.txt)" -eq 1 ] || { fail "bad: the config error is not printed once"; sed 's/^/    /' bad/err.txt; }

# 9. srun without PMIx: N singletons, each alone: one line saying what to do
mkdir -p srun
(cd srun && SLURM_STEP_NUM_TASKS=4 SLURM_STEP_ID=0 "$BENCHCTL" run "$CFG" >out.txt 2>err.txt)
code=$?
[ "$code" -eq 2 ] || fail "srun: exited $code, want 2"
grep -q 'launched by srun as one of 4 tasks' srun/err.txt && grep -q 'srun --mpi=pmix' srun/err.txt ||
    { fail "srun: no line saying what to do"; sed 's/^/    /' srun/err.txt; }

# 10. each rank's device_index defaults to its local rank when device = "cuda" (the fixture only names it)
mpi device 2 "$BENCHCTL" run "$CFG" --cases 0 --set 'backend.settings.device="cuda"'
[ "$code" -eq 0 ] || { fail "device: exited $code"; sed 's/^/    /' device/err.txt; }
grep -q '"rank": 1, "host": "[^"]*", "local_rank": 1, "device": "cuda:1"' device/report.json ||
    grep -A4 '"rank": 1,' device/report.json | grep -q '"device": "cuda:1"' || fail "device: rank 1 does not run on cuda:1"
mpi device_set 2 "$BENCHCTL" run "$CFG" --cases 0 --set 'backend.settings.device="cuda"' --set backend.settings.device_index=0
[ "$(grep -c '"device": "cuda:0"' device_set/report.json)" -ge 3 ] || fail "device_set: a device_index given is not kept on every rank"

# 11. the single-process executable does not link MPI
if command -v ldd >/dev/null 2>&1 && ldd "$BENCHCTL" | grep -q 'libmpi'; then fail "benchctl links libmpi"; fi

# 12. the OPT engine under 2 ranks, end to end (configs/bench.cfg, one case, one iteration, 1 thread each)
mpi opt 2 -x BENCHCTL_PLUGIN_PATH= "$BENCHCTL" run "$SRC/configs/bench.cfg" --cases 0 --set run.warmup=0 \
    --set run.iterations=1 --set backend.settings.threads=1 --reporter json --set 'reporters.[0].settings.path="opt.json"'
[ "$code" -eq 0 ] || { fail "opt: exited $code"; sed 's/^/    /' opt/err.txt; }
"$CHECK" opt/opt.json 2 replicate failed=0 forced=1 || fail "opt: report"

# 13. --resume under mpirun: one refusal line, from rank 0, before any rank joins or runs a case
mpi resume 2 "$BENCHCTL" run "$CFG" --resume "$WORK/straggler2/report.json"
[ "$code" -eq 2 ] || fail "resume: exited $code, expected 2"
[ "$(grep -c 'cannot resume a journal' resume/err.txt)" -eq 1 ] || { fail "resume: expected one refusal line"; sed 's/^/    /' resume/err.txt; }
grep -q "resuming" resume/err.txt && fail "resume: a rank printed 'resuming'"
[ -f resume/report.json ] && fail "resume: the refused job wrote a report"

# 14. the score stage and refit on every rank (replicate) and on a case's own rank (shard): each rank
# scores its own rows; the fixture's scorer shifts by 0.1 and 0.2 in turn (tests/e2e/score.sh)
for mode in replicate shard; do
    mpi "score_$mode" 2 "$BENCHCTL" run "$CFG" --cases 0,1 --set "distributed.mode=\"$mode\"" \
        --set 'run.refit="per_rollout"' --set score.settings.score_shift=0.1
    [ "$code" -eq 0 ] || { fail "score_$mode: exited $code"; sed 's/^/    /' "score_$mode/err.txt"; }
    [ "$(grep -Ec '"logprob_gap_mean": 0\.150000' "score_$mode/report.json")" -eq 6 ] ||
        fail "score_$mode: logprob_gap_mean is not 0.15 in the 2 cases' 3 iterations"
    [ "$(grep -Ec '"refit_ms": [0-9]' "score_$mode/report.json")" -eq 6 ] || fail "score_$mode: refit_ms not measured"
done

bc_test_finish mpirun
