#!/bin/sh
# compare.sh: `benchctl compare` end to end. Runs benchctl on a small config
# with the fixture backend (tests/fixtures/testbackend.c, found through
# BENCHCTL_PLUGIN_PATH) several times - the same work twice, slower
# generation (generate_us 200 -> 3000), another environment (weights_bytes,
# hence the model's parameter count), a failing case, another prompt length -
# and compares the reports: verdicts, exit codes, the md/json/html outputs,
# journals, more than two files, and the seed-only JSON that DeepSpeed's OPSD
# rollout benchmark writes (compare_seed_a.json / compare_seed_b.json, written
# by hand from the seed's keys).
#   compare.sh BENCHCTL E2E_SOURCE_DIR WORK_DIR CHECK_COMPARE_JSON FIXTURE_PLUGIN_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
SRC=$2
WORK=$3
CHECK=$4
BENCHCTL_PLUGIN_PATH=$5
export BENCHCTL_PLUGIN_PATH
bc_test_workdir "$WORK"

# rows FILE VERDICT: table rows of FILE with that verdict (the verdict column
# follows two spaces and ends the line or precedes a note)
rows() { grep -cE "  $2(  |\$)" "$1"; }

# The runs: one precision and cache policy, batch 1 and 2, 12 measured
# iterations each, a journal next to each report. An iteration takes about
# 1 ms (4 tokens x 200 us per row), long enough that a preempted iteration on
# a busy machine stays an outlier; 12 vs 12 iterations reach p < 0.01 even
# when a few of them overlap the other run's (8 vs 8 already could: the
# smallest p is 0.00016).
cat >small.cfg <<'EOF'
backend = { name = "testbackend"; settings = { expand_us = 20; generate_us = 200; post_us = 10; }; };
precisions = [ "testbf16" ];
cache_policies = [ "testretain" ];
matrix = { batch_sizes = [1, 2]; samples_per_prompt = [1]; prompt_lengths = [8]; response_lengths = [4]; };
sampling = { temperature = 0.0; top_p = 1.0; top_k = 0; seed = 1234; };
run = { warmup = 1; iterations = 12; };
reporters = ( { name = "json"; settings = { path = "run.json"; }; }, { name = "jsonl"; settings = { path = "run.jsonl"; }; } );
EOF

# run NAME [--set ...]: writes NAME.json and NAME.jsonl (of $CFG, small.cfg by default)
run() {
    name=$1
    shift
    "$BENCHCTL" run "${CFG:-small.cfg}" -q --set "reporters.[0].settings.path=\"$name.json\"" \
        --set "reporters.[1].settings.path=\"$name.jsonl\"" "$@" >"run_$name.out" 2>"run_$name.err"
}
run base || fail "run base"
run same || fail "run same"
run slow --set backend.settings.generate_us=3000 || fail "run slow"
run env --set backend.settings.weights_bytes=2097152 || fail "run env"
run failing --set backend.settings.fail_on_batch=2
[ -s failing.json ] || fail "run failing: no report"
run other --set 'matrix.prompt_lengths=[16]' || fail "run other"

# --- the same file against itself: the change is 0 and p is 1 in every row.
# The bootstrap resamples each side on its own, so the interval is not [0, 0]
# (an outlier iteration widens it: SAME or NOISE), but nothing is WORSE or BETTER.
expect 0 self compare base.json base.json
[ "$(grep -c '  1.00x  .*  1.0000  ' self.out)" -eq 4 ] || fail "self: expected 4 rows with change 1.00x and p 1"
[ "$(rows self.out WORSE)" -eq 0 ] && [ "$(rows self.out BETTER)" -eq 0 ] || fail "self: a WORSE or BETTER row"
has self.out "environment: the same in every field both files state"
has self.out "geometric mean of B/A 1 (1.00x)"

