/* bpe_encode.c: encoding text into ids and decoding ids into bytes with a
 * loaded byte-level BPE tokenizer (bpe.h; its tables: bpe_internal.h).
 * A piece of the split is merged lowest rank first, with a heap of
 * candidate merges over the piece's symbols. */
#define _POSIX_C_SOURCE 200809L
#include "bpe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bpe_internal.h"
#include "bpe_split.h"
#include "bpe_unicode.h"

/* The merge of (left, right), or NULL when there is none. */
static const bpe_pair *pair_find(const bpe_tokenizer *t, int32_t left, int32_t right) {
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    const bpe_pair *p = &t->pairs[pair_slot(t, key)];
    return p->key == key ? p : NULL;
}

/* The id of the vocabulary token whose bytes are s[0..n), or -1. */
static int32_t vocab_find(const bpe_tokenizer *t, const uint8_t *s, size_t n) {
    for (size_t h = bytes_hash(s, n);; h++) {
        int32_t id = t->vocab_hash[h & t->vocab_mask];
        if (id < 0) return -1;
        if (t->tok_len[id] == n && memcmp(t->tok_bytes + t->tok_off[id], s, n) == 0) return id;
    }
}

/* ------------------------------------------------------------- encoding */

/* A candidate merge of the symbols at left and right (right == next[left]
 * when it was pushed). */
typedef struct bpe_cand {
    int32_t rank, left, right, merged;
    int32_t left_id, right_id; /* still the symbols' ids, or the candidate is stale */
} bpe_cand;

static int cand_before(const bpe_cand *a, const bpe_cand *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

typedef struct bpe_work {
    int32_t *id, *prev, *next; /* [cap] symbols of the piece; id -1 = absorbed */
    bpe_cand *heap;            /* [3 * cap] */
    size_t cap, n_heap;
} bpe_work;

static void heap_push(bpe_work *w, bpe_cand c) {
    size_t i = w->n_heap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_before(&c, &w->heap[p])) break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = c;
}

