#!/bin/sh
# e2e.sh: runs the real benchctl binary on the configs in tests/e2e and checks
# exit codes, the one-line errors, and what the fixture reporter wrote.
#   e2e.sh BENCHCTL E2E_SOURCE_DIR LOADER_FIXTURE_DIR WORK_DIR CHECK_JSON FIXTURE_PLUGIN_DIR
# The fixture plugins (testbackend, ...) are not in the build tree's plugins/
# folder; BENCHCTL_PLUGIN_PATH points at theirs.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
SRC=$2
FIX=$3
WORK=$4
CHECK_JSON=$5
FIXTURE_PLUGINS=$6
bc_test_workdir "$WORK"
BENCHCTL_PLUGIN_PATH=$FIXTURE_PLUGINS
export BENCHCTL_PLUGIN_PATH

# started LOG: waits (up to 30 s) until the fixture backend's case_log LOG
# shows a case has begun, so a signal is sent to a run that is running, not
# to one still starting up on a loaded machine
started() {
    tries=0
    while ! grep -q '^begin ' "$1" 2>/dev/null && [ "$tries" -lt 600 ]; do
        sleep 0.05
        tries=$((tries + 1))
    done
    grep -q '^begin ' "$1" 2>/dev/null || fail "$1: no case began within 30 s"
}

# one_error NAME: stderr has exactly one "benchctl: " error line (plus hints), and no crash
one_error() {
    n=$(grep -v '^benchctl: hint: ' "$1.err" | grep -c '^benchctl: ')
    [ "$n" -eq 1 ] || { fail "$1: expected one error line, got $n"; sed 's/^/    /' "$1.err"; }
}

# --- a good run: every case ok, reported in requested order
expect 0 validate validate "$SRC/good.cfg"
has validate.out "16 cases"
expect 0 good run "$SRC/good.cfg"
has good.txt "run 16 testbackend"
[ "$(grep -c '^case .* ok 2 ' good.txt)" -eq 16 ] || fail "good.txt: expected 16 ok cases with 2 iterations"
grep '^case ' good.txt | awk '{ if ($2 != NR - 1) exit 1 }' || fail "good.txt: cases not in requested order"
# first case: testfp32 testretain batch 1 x 1 -> 4 tokens; last: testbf16 testrelease 2 x 3 -> 24 tokens
has good.txt "case 0 ok 2 testfp32 testretain 1 1 8 4 4"
has good.txt "case 15 ok 2 testbf16 testrelease 2 3 8 4 24"

# --- plan: execution order, one group per precision (the backend's costly
# axis), largest effective batch first in each, with memory and the case check
expect 0 plan plan "$SRC/good.cfg"
first=$(awk 'NR > 2 && $1 == 1 { print $10 }' plan.out)
[ "$first" = "6" ] || fail "plan: first case has effective batch '$first', expected 6"
last=$(awk 'NR > 2 && $1 == 16 { print $10 }' plan.out)
[ "$last" = "1" ] || fail "plan: last case has effective batch '$last', expected 1"
precisions=$(awk 'NR > 2 && $2 ~ /^[0-9]+$/ { print $4 }' plan.out | uniq | tr '\n' ' ')
[ "$precisions" = "testfp32 testbf16 " ] || fail "plan: precisions not grouped: '$precisions'"
[ "$(awk 'NR > 2 && $3 == "build"' plan.out | wc -l)" -eq 2 ] || fail "plan: expected 2 builds"
[ "$(awk 'NR > 2 && $2 ~ /^[0-9]+$/ && $NF == "ok"' plan.out | wc -l)" -eq 16 ] || fail "plan: expected 16 ok checks"
has plan.out "2 builds of the backend's costly state"

# --- plugins: lists the fixtures (on BENCHCTL_PLUGIN_PATH); settings table of one
expect 0 plugins plugins
has plugins.out "testbackend"
has plugins.out "$FIXTURE_PLUGINS/benchctl-testbackend.so"
# without BENCHCTL_PLUGIN_PATH the build tree lists its product plugins only
env -u BENCHCTL_PLUGIN_PATH "$BENCHCTL" plugins >plugins_product.out 2>plugins_product.err ||
    fail "plugins without BENCHCTL_PLUGIN_PATH exited non-zero"
