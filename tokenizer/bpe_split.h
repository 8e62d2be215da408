/* bpe_split.h: the regex pre-tokenizer of Llama-3 / Qwen2 style
 * tokenizer.json files, and the added tokens matched before it; internal
 * to the tokenizer library (bpe.c calls it, nothing outside does).
 *
 * The shape it takes (what Hugging Face tokenizers writes for both):
 *   "normalizer": null, or {"type": "NFC"} (Qwen2), through utf8proc
 *   "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
 *       {"type": "Split", "pattern": {"Regex": P}, "behavior": "Isolated", "invert": false},
 *       {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}
 *   "decoder": {"type": "ByteLevel", ...} (or null)
 * Encoding text: the added tokens are found first (leftmost, the longest
 * of those starting there; the normalized ones after NFC); each of them is
 * its id; the text between them is split by P (PCRE2, UTF + Unicode properties, JIT), every match and
 * every gap between matches one piece, and each piece's bytes go to the
 * BPE model.
 */
#ifndef BPE_SPLIT_H
#define BPE_SPLIT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "tok_error.h"

typedef struct bpe_split bpe_split;

/* Whether pre (tokenizer.json's pre_tokenizer) is of the Split family
 * (a Sequence or a Split), so bpe_split_load decides about it; else it is
 * the GPT-2 ByteLevel path's to check. */
int bpe_split_claims(const json_t *pre);

/* Builds the split of root (a parsed tokenizer.json whose pre_tokenizer
 * bpe_split_claims): checks the normalizer, the pre-tokenizer's shape, the
 * decoder and the added tokens, and compiles the pattern. *out is the
 * caller's (bpe_split_free). Errors name the file (name) and what was
 * found: TOK_ERR_UNSUPPORTED (another shape, a normalizer other than none or NFC,
 * an added token with lstrip, rstrip or single_word), TOK_ERR_FORMAT (a
 * pattern PCRE2 refuses, with its offset; malformed added tokens),
 * TOK_ERR_NOMEM. */
tok_status bpe_split_load(const json_t *root, const char *name, bpe_split **out, tok_error *err);
void bpe_split_free(bpe_split *sp);

/* Whether text is normalized (NFC) before the split: decode then gives
 * the normalized text back, not the text. */
int bpe_split_normalizes(const bpe_split *sp);

/* What the split hands back, in text order: a piece of bytes for the BPE
 * model (id < 0), or an added token's id (s, n: its bytes in the text). */
typedef tok_status (*bpe_piece_fn)(void *ctx, const uint8_t *s, size_t n, int32_t id, tok_error *err);

/* Splits text[0..len) (any bytes: invalid UTF-8 is split as if each
 * maximal invalid sequence were U+FFFD, and its bytes are kept) and calls
 * fn for each piece. TOK_ERR_INVALID when the regex engine gives up (a
 * match or memory limit, naming the offset), TOK_ERR_NOMEM, or fn's error. */
tok_status bpe_split_run(const bpe_split *sp, const uint8_t *text, size_t len, bpe_piece_fn fn, void *ctx,
                        tok_error *err);

#endif
