#!/bin/sh
# skeleton_reports.sh: the skeleton backend's one declared metric
# (kv_store_ms, docs/examples/skeleton_backend.c) reaches every reporter of
# a live run (json, jsonl, csv, console, html), `benchctl report` replays it
# from the JSON, and `benchctl compare --metric kv_store_ms` judges it by its
# descriptor (lower is better); `benchctl plugins` prints its metric table.
#   skeleton_reports.sh BENCHCTL SKELETON_SO WORK_DIR
set -u
BENCHCTL=$1
SO=$2
WORK=$3
. "$(dirname "$0")/../lib/testlib.sh"
bc_test_workdir "$WORK"

# cfg NS_PER_TOKEN PREFIX: a 2-case run writing PREFIX.{json,jsonl,csv,txt,html}
cfg() {
    cat <<CFG
backend = { name = "$SO"; settings = { ns_per_token = $1; }; };
precisions = [ "fp32" ];
cache_policies = [ "retain" ];
matrix = { batch_sizes = [1, 2]; samples_per_prompt = [1]; prompt_lengths = [16]; response_lengths = [16]; };
run = { warmup = 1; iterations = 8; };
reporters = ( { name = "json"; settings = { path = "$2.json"; }; },
              { name = "jsonl"; settings = { path = "$2.jsonl"; }; },
              { name = "csv"; settings = { path = "$2.csv"; }; },
              { name = "console"; settings = { path = "$2.txt"; progress = false; }; },
              { name = "html"; settings = { path = "$2.html"; }; } );
CFG
}
# the metric table: one row, its unit, direction and scope
"$BENCHCTL" plugins "$SO" >plugins.out 2>plugins.err || fail "plugins exited $?"
grep -q '^METRIC  *UNIT  *BETTER  *PER  *HELP$' plugins.out || fail "plugins: no metric table header"
grep -q '^kv_store_ms  *ms  *lower  *iteration  *time generate spent' plugins.out ||
    { fail "plugins: no kv_store_ms row (ms, lower, iteration)"; sed 's/^/    /' plugins.out; }
[ "$(grep -c 'kv_store_ms' plugins.out)" = 1 ] || fail "plugins: kv_store_ms not exactly once"
grep -q '^kv_store_gb_per_s  *GB/s  *higher  *iteration  *KV bytes' plugins.out ||
    fail "plugins: no kv_store_gb_per_s row (GB/s, higher, iteration)"

cfg 0 a >a.cfg
"$BENCHCTL" run a.cfg -q >a.out 2>a.err || { fail "run exited $?"; sed 's/^/    /' a.err; }

# JSON: a field, its descriptor, a value per measured iteration and statistics
grep -q '"fields": \[.*"kv_store_ms"' a.json || grep -q '"kv_store_ms",' a.json || fail "a.json: no field kv_store_ms"
tr -d ' \n' <a.json | grep -q '{"name":"kv_store_ms","unit":"ms","better":"lower","scope":"iteration","help":"timegeneratespent' ||
    fail "a.json: no metrics[] descriptor of kv_store_ms (ms, lower, iteration)"
[ "$(grep -c '"kv_store_ms": [0-9]' a.json)" -ge 16 ] || fail "a.json: kv_store_ms measured in fewer than 16 profiles"
tr -d ' \n' <a.json | grep -q '"kv_store_ms":{"n":8' || fail "a.json: no statistics of kv_store_ms over 8 iterations"
# a rate (better higher): its summary is {mean, p50}, by its declaration
tr -d ' \n' <a.json | grep -q '"kv_store_gb_per_s":{"mean":[0-9.e+-]*,"p50":[0-9.e+-]*}' ||
    fail "a.json: no summary {mean, p50} of kv_store_gb_per_s"
# JSONL: the run record's descriptor and every case's values
grep '"record": *"run"' a.jsonl | grep -q '"name": *"kv_store_ms"' || fail "a.jsonl: the run record lacks the descriptor"
[ "$(grep '"record": *"case"' a.jsonl | grep -c '"kv_store_ms": *[0-9]')" -eq 2 ] || fail "a.jsonl: 2 cases with kv_store_ms"
# CSV: its statistics columns
head -1 a.csv | grep -q 'kv_store_ms_mean' || fail "a.csv: no kv_store_ms_mean column"
# console: the declared metrics' table, headed with the unit
grep -q 'kv_store_ms (ms)' a.txt || fail "a.txt: no 'kv_store_ms (ms)' column"
# HTML: the declared metrics' table
grep -q 'kv_store_ms' a.html || fail "a.html: no kv_store_ms"

# replay: the JSON rendered again carries the same field and descriptor
"$BENCHCTL" report a.json --reporter json -o replay.json >/dev/null 2>replay.err || fail "report a.json exited $?"
tr -d ' \n' <replay.json | grep -q '{"name":"kv_store_ms","unit":"ms","better":"lower"' ||
    fail "replay.json: the descriptor did not survive the replay"
"$BENCHCTL" report a.json --reporter console -o replay.txt >/dev/null 2>&1 || fail "report --reporter console exited $?"
grep -q 'kv_store_ms (ms)' replay.txt || fail "replay.txt: no 'kv_store_ms (ms)' column"

# compare: lower is better, from the descriptor (not the name); B stores
# the same entries, so the verdict is whatever the data says, but the
# direction is stated and a B with a slower store is never BETTER
cfg 0 b >b.cfg
"$BENCHCTL" run b.cfg -q >b.out 2>b.err || fail "run b exited $?"
"$BENCHCTL" compare a.json b.json --metric kv_store_ms >cmp.out 2>cmp.err
code=$?
[ "$code" -le 1 ] || { fail "compare exited $code"; sed 's/^/    /' cmp.err; }
grep -q 'kv_store_ms (lower is better)' cmp.out || { fail "compare: no 'kv_store_ms (lower is better)'"; cat cmp.out; }
"$BENCHCTL" compare a.json b.json --metric kv_store_ms --format json >cmp.json 2>/dev/null
tr -d ' \n' <cmp.json | grep -q '"kv_store_ms":{"higher_is_better":false,"better":"lower"' ||
    fail "compare json: kv_store_ms is not lower-is-better"

bc_test_finish skeleton_reports
