#!/bin/sh
# hostile_files.sh: what benchctl does with files a careless user or an
# attacker hands it (docs/reliability.md): a report path that cannot be
# created (refused by validate, and by run before its first case, also as
# root) and a journal whose "ok" records hold no real measurement (their
# cases run again under --resume).
#   hostile_files.sh BENCHCTL E2E_SOURCE_DIR WORK_DIR FIXTURE_PLUGIN_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
SRC=$2
WORK=$3
BENCHCTL_PLUGIN_PATH=$4
export BENCHCTL_PLUGIN_PATH
bc_test_workdir "$WORK"

# --- a report path that cannot be created: /proc takes no new folder, even
# from root, for whom access() says yes
json_at() {
    printf 'reporters=({name="json"; settings={path="%s";};})' "$1"
}
expect 2 proc_validate validate "$SRC/good.cfg" --set "$(json_at /proc/nope/x.json)"
has proc_validate.err "/proc/nope"
has proc_validate.err "cannot create folder"
# run refuses it before its first case: the fixture backend logs every case it begins
: >proc_run.log
expect 2 proc_run run "$SRC/good.cfg" --set "$(json_at /proc/nope/x.json)" \
    --set 'backend.settings.case_log="proc_run.log"'
has proc_run.err "/proc/nope"
[ -s proc_run.log ] && fail "proc_run: a case began although the report path cannot be created"
# an existing folder where no file can be made (/proc itself)
expect 2 proc_file validate "$SRC/good.cfg" --set "$(json_at /proc/x.json)"
has proc_file.err "/proc/x.json"
# a path whose folders are missing but can be made: ok, and the check leaves nothing behind
expect 0 nested_validate validate "$SRC/good.cfg" --set "$(json_at out/a/b/r.json)"
[ -e out ] && fail "nested_validate: validate left out/ behind"
ls -A . | grep -q '^\.benchctl-check' && fail "nested_validate: validate left its probe file behind"
expect 0 nested_run run "$SRC/good.cfg" --set "$(json_at out/a/b/r.json)" -q
[ -s out/a/b/r.json ] || fail "nested_run: out/a/b/r.json was not written"

# --- --resume with records marked ok that hold no measurement: each is named
# and its case runs again; the sound records are taken
resume_opts="--reporter jsonl --set reporters.[0].settings.path=\"j.jsonl\" \
 --set backend.settings.case_log=\"resume.log\""
# shellcheck disable=SC2086 # resume_opts is a list of options
expect 0 first run "$SRC/good.cfg" $resume_opts -q
[ "$(grep -c '"record":"case"' j.jsonl)" -eq 16 ] || fail "first: the journal does not hold 16 cases"
# cases 0-4 damaged, each its own way; no end record (the run was killed)
python3 - j.jsonl damaged.jsonl <<'EOF'
import json, sys
out = []
for line in open(sys.argv[1]):
    rec = json.loads(line)
    if rec.get("record") == "end":
        continue
    if rec.get("record") == "case":
        i = rec["index"]
        if i == 0:
            rec["profiles"] = []
        elif i == 1:
            rec["profiles"] = "x"
        elif i == 2:
            for p in rec["profiles"]:
                del p["total_ms"]
        elif i == 3:
            rec["profiles"][0]["total_ms"] = -1e308
        elif i == 4:
            rec["profiles"][-1]["num_generated_tokens"] = -1e308
    out.append(json.dumps(rec, separators=(",", ":")))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
EOF
: >resume.log
mv damaged.jsonl j.jsonl
# shellcheck disable=SC2086
expect 0 resumed run "$SRC/good.cfg" $resume_opts --resume j.jsonl
has resumed.err "resuming j.jsonl: 11 of 16 cases finished there are taken as they were"
has resumed.err "case 0 is recorded ok but it has no profiles"
has resumed.err "case 1 is recorded ok but it has no profiles"
has resumed.err "case 2 is recorded ok but profile 1 has no total_ms"
has resumed.err "case 3 is recorded ok but profile 1 has total_ms = -1e+308"
has resumed.err "case 4 is recorded ok but profile 2 has num_generated_tokens = -1e+308"
[ "$(grep -c '^begin ' resume.log)" -eq 5 ] ||
    fail "resumed: $(grep -c '^begin ' resume.log) cases began, expected the 5 damaged ones"
[ "$(grep -c '"record":"case"' j.jsonl)" -eq 16 ] || fail "resumed: the new journal does not hold 16 cases"
# the cases that ran again hold real profiles
python3 - j.jsonl <<'EOF' || fail "resumed: a case that ran again has no sound profiles"
import json, math, sys
for line in open(sys.argv[1]):
    rec = json.loads(line)
    if rec.get("record") == "case" and rec["index"] < 5:
        ps = rec["profiles"]
        assert isinstance(ps, list) and len(ps) == 2, rec["index"]
        for p in ps:
            assert p["total_ms"] >= 0 and p["num_generated_tokens"] >= 0, rec["index"]
