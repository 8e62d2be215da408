#!/bin/sh
# axes.sh: the OPT engine's batching and KV layout as axes of one run
# (matrix.backend_settings, tests/e2e/axes.cfg) on the golden preln
# checkpoint: the 2 x 2 combinations run in requested order, each on its own
# instance, with the same tokens (greedy, drawn lengths); every report
# carries each case's values; compare pairs the cases by them; a journal
# resumes with them; and the errors name the file, line and setting.
#   axes.sh BENCHCTL SOURCE_DIR WORK_DIR FIXTURE_PLUGIN_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
SRC=$2
WORK=$3
FIX=$4
bc_test_workdir "$WORK"
unset BENCHCTL_PLUGIN_PATH
CFG=$SRC/tests/e2e/axes.cfg
CK="backend.settings.checkpoint=\"$SRC/tests/opt/golden/preln\""

"$BENCHCTL" run "$CFG" --set "$CK" >run.out 2>run.err || { fail "run exited $?"; sed 's/^/    /' run.err; }
grep -q "8 cases: 8 ok" run.err || fail "expected 8 ok cases"
# the same tokens in every combination: cases 0, 2, 4, 6 are batch 1, cases 1, 3, 5, 7 batch 3
for k in 2 4 6; do cmp -s tokens_0.txt "tokens_$k.txt" || fail "case $k's tokens differ from case 0's"; done
for k in 3 5 7; do cmp -s tokens_1.txt "tokens_$k.txt" || fail "case $k's tokens differ from case 1's"; done
[ "$(grep -Ec '"token_agreement": 1,?$' axes.json)" -eq 6 ] || fail "axes.json: expected 6 cases with token_agreement 1"
# JSON and journal: each case's own backend_settings (the header's says static, contiguous: instance 0's)
[ "$(grep -c '"batching": "continuous"' axes.json)" -eq 4 ] || fail "axes.json: expected 4 continuous cases"
[ "$(grep -c '"kv_layout": "paged"' axes.json)" -eq 4 ] || fail "axes.json: expected 4 paged cases"
[ "$(grep -c '"backend_settings":{"batching":"continuous","kv_layout":"paged"}' axes.jsonl)" -eq 2 ] ||
    fail "axes.jsonl: expected 2 continuous paged cases"
# CSV: a column per setting, the cases in requested order (batching outermost)
awk -F, '{ sub(/\r$/, "") } NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "backend_settings.batching") b = i;
                                               if ($i == "backend_settings.kv_layout") k = i } next }
         { printf "%s %s %s\n", $1, $b, $k }' axes.csv >csv_axes.txt
printf '%s\n' "0 static contiguous" "1 static contiguous" "2 static paged" "3 static paged" \
    "4 continuous contiguous" "5 continuous contiguous" "6 continuous paged" "7 continuous paged" >want_axes.txt
cmp -s csv_axes.txt want_axes.txt || { fail "axes.csv: the axis columns"; diff csv_axes.txt want_axes.txt; }
# console and html: their own columns
grep -Eq '^# +batching +kv_layout +batch' run.out || fail "console: no batching and kv_layout columns"
grep -Eq '^7 +continuous +paged ' run.out || fail "console: case 7 is not continuous paged"
"$BENCHCTL" report axes.json -o axes.html 2>report.err || fail "report -o axes.html"
grep -q '<th>batching</th><th>kv_layout</th>' axes.html || fail "axes.html: no batching and kv_layout columns"
# kv_* fields: pages counted for the paged cases, static and continuous
# (per iteration: 2 iterations of each of the 4 paged cases)
[ "$(grep -Ec '"kv_pages_peak": [1-9]' axes.json)" -eq 8 ] || fail "axes.json: expected kv_pages_peak in the paged cases"
[ "$(grep -Ec '"kv_pages_peak": null' axes.json)" -eq 8 ] || fail "axes.json: expected no kv_pages_peak in the contiguous cases"

# compare pairs the cases by the axes, within the one run
"$BENCHCTL" compare --by batching axes.json --fail-on never >by_batching.out 2>by_batching.err ||
    { fail "compare --by batching exited $?"; cat by_batching.err; }
