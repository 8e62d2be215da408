#!/usr/bin/env bash
# tests/cuda_host/check_mock_cli.sh BENCHCTL MOCK_PLUGIN SOURCE_DIR WORK_DIR:
# runs the same small greedy matrix (golden preln checkpoint, fp32, batch 1
# and 2, 1 and 2 samples, retain and release) with the real opt plugin on
# device "cpu" and with the mock-device build of the plugin on device
# "cuda", with and without shared prefill, and requires identical saved
# tokens, every case ok, and the device in the JSON report; also with
# left-padded prompts of different lengths from a prompts file, where the
# matrix leaves prompt_lengths out (benchctl passes prompt length 0 and the
# file decides). Last, an int8 case on the mock cuda device must be refused.
set -eu
BENCHCTL=$1 MOCK=$2 SRC=$3 WORK=$4
rm -rf "$WORK" && mkdir -p "$WORK"
printf '5 17 99 4\n8 8 12 300 41 7 2 19\n# a comment\n640\n' > "$WORK/prompts.txt"
write_cfg() { # name backend device shared prompts_file
  lengths="prompt_lengths = [6]; "
  [ -n "$5" ] && lengths=""
  cat > "$WORK/$1.cfg" <<CFG
backend = { name = "$2"; settings = { checkpoint = "$SRC/tests/opt/golden/preln"; threads = 1; device = "$3";
            shared_prefill = $4; prompts_file = "$5"; save_tokens = "$WORK/$1-{case}.txt"; }; };
precisions = [ "fp32" ];
cache_policies = [ "retain", "release" ];
matrix = { batch_sizes = [1, 2]; samples_per_prompt = [1, 2]; ${lengths}response_lengths = [5]; };
sampling = { temperature = 0.0; top_p = 1.0; top_k = 0; seed = 3; };
run = { warmup = 1; iterations = 2; };
reporters = ( { name = "json"; settings = { path = "$WORK/$1.json"; }; } );
CFG
}
# shared prefill off and on; synthetic prompts, then left-padded ones from a file
for run in false: true: false:"$WORK/prompts.txt" true:"$WORK/prompts.txt"; do
  shared=${run%%:*} prompts=${run#*:}
  tag="$shared-${prompts:+file}"
  write_cfg "cpu-$tag" opt cpu "$shared" "$prompts"
  write_cfg "mock-$tag" "$MOCK" cuda "$shared" "$prompts"
  "$BENCHCTL" run "$WORK/cpu-$tag.cfg" > "$WORK/cpu-$tag.out" 2>&1 || { cat "$WORK/cpu-$tag.out"; exit 1; }
  "$BENCHCTL" run "$WORK/mock-$tag.cfg" > "$WORK/mock-$tag.out" 2>&1 || { cat "$WORK/mock-$tag.out"; exit 1; }
  n=0
  for f in "$WORK"/cpu-"$tag"-*.txt; do
    g="$WORK/mock-$tag-${f##*/cpu-$tag-}"
    cmp -s "$f" "$g" || { echo "FAIL: $f and $g differ"; diff "$f" "$g" | head; exit 1; }
    n=$((n + 1))
  done
  [ "$n" -eq 8 ] || { echo "FAIL: $n token files, want 8"; exit 1; }
  grep -q '"device": "cuda:0"' "$WORK/mock-$tag.json" || { echo "FAIL: no cuda:0 in the report"; exit 1; }
  grep -q '"device_peak_bytes"\|"peak_memory_mb"' "$WORK/mock-$tag.json" || { echo "FAIL: no peak memory"; exit 1; }
  echo "shared_prefill=$shared prompts_file=${prompts:-none}: 8 cases, tokens identical on cpu and the mock cuda device"
done
# int8 has CPU kernels only: a cuda case at int8 is refused before it runs, naming the precision
write_cfg mock-int8 "$MOCK" cuda false ""
sed -i 's/precisions = \[ "fp32" \];/precisions = [ "int8" ];/' "$WORK/mock-int8.cfg"
if "$BENCHCTL" run "$WORK/mock-int8.cfg" > "$WORK/mock-int8.out" 2>&1; then
  echo "FAIL: an int8 case ran on the mock cuda device"; cat "$WORK/mock-int8.out"; exit 1
fi
grep -q 'precision int8 (int8) has CPU kernels only' "$WORK/mock-int8.out" ||
  { echo "FAIL: int8 on cuda refused without saying why"; cat "$WORK/mock-int8.out"; exit 1; }
echo "int8 on the mock cuda device: refused (CPU kernels only)"
