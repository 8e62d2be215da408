#!/bin/sh
# row_latency.sh: the per-row latency fields (core/src/run/rowlat.c) end to
# end with a native engine's schedule (the llama backend on a golden Qwen2
# checkpoint, tests/llama/golden): a static batch has every row field in the
# JSON (with its descriptor: ms, lower is better) and the console's row table;
# continuous batching with rows joining later keeps ttft and leaves tpot and
# e2e null; compare judges them by their descriptors (lower is better for
# the latencies, higher for rows_per_second); the markdown reporter writes one
# line per case with tokens/s and its spread.
#   row_latency.sh BENCHCTL SOURCE_DIR WORK_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
G=$2/tests/llama/golden
bc_test_workdir "$3"

cat >rows.cfg <<CFG
backend = { name = "llama"; settings = { checkpoint = "$G/qwen2_gqa4"; threads = 1; }; };
precisions = [ "fp32" ];
cache_policies = [ "retain" ];
matrix = { batch_sizes = [2]; samples_per_prompt = [2]; prompt_lengths = [4]; response_lengths = [6]; };
run = { warmup = 1; iterations = 4; quiet_check = "off"; };
reporters = ( { name = "console"; }, { name = "json"; settings = { path = "static.json"; }; },
              { name = "markdown"; settings = { path = "static.md"; }; } );
CFG

expect 0 static run rows.cfg
for f in row_ttft_ms_p50 row_ttft_ms_p90 row_ttft_ms_p99 row_tpot_ms_p50 row_tpot_ms_p90 row_tpot_ms_p99 \
    row_e2e_ms_p50 row_e2e_ms_p90 row_e2e_ms_p99; do
    grep -A2 "\"name\": \"$f\"" static.json | grep -q '"better": "lower"' || fail "static.json: $f is not ms, lower is better"
    grep -q "\"$f\": [0-9]" static.json || fail "static.json: no profile has a number for $f"
    grep -q "\"$f\": null" static.json && fail "static.json: a static batch left $f null"
done
grep -A2 '"name": "rows_per_second"' static.json | grep -q '"better": "higher"' || fail "rows_per_second is not higher is better"
# the console's row table: a header, a rule, the case with every column measured
awk '/ttft_p50/ { getline; getline; print; exit }' static.out >row.txt
[ "$(awk '{ n = 0; for (i = 2; i <= NF; i++) if ($i != "-") n++; print n }' row.txt)" = 7 ] ||
    { fail "static: the console's row table has an unmeasured column"; bc_test_show static.out; }
# markdown: header, alignment and one case
[ "$(grep -c '^|' static.md)" = 3 ] || { fail "static.md: not 3 table lines"; bc_test_show static.md; }
has static.md " ± "
has static.md "| fp32 | retain | 2 | 2 | 4 | 6 | 4 |"

# continuous batching, 2 rows at a time of 4: rows 3 and 4 join later
expect 0 continuous run rows.cfg --set 'backend.settings.batching="continuous"' --set 'backend.settings.batch_capacity=2' \
    --set 'reporters.[1].settings.path="continuous.json"'
grep -q '"row_ttft_ms_p99": [0-9]' continuous.json || fail "continuous: row_ttft_ms_p99 not measured"
for f in row_tpot_ms_p50 row_e2e_ms_p50 row_e2e_ms_p99; do
    grep -q "\"$f\": [0-9]" continuous.json && fail "continuous: $f has a number, the steps do not hold the joins"
done

# compare: the descriptors' directions
expect 0 cmp compare static.json static.json --metric row_e2e_ms_p99,rows_per_second
has cmp.out "row_e2e_ms_p99 (lower is better)"
has cmp.out "rows_per_second (higher is better)"

bc_test_finish row_latency