grep -q '^A: axes.json \[batching=static\]' by_batching.out || fail "compare --by batching: A is not the static cases"
grep -q '^B: axes.json \[batching=continuous\]' by_batching.out || fail "compare --by batching: B is not continuous"
grep -q '^4 cases: 4 matched, 0 only in A, 0 only in B' by_batching.out || fail "compare --by batching: 4 pairs"
grep -q 'kv_layout=paged' by_batching.out || fail "compare --by batching: the labels lack kv_layout"
"$BENCHCTL" compare --by kv_layout axes.json --fail-on never >by_layout.out 2>&1 || fail "compare --by kv_layout"
grep -q '^4 cases: 4 matched' by_layout.out || fail "compare --by kv_layout: 4 pairs"
"$BENCHCTL" compare --by threads axes.json >by_none.out 2>&1
[ $? -eq 2 ] || fail "compare --by a setting the run does not vary was not a usage error"
grep -q "do not vary it" by_none.out || fail "compare --by threads: no reason"

# --only by a setting; plan shows the values
"$BENCHCTL" plan "$CFG" --set "$CK" --only batching=continuous >only.out 2>&1 || fail "plan --only batching=continuous"
grep -q '^4 cases (of 8, selected)' only.out || fail "plan --only: expected 4 of 8 cases"
grep -q 'batching=continuous,kv_layout=paged' only.out || fail "plan: no settings column"

# a journal resumes with the axes in each case's identity
"$BENCHCTL" run "$CFG" --set "$CK" --cases 4-7 >/dev/null 2>part.err || fail "run --cases 4-7"
"$BENCHCTL" run "$CFG" --set "$CK" --resume axes.jsonl >/dev/null 2>resume.err || { fail "resume"; cat resume.err; }
grep -q "4 of 8 cases finished there are taken" resume.err || { fail "resume: expected 4 of 8 taken"; cat resume.err; }
grep -q "8 cases: 8 ok" resume.err || fail "resume: expected 8 ok cases"

# errors, before the first case, naming the file, line and setting
"$BENCHCTL" validate "$CFG" --set "$CK" --set 'matrix.backend_settings.kv_layout=["contiguous","pagd"]' 2>bad_value.err
[ $? -eq 2 ] || fail "a value the table refuses did not exit 2"
grep -q 'matrix.backend_settings.kv_layout: plugin .opt.: must be one of "contiguous", "paged" (got "pagd"; did you mean "paged"?)' \
    bad_value.err || { fail "bad value: message"; cat bad_value.err; }
"$BENCHCTL" validate "$CFG" --set "$CK" --set 'matrix.backend_settings.response_lengths_file=["","l.txt"]' 2>refused.err
[ $? -eq 2 ] || fail "a combination the backend refuses did not exit 2"
grep -q 'axes.cfg:11: matrix.backend_settings: backend .opt. refuses batching = static, kv_layout = contiguous, response_lengths_file = l.txt: response_lengths = "lognormal" with response_lengths_file "l.txt"' \
    refused.err || { fail "refused combination: message"; cat refused.err; }
"$BENCHCTL" validate "$CFG" --set "$CK" --set 'matrix.backend_settings.response_lengths=["fixed","uniform"]' 2>twice.err
[ $? -eq 2 ] || fail "a setting in both places did not exit 2"
grep -q -- '--set matrix.backend_settings.response_lengths: also set in backend.settings.response_lengths (.*axes.cfg:5)' \
    twice.err || { fail "setting in both places: message"; cat twice.err; }
cat >two.cfg <<CFG
backends = ( { name = "opt"; settings = { checkpoint = "$SRC/tests/opt/golden/preln"; }; },
             { name = "$FIX/benchctl-testbackend.so"; } );
precisions = [ "fp32" ];
matrix = { batch_sizes = [1]; samples_per_prompt = [1]; prompt_lengths = [4]; response_lengths = [2];
           backend_settings = { batching = ["static", "continuous"]; }; };
CFG
"$BENCHCTL" validate two.cfg 2>lacks.err
[ $? -eq 2 ] || fail "a backend without the setting did not exit 2"
grep -q "two.cfg:5: matrix.backend_settings.batching: plugin 'testbackend' has no setting 'batching' (backends.\[1\])" lacks.err ||
    { fail "a backend without the setting: message"; cat lacks.err; }

bc_test_finish axes
