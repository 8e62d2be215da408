#!/usr/bin/env bash
# run_outoftree.sh: the out-of-tree plugin test (ctest "outoftree").
#
#   run_outoftree.sh BINARY_DIR SOURCE_DIR CMAKE CC LIBDIR BINDIR CHECK_REPORT
#
# 1. cmake --install BINARY_DIR into a temporary prefix; check what landed.
# 2. Configure and build example_backend/ (plus the installed copies of
#    docs/examples/skeleton_backend.c and skeleton_reporter.c) against that
#    prefix with find_package(benchctl); check that the plugins export only
#    their entry symbol and that asking for a newer benchctl fails.
# 3. Build the example again with plain cc and pkg-config (benchctl-plugin.pc).
# 4. Run the installed benchctl on a config naming the example backend by its
#    .so path; check exit 0 and the JSON report. Then the skeletons: the
#    backend's settings table through `benchctl plugins PATH`, and a run of
#    the skeleton backend with a setting, reported by the skeleton reporter.
set -euo pipefail

bin=$1 src=$2 cmake=$3 cc=$4 libdir=$5 bindir=$6 check_report=$7
tmp=$(mktemp -d "${TMPDIR:-/tmp}/benchctl-outoftree.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
log=$tmp/log

step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# runs a command quietly; shows its output if it fails
quiet() { "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$*"; }; }

step "install into $prefix"
quiet "$cmake" --install "$bin" --prefix "$prefix"
for f in include/benchctl/plugin.h \
         "$libdir"/benchctl/benchctl-fp32.so "$libdir"/benchctl/benchctl-fp16.so "$libdir"/benchctl/benchctl-bf16.so \
         "$libdir"/benchctl/benchctl-retain.so "$libdir"/benchctl/benchctl-release.so \
         "$libdir"/cmake/benchctl/benchctlConfig.cmake "$libdir"/cmake/benchctl/benchctlConfigVersion.cmake \
         "$libdir"/cmake/benchctl/benchctlTargets.cmake "$libdir"/pkgconfig/benchctl-plugin.pc \
         share/benchctl/examples/skeleton_backend.c share/benchctl/examples/skeleton_reporter.c; do
  [ -f "$prefix/$f" ] || fail "not installed: $f"
done

step "build example_backend with find_package(benchctl)"
obuild=$tmp/build
quiet "$cmake" -S "$src/tests/outoftree/example_backend" -B "$obuild" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$tmp/plugins" -DSKELETON_SOURCE="$prefix/share/benchctl/examples/skeleton_backend.c" \
  -DSKELETON_REPORTER_SOURCE="$prefix/share/benchctl/examples/skeleton_reporter.c"
grep -q "plugin ABI" "$log" || fail "the package did not set benchctl_ABI_MAJOR/MINOR"
quiet "$cmake" --build "$obuild"
quiet "$cmake" --install "$obuild"
example=$tmp/plugins/lib/benchctl/benchctl-example.so
skeleton=$tmp/plugins/lib/benchctl/benchctl-skeleton.so
skeleton_reporter=$tmp/plugins/lib/benchctl/benchctl-skeleton_reporter.so
for so in "$example" "$skeleton" "$skeleton_reporter"; do
  [ -f "$so" ] || fail "benchctl_add_plugin did not install $so"
done
for so in "$example" "$skeleton" "$skeleton_reporter"; do
  exported=$(nm -D --defined-only "$so" | awk '$2 == "T" { print $3 }')
  [ "$exported" = "benchctl_plugin_entry" ] || fail "$so exports [$exported], want only benchctl_plugin_entry"
done

step "find_package(benchctl 99) is refused"
if "$cmake" -S "$src/tests/outoftree/example_backend" -B "$tmp/build-v99" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCMAKE_C_COMPILER="$cc" -DBENCHCTL_MIN_VERSION=99 >"$log" 2>&1; then
  fail "find_package(benchctl 99) succeeded against version $(sed -n 's/.*PACKAGE_VERSION "\(.*\)".*/\1/p' \
        "$prefix/$libdir/cmake/benchctl/benchctlConfigVersion.cmake" | head -1)"
fi

step "build example_backend with pkg-config"
cflags=$(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --cflags benchctl-plugin)
# shellcheck disable=SC2086 # cflags is a list of flags
quiet "$cc" -std=c11 -Wall -Wextra -Werror $cflags -shared -fPIC -fvisibility=hidden -Wl,--no-undefined \
  -o "$tmp/benchctl-example-pc.so" "$src/tests/outoftree/example_backend/example_backend.c"

step "run the installed benchctl on the example backend, by path"
benchctl=$prefix/$bindir/benchctl
[ -x "$benchctl" ] || fail "not installed: $bindir/benchctl"
cat >"$tmp/bench.cfg" <<CFG
backend = { name = "$example"; };
precisions = [ "fp32" ];
cache_policies = [ "retain", "release" ];
matrix = { batch_sizes = [ 2 ]; samples_per_prompt = [ 3 ]; prompt_lengths = [ 4 ]; response_lengths = [ 5 ]; };
run = { warmup = 1; iterations = 2; };
reporters = ( { name = "json"; settings = { path = "$tmp/report.json"; }; } );
CFG
# No BENCHCTL_PLUGIN_PATH: the installed benchctl must find retain/release
# relative to itself, although it was configured for another prefix.
unset BENCHCTL_PLUGIN_PATH
rc=0
"$benchctl" run "$tmp/bench.cfg" >"$log" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { cat "$log" >&2; fail "benchctl run exited $rc"; }
"$check_report" "$tmp/report.json" example-outoftree 2 6 5 retain release

step "benchctl plugins PATH prints the skeleton's settings table"
"$benchctl" plugins "$skeleton" >"$log" 2>&1 || { cat "$log" >&2; fail "benchctl plugins $skeleton"; }
grep -q "ns_per_token" "$log" || { cat "$log" >&2; fail "benchctl plugins: no ns_per_token in the skeleton's table"; }

step "run the skeleton backend by path, with a setting, and the skeleton reporter"
sed -e "s|$example\"; }|$skeleton\"; settings = { ns_per_token = 1000; }; }|" \
    -e "s|^reporters = ( |reporters = ( { name = \"$skeleton_reporter\"; settings = { path = \"$tmp/summary.txt\"; }; }, |" \
    "$tmp/bench.cfg" >"$tmp/skeleton.cfg"
rc=0
"$benchctl" run "$tmp/skeleton.cfg" >"$log" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { cat "$log" >&2; fail "benchctl run (skeleton) exited $rc"; }
"$check_report" "$tmp/report.json" skeleton 2 6 5 retain release
[ "$(grep -c '^case [0-9]* ok: n=2 ' "$tmp/summary.txt")" -eq 2 ] ||
  { cat "$tmp/summary.txt" >&2; fail "the skeleton reporter did not write two ok cases with 2 iterations"; }

echo "outoftree: ok"
