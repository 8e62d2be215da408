#!/bin/sh
# hosts.sh: benchctl across three hosts (docs/scale.md, "Runs across
# hosts"), each a network namespace of its own made here: its own address
# (10.29.0.1-3 on veth pairs joined by a bridge in a fourth namespace), its
# own hostname (a UTS namespace per process tree, unshare --uts), so Open MPI
# talks TCP between them as between machines and no traffic leaves the
# namespaces. mpirun runs in the first one and starts its daemons in the
# others through its remote-shell agent (plm_rsh_agent), a script written
# here that runs the daemon inside the named host's namespace.
#   replicate  every host runs every case; host 2 a straggler: the per-host
#              figures name it, the report lists the three hostnames
#   shard      the cases spread over the three hosts, each named in its case
#   stopped    rank 1 (host 1) stopped with SIGSTOP: distributed.timeout_s
#              names it, the reports are written, the job ends
#   killed     rank 1 killed with SIGKILL: the job ends
# Everything the test made (namespaces, links, processes in them) is removed
# at its end, also on failure. Skipped (77) when not root, without iproute2
# (ip) or util-linux's unshare, or where network namespaces cannot be made
# (a container without CAP_SYS_ADMIN / CAP_NET_ADMIN).
#   hosts.sh BENCHCTL CHECK MPIRUN FIXTURES SRC_ROOT WORK
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
CHECK=$2
MPIRUN=$3
FIXTURES=$4
SRC=$5
WORK=$6
[ "$(id -u)" -eq 0 ] || bc_test_skip "not root: network namespaces need root"
command -v ip >/dev/null 2>&1 || bc_test_skip "no ip (iproute2; tools/install-deps installs it)"
command -v unshare >/dev/null 2>&1 || bc_test_skip "no unshare (util-linux)"
bc_test_workdir "$WORK"
P="bc$(($$ % 10000))" # this run's names: ${P}h0..h2 (hosts), ${P}sw (the switch)
NS="${P}h0 ${P}h1 ${P}h2 ${P}sw"

cleanup() {
    for n in $NS; do
        for p in $(ip netns pids "$n" 2>/dev/null); do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
        ip netns del "$n" 2>/dev/null
    done
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ip netns add "${P}sw" 2>netns.err || bc_test_skip "cannot make a network namespace here: $(head -1 netns.err)"
ip netns exec "${P}sw" ip link add br0 type bridge && ip netns exec "${P}sw" ip link set br0 up ||
    bc_test_skip "cannot make a bridge in a network namespace"
for i in 0 1 2; do
    h="${P}h$i"
    { ip netns add "$h" &&
        ip link add "${P}a$i" type veth peer name "${P}b$i" &&
        ip link set "${P}a$i" netns "$h" && ip link set "${P}b$i" netns "${P}sw" &&
        ip netns exec "${P}sw" ip link set "${P}b$i" master br0 && ip netns exec "${P}sw" ip link set "${P}b$i" up &&
        ip netns exec "$h" ip addr add "10.29.0.$((i + 1))/24" dev "${P}a$i" &&
        ip netns exec "$h" ip link set "${P}a$i" up && ip netns exec "$h" ip link set lo up; } 2>links.err ||
        bc_test_skip "cannot link network namespaces (veth, bridge): $(head -1 links.err)"
done

# Open MPI's remote-shell agent: `agent.sh HOST COMMAND...` runs COMMAND (the
# daemon, a shell command line) in HOST's namespace under its own hostname
cat >agent.sh <<EOF
#!/bin/sh
host=\$1
shift
case "\$host" in
    10.29.0.1) n=0 ;;
    10.29.0.2) n=1 ;;
    10.29.0.3) n=2 ;;
    *) echo "agent.sh: no host \$host here" >&2; exit 1 ;;
esac
exec ip netns exec "${P}h\$n" unshare --uts sh -c "hostname bchost\$n; \$*"
EOF
chmod +x agent.sh
printf '10.29.0.1 slots=1\n10.29.0.2 slots=1\n10.29.0.3 slots=1\n' >hostfile

cat >case.cfg <<'EOF'
# 2 batch sizes x 2 samples = 4 cases; generate sleeps
backend = { name = "testbackend"; settings = { expand_us = 100; generate_us = 2000; post_us = 50; mode = "sleep"; }; };
precisions = [ "testbf16" ];
cache_policies = [ "testretain" ];
matrix = { batch_sizes = [1, 2]; samples_per_prompt = [1, 2]; prompt_lengths = [8]; response_lengths = [4]; };
run = { warmup = 1; iterations = 3; };
distributed = { timeout_s = 2.0; };
reporters = ( { name = "json"; settings = { path = "report.json"; }; }, "console" );
EOF

