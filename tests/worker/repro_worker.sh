#!/bin/sh
# repro_worker.sh: the smallest worker, as a hostile peer writes one: says hello, describes a model of
# 300 tokens and answers generate with the profile $1 (and, when $2 is not empty, the tokens $2); $3
# replaces describe's fields; $4, when not empty, is more fields of the generate reply (a "rollout");
# $5 and $6 are the fields of the score and refit replies (absent: those requests fail "unsupported").
# Every other request is answered ok.
#   repro_worker.sh [PROFILE [TOKENS [DESCRIBE [GENERATE_MORE [SCORE [REFIT]]]]]]
PROFILE=${1:-'{"generation_ms":1.0,"num_generated_tokens":16,"num_decode_forwards":4611686018427387904}'}
DESCRIBE=${3:-'"model":"m","dtypes":["float32"],"vocab_size":300'}
MORE=${4:+,$4}
printf '%s\n' '{"op":"hello","protocol":1,"engine":"min","engine_version":"0","device":"cpu","settings":[]}'
while read -r line; do
  id=$(printf '%s\n' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  case "$line" in
  *'"op":"describe"'*) printf '{"id":%s,"ok":true,%s}\n' "$id" "$DESCRIBE" ;;
  *'"op":"generate"'*) if [ -n "${2:-}" ]; then printf '{"id":%s,"ok":true,"profile":%s,"tokens":%s%s}\n' "$id" "$PROFILE" "$2" "$MORE"
                       else printf '{"id":%s,"ok":true,"profile":%s%s}\n' "$id" "$PROFILE" "$MORE"; fi ;;
  *'"op":"score"'*) if [ -n "${5:-}" ]; then printf '{"id":%s,"ok":true,%s}\n' "$id" "$5"
                    else printf '{"id":%s,"ok":false,"error":{"code":"unsupported","message":"no score"}}\n' "$id"; fi ;;
  *'"op":"refit"'*) if [ -n "${6:-}" ]; then printf '{"id":%s,"ok":true,%s}\n' "$id" "$6"
                    else printf '{"id":%s,"ok":false,"error":{"code":"unsupported","message":"no refit"}}\n' "$id"; fi ;;
  *'"op":"shutdown"'*) printf '{"id":%s,"ok":true}\n' "$id"; exit 0 ;;
  *) printf '{"id":%s,"ok":true}\n' "$id" ;;
  esac
done
