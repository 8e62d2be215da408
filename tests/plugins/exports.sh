#!/usr/bin/env bash
# exports.sh DIR: every plugin in DIR (benchctl-*.so) exports exactly one
# defined dynamic symbol, its entry point benchctl_plugin_entry: the
# plugin's own code and the static libraries it links stay private
# (cmake/BenchctlPlugin.cmake), so two plugins' internals never meet in the
# host's symbol space.
set -u
dir=$1
n=0
status=0
for so in "$dir"/benchctl-*.so; do
    [ -e "$so" ] || continue
    n=$((n + 1))
    syms=$(nm -D --defined-only "$so" | awk '{print $3}' | sort | tr '\n' ' ')
    if [ "$syms" != "benchctl_plugin_entry " ]; then
        echo "FAIL: $(basename "$so") exports: ${syms:0:400}"
        status=1
    fi
done
if [ "$n" -eq 0 ]; then
    echo "FAIL: no plugins in $dir"
    exit 1
fi
[ "$status" -eq 0 ] && echo "ok: $n plugins export only benchctl_plugin_entry"
exit "$status"
