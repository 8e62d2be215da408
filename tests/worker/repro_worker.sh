#!/bin/sh
# repro_worker.sh: the smallest worker, as a hostile peer writes one: says hello, describes a model of
# 300 tokens and answers generate with the profile $1 (and, when $2 is not empty, the tokens $2); $3
# replaces describe's fields. Every other request is answered ok.  repro_worker.sh [PROFILE [TOKENS [DESCRIBE]]]
PROFILE=${1:-'{"generation_ms":1.0,"num_generated_tokens":16,"num_decode_forwards":4611686018427387904}'}
DESCRIBE=${3:-'"model":"m","dtypes":["float32"],"vocab_size":300'}
printf '%s\n' '{"op":"hello","protocol":1,"engine":"min","engine_version":"0","device":"cpu","settings":[]}'
while read -r line; do
  id=$(printf '%s\n' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  case "$line" in
  *'"op":"describe"'*) printf '{"id":%s,"ok":true,%s}\n' "$id" "$DESCRIBE" ;;
  *'"op":"generate"'*) if [ -n "${2:-}" ]; then printf '{"id":%s,"ok":true,"profile":%s,"tokens":%s}\n' "$id" "$PROFILE" "$2"
                       else printf '{"id":%s,"ok":true,"profile":%s}\n' "$id" "$PROFILE"; fi ;;
  *'"op":"shutdown"'*) printf '{"id":%s,"ok":true}\n' "$id"; exit 0 ;;
  *) printf '{"id":%s,"ok":true}\n' "$id" ;;
  esac
done