has plugins_product.out "json"
kinds=$(awk 'NR > 1 && $1 !~ /^\// { print $1 }' plugins_product.out | uniq | tr '\n' ' ')
[ "$kinds" = "backend precision cache reporter " ] || fail "plugins: not grouped by kind: '$kinds'"
if grep -q 'benchctl-test' plugins_product.out; then
    fail "plugins without BENCHCTL_PLUGIN_PATH lists test fixtures"
    sed 's/^/    /' plugins_product.out
fi
expect 0 plugins_one plugins testbackend
has plugins_one.out "fail_on_batch"
has plugins_one.out "spin|sleep"
expect 2 plugins_near plugins testbackendd
one_error plugins_near
has plugins_near.err "did you mean 'testbackend'"

# --- a failing case: the run goes on, exit 3
expect 3 fail run "$SRC/fail.cfg"
has fail.txt "case 0 ok 2"
has fail.txt "case 1 failed 0"
has fail.txt "case 2 ok 2"
has fail.err "generate: injected failure for batch_size 2"

# --- the console's progress: on a terminal (a pty from script(1)) a line
# redrawn in place; in a pipe (a CI log) one plain line per finished case,
# and nothing of either with -q
expect 0 notty run "$SRC/good.cfg" --reporter console
grep -q "$(printf '\r')" notty.err && fail "notty: a carriage return on stderr that is not a terminal"
[ "$(grep -c '^benchctl: \[[0-9]*/16\] done: B=.*: [0-9.]* tok/s, 2 iterations (fixed), cv [0-9.]*%' notty.err)" -eq 16 ] ||
    { fail "notty: expected 16 per-case lines"; sed 's/^/    /' notty.err; }
has notty.err "benchctl: [1/16] done: B=2 x3 prompt=8 resp=4 testfp32 testretain: "
has notty.out "16 cases: 16 ok"
expect 0 notty_quiet run "$SRC/good.cfg" --reporter console -q
[ -s notty_quiet.err ] && { fail "notty_quiet: -q still wrote to stderr"; sed 's/^/    /' notty_quiet.err; }
if command -v script >/dev/null 2>&1; then
    script -qec "'$BENCHCTL' run '$SRC/good.cfg' --reporter console" /dev/null >tty.log 2>&1 ||
        fail "tty: benchctl under script(1) exited non-zero"
    has tty.log "[1/16] B=2 x3 prompt=8 resp=4"
    has tty.log "[16/16] "
    has tty.log "16 cases: 16 ok"
    grep -q 'done: ' tty.log && fail "tty: per-case lines on a terminal"
    # iterations of 150 ms: each redraws the line; 50 columns: no line wider than 49
    script -qec "stty cols 50; '$BENCHCTL' run '$SRC/good.cfg' --reporter console --cases 0,3 \
        --set backend.settings.mode=sleep --set backend.settings.post_us=150000" /dev/null >tty_narrow.log 2>&1 ||
        fail "tty_narrow: benchctl under script(1) exited non-zero"
    has tty_narrow.log "[1/2] B=2 x3 prompt=8 resp=4 testf"
    has tty_narrow.log "  it 2/2  ETA "
    tr '\r' '\n' <tty_narrow.log | sed "s/$(printf '\033')\\[K//g" | grep '^\[[0-9]/2\]' >tty_narrow.lines
    [ -s tty_narrow.lines ] || fail "tty_narrow: no progress line"
    awk 'length > 49 { bad = 1; print "    " length ": " $0 } END { exit bad }' tty_narrow.lines ||
        fail "tty_narrow: a progress line wider than the terminal"
else
    echo "skip: tty (no script(1))"
fi

# --- part of the matrix: --cases and --only in plan, validate and run; the
# reports hold the selected cases only, with their matrix indexes
expect 0 plan_cases plan "$SRC/good.cfg" --cases 3,5-7
has plan_cases.out "4 cases (of 16, selected) in execution order"
[ "$(awk 'NR > 2 && $2 ~ /^[0-9]+$/ { print $2 }' plan_cases.out | sort -n | tr '\n' ' ')" = "3 5 6 7 " ] ||
    { fail "plan_cases: expected cases 3 5 6 7"; sed 's/^/    /' plan_cases.out; }