EOF

# --- standard output carries results only: a plugin that writes to fd 1
# (the fixture's case_log at /dev/stdout) lands on stderr, in the run's
# process and in an isolated case's child; the console's tables stay on stdout
# (both streams are pipes: /dev/stdout reopens what fd 1 is, which for a file
# would be a second description writing over the first)
for iso in none process; do
    { "$BENCHCTL" run "$SRC/good.cfg" --cases 0-1 --reporter console --set 'backend.settings.case_log="/dev/stdout"' \
        --set "run.isolation=\"$iso\"" 2>&1 1>&3 3>&- | cat >"stdout_$iso.err"; } 3>&1 | cat >"stdout_$iso.out"
    lacks "stdout_$iso.out" "begin "
    has "stdout_$iso.err" "begin "
    has "stdout_$iso.out" "total_ms"
done

# --- two runs race at the journal's open: the loser stops before its first
# case and replaces nothing of the winner's. The fixture's case_log is a FIFO,
# so the run waits at each line until the test reads it. At its first line
# (the feasibility check of case 0, after every plugin's settings were
# checked, the journal's free lock included) a stand-in winner takes the
# journal's lock (flock, as a running benchctl holds it); then the run goes
# on without waiting and its lines are read when it has ended.
if command -v flock >/dev/null 2>&1 && command -v mkfifo >/dev/null 2>&1; then
    mkdir -p race && cd race || exit 1
    echo WINNER >r.json
    echo '{"record":"run","winner":1}' >j.jsonl
    mkfifo gate
    "$BENCHCTL" run "$SRC/good.cfg" --reporter json,jsonl --set 'reporters.[0].settings.path="r.json"' \
        --set 'reporters.[1].settings.path="j.jsonl"' --set 'backend.settings.case_log="gate"' >loser.out 2>loser.err &
    loser=$!
    : >lines
    holder=
    # the run is at its first line once it waits to open the FIFO (wchan wait_for_partner)
    tries=0
    while ! grep -q wait_for_partner "/proc/$loser/wchan" 2>/dev/null && [ "$tries" -lt 600 ]; do
        sleep 0.05
        tries=$((tries + 1))
    done
    flock -x j.jsonl sleep 30 &
    holder=$!
    tries=0
    while ! grep -q "FLOCK.*WRITE" /proc/locks && [ "$tries" -lt 100 ]; do sleep 0.05; tries=$((tries + 1)); done
    # from here on the FIFO always has a reader and a writer (this shell's
    # fd 3): the run's lines go to its buffer without waiting, and no line
    # meets a reader that a timeout just closed (SIGPIPE); they are read
    # once the run has ended
    exec 3<>gate
    wait "$loser"
    code=$?
    timeout 2 cat <&3 >>lines 2>/dev/null
    exec 3>&-
    grep -q '^prepare ' lines || fail "race: the loser never prepared its backend (it should stop after that)"
    [ "$code" -eq 1 ] || { fail "race: the loser exited $code, want 1"; bc_test_show loser.err; }
    grep -q '^begin ' lines && fail "race: the loser began a case"
    has loser.err "another run holds this journal"
    has loser.err "no case ran and no report was written"
    [ "$(cat r.json)" = WINNER ] || fail "race: the loser replaced the winner's r.json"
    [ "$(cat j.jsonl)" = '{"record":"run","winner":1}' ] || fail "race: the loser changed the winner's journal"
    [ -n "$holder" ] && kill "$holder" 2>/dev/null
    ls -A | grep -q '\.tmp\.' && fail "race: the loser left a temporary file"
    cd .. || exit 1
else
    echo "note: no flock or mkfifo: the journal race is not tried"
fi

# --- a plugin of the user's that shadows a built-in one by name is named,
# with the built-in file it hides
mkdir -p mine
cp "$(dirname "$BENCHCTL")/plugins/benchctl-csv.so" mine/benchctl-json.so
BENCHCTL_PLUGIN_PATH="$PWD/mine:$BENCHCTL_PLUGIN_PATH" expect 0 shadow validate "$SRC/good.cfg" --reporter json
has shadow.err "plugin 'json' is $PWD/mine/benchctl-json.so"
has shadow.err "it shadows the built-in $(dirname "$BENCHCTL")/plugins/benchctl-json.so"
expect 0 no_shadow validate "$SRC/good.cfg" --reporter json
lacks no_shadow.err "shadows"

bc_test_finish hostile_files