static bpe_cand heap_pop(bpe_work *w) {
    bpe_cand top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0, n = w->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && cand_before(&w->heap[c + 1], &w->heap[c])) c++;
        if (!cand_before(&w->heap[c], &last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

static void push_pair(const bpe_tokenizer *t, bpe_work *w, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const bpe_pair *p = pair_find(t, w->id[left], w->id[right]);
    if (p)
        heap_push(w, (bpe_cand){.rank = p->rank, .left = left, .right = right, .merged = p->merged,
                                .left_id = w->id[left], .right_id = w->id[right]});
}

static tok_status ids_reserve(bpe_ids *out, size_t more, tok_error *err) {
    if (out->n + more <= out->cap) return TOK_OK;
    size_t nc = out->cap ? out->cap * 2 : 256;
    while (nc < out->n + more) nc *= 2;
    int32_t *ni = realloc(out->ids, nc * sizeof *ni);
    if (!ni) return tok_error_set(err, TOK_ERR_NOMEM, "tokenizer: no memory for %zu ids", nc);
    out->ids = ni;
    out->cap = nc;
    return TOK_OK;
}

/* Encodes one piece of m >= 2 bytes into out. */
static tok_status encode_piece(const bpe_tokenizer *t, bpe_work *w, const uint8_t *s, size_t m, bpe_ids *out,
                              tok_error *err) {
    int32_t whole = t->vocab_hash ? vocab_find(t, s, m) : -1;
    if (whole >= 0) {
        tok_status st = ids_reserve(out, 1, err);
        if (st == TOK_OK) out->ids[out->n++] = whole;
        return st;
    }
    if (m > w->cap) {
        size_t nc = w->cap ? w->cap : 64;
        while (nc < m) nc *= 2;
        free(w->id);
        free(w->prev);
        free(w->next);
        free(w->heap);
        w->id = malloc(nc * sizeof *w->id);
        w->prev = malloc(nc * sizeof *w->prev);
        w->next = malloc(nc * sizeof *w->next);
        w->heap = malloc(3 * nc * sizeof *w->heap);
        w->cap = nc;
        if (!w->id || !w->prev || !w->next || !w->heap) {
            w->cap = 0;
            return tok_error_set(err, TOK_ERR_NOMEM, "tokenizer: no memory for a piece of %zu bytes", m);
        }
    }
    const int32_t n = (int32_t)m;
    for (int32_t i = 0; i < n; i++) {
        w->id[i] = t->byte_id[s[i]];
        w->prev[i] = i - 1;
        w->next[i] = i + 1 < n ? i + 1 : -1;
    }
    w->n_heap = 0;
    for (int32_t i = 0; i + 1 < n; i++) push_pair(t, w, i, i + 1);
    while (w->n_heap) {
        bpe_cand c = heap_pop(w);
        if (w->id[c.left] != c.left_id || w->next[c.left] != c.right || w->id[c.right] != c.right_id) continue;
        w->id[c.left] = c.merged; /* the left symbol absorbs the right one */
        w->id[c.right] = -1;
        int32_t after = w->next[c.right];
        w->next[c.left] = after;
        if (after >= 0) w->prev[after] = c.left;
        push_pair(t, w, w->prev[c.left], c.left);
        push_pair(t, w, c.left, after);
    }
    tok_status st = ids_reserve(out, m, err);
    if (st != TOK_OK) return st;
    for (int32_t i = 0; i >= 0; i = w->next[i]) out->ids[out->n++] = w->id[i];
    return TOK_OK;
}

/* One piece of the split (n bytes at offset `at` of the text). */
static tok_status encode_one(const bpe_tokenizer *t, bpe_work *w, const uint8_t *s, size_t n, size_t at, bpe_ids *out,
                            tok_error *err) {
    if (n > BPE_MAX_PIECE_BYTES)
        return tok_error_set(err, TOK_ERR_INVALID,
                            "tokenizer: a run of %zu bytes at byte %zu has no break (letters, digits, other "
                            "characters or white space); the tokenizer takes runs of at most %zu bytes",
                            n, at, BPE_MAX_PIECE_BYTES);
    if (n == 1) {
        tok_status st = ids_reserve(out, 1, err);
        if (st == TOK_OK) out->ids[out->n++] = t->byte_id[s[0]];
        return st;
    }
    return encode_piece(t, w, s, n, out, err);
}

/* What bpe_split_run hands each piece to. */
typedef struct split_ctx {
    const bpe_tokenizer *t;
    bpe_work *w;
    bpe_ids *out;
    uintptr_t text, text_len; /* for offsets in errors (a piece of normalized text is elsewhere: offset 0) */
} split_ctx;

static tok_status split_piece(void *ctx, const uint8_t *s, size_t n, int32_t id, tok_error *err) {
    split_ctx *c = ctx;
    uintptr_t at = (uintptr_t)s - c->text;
    if (id < 0) return encode_one(c->t, c->w, s, n, at < c->text_len ? (size_t)at : 0, c->out, err);
    tok_status st = ids_reserve(c->out, 1, err);
    if (st == TOK_OK) c->out->ids[c->out->n++] = id;
    return st;
}

tok_status bpe_encode(const bpe_tokenizer *t, const char *text, size_t len, bpe_ids *out, tok_error *err) {
    const uint8_t *s = (const uint8_t *)text;
    bpe_work w = {0};
    tok_status st = TOK_OK;
    if (t->split) {
        split_ctx c = {.t = t, .w = &w, .out = out, .text = (uintptr_t)s, .text_len = len};
        st = bpe_split_run(t->split, s, len, split_piece, &c, err);
    }
    for (size_t i = 0; !t->split && i < len && st == TOK_OK;) { /* the GPT-2 split */
        size_t e = bpe_piece_end(s, len, i);
        st = encode_one(t, &w, s + i, e - i, i, out, err);
        i = e;
    }
    free(w.id);
    free(w.prev);
    free(w.next);
    free(w.heap);
    return st;
}

/* ------------------------------------------------------------- decoding */

tok_status bpe_decode(const bpe_tokenizer *t, const int32_t *ids, size_t n, char **out, size_t *out_len, tok_error *err) {
    *out = NULL;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_ids || t->tok_len[ids[i]] == BPE_NO_TOKEN)
            return tok_error_set(err, TOK_ERR_INVALID, "tokenizer: id %d (at %zu) is not in the vocabulary of %d ids",
                                ids[i], i, t->n_ids);
        total += t->tok_len[ids[i]];
    }
    char *buf = malloc(total + 1);
    if (!buf) return tok_error_set(err, TOK_ERR_NOMEM, "tokenizer: no memory for %zu bytes", total);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(buf + k, t->tok_bytes + t->tok_off[ids[i]], t->tok_len[ids[i]]);
        k += t->tok_len[ids[i]];
    }
    buf[k] = '\0';
    *out = buf;
    *out_len = k;
    return TOK_OK;
}