expect 0 validate_only validate "$SRC/good.cfg" --only precision=testbf16,batch_size=2
has validate_only.out "ok: 4 cases (of 16, selected)"
expect 0 run_cases run "$SRC/good.cfg" --cases 3,5-7 --reporter testreporter,json \
    --set 'reporters.[0].settings.path="cases.txt"' --set 'reporters.[1].settings.path="cases.json"' \
    --set 'backend.settings.measure_forwards=false'
has cases.txt "run 4 testbackend"
[ "$(awk '$1 == "case" { print $2 }' cases.txt | tr '\n' ' ')" = "3 5 6 7 " ] ||
    { fail "run_cases: expected cases 3 5 6 7 in cases.txt"; sed 's/^/    /' cases.txt; }
has cases.txt "events 4 8"
"$CHECK_JSON" cases.json 4 2 0 0 || fail "run_cases: check_json failed on cases.json"
grep -q '"selection": {' cases.json && grep -q '"matrix_cases": 16' cases.json ||
    fail "run_cases: cases.json does not record the selection"
expect 2 cases_range plan "$SRC/good.cfg" --cases 3,20
one_error cases_range
has cases_range.err "benchctl: --cases 3,20: case 20 does not exist: the matrix has 16 cases, 0-15"
expect 2 only_axis run "$SRC/good.cfg" --only batchsize=2
one_error only_axis
has only_axis.err "--only batchsize=2: no axis 'batchsize' (did you mean 'batch_size'?)"
expect 2 only_value validate "$SRC/good.cfg" --only precision=fp8
has only_value.err "--only precision=fp8: no case has precision fp8 (the matrix has testfp32, testbf16)"
expect 2 cases_twice run "$SRC/good.cfg" --cases 1 --cases 2
has cases_twice.err "--cases is given twice"
expect 2 plugins_cases plugins --cases 1
has plugins_cases.err "plugins does not take --cases"

# --- iterations that stop on a rule: the stop reason of every case, the
# events the reporter saw, and the contradiction refused with both places
expect 0 adaptive run "$SRC/good.cfg" --cases 0-3 --set 'reporters.[0].settings.path="adaptive.txt"' \
    --set 'run={warmup=0; min_iterations=7; max_iterations=7;}'
[ "$(grep -c '^case .* ok 7 .* max_iterations$' adaptive.txt)" -eq 4 ] ||
    { fail "adaptive: expected 4 cases of 7 iterations stopped at max_iterations"; sed 's/^/    /' adaptive.txt; }
has adaptive.txt "events 0 28"
# 20 ms steps and room for 100 iterations: scheduling delays on a loaded
# machine are small against 20 ms, and the interval narrows as n grows
expect 0 stable run "$SRC/good.cfg" --cases 0 --set 'reporters.[0].settings.path="stable.txt"' \
    --set 'run={target_rel_ci=1.0; min_iterations=6; max_iterations=100;}' --set backend.settings.post_us=20000
grep -q '^case 0 ok [0-9]* .* stable$' stable.txt || { fail "stable: case 0 did not stop stable"; cat stable.txt; }
expect 2 contradiction validate "$SRC/good.cfg" --set run.target_rel_ci=0.05
one_error contradiction
has contradiction.err "good.cfg:8: run.iterations: a fixed count, which contradicts run.target_rel_ci (--set run.target_rel_ci)"

# --- the same failure in many cases: one line on stderr, one under the console table
expect 3 fail_many run "$SRC/good.cfg" --reporter console --set 'backend.settings.fail_on_batch=2'
[ "$(grep -c 'injected failure' fail_many.err)" -eq 1 ] || { fail "fail_many.err: expected one failure line"; cat fail_many.err; }
has fail_many.err "cases 2, 3, 6, 7, 10, 11, 14, 15 failed: generate: injected failure for batch_size 2"
has fail_many.out "cases 2, 3, 6, 7, 10, 11, 14, 15 failed: generate: injected failure for batch_size 2"

