/* bpe.h: a byte-level BPE tokenizer, as Hugging Face tokenizers runs one,
 * of two shapes:
 *   GPT-2 (OPT, GPT-2, RoBERTa): the ByteLevel pre-tokenizer with its regex,
 *     written out in C (bpe_unicode.h, bpe_piece_end); no normalizer;
 *   Llama-3 / Qwen2: a Split pre-tokenizer (its regex through PCRE2), then
 *     ByteLevel without a regex; no normalizer or NFC; added tokens found
 *     in the text first (bpe_split.h).
 * Both: a BPE model, the ByteLevel decoder. Linked by the benchctl
 * executable (`benchctl prompts`) and by the OPT plugin; it includes
 * nothing of either; its errors are tok_status and tok_error (tok_error.h),
 * which callers turn into bc_status and bc_error with tok_to_bc.h.
 *
 * Encoding, for a byte string s (any bytes; invalid UTF-8 is kept):
 *   1. split s into pieces (and, Split shape, added tokens, each its id);
 *   2. a piece that is a vocabulary token is that token when the model has
 *      ignore_merges (Llama-3); else its bytes start as one token each (the
 *      byte-to-unicode table of GPT-2 names them in the vocabulary);
 *   3. the adjacent pair whose merge has the lowest rank is merged, the
 *      leftmost first among equals, until no pair has a merge.
 * decode(encode(s)) == s for every s, or NFC(s) with that normalizer.
 *
 * Not supported (refused when loading, naming the field): other
 * normalizers and pre-tokenizers, BPE dropout, continuing-subword prefixes
 * and end-of-word suffixes, byte fallback, added tokens with lstrip, rstrip
 * or single_word. With the GPT-2 shape, added tokens are decoded but text is
 * never matched against them: "</s>" in a prompt is four characters, not the
 * special token.
 *
 * A tokenizer is read-only once loaded: encode and decode may run on
 * several threads at once.
 */
#ifndef BPE_H
#define BPE_H

#include <stddef.h>
#include <stdint.h>

#include "tok_error.h"

#define BPE_JSON_MAX_BYTES ((uint64_t)256 << 20)   /* tokenizer.json, vocab.json: 256 MiB */
#define BPE_MERGES_MAX_BYTES ((uint64_t)256 << 20) /* merges.txt: 256 MiB */
#define BPE_MAX_ID ((int32_t)1 << 24)              /* token ids are below 16 Mi */
#define BPE_MAX_PIECE_BYTES ((size_t)1 << 20)      /* one piece of the split (a word, a run of digits, ...): 1 MiB */

typedef struct bpe_tokenizer bpe_tokenizer;

/* The caller's bounded reader of a whole regular file (core/src/io/readfile.h's
 * bc_read_regular, engine/base/fileio.h's eng_read_regular, through
 * tok_to_bc.h's TOK_READER_FROM_BC): *out is
 * NUL-terminated and freed by the caller; TOK_ERR_NOT_FOUND when path does
 * not exist. */
typedef tok_status (*bpe_read_fn)(const char *path, const char *what, uint64_t max_bytes, char **out, size_t *out_len,
                                 tok_error *err);

/* Loads the tokenizer of a checkpoint directory: dir/tokenizer.json when it
 * exists, else dir/vocab.json + dir/merges.txt. *out is the caller's, freed
 * with bpe_free. Errors name the file: TOK_ERR_NOT_FOUND (neither form is
 * there), TOK_ERR_FORMAT (malformed, an empty merge table, a merge of tokens
 * not in the vocabulary, a byte without a token), TOK_ERR_UNSUPPORTED (a
 * tokenizer of another kind), TOK_ERR_NOMEM, or the reader's error. */
tok_status bpe_load_dir(const char *dir, bpe_read_fn read, bpe_tokenizer **out, tok_error *err);

/* The same from text already read; name is what errors call the file(s). */
tok_status bpe_load_tokenizer_json(const char *json, size_t len, const char *name, bpe_tokenizer **out,
                                  tok_error *err);
tok_status bpe_load_vocab_merges(const char *vocab_json, size_t vocab_len, const char *vocab_name, const char *merges,
                                size_t merges_len, const char *merges_name, bpe_tokenizer **out, tok_error *err);

void bpe_free(bpe_tokenizer *t);

/* A growing array of token ids, owned by whoever declared it (zero it
 * first; free ids when done). */
typedef struct bpe_ids {
    int32_t *ids;
    size_t n, cap;
} bpe_ids;

/* Appends the ids of text[0..len) to out. TOK_ERR_NOMEM, or TOK_ERR_INVALID
 * for a piece of the split longer than BPE_MAX_PIECE_BYTES (its merges
 * would need about 80 bytes of memory per byte); out may then hold the ids
 * of the pieces before it. */
tok_status bpe_encode(const bpe_tokenizer *t, const char *text, size_t len, bpe_ids *out, tok_error *err);

/* The bytes of ids[0..n): *out (NUL-terminated, *out_len bytes without the
 * NUL) is the caller's to free. TOK_ERR_INVALID naming the first id that is
 * not in the vocabulary. */
tok_status bpe_decode(const bpe_tokenizer *t, const int32_t *ids, size_t n, char **out, size_t *out_len, tok_error *err);

/* Vocabulary size: one past the largest id. */
int32_t bpe_vocab_size(const bpe_tokenizer *t);
/* Number of merges. */
size_t bpe_merge_count(const bpe_tokenizer *t);
/* Whether encoding normalizes the text first (NFC): decode then gives the
 * normalized text back. */
int bpe_normalizes(const bpe_tokenizer *t);

#endif
