#!/bin/sh
# plan_order.sh: `benchctl plan` prints exactly the order `benchctl run`
# follows, with a backends list whose first backend rebuilds nothing (the
# skeleton backend, rebuild_axes = none) and whose second rebuilds on the
# precision (the fixture testbackend): each instance is grouped by its own
# backend's axes. The run's order is its jsonl journal's (one line per case,
# in execution order), its builds the journal's "rebuilt".
#   plan_order.sh BENCHCTL WORK_DIR FIXTURE_PLUGIN_DIR SKELETON_SO
set -u
BENCHCTL=$1
WORK=$2
BENCHCTL_PLUGIN_PATH=$3
SKELETON=$4
export BENCHCTL_PLUGIN_PATH
. "$(dirname "$0")/../lib/testlib.sh"
bc_test_workdir "$WORK"

cat >order.cfg <<CFG
backends = ( { name = "$SKELETON"; }, { name = "testbackend"; } );
precisions = [ "fp32", "bf16" ];
cache_policies = [ "retain" ];
matrix = { batch_sizes = [1, 2]; samples_per_prompt = [1]; prompt_lengths = [4]; response_lengths = [3]; };
run = { warmup = 0; iterations = 1; };
reporters = ( { name = "jsonl"; settings = { path = "order.jsonl"; }; } );
CFG

# plan_rows NAME: "case:build" per row of NAME.plan, in the plan's order
plan_rows() {
    awk '$1 ~ /^[0-9]+$/ && ($3 == "build" || $3 == "-") { printf "%s:%s ", $2, ($3 == "build" ? 1 : 0) }' "$1.plan"
}
# run_rows: "case:rebuilt" per case of the journal, in the order it ran
run_rows() {
    grep '"record":"case"' order.jsonl | sed 's/.*"index":\([0-9]*\).*"rebuilt":\([a-z]*\).*/\1:\2/' |
        sed 's/:true$/:1/; s/:false$/:0/' | tr '\n' ' '
}

# check NAME WANT ARGS...: plan and run with ARGS, both in the order WANT
check() {
    name=$1
    want=$2
    shift 2
    "$BENCHCTL" plan order.cfg "$@" >"$name.plan" 2>"$name.plan.err" || { fail "$name: plan failed"; cat "$name.plan.err"; }
    rm -f order.jsonl
    "$BENCHCTL" run order.cfg -q "$@" >"$name.run" 2>"$name.run.err" || { fail "$name: run failed"; cat "$name.run.err"; }
    plan=$(plan_rows "$name")
    run=$(run_rows)
    [ "$plan" = "$run" ] || fail "$name: plan prints '$plan', run followed '$run'"
    [ "$plan" = "$want" ] || fail "$name: plan prints '$plan', expected '$want'"
    [ "$plan" = "$want" ] && [ "$plan" = "$run" ] && echo "ok: $name: $plan"
}

# skeleton (cases 0-3) one group, largest batch first; testbackend (4-7) by precision
check all "1:1 3:0 0:0 2:0 5:1 4:0 7:1 6:0 "
check selected "3:1 0:0 4:1 7:1 " --cases 0,3,4,7
check only_bf16 "3:1 2:0 7:1 6:0 " --only precision=bf16

bc_test_finish plan_order