# --- SIGINT: the current iteration finishes, the rest is skipped, the report is still written, exit 130
rm -f int.log
"$BENCHCTL" run "$SRC/good.cfg" --set 'backend.settings.mode="sleep"' --set 'backend.settings.post_us=200000' \
    --set 'backend.settings.case_log="int.log"' \
    --set 'reporters.[0].settings.path="interrupted.txt"' >interrupt.out 2>interrupt.err &
pid=$!
started int.log
sleep 0.3
kill -INT "$pid"
wait "$pid"
got=$?
[ "$got" -eq 130 ] || fail "interrupt: exited $got, expected 130"
has interrupted.txt "run 16 testbackend"
[ "$(grep -c '^case ' interrupted.txt)" -eq 16 ] || fail "interrupted.txt: expected all 16 cases"
grep -q '^case .* skipped ' interrupted.txt || fail "interrupted.txt: no skipped case"
has interrupt.err "(interrupted)"

# --- SIGTERM twice: the second abandons the iteration in progress; the report
# is still written, with every case, and the exit status says SIGTERM (143)
rm -f term.log
"$BENCHCTL" run "$SRC/good.cfg" --set 'backend.settings.mode="sleep"' --set 'backend.settings.generate_us=2000000' \
    --set 'backend.settings.case_log="term.log"' \
    --set 'reporters.[0].settings.path="terminated.txt"' >term.out 2>term.err &
pid=$!
started term.log
sleep 0.3
kill -TERM "$pid"
sleep 0.3
kill -TERM "$pid"
wait "$pid"
got=$?
[ "$got" -eq 143 ] || fail "terminate: exited $got, expected 143"
has terminated.txt "run 16 testbackend"
[ "$(grep -c '^case ' terminated.txt)" -eq 16 ] || fail "terminated.txt: expected all 16 cases"
[ "$(grep -c '^case .* ok ' terminated.txt)" -eq 0 ] || fail "terminated.txt: a case finished although it was abandoned"

# --- the product reporters: JSON read back with jansson, CSV rows, console table
expect 0 json run "$SRC/good.cfg" --reporter json,csv,console \
    --set 'backend.settings.measure_forwards=false'
"$CHECK_JSON" benchctl.json 16 2 0 0 || fail "json: check_json failed on benchctl.json"
[ "$(wc -l <benchctl.csv)" -eq 17 ] || fail "csv: expected a header and 16 rows"
head -1 benchctl.csv | grep -q '^index,precision,' || fail "csv: unexpected header"
has json.err "16 cases: 16 ok"
expect 3 json_fail run "$SRC/fail.cfg" --reporter json
"$CHECK_JSON" benchctl.json 3 2 1 2 || fail "json_fail: check_json failed on benchctl.json"

# --- --set reaches a --reporter's reporter; a .gz path is gzip
expect 0 gz run "$SRC/good.cfg" --reporter json --set 'reporters.[0].settings.path="r.json.gz"' \
    --set 'backend.settings.measure_forwards=false'
gzip -dc r.json.gz >r.json || fail "gz: r.json.gz is not gzip"
"$CHECK_JSON" r.json 16 2 0 0 || fail "gz: check_json failed on r.json"

# --- an output path that cannot be created: refused before anything runs, by
# validate and run alike, with where it was named
: >notafolder
rm -f benchctl.csv
expect 2 badpath run "$SRC/good.cfg" --reporter csv,json --set 'reporters.[1].settings.path="notafolder/x.json"'
one_error badpath
has badpath.err "benchctl: --reporter: reporters.[1]: reporter 'json'"
has badpath.err "notafolder/x.json: cannot create the file: notafolder is not a folder"
[ -f benchctl.csv ] && fail "badpath: a report was written although the run was refused"
expect 2 badpath_validate validate "$SRC/good.cfg" --reporter json --set 'reporters.[0].settings.path="notafolder/x.json"'
one_error badpath_validate

