#!/bin/sh
# skipped_tests.sh: ctest's list of skipped tests is followed by each one's
# reason. A small ctest project whose test prints "SKIP: why" and exits 77,
# with the CTestCustom.cmake line the build writes (tests/CMakeLists.txt):
# ctest's own output names the test and its reason (tools/skipped-tests,
# run by ctest after the tests, reading LastTest.log.tmp); a test that ran
# is not listed; and the build's own CTestCustom.cmake runs the tool.
#   skipped_tests.sh SOURCE_DIR BINARY_DIR WORK_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
SRC=$1
BIN=$2
WORK=$3
bc_test_workdir "$WORK"
command -v ctest >/dev/null 2>&1 || bc_test_skip "ctest not found"
mkdir -p proj
cat >proj/CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(skips NONE)
enable_testing()
add_test(NAME needs_venv COMMAND sh -c "echo working; echo 'SKIP: no peers venv (tools/peers-venv makes it)'; exit 77")
set_tests_properties(needs_venv PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME runs COMMAND sh -c "echo fine")
CMAKE
cmake -S proj -B proj/build >cmake.out 2>&1 || { fail "cmake of the small project"; bc_test_show cmake.out; }
printf 'set(CTEST_CUSTOM_POST_TEST "%s/tools/skipped-tests %s")\n' "$SRC" "$WORK/proj/build" >proj/build/CTestCustom.cmake
ctest --test-dir proj/build >ctest.out 2>&1
has ctest.out "needs_venv (Skipped)"
has ctest.out "Why they were skipped (tools/skipped-tests):"
has ctest.out "needs_venv (Skipped): no peers venv (tools/peers-venv makes it)"
lacks ctest.out "runs (Skipped)"
# with ctest's output given (tools/run-tests), the same reason, as before
"$SRC/tools/skipped-tests" proj/build ctest.out >listed.out || fail "skipped-tests BUILD CTEST_OUTPUT"
has listed.out "needs_venv (Skipped): no peers venv (tools/peers-venv makes it)"
# the build writes the line that runs it
has "$BIN/CTestCustom.cmake" "CTEST_CUSTOM_POST_TEST \"$SRC/tools/skipped-tests $BIN\""
bc_test_finish skipped_tests