# --- the same config run twice: no WORSE. On a shared machine a run can be
# disturbed as a whole (a preempted 1 ms iteration takes 4 ms or more), and
# then identical work really was slower; so the threshold is wide, and a
# WORSE verdict gets one more run of the same config before it fails.
"$BENCHCTL" compare base.json same.json --threshold 20% >same_first.out 2>&1
if [ $? -eq 1 ]; then
    echo "note: the second run of the same config was WORSE (a disturbed run?); running it once more"
    sed 's/^/    /' same_first.out | head -12
    run same || fail "run same (again)"
fi
expect 0 same compare base.json same.json --threshold 20%
[ "$(rows same.out WORSE)" -eq 0 ] || fail "same: a WORSE row"

# --- generation 15x slower: every row WORSE, exit 1; --fail-on decides the status
expect 1 slow compare base.json slow.json
[ "$(rows slow.out WORSE)" -eq 4 ] || fail "slow: expected 4 WORSE rows"
has slow.out "what changed between the runs (backend settings): generate_us: 200 -> 3000"
has slow.out "total_ms (lower is better): 2 WORSE"
expect 0 slow_never compare base.json slow.json --fail-on never
expect 1 slow_change compare base.json slow.json --fail-on change
# the other way round B is faster: BETTER, which only --fail-on change fails on
expect 0 fast compare slow.json base.json
[ "$(rows fast.out BETTER)" -eq 4 ] || fail "fast: expected 4 BETTER rows"
expect 1 fast_change compare slow.json base.json --fail-on change
# the change as a factor, the same words either way round (about 14x slower / faster)
grep -Eq '^B=1 .* total_ms .* [0-9.]+x slower  \[[0-9.]+x, [0-9.]+x\] slower ' slow.out ||
    fail "slow: the change is not 'Nx slower' with its interval"
grep -Eq '^B=1 .* tokens_per_second .* [0-9.]+x faster  \[' fast.out || fail "fast: the change is not 'Nx faster'"
# a threshold far above the change (about 14x; a loaded machine can stretch the
# interval towards 100x): the whole interval is within it, SAME
expect 0 slow_huge_threshold compare base.json slow.json --threshold 99900%
[ "$(rows slow_huge_threshold.out SAME)" -eq 4 ] || fail "slow_huge_threshold: expected 4 SAME rows"
# one metric, named
expect 1 slow_metric compare base.json slow.json --metric generation_ms
[ "$(rows slow_metric.out WORSE)" -eq 2 ] || fail "slow_metric: expected 2 WORSE rows"
has slow_metric.out "generation_ms (lower is better)"

# --- different environments: refused with one line per difference (exit 3)
expect 3 env compare base.json env.json
has env.err "differ in parameters: \"1048576\" vs \"2097152\""
[ "$(grep -c '^benchctl: compare: ' env.err)" -eq 1 ] || fail "env: expected exactly one difference line"
has env.err "hint: --ignore-env"
[ -s env.out ] && fail "env: something on stdout"
expect 0 env_ignored compare base.json env.json --ignore-env --fail-on never
has env_ignored.out "environment differs (--ignore-env): parameters: 1048576 (A) vs 2097152 (B)"

# --- failed cases and cases on one side only
expect 0 failing compare base.json failing.json
[ "$(grep -c '  FAILED  B failed: ' failing.out)" -eq 2 ] || fail "failing: expected 2 FAILED rows naming B's failure"
expect 3 nomatch compare base.json other.json
has nomatch.err "no case of other.json matches one of base.json"
has nomatch.out "2 only in A, 2 only in B"
[ "$(grep -c '  MISSING  only in ' nomatch.out)" -eq 8 ] || fail "nomatch: expected 8 MISSING rows"

# --- one axis apart: two runs whose cases differ in precision alone match on
# nothing (exit 3, with a hint), and on every other axis with --pair precision
# (exit 0: a comparison of precisions is no regression unless --fail-on says so)
run fp32 --set 'precisions=["testfp32"]' || fail "run fp32"
expect 3 by_dtype compare base.json fp32.json
has by_dtype.err "hint: their cases differ in precision (testbf16 against testfp32): --pair precision"
expect 0 pair compare base.json fp32.json --pair precision
has pair.out "paired on every axis but precision: precision testbf16 (A) against testfp32 (B)"
has pair.out "2 cases: 2 matched, 0 only in A, 0 only in B"
has pair.out "B=1 x1 8->4 testretain "
expect 2 pair_unknown compare base.json fp32.json --pair nosuch
has pair_unknown.err "no axis 'nosuch'"
expect 2 pair_and_by compare base.json --pair precision --by precision

