#!/bin/sh
# bench_cfg.sh: runs the main job exactly as README.md says (configs/bench.cfg,
# the OPT engine on synthetic OPT-125m weights) with one measured iteration,
# and checks it writes the JSON, CSV and console reports: the JSON read back
# with jansson (check_json), one CSV row per case, the console table on stdout.
#   bench_cfg.sh BENCHCTL SOURCE_DIR WORK_DIR CHECK_JSON
set -u
BENCHCTL=$1
SRC=$2
WORK=$3
CHECK_JSON=$4
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
unset BENCHCTL_PLUGIN_PATH
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

"$BENCHCTL" run "$SRC/configs/bench.cfg" --set run.iterations=1 --set run.warmup=0 >bench.out 2>bench.err
rc=$?
[ "$rc" -eq 0 ] || { fail "benchctl run configs/bench.cfg exited $rc"; sed 's/^/    /' bench.err; }
n=$("$BENCHCTL" plan "$SRC/configs/bench.cfg" | awk 'NR == 1 { print $1 }')
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "plan: no case count"
"$CHECK_JSON" out/bench.json "$n" 1 1 0 || fail "out/bench.json: check_json failed"
[ "$(wc -l <out/bench.csv)" -eq $((n + 1)) ] || fail "out/bench.csv: expected a header and $n rows"
grep -q '^benchctl .*facebook/opt-125m' bench.out || fail "console: no title line on stdout"
[ "$(grep -c ' ok ' bench.out)" -eq "$n" ] || fail "console: expected $n ok rows"
grep -q "$n cases: $n ok" bench.err || fail "stderr lacks the summary line"

if [ "$failures" -ne 0 ]; then
    echo "$failures bench.cfg check(s) failed"
    exit 1
fi
echo "configs/bench.cfg: $n cases, JSON, CSV and console reports checked"
