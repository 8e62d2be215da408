# tests/lib/testlib.sh: what the shell test scripts share. A script sources
# it first, by its own path (POSIX sh, no bash needed):
#   . "$(dirname "$0")/../lib/testlib.sh"
# and gets:
#   failures          the count of failed checks, 0 at the start
#   fail MSG...       prints "FAIL: MSG" and counts it; the script goes on
#   has FILE TEXT     fails unless FILE holds TEXT (a fixed string); on a
#                     failure FILE is shown, indented, its first 40 lines
#   lacks FILE TEXT   fails if FILE holds TEXT
#   expect CODE NAME ARGS...
#                     runs "$BENCHCTL" ARGS with stdout in NAME.out and
#                     stderr in NAME.err; fails unless it exits CODE
#   bc_test_workdir DIR
#                     DIR emptied (made if missing) and made the working
#                     directory; the script exits 1 if it cannot be
#   bc_test_skip REASON...
#                     prints "SKIP: REASON" and exits 77, which ctest counts
#                     as skipped (SKIP_RETURN_CODE 77) and tools/run-tests
#                     lists with REASON
#   bc_test_finish NAME
#                     the last line: "NAME: all passed" and exit 0, or
#                     "NAME: N failure(s)" and exit 1
# Every check prints to stdout, where ctest --output-on-failure shows it.

failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# Shows FILE indented, at most 40 lines, under a failed check.
bc_test_show() {
    sed 's/^/    /' "$@" | head -40
}

has() {
    grep -qF -- "$2" "$1" || { fail "$1 lacks '$2'"; bc_test_show "$1"; }
}

lacks() {
    ! grep -qF -- "$2" "$1" || { fail "$1 has '$2'"; bc_test_show "$1"; }
}

expect() {
    want=$1
    name=$2
    shift 2
    "$BENCHCTL" "$@" >"$name.out" 2>"$name.err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail "$name: benchctl $* exited $got, expected $want"
        bc_test_show "$name.err" "$name.out"
    else
        echo "ok: $name (exit $got)"
    fi
}

bc_test_workdir() {
    rm -rf "$1" && mkdir -p "$1" && cd "$1" || { echo "FAIL: cannot make the work folder $1"; exit 1; }
}

bc_test_skip() {
    echo "SKIP: $*"
    exit 77
}

bc_test_finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$1: $failures failure(s)"
        exit 1
    fi
    echo "$1: all passed"
    exit 0
}
