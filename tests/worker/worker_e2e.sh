#!/bin/sh
# worker_e2e.sh: benchctl run, validate and plugins with the worker backend
# driving fake_worker (tests/worker/fake_worker.c): a worker that crashes in
# one case fails that case only (exit 3), with its stderr in the message, and
# the other cases keep their results; the worker's own settings are checked
# like any plugin's; the reports carry engine_total_ms and
# protocol_overhead_ms.
#   worker_e2e.sh BENCHCTL FAKE_WORKER WORK_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
FAKE=$2
WORK=$3
bc_test_workdir "$WORK"
unset BENCHCTL_PLUGIN_PATH

# bench.cfg for the fake worker started with ARGS, with EXTRA worker settings
write_cfg() {
    cat >"$1" <<CFG
backend = { name = "worker"; settings = { command = "$FAKE $2"; timeout_s = 5.0; $3 }; };
precisions = [ "fp32" ];
matrix = { batch_sizes = [1, 2, 4]; samples_per_prompt = [2]; prompt_lengths = [8]; response_lengths = [4]; };
sampling = { temperature = 0.0; top_p = 1.0; top_k = 0; seed = 1234; };
run = { warmup = 1; iterations = 2; };
reporters = ( "console", { name = "json"; settings = { path = "run.json"; }; },
              { name = "csv"; settings = { path = "run.csv"; }; } );
CFG
}

# a crash in the batch-2 case: that case fails, the two others are measured
write_cfg crash.cfg "--fail crash --at generate --when-batch 2" 'threads = 2; model = "small";'
"$BENCHCTL" run crash.cfg >crash.out 2>crash.err
rc=$?
[ "$rc" -eq 3 ] || fail "crash: exit $rc, expected 3 (a case failed)"
has crash.err "3 cases: 2 ok, 1 failed"
has crash.err "case 1 (fp32 retain, batch 2 x 2 samples, prompt 8, response 4) failed: generate: worker fake: generate: the worker was killed by signal 11"
has crash.err "stderr: fake_worker: failing on purpose (crash at generate)"
[ "$(grep -c '"status": "ok"' run.json)" -eq 2 ] || fail "run.json: expected 2 ok cases"
[ "$(grep -c '"status": "failed"' run.json)" -eq 1 ] || fail "run.json: expected 1 failed case"
has run.json '"engine_total_ms"'
has run.json '"protocol_overhead_ms"'
has run.csv 'protocol_overhead_ms'
# (ABI 2.4) the engine's stage times as the worker's declared metric, the
# overhead the host derives from it, and the hello's metrics: one of its own,
# one filling the host's occupancy column
grep -q '"engine_total_ms": [0-9]' run.json || fail "run.json: engine_total_ms is not measured"
grep -q '"protocol_overhead_ms": -\{0,1\}[0-9]' run.json || fail "run.json: protocol_overhead_ms is not measured"
grep -q '"fake_queue_depth": [0-9]' run.json || fail "run.json: no fake_queue_depth values"
grep -q '"occupancy": 1' run.json || fail "run.json: occupancy is not the engine's 1"
has run.csv 'fake_queue_depth_mean'
has crash.out 'fake model (fake 1.0) on cpu'
has crash.out 'model="small" threads=2'

# the worker's settings, validated against its hello like any plugin's
write_cfg typo.cfg "" 'threds = 2;'
"$BENCHCTL" validate typo.cfg >typo.out 2>typo.err
rc=$?
[ "$rc" -eq 2 ] || fail "typo: exit $rc, expected 2"
has typo.err "plugin 'worker' has no setting 'threds' (did you mean 'threads'?)"
write_cfg range.cfg "" 'threads = -1;'
"$BENCHCTL" validate range.cfg >range.out 2>range.err
[ $? -eq 2 ] || fail "range: expected exit 2"
has range.err "threads"
write_cfg choice.cfg "" 'model = "huge";'
"$BENCHCTL" validate choice.cfg >choice.out 2>choice.err
[ $? -eq 2 ] || fail "choice: expected exit 2"
has choice.err 'tiny'

# a worker that never says hello: the backend cannot start (exit 1), and the
# message names the timeout
write_cfg mute.cfg "--fail hang --at hello" ''
sed -i 's/timeout_s = 5.0/timeout_s = 0.5/' mute.cfg
"$BENCHCTL" validate mute.cfg >mute.out 2>mute.err
rc=$?
[ "$rc" -eq 1 ] || fail "mute: exit $rc, expected 1"
has mute.err "backend 'worker': worker: hello: the worker sent nothing for 0.5 s (timeout_s); stderr: fake_worker"

# a bf16 case the worker runs, a float16 one it refuses before anything runs
write_cfg fp16.cfg "" ''
sed -i 's/precisions = \[ "fp32" \]/precisions = [ "fp32", "fp16" ]/' fp16.cfg
"$BENCHCTL" validate fp16.cfg >fp16.out 2>fp16.err
[ $? -eq 2 ] || fail "fp16: expected exit 2"
has fp16.err "the engine does not run float16"