# --- compare --by AXIS within one run: precision (both in one run), and a
# backend setting the matrix varies (generation 15x slower for one value):
# exit 0 whatever the verdicts, 1 with --fail-on worse
run both --set 'precisions=["testfp32", "testbf16"]' || fail "run both"
expect 0 by_precision compare --by precision both.json
has by_precision.out "A: both.json [precision=testfp32] (benchctl JSON): backend testbackend"
has by_precision.out "B: both.json [precision=testbf16]"
has by_precision.out "paired on every axis but precision: precision testfp32 (A) against testbf16 (B)"
has by_precision.out "2 cases: 2 matched, 0 only in A, 0 only in B"
expect 0 by_precision_json compare --by precision both.json --format json
"$CHECK" by_precision_json.out 0 >/dev/null || fail "by_precision_json: check_compare_json failed"
has by_precision_json.out '"paired_across": "precision"'
sed -e 's/ generate_us = 200;//' -e 's/response_lengths = \[4\];/& backend_settings = { generate_us = [200, 3000]; };/' \
    small.cfg >gen.cfg
CFG=gen.cfg run gen || { fail "run gen"; cat run_gen.err; }
expect 0 by_setting compare --by generate_us gen.json
[ "$(rows by_setting.out WORSE)" -eq 4 ] || fail "by_setting: expected 4 WORSE rows"
expect 1 by_setting_fail compare --by generate_us gen.json --fail-on worse
run caches --set 'cache_policies=["testretain", "testrelease"]' || fail "run caches"
expect 0 by_cache compare --by cache_policy caches.json
has by_cache.out "paired on every axis but cache_policy: cache_policy testretain (A) against testrelease (B)"
has by_cache.out "2 cases: 2 matched, 0 only in A, 0 only in B"
expect 0 by_batch compare --by batch_size base.json
has by_batch.out "A: base.json [batch_size=1]"
has by_batch.out "1 case: 1 matched, 0 only in A, 0 only in B"
expect 2 by_none compare --by precision base.json
has by_none.err "take one value of it only"

# --- a journal reads like the report; three files: each against the first
expect 0 journal compare base.jsonl same.json --threshold 20%
has journal.out "A: base.jsonl (benchctl journal)"
expect 1 three compare base.json same.json slow.json --threshold 20%
[ "$(grep -c '^A: base.json' three.out)" -eq 2 ] || fail "three: expected two sections against base.json"
has three.out "B: slow.json"

# --- usage and unreadable input: 2
expect 2 missing_file compare base.json nosuch.json
has missing_file.err "nosuch.json"
printf 'not json\n' >garbage.json
expect 2 garbage compare base.json garbage.json
expect 2 one_file compare base.json
expect 2 bad_metric compare base.json same.json --metric nosuch
has bad_metric.err "no field 'nosuch'"
expect 2 bad_threshold compare base.json same.json --threshold -3
expect 2 bad_alpha compare base.json same.json --alpha 0
expect 2 bad_format compare base.json same.json --format xml
expect 2 bad_fail_on compare base.json same.json --fail-on sometimes
expect 2 bad_option compare base.json same.json --frobnicate
expect 2 bad_html compare base.json same.json --html /dev/null/plot.html
expect 0 help compare --help
has help.out "usage: benchctl compare"

# --- the outputs: JSON read back, markdown table, HTML well-formed and self-contained
expect 1 json compare base.json slow.json --format json
"$CHECK" json.out 1 >json.rows || fail "json: check_compare_json failed"
[ "$(grep -c ' WORSE$' json.rows)" -eq 4 ] || fail "json: expected 4 WORSE rows"
expect 3 json_nomatch compare base.json other.json --format json
"$CHECK" json_nomatch.out 3 >/dev/null || fail "json_nomatch: check_compare_json failed"