# --- loader and config errors: one line, exit 2
expect 2 missing run "$SRC/missing.cfg"
one_error missing
has missing.err "plugin 'nosuchbackend' not found"
expect 2 suggest validate "$SRC/good.cfg" --reporter jsn
one_error suggest
has suggest.err "did you mean 'json'"
# a precision by its dtype's name, and two names a missing comma joined
expect 2 suggest_short validate "$SRC/good.cfg" --set 'precisions=["bfloat16"]'
has suggest_short.err "did you mean 'bf16'?"
expect 2 suggest_joined validate "$SRC/good.cfg" --set 'precisions=["testbf16" "testfp32"]'
has suggest_joined.err "'testbf16testfp32' is 'testbf16' and 'testfp32' joined: libconfig joins adjacent strings, so a comma may be missing"
expect 2 unreadable run "$WORK/does-not-exist.cfg"
one_error unreadable
expect 2 dir_config run "$WORK"
one_error dir_config
expect 2 abi run "$SRC/good.cfg" --set "backend.name=\"$FIX/benchctl-abinext.so\""
one_error abi
has abi.err "ABI 3.0, benchctl speaks ABI 2.6"
has abi.err "benchctl: hint: rebuild the plugin"
expect 2 notelf validate "$SRC/good.cfg" --set "backend.name=\"$FIX/benchctl-notelf.so\""
one_error notelf
has notelf.err "not an ELF file"
expect 2 noentry validate "$SRC/good.cfg" --set "backend.name=\"$FIX/benchctl-noentry.so\""
has noentry.err "no benchctl_plugin_entry symbol"
expect 2 magic validate "$SRC/good.cfg" --set "backend.name=\"$FIX/benchctl-badmagic.so\""
has magic.err "wrong magic"
expect 2 wrongkind validate "$SRC/good.cfg" --set 'backend.name="testretain"'
one_error wrongkind
has wrongkind.err "--set backend.name: backend: 'testretain' is a cache plugin, not a backend"
expect 2 wrongkind2 validate "$SRC/good.cfg" --reporter testretain
has wrongkind2.err "--reporter: reporters.[0]: 'testretain' is a cache plugin, not a reporter"
expect 2 badsetting validate "$SRC/good.cfg" --set 'backend.settings.mode="dance"'
one_error badsetting
expect 2 usage frobnicate
one_error usage
expect 2 usage2 frobnicate a b
has usage2.err "unknown command 'frobnicate'"
expect 2 nofile validate
has nofile.err "benchctl: validate: missing FILE"
has nofile.err "hint: e.g. benchctl validate "
expect 2 plan_reporter plan "$SRC/good.cfg" --reporter json
has plan_reporter.err "plan does not take --reporter"
expect 2 extra_arg validate "$SRC/good.cfg" extra
has extra_arg.err "validate: unexpected argument 'extra'"
# one value for a one-element list
expect 0 bare_list validate "$SRC/good.cfg" --set precisions=testfp32 --set matrix.batch_sizes=2
has bare_list.out "4 cases"
# plugins NAME.so: the example names the file, since a search by name would not find it
expect 0 plugins_path plugins "$FIX/benchctl-newminor.so"
has plugins_path.out "ABI 2.7"
has plugins_path.out "name = \"$FIX/benchctl-newminor.so\""
# --- --resume after SIGKILL: the cases the journal holds are taken as they
# were, the rest run, and the reports hold all of them in requested order
rm -f killed.jsonl killed.json resume.log
resume_opts="--reporter jsonl,json --set reporters.[0].settings.path=\"killed.jsonl\" \
 --set reporters.[1].settings.path=\"killed.json\" --set backend.settings.mode=\"sleep\" \
 --set backend.settings.post_us=40000 --set backend.settings.case_log=\"resume.log\""