# benchctl plugins worker: the plugin's own table; with a command, the worker's too
"$BENCHCTL" plugins worker >plugins.out 2>plugins.err || fail "plugins worker failed"
has plugins.out "timeout_s"
grep -q "threads" plugins.out && fail "plugins worker (no command) shows a worker's setting"
"$BENCHCTL" plugins worker --set "command=\"$FAKE\"" >plugins_fake.out 2>plugins_fake.err || fail "plugins worker --set command failed"
has plugins_fake.out "timeout_s"
has plugins_fake.out "model        enum    \"tiny\"   tiny|small"
has plugins_fake.out "chatty       bool    false"
"$BENCHCTL" plugins worker --set comand=1 >plugins_typo.out 2>plugins_typo.err
[ $? -eq 2 ] || fail "plugins worker --set comand=1: expected exit 2"
has plugins_typo.err "no setting 'comand' (did you mean 'command'?)"

# engines as an axis: two backends (the fake worker twice, told apart by
# their labels) run the same matrix, backend by backend; every report names
# each case's backend; a crash in one backend's case loses nothing else;
# compare --by backend pairs the backends' cases within the one file
cat >axis.cfg <<CFG
backends = ( { name = "worker"; label = "fake-a"; settings = { command = "$FAKE"; }; },
             { name = "worker"; label = "fake-b";
               settings = { command = "$FAKE --fail crash --at generate --when-batch 2"; timeout_s = 5.0; }; } );
precisions = [ "fp32" ];
matrix = { batch_sizes = [1, 2, 4]; samples_per_prompt = [2]; prompt_lengths = [8]; response_lengths = [4]; };
sampling = { temperature = 0.0; top_p = 1.0; top_k = 0; seed = 1234; };
run = { warmup = 1; iterations = 6; };
reporters = ( "console", { name = "json"; settings = { path = "axis.json"; }; },
              { name = "csv"; settings = { path = "axis.csv"; }; } );
CFG
"$BENCHCTL" run axis.cfg >axis.out 2>axis.err
rc=$?
[ "$rc" -eq 3 ] || fail "axis: exit $rc, expected 3 (a case failed)"
has axis.err "6 cases: 5 ok, 1 failed"
has axis.err "case 4 (fp32 retain, batch 2 x 2 samples, prompt 8, response 4) failed: generate: worker fake: generate"
[ "$(grep -c '"backend": "fake-a"' axis.json)" -eq 3 ] || fail "axis.json: expected 3 cases of fake-a"
[ "$(grep -c '"backend": "fake-b"' axis.json)" -eq 3 ] || fail "axis.json: expected 3 cases of fake-b"
[ "$(tr -d '\r' <axis.csv | grep -c ',fake-b$')" -eq 3 ] || fail "axis.csv: expected 3 rows ending in fake-b"
has axis.out "#  backend  batch"
# the token agreement: fake-b's greedy float32 cases that ran agree with fake-a's token for token
[ "$(grep -c '"token_agreement": 1,' axis.json)" -eq 2 ] || fail "axis.json: expected 2 cases with token_agreement 1"
"$BENCHCTL" run axis.cfg --set sampling.temperature=0.7 --set 'reporters.[1].settings.path="sampled.json"' \
    >sampled.out 2>sampled.err
[ -f sampled.json ] || fail "sampled.json was not written"
grep -q token_agreement sampled.json && fail "sampled.json: a token agreement for sampled cases"
# backend by backend: every fake-a case finishes before the first fake-b one
first_b=$(grep -n 'fake-b' axis.err | head -1 | cut -d: -f1)
last_a=$(grep -n 'done: .*fake-a' axis.err | tail -1 | cut -d: -f1)
[ -n "$first_b" ] && [ -n "$last_a" ] && [ "$last_a" -lt "$first_b" ] || fail "axis: the backends' cases interleave"
"$BENCHCTL" compare --by backend --fail-on never axis.json >cmp.out 2>cmp.err
rc=$?
[ "$rc" -eq 0 ] || { fail "compare --by backend: exit $rc"; cat cmp.err; }
has cmp.out "A: axis.json [fake-a] (benchctl JSON): backend fake-a,"
has cmp.out "B: axis.json [fake-b] (benchctl JSON): backend fake-b,"
# engines compared are no regression: exit 0 without --fail-on, whatever the verdicts
"$BENCHCTL" compare --by backend axis.json >cmp_default.out 2>&1 || fail "compare --by backend (no --fail-on): exit $?"
has cmp.out "3 cases: 3 matched, 0 only in A, 0 only in B"
"$BENCHCTL" compare --by backend crash.cfg run.json >cmp2.out 2>cmp2.err
[ $? -eq 2 ] || fail "compare --by backend with two files: expected exit 2"
"$BENCHCTL" compare --by backend run.json >cmp3.out 2>cmp3.err
[ $? -eq 2 ] || fail "compare --by backend on a one-backend run: expected exit 2"
has cmp3.err "name one backend only"

bc_test_finish worker_e2e
