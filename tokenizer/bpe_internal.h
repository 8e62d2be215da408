/* bpe_internal.h: the tables of a bpe_tokenizer, as bpe.c builds them
 * (loading) and bpe_encode.c reads them (encoding, decoding). Internal to
 * tokenizer/.
 *
 * Runtime tables (all owned by the bpe_tokenizer, freed by bpe_free):
 *   byte_id[256]          the token of each single byte
 *   tok_off/tok_len[V]    each id's bytes in tok_bytes (decode); tok_len =
 *                         BPE_NO_TOKEN for an id that is not assigned
 *   pairs                 open-addressing hash of merges: (left id, right id)
 *                         -> (rank, merged id)
 *   vocab_hash            with ignore_merges only: open-addressing hash of
 *                         the vocabulary's byte strings -> id
 *   split                 a Split pre-tokenizer and the added tokens matched
 *                         before it (bpe_split.h), or NULL for the GPT-2 split
 */
#ifndef BENCHCTL_BPE_INTERNAL_H
#define BENCHCTL_BPE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "bpe.h"
#include "bpe_split.h"

#define BPE_NO_TOKEN UINT32_MAX
#define BPE_BYTE_CHARS 324 /* the byte-to-unicode table's code points are below 256 + 68 */

typedef struct bpe_pair {
    uint64_t key; /* left << 32 | right; BPE_EMPTY_KEY for a free slot */
    int32_t rank, merged;
} bpe_pair;
#define BPE_EMPTY_KEY UINT64_MAX

struct bpe_tokenizer {
    int32_t byte_id[256];
    int32_t n_ids;     /* one past the largest id */
    uint32_t *tok_off; /* [n_ids] */
    uint32_t *tok_len; /* [n_ids] */
    uint8_t *tok_bytes;
    size_t tok_bytes_len, tok_bytes_cap;
    bpe_pair *pairs; /* [pair_mask + 1] */
    size_t pair_mask, n_merges;
    int32_t *vocab_hash; /* [vocab_mask + 1], -1 for a free slot; NULL without ignore_merges */
    size_t vocab_mask;
    bpe_split *split;
};

/* The slot of key (left << 32 | right) in t->pairs: its own or the free
 * one it would take. */
static inline size_t pair_slot(const bpe_tokenizer *t, uint64_t key) {
    size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17);
    while (t->pairs[h & t->pair_mask].key != BPE_EMPTY_KEY && t->pairs[h & t->pair_mask].key != key) h++;
    return h & t->pair_mask;
}

/* The hash of the bytes s[0..n) that t->vocab_hash is keyed by. */
static inline size_t bytes_hash(const uint8_t *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return (size_t)(h ^ (h >> 29));
}

#endif