expect 1 md compare base.json slow.json --format md
has md.out "| case | metric | n | A | B | B/A | change | interval | p | verdict |"
[ "$(grep -c '^| B=' md.out)" -eq 4 ] || fail "md: expected 4 table rows"
has md.out "**WORSE**"

expect 1 html compare base.json slow.json same.json --html plot/compare.html --format md
[ -s plot/compare.html ] || fail "html: no plot/compare.html"
if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout plot/compare.html || fail "html: xmllint finds plot/compare.html not well-formed"
else
    echo "skip: xmllint not installed (tools/install-deps installs libxml2-utils); well-formedness not checked"
fi
[ "$(grep -c '<svg' plot/compare.html)" -eq 2 ] || fail "html: expected one plot per compared file"
has plot/compare.html "prefers-color-scheme: dark"
has plot/compare.html 'class="bar WORSE"'
lacks plot/compare.html "<script"
# nothing from the network: the only URL is the SVG namespace
[ "$(grep -o 'https\?://[^"]*' plot/compare.html | grep -vc '^http://www.w3.org/2000/svg$')" -eq 0 ] ||
    fail "html: links to something outside the file"

# --- seed-only JSON (DeepSpeed's OPSD rollout benchmark's keys)
expect 1 seed compare "$SRC/compare_seed_a.json" "$SRC/compare_seed_b.json"
has seed.out "(seed JSON)"
[ "$(grep -c 'B=1 x1 8->4 bfloat16 retain .* SAME' seed.out)" -eq 2 ] || fail "seed: expected batch 1 SAME"
[ "$(grep -c 'B=2 x1 8->4 bfloat16 retain .* WORSE' seed.out)" -eq 2 ] || fail "seed: expected batch 2 WORSE"
has seed.out "1 only in B"
# a DeepSpeed run against a benchctl run of the same cases: another model and device
expect 3 seed_vs_benchctl compare "$SRC/compare_seed_a.json" base.json
has seed_vs_benchctl.err "differ in model"
expect 0 seed_vs_benchctl_ignored compare "$SRC/compare_seed_a.json" base.json --ignore-env --fail-on never
has seed_vs_benchctl_ignored.out "2 matched, 0 only in A, 0 only in B"
has seed_vs_benchctl_ignored.out "not compared, A does not say: cpu_model"

# A backend name, model and hostname holding terminal controls (a title change and a
# screen clear): compare and report --reporter console print them escaped,
# never as the raw bytes
sed -e 's/"hostname": *"[^"]*"/"hostname": "h\\u001b]0;PWNED\\u0007\\u001b[2J"/' \
    -e 's/"backend": *"\([^"]*\)"/"backend": "\1\\u001b]0;PWNED\\u0007"/' \
    -e 's/"model": *"\([^"]*\)"/"model": "\1\\u001b]0;PWNED\\u0007"/' base.json >hostile.json
grep -q 'PWNED' hostile.json || fail "hostile: the sed did not change base.json"
"$BENCHCTL" compare hostile.json base.json --ignore-env --fail-on never >hostile_cmp.out 2>hostile_cmp.err
"$BENCHCTL" compare hostile.json base.json --ignore-env --fail-on never --format md >hostile_md.out 2>&1
"$BENCHCTL" report hostile.json --reporter console >hostile_rep.out 2>hostile_rep.err
for f in hostile_cmp.out hostile_cmp.err hostile_md.out hostile_rep.out hostile_rep.err; do
    if LC_ALL=C grep -q "$(printf '\033')" "$f" || LC_ALL=C grep -q "$(printf '\007')" "$f"; then
        fail "hostile: $f holds a raw terminal control"
    fi
done
has hostile_rep.out 'PWNED'
LC_ALL=C grep -qF '\x1b]0;PWNED\x07' hostile_rep.out || fail "hostile: report does not show the escaped name"
LC_ALL=C grep -qF '\x1b]0;PWNED' hostile_cmp.out || fail "hostile: compare does not show the escaped host or name"

bc_test_finish compare
