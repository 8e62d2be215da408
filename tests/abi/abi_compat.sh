#!/bin/sh
# abi_compat.sh: the ABI 2.x compatibility policy, in both directions.
#   abi_compat.sh HOST_2_6 HOST_2_7 PLUGINS_2_5 PLUGINS_2_6 PLUGINS_2_7 SRC_DIR WORK_DIR
# Each name says the minor the build speaks: HOST_2_6 and PLUGINS_2_6 are
# from plugin.h as it is (ABI 2.6); HOST_2_7 and PLUGINS_2_7 have
# abi_2_7.h forced in (the next minor: every struct one minor larger);
# PLUGINS_2_5 are the fixture plugins built against the 2.5 header as
# released (abi_2_5/). Every pairing of a host with plugins of its minor or
# another must run compat.cfg to the end and write the same cases:
#   2.6 host + 2.6 plugins (the reference), 2.6 host + 2.5 plugins and 2.7
#   host + 2.5 / 2.6 plugins (old plugins in a newer benchctl), 2.6 host +
#   2.7 plugins (a newer plugin in an older benchctl), 2.7 + 2.7.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
HOST26=$1
HOST27=$2
PLUG25=$3
PLUG26=$4
PLUG27=$5
SRC=$6
WORK=$7
bc_test_workdir "$WORK"

# run NAME HOST PLUGINS: runs compat.cfg in WORK/NAME
run() {
    name=$1
    mkdir -p "$WORK/$name"
    (cd "$WORK/$name" && BENCHCTL_PLUGIN_PATH=$3 "$2" run "$SRC/compat.cfg" -q >out.txt 2>err.txt)
    code=$?
    if [ "$code" -ne 0 ]; then
        fail "$name: exited $code"
        sed 's/^/    /' "$WORK/$name/err.txt"
        return
    fi
    # the case lines without the timings-free parts that may differ: all of them are deterministic
    [ "$(grep -c '^case .* ok 2 .* fixed$' "$WORK/$name/cases.txt")" -eq 16 ] ||
        fail "$name: expected 16 ok cases that stopped at their fixed count"
    # iteration_finished (2.1) reached the reporter: 16 warmup and 32 measured iterations
    grep -q '^events 16 32$' "$WORK/$name/cases.txt" || fail "$name: expected 'events 16 32' in cases.txt"
    grep -q '"schema_version": 2' "$WORK/$name/report.json" || fail "$name: report.json lacks schema_version 2"
    [ "$(wc -l <"$WORK/$name/report.csv")" -eq 17 ] || fail "$name: report.csv should have a header and 16 rows"
    # (since 2.2) a comm plugin and the distributed blocks of the reports
    (cd "$WORK/$name" && BENCHCTL_PLUGIN_PATH=$3 "$2" run "$SRC/compat.cfg" -q --set 'distributed.comm="testcomm"' \
        --set 'reporters.[1].settings.path="dist.json"' --set 'reporters.[2].settings.path="dist.csv"' \
        --set 'reporters.[0].settings.path="dist.txt"' >dist-out.txt 2>dist-err.txt)
    code=$?
    if [ "$code" -ne 0 ]; then
        fail "$name: with testcomm: exited $code"
        sed 's/^/    /' "$WORK/$name/dist-err.txt"
        return
    fi
    grep -q '"world_size": 1' "$WORK/$name/dist.json" || fail "$name: dist.json lacks the distributed block"
    [ "$(grep -c '"step_tokens_per_second"' "$WORK/$name/dist.json")" -eq 16 ] ||
        fail "$name: dist.json should have 16 cases with distributed aggregates"
    head -1 "$WORK/$name/dist.csv" | grep -q 'straggler_efficiency' || fail "$name: dist.csv lacks the straggler columns"
    echo "ok: $name"
}

run host26-plugins26 "$HOST26" "$PLUG26"
run host26-plugins25 "$HOST26" "$PLUG25"
run host27-plugins25 "$HOST27" "$PLUG25"
run host27-plugins26 "$HOST27" "$PLUG26"
run host26-plugins27 "$HOST26" "$PLUG27"
run host27-plugins27 "$HOST27" "$PLUG27"

# every pairing read the same cases (same order, statuses, shapes, tokens)
for name in host26-plugins25 host27-plugins25 host27-plugins26 host26-plugins27 host27-plugins27; do
    [ -f "$WORK/$name/cases.txt" ] || continue
    cmp -s "$WORK/host26-plugins26/cases.txt" "$WORK/$name/cases.txt" ||
        { fail "$name: cases.txt differs from the 2.6 pairing"; diff "$WORK/host26-plugins26/cases.txt" "$WORK/$name/cases.txt" | head; }
done
# a 2.6 host's reports carry every field's descriptor, whatever the plugins' minor
for name in host26-plugins25 host26-plugins26 host26-plugins27; do
    tr -d ' \n' <"$WORK/$name/report.json" | grep -q '"metrics":\[{"name":"prompt_expansion_ms","unit":"ms","better":"lower"' ||
        fail "$name: report.json lacks the fields' descriptors"
done

# (since 2.4) a backend's declared metrics reach the reports across minors
for pair in "$HOST26 $PLUG25 host26-plugins25" "$HOST27 $PLUG25 host27-plugins25" "$HOST26 $PLUG26 host26-plugins26" "$HOST26 $PLUG27 host26-plugins27" "$HOST27 $PLUG26 host27-plugins26" \
            "$HOST27 $PLUG27 host27-plugins27"; do
    set -- $pair
    (cd "$WORK/$3" && BENCHCTL_PLUGIN_PATH=$2 "$1" run "$SRC/compat.cfg" -q --set 'backend.settings.metrics="declare"' \
        --set 'reporters.[1].settings.path="metrics.json"' --set 'reporters.[2].settings.path="metrics.csv"' \
        --set 'reporters.[0].settings.path="metrics.txt"' >metrics-out.txt 2>metrics-err.txt) ||
        { fail "$3: metrics = declare: exited $?"; sed 's/^/    /' "$WORK/$3/metrics-err.txt"; continue; }
    [ "$(grep -c '"tb_kv_rows_written": [0-9]' "$WORK/$3/metrics.json")" -eq 32 ] ||
        fail "$3: metrics.json should have tb_kv_rows_written in 32 profiles"
    [ "$(grep -c '"tb_generates": 3' "$WORK/$3/metrics.json")" -eq 16 ] ||
        fail "$3: metrics.json should have tb_generates = 3 once per case (16)"
    head -1 "$WORK/$3/metrics.csv" | grep -q 'tb_generates_mean' || fail "$3: metrics.csv lacks tb_generates_mean"
done

# the hosts say which ABI each plugin speaks
for pair in "$PLUG25 2.5" "$PLUG26 2.6" "$PLUG27 2.7"; do
    set -- $pair
    for host in "$HOST26" "$HOST27"; do
        BENCHCTL_PLUGIN_PATH=$1 "$host" plugins testbackend >"$WORK/plugins.txt" 2>&1 || fail "plugins testbackend ($2) failed"
        grep -q "ABI $2" "$WORK/plugins.txt" || fail "benchctl plugins does not show ABI $2 for a $2 plugin"
    done
done
"$HOST26" --version | grep -q 'plugin ABI 2.6' || fail "the host from plugin.h does not say ABI 2.6"
"$HOST27" --version | grep -q 'plugin ABI 2.7' || fail "the 2.7 host does not say ABI 2.7"

bc_test_finish abi_compat
