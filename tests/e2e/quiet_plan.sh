#!/bin/sh
# quiet_plan.sh: the quiet-machine check before the first case
# (run.quiet_check, docs/cli.md) on a fake /proc and /sys
# (BENCHCTL_TEST_PROC_ROOT, BENCHCTL_TEST_SYS_ROOT): a loaded machine warns
# by default, "refuse" stops before any case with exit 2, "off" and a quiet
# machine say nothing; a bad value is refused. Then `plan --estimate-from
# RUN`: a reference run of 0 warmup + 1 iteration whose every case took
# 1000 ms, 200 of them in its one rollout (wall_ms and total_ms set so in
# its JSON), predicts for every case of a 1 warmup + 3 iteration plan 800 ms
# outside the iterations + 4 x 200 ms = 1.6 s, and their sum; a missing RUN
# is a usage error.
#   quiet_plan.sh BENCHCTL WORK_DIR FIXTURE_PLUGIN_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
BENCHCTL_PLUGIN_PATH=$3
export BENCHCTL_PLUGIN_PATH
bc_test_workdir "$2"

cat >q.cfg <<CFG
backend = "testbackend";
precisions = [ "fp32" ];
cache_policies = [ "retain" ];
matrix = { batch_sizes = [1, 2]; samples_per_prompt = [1]; prompt_lengths = [4]; response_lengths = [3]; };
run = { warmup = 1; iterations = 3; };
reporters = ( { name = "json"; settings = { path = "q.json"; }; } );
CFG

# A fake machine: 2 CPUs; loaded (load 9.5, powersave) or quiet (load 0.1).
mkdir -p loaded/proc loaded/sys/devices/system/cpu/cpu0/cpufreq quiet/proc quiet/sys/devices/system/cpu
for m in loaded quiet; do
    echo "0-1" >$m/sys/devices/system/cpu/online
    printf 'MemTotal: 1000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n' >$m/proc/meminfo
done
echo "9.50 5.00 2.00 3/100 42" >loaded/proc/loadavg
echo "powersave" >loaded/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor
echo "0.10 0.05 0.01 1/100 42" >quiet/proc/loadavg

on() { BENCHCTL_TEST_PROC_ROOT=$PWD/$1/proc BENCHCTL_TEST_SYS_ROOT=$PWD/$1/sys; export BENCHCTL_TEST_PROC_ROOT BENCHCTL_TEST_SYS_ROOT; }

on loaded
expect 0 warn run q.cfg
has warn.err "warning: the machine is not quiet: load average 9.50 on 2 CPUs; CPU frequency governor 'powersave'"
has warn.err "run.quiet_check = \"refuse\" stops"
[ -s q.json ] || fail "warn: the run wrote no report"
has q.json '"quiet_check": "load average 9.50 on 2 CPUs'
rm -f q.json
expect 2 refuse run q.cfg --set 'run.quiet_check="refuse"'
has refuse.err "benchctl: the machine is not quiet: load average 9.50 on 2 CPUs"
[ -e q.json ] && fail "refuse: a report was written, so a case ran"
expect 0 off run q.cfg --set 'run.quiet_check="off"'
has q.json '"quiet_check": null'
lacks off.err "not quiet"
expect 0 quietened run q.cfg -q
lacks quietened.err "not quiet"
expect 2 bad validate q.cfg --set 'run.quiet_check="sometimes"'
has bad.err "run.quiet_check: must be \"warn\", \"refuse\" or \"off\""
on quiet
expect 0 calm run q.cfg --set 'run.quiet_check="refuse"'
lacks calm.err "not quiet"
has q.json '"quiet_check": "quiet"'
unset BENCHCTL_TEST_PROC_ROOT BENCHCTL_TEST_SYS_ROOT

# plan --estimate-from: the reference ran 0 warmup + 1 iteration a case, each 1000 ms
expect 0 ref run q.cfg --set run.warmup=0 --set run.iterations=1 --set 'run.quiet_check="off"'
sed 's/"wall_ms": *[0-9.e+-]*/"wall_ms": 1000/g; s/"total_ms": *[0-9.e+-][0-9.e+-]*/"total_ms": 200/g' q.json >ref.json
has ref.json '"wall_ms": 1000'
has ref.json '"total_ms": 200'
expect 0 plain plan q.cfg
lacks plain.out "est_s"
expect 0 est plan q.cfg --estimate-from ref.json
has est.out "est_s"
# the est_s column of each case row: 800 ms + 4 iterations of 200 ms
rows=$(awk '$1 ~ /^[0-9]+$/ && ($3 == "build" || $3 == "-") { print $(NF - 1) }' est.out | tr '\n' ' ')
[ "$rows" = "1.6 1.6 " ] || fail "est: est_s per case '$rows', expected '1.6 1.6 '"
has est.out "estimated time of the cases: 3.2s (3.2 s), from 2 cases of ref.json"
expect 2 missing plan q.cfg --estimate-from nothing.json
has missing.err "nothing.json"
expect 2 refused validate q.cfg --estimate-from ref.json
has refused.err "validate does not take --estimate-from"

bc_test_finish quiet_plan