# on3 NAME ARGS...: benchctl ARGS on the three hosts (one rank each), in
# WORK/NAME, at most 90 s; in the background when BG is set (its pid in $job).
# ARGS reach benchctl as they are: each is quoted for the shell that
# unshare starts
on3() {
    name=$1
    shift
    mkdir -p "$name"
    args=""
    for a in "$@"; do args="$args '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"; done
    set -- ip netns exec "${P}h0" unshare --uts sh -c "hostname bchost0 && cd '$WORK/$name' && exec timeout 90 '$MPIRUN' \
--mca plm_rsh_agent '$WORK/agent.sh' --mca btl self,tcp --mca btl_tcp_if_include 10.29.0.0/24 \
--mca oob_tcp_if_include 10.29.0.0/24 --mca btl_base_warn_component_unused 0 --hostfile '$WORK/hostfile' -np 3 \
-x BENCHCTL_PLUGIN_PATH='$FIXTURES' -x LSAN_OPTIONS -x ASAN_OPTIONS -wdir '$WORK/$name' '$BENCHCTL'$args"
    if [ -n "${BG:-}" ]; then
        "$@" >"$name/out.txt" 2>"$name/err.txt" &
        job=$!
    else
        "$@" >"$name/out.txt" 2>"$name/err.txt"
        code=$?
    fi
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$SRC/tests/mpi/lsan-openmpi.supp"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"

# the report's hosts, in rank order, one line
hosts_of() {
    python3 -c 'import json,sys; print(" ".join(r["host"] for r in json.load(open(sys.argv[1]))["distributed"]["ranks"]))' "$1"
}

# --- replicate: host 2 a straggler (50 ms per rollout)
on3 replicate run "$WORK/case.cfg" --set backend.settings.straggler_rank=2 --set backend.settings.straggler_us=50000
[ "$code" -eq 0 ] || { fail "replicate: exited $code"; sed 's/^/    /' replicate/err.txt; }
[ "$(hosts_of replicate/report.json)" = "bchost0 bchost1 bchost2" ] || fail "replicate: hosts '$(hosts_of replicate/report.json)'"
"$CHECK" replicate/report.json 3 replicate slowest=2 gap_ms=25 failed=0 || fail "replicate: report"
python3 - replicate/report.json <<'EOF' || fail "replicate: the per-host figures do not name bchost2 as the straggler"
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["cases"]:
    d = c["distributed"]
    assert d["slowest_host"] == "bchost2", d["slowest_host"]
    assert d["straggler_efficiency"] < 0.9, d["straggler_efficiency"]
    assert d["rank_time_ms"][2] > d["rank_time_ms"][0] + 25, d["rank_time_ms"]
EOF
grep -q 'bchost2' replicate/out.txt || fail "replicate: the console does not name the straggler's host"
echo "ok: replicate on bchost0-2"

# --- shard: every host ran a share, named in its cases
on3 shard run "$WORK/case.cfg" --set 'distributed.mode="shard"' --set 'matrix.batch_sizes=[1, 2, 3]'
[ "$code" -eq 0 ] || { fail "shard: exited $code"; sed 's/^/    /' shard/err.txt; }
"$CHECK" shard/report.json 3 shard all_ranks failed=0 || fail "shard: report"
python3 - shard/report.json <<'EOF' || fail "shard: the cases do not name the three hosts"
import json, sys
r = json.load(open(sys.argv[1]))
hosts = {c["distributed"]["host"] for c in r["cases"]}
assert hosts == {"bchost0", "bchost1", "bchost2"}, hosts
EOF
echo "ok: shard over bchost0-2"

# the pid of rank 1's benchctl, in host 1's namespace
rank1_pid() {
    for p in $(ip netns pids "${P}h1" 2>/dev/null); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = benchctl ] && { echo "$p"; return 0; }
    done
    return 1
}

# hit NAME SIGNAL: a slower run (1 s cases); once rank 0 began its first
# case, SIGNAL to rank 1; $code mpirun's status, $secs the time after the signal
hit() {
    BG=1 on3 "$1" run "$WORK/case.cfg" --set backend.settings.generate_us=200000 --set run.iterations=4 \
        --set 'backend.settings.case_log="cases.log"'
    tries=0
    while ! grep -q '^begin ' "$1/cases.log" 2>/dev/null && [ "$tries" -lt 600 ]; do
        sleep 0.05
        tries=$((tries + 1))
    done
    victim=$(rank1_pid) || victim=
    [ -n "$victim" ] || fail "$1: rank 1's process not found in ${P}h1"
    [ -n "$victim" ] && kill "-$2" "$victim"
    t0=$(date +%s)
    wait "$job"
    code=$?
    secs=$(($(date +%s) - t0))
    sleep 1
    for n in $NS; do
        left=$(ip netns pids "$n" 2>/dev/null)
        [ -z "$left" ] || fail "$1: processes outlived the job in $n: $left"
    done
}

hit stopped STOP
[ "$code" -eq 3 ] || { fail "stopped: exited $code, want 3"; sed 's/^/    /' stopped/err.txt; }
[ "$secs" -le 40 ] || fail "stopped: the job took $secs s after the stop"
grep -q 'rank 1 (bchost1) did not reach the [a-z]* within 2 s' stopped/err.txt ||
    { fail "stopped: stderr does not name rank 1 on bchost1"; sed 's/^/    /' stopped/err.txt; }
grep -q 'rank 1 (bchost1) did not reach' stopped/report.json || fail "stopped: report.json does not name rank 1 on bchost1"
echo "ok: stopped (exit $code, $secs s after SIGSTOP)"

hit killed KILL
[ "$code" -ne 0 ] && [ "$code" -ne 124 ] || fail "killed: exited $code, want a failure within 90 s"
[ "$secs" -le 30 ] || fail "killed: the job took $secs s after the kill"
echo "ok: killed (exit $code, $secs s after SIGKILL)"

cleanup
trap - EXIT
for n in $NS; do ip netns list | grep -q "^$n\b" && fail "namespace $n is left"; done
bc_test_finish hosts
