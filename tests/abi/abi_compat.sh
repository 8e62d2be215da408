#!/bin/sh
# abi_compat.sh: the ABI 2.x compatibility policy, in both directions.
#   abi_compat.sh HOST_2_1 HOST_2_2 PLUGINS_2_1 PLUGINS_2_2 SRC_DIR WORK_DIR
# PLUGINS_* are folders holding a backend, precisions, cache policies and
# reporters built from plugin.h as it is (ABI 2.3, called "21" here) and
# with abi_2_2.h forced in (the next minor, 2.4, called "22": every struct one
# minor larger). Every pairing of host and plugins must run compat.cfg to the
# end and write the same cases:
#   21 host + 21 plugins (the reference), 22 host + 21 plugins (an old
#   plugin in a newer benchctl), 21 host + 22 plugins (a newer plugin in an
#   older benchctl), 22 host + 22 plugins.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
HOST21=$1
HOST22=$2
PLUG21=$3
PLUG22=$4
SRC=$5
WORK=$6
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

run host21-plugins21 "$HOST21" "$PLUG21"
run host22-plugins21 "$HOST22" "$PLUG21"
run host21-plugins22 "$HOST21" "$PLUG22"
run host22-plugins22 "$HOST22" "$PLUG22"

# every pairing read the same cases (same order, statuses, shapes, tokens)
for name in host22-plugins21 host21-plugins22 host22-plugins22; do
    [ -f "$WORK/$name/cases.txt" ] || continue
    cmp -s "$WORK/host21-plugins21/cases.txt" "$WORK/$name/cases.txt" ||
        { fail "$name: cases.txt differs from the 2.1 pairing"; diff "$WORK/host21-plugins21/cases.txt" "$WORK/$name/cases.txt" | head; }
done

# the hosts say which ABI each plugin speaks
BENCHCTL_PLUGIN_PATH=$PLUG22 "$HOST21" plugins testbackend >"$WORK/plugins22.txt" 2>&1 || fail "plugins testbackend (2.2) failed"
grep -q 'ABI 2.4' "$WORK/plugins22.txt" || fail "benchctl plugins does not show ABI 2.4 for a next-minor plugin"
BENCHCTL_PLUGIN_PATH=$PLUG21 "$HOST22" plugins testbackend >"$WORK/plugins21.txt" 2>&1 || fail "plugins testbackend (2.1) failed"
grep -q 'ABI 2.3' "$WORK/plugins21.txt" || fail "benchctl plugins does not show ABI 2.3 for a 2.3 plugin"
"$HOST21" --version | grep -q 'plugin ABI 2.3' || fail "the host from plugin.h does not say ABI 2.3"
"$HOST22" --version | grep -q 'plugin ABI 2.4' || fail "the next-minor host does not say ABI 2.4"

bc_test_finish abi_compat