# shellcheck disable=SC2086 # resume_opts is a list of options
"$BENCHCTL" run "$SRC/good.cfg" $resume_opts -q >killed.out 2>killed.err &
pid=$!
n=0
while [ "$n" -lt 5 ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.05
    n=$(grep -c '"record":"case"' killed.jsonl 2>/dev/null) || n=0
done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
taken=$(grep -c '"record":"case"' killed.jsonl) || taken=0
[ "$taken" -ge 5 ] && [ "$taken" -lt 16 ] || fail "resume: the killed run left $taken cases (expected 5 to 15)"
[ -f killed.json ] && fail "resume: the killed run wrote its JSON report"
grep '"record":"case"' killed.jsonl >killed_cases.txt
: >resume.log
# shellcheck disable=SC2086
expect 0 resumed run "$SRC/good.cfg" $resume_opts --resume killed.jsonl
has resumed.err "resuming killed.jsonl: $taken of 16 cases finished there are taken as they were"
[ "$(grep -c '^begin ' resume.log)" -eq $((16 - taken)) ] ||
    fail "resume: $(grep -c '^begin ' resume.log) cases began, expected $((16 - taken))"
"$CHECK_JSON" killed.json 16 2 1 0 || fail "resume: check_json failed on the resumed run's report"
[ "$(grep -c '"record":"case"' killed.jsonl)" -eq 16 ] || fail "resume: the new journal does not hold all 16 cases"
# the taken cases, and only those, are marked as coming from the journal
[ "$(grep -c '"resumed": *true' killed.json)" -eq "$taken" ] ||
    fail "resume: $(grep -c '"resumed": *true' killed.json) cases marked resumed in killed.json, expected $taken"
# and benchctl report of that file keeps the marks
expect 0 resumed_report report killed.json --reporter json -o killed-replay.json
[ "$(grep -c '"resumed": *true' killed-replay.json)" -eq "$taken" ] ||
    fail "resume: report of killed.json marks $(grep -c '"resumed": *true' killed-replay.json) cases resumed, expected $taken"
# the taken cases' profiles are the killed run's, to the digit
while IFS= read -r line; do
    idx=$(printf '%s' "$line" | sed 's/.*"index":\([0-9]*\).*/\1/')
    old=$(printf '%s' "$line" | sed 's/.*"profiles":\(\[[^]]*\]\).*/\1/')
    new=$(grep "\"record\":\"case\",\"index\":$idx," killed.jsonl | sed 's/.*"profiles":\(\[[^]]*\]\).*/\1/')
    [ "$old" = "$new" ] || fail "resume: case $idx's profiles changed"
done <killed_cases.txt
# a journal of another config is refused, naming both hashes
# shellcheck disable=SC2086
expect 2 resume_other run "$SRC/good.cfg" $resume_opts --set run.iterations=3 --resume killed.jsonl
has resume_other.err "written by a run of another config"
expect 2 resume_validate validate "$SRC/good.cfg" --resume killed.jsonl
has resume_validate.err "validate does not take --resume"

# --- damaged plugins (issue 16): a truncated or foreign .so is one error line, never a signal
mkdir -p badso
head -c 1000 "$FIXTURE_PLUGINS/benchctl-testbackend.so" >badso/benchctl-x.so
expect 2 plugin_truncated plugins ./badso/benchctl-x.so
one_error plugin_truncated
has plugin_truncated.err "badso/benchctl-x.so is truncated"
cp "$FIXTURE_PLUGINS/benchctl-testbackend.so" badso/benchctl-arm.so
# e_machine (offset 18) := 183 (AArch64), or 62 (x86-64) on an AArch64 host
if [ "$(uname -m)" = aarch64 ]; then m='\076'; else m='\267'; fi
printf "$m\\000" | dd of=badso/benchctl-arm.so bs=1 seek=18 conv=notrunc 2>/dev/null
expect 2 plugin_foreign plugins ./badso/benchctl-arm.so
one_error plugin_foreign
has plugin_foreign.err "is built for"
BENCHCTL_PLUGIN_PATH=$PWD/badso:$FIXTURE_PLUGINS "$BENCHCTL" plugins >plugin_list_bad.out 2>plugin_list_bad.err
[ $? -le 2 ] || fail "plugins listing a truncated plugin died with a signal"
grep -q "truncated" plugin_list_bad.out plugin_list_bad.err || fail "plugins listing does not say benchctl-x.so is truncated"
expect 2 plugin_truncated_run run "$SRC/fail.cfg" --set 'backend.name="./badso/benchctl-x.so"'
has plugin_truncated_run.err "is truncated"
expect 2 plugin_truncated_validate validate "$SRC/fail.cfg" --set 'backend.name="./badso/benchctl-x.so"'
has plugin_truncated_validate.err "is truncated"

# --- run.isolation = "process": a case whose process dies fails alone, the run goes on (exit 3)
# ASan, when built in, must let the deliberate signals through and not check the dying child for leaks
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_abort=0:detect_leaks=0
export ASAN_OPTIONS
iso="--set run.isolation=\"process\""
for how in segv abort exit _exit oom; do
    # shellcheck disable=SC2086
    expect 3 "iso_$how" run "$SRC/fail.cfg" $iso --set "backend.settings.crash=\"$how\"" \
        --set "reporters.[0].settings.path=\"iso_$how.txt\""
    [ "$(grep -c '^case .* ok 2 ' "iso_$how.txt")" -eq 2 ] || fail "iso_$how: the other two cases did not run"
    has "iso_$how.txt" "case 1 failed"
    has "iso_$how.err" "testbackend: crashing ($how) in case 1" # passed through
    has "iso_$how.err" "its stderr ended: testbackend: crashing ($how) in case 1"
    has "iso_$how.txt" "run 3 testbackend" # the report was written
done
has iso_segv.err "killed by SIGSEGV"
has iso_abort.err "killed by SIGABRT"
has iso_exit.err "exited with status 1 before sending its results"
has iso__exit.err "exited with status 1 before sending its results"
has iso_oom.err "killed by SIGKILL"
# a case that hangs is killed after run.case_timeout_s
# shellcheck disable=SC2086
expect 3 iso_hang run "$SRC/fail.cfg" $iso --set run.case_timeout_s=0.5 --set 'backend.settings.crash="hang"' \
    --set 'reporters.[0].settings.path="iso_hang.txt"'
has iso_hang.err "timed out after run.case_timeout_s = 0.5 s"
[ "$(grep -c '^case .* ok 2 ' iso_hang.txt)" -eq 2 ] || fail "iso_hang: the other two cases did not run"
# isolated cases that all pass give the same report as a run without isolation
# shellcheck disable=SC2086
expect 0 iso_good run "$SRC/good.cfg" $iso --set 'reporters.[0].settings.path="iso_good.txt"'
[ "$(grep -c '^case .* ok 2 ' iso_good.txt)" -eq 16 ] || fail "iso_good.txt: expected 16 ok cases"
has iso_good.txt "case 15 ok 2 testbf16 testrelease 2 3 8 4 24"
expect 2 iso_timeout_alone validate "$SRC/fail.cfg" --set run.case_timeout_s=1
has iso_timeout_alone.err 'run.case_timeout_s: needs run.isolation = "process"'
expect 2 iso_bad validate "$SRC/fail.cfg" --set 'run.isolation="fork"'
has iso_bad.err 'run.isolation: must be "none" or "process"'
# an interrupt still stops an isolated run: the reports are written, exit 130
rm -f iso_int.log
"$BENCHCTL" run "$SRC/good.cfg" $iso --set 'backend.settings.mode="sleep"' --set 'backend.settings.post_us=200000' \
    --set 'backend.settings.case_log="iso_int.log"' \
    --set 'reporters.[0].settings.path="iso_int.txt"' >iso_int.out 2>iso_int.err &
pid=$!
started iso_int.log
sleep 0.3
kill -INT $pid
wait $pid
rc=$?
[ "$rc" -eq 130 ] || fail "iso_int: exit $rc, expected 130"
grep -q 'skipped' iso_int.txt || fail "iso_int: no skipped case in the report"

# --- without isolation, a plugin ending the process never leaves exit status 0
for how in exit _exit; do
    expect 1 "guard_$how" run "$SRC/fail.cfg" --set "backend.settings.crash=\"$how\"" \
        --set "reporters.[0].settings.path=\"guard_$how.txt\""
    has "guard_$how.err" "a plugin ended the process during the run"
done

# --- output paths (issue 16): an existing path that is not a regular file is
# refused before any case, never replaced. A FIFO made here stands in for a
# device, so a wrong answer cannot replace a real device node.
mkfifo out.fifo
sed 's|reporters = .*|reporters = ( { name = "json"; settings = { path = "out.fifo"; }; } );|' "$SRC/good.cfg" >fifo_out.cfg
expect 2 out_fifo run fifo_out.cfg
one_error out_fifo
has out_fifo.err "out.fifo: is a FIFO (named pipe), not a regular file"
[ -p out.fifo ] || fail "out.fifo is no longer a FIFO"
sed 's|reporters = .*|reporters = ( { name = "json"; settings = { path = "/dev/null"; }; } );|' "$SRC/good.cfg" >devnull_out.cfg
expect 2 out_devnull validate devnull_out.cfg
has out_devnull.err "/dev/null: is a character device, not a regular file"
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
mkdir out_folder.json
sed 's|reporters = .*|reporters = ( { name = "json"; settings = { path = "out_folder.json"; }; } );|' "$SRC/good.cfg" >folder_out.cfg
expect 2 out_folder run folder_out.cfg
has out_folder.err "out_folder.json: is a folder, not a file"
# two reporters on one resolved path: refused at validation, naming both
sed 's|reporters = .*|reporters = ( { name = "json"; settings = { path = "same.json"; }; }, { name = "csv"; settings = { path = "./same.json"; }; } );|' "$SRC/good.cfg" >same_out.cfg
expect 2 out_same validate same_out.cfg
one_error out_same
has out_same.err "reporters.[1]: reporter 'csv': ./same.json:"
has out_same.err "is already the output of"
has out_same.err "reporters.[0]: reporter 'json'"

# --- bench.cfg read with bounds: a FIFO is refused (not waited on), a NUL
# byte and an overlong line are errors naming the line
mkfifo cfg.fifo
expect 2 cfg_fifo validate cfg.fifo
has cfg_fifo.err "the config file is a FIFO (named pipe), not a regular file"
printf 'backend = { name = "testbackend"; settings = { x = "a\000b"; }; };\n' >nul.cfg
expect 2 cfg_nul validate nul.cfg
has cfg_nul.err "nul.cfg:1: a NUL byte"
awk 'BEGIN { printf "# "; for (i = 0; i < 70000; i++) printf "x"; printf "\n" }' >longline.cfg
cat "$SRC/good.cfg" >>longline.cfg
expect 2 cfg_long validate longline.cfg
has cfg_long.err "longline.cfg:1: the line is 70002 bytes, over the limit of 65536 bytes"

# --- the journal: a second run on a journal another run holds is refused
# before its first case; the first run's journal stays whole
sed 's|generate_us = 1;|generate_us = 20000;|; s|reporters = .*|reporters = ( { name = "jsonl"; settings = { path = "locked.jsonl"; }; } );|' \
    "$SRC/good.cfg" >locked.cfg
"$BENCHCTL" run locked.cfg >locked_first.out 2>locked_first.err &
first=$!
n=0
while [ ! -s locked.jsonl ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
expect 2 locked_second run locked.cfg
one_error locked_second
has locked_second.err "locked.jsonl: another run holds this journal"
wait $first || fail "the first journal run failed"
[ "$(grep -c '"record":"case"' locked.jsonl)" -eq 16 ] || fail "locked.jsonl: expected 16 case records"
[ "$(grep -c '"record":"end"' locked.jsonl)" -eq 1 ] || fail "locked.jsonl: expected one end record"

# matrix.backend_settings: an instance per value; only the instances the
# selected cases run on are prepared (the other one would fail to start)
expect 1 axis_prepare run "$SRC/good.cfg" --set 'matrix.backend_settings.fail_prepare=[false,true]'
has axis_prepare.err "could not start: prepare"
expect 0 axis_selected run "$SRC/good.cfg" --set 'matrix.backend_settings.fail_prepare=[false,true]' \
    --only fail_prepare=false
has axis_selected.err "16 cases: 16 ok"

expect 0 help --help
has help.out "usage: benchctl"
expect 0 run_help run --help
expect 0 version --version
has version.out "benchctl "

bc_test_finish e2e
