/* bpe.c: loading a byte-level BPE tokenizer (bpe.h): tokenizer.json, or
 * vocab.json and merges.txt, into the tables bpe_internal.h describes.
 * Encoding and decoding are bpe_encode.c's.
 * Other strings are looked up only while loading (in jansson's objects).
 */
#define _POSIX_C_SOURCE 200809L
#include "bpe.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe_internal.h"
#include "bpe_split.h"
#include "bpe_unicode.h"
#include "text_lines.h"

/* ------------------------------------------------------- byte-to-unicode */

/* GPT-2's table: the printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF
 * stand for themselves; the other 68 bytes, in order, for U+0100.. */
static void byte_chars(uint32_t cp[256]) {
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        cp[b] = printable ? (uint32_t)b : next++;
    }
}

static size_t utf8_put(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

/* The code point of the valid UTF-8 character at s (length *len), or
 * UINT32_MAX for an invalid byte (*len = 1). */
static uint32_t utf8_get(const uint8_t *s, size_t n, size_t *len) {
    bpe_class cls;
    size_t l = bpe_utf8_char(s, n, &cls);
    *len = l;
    if (l == 1) return s[0] < 0x80 ? s[0] : UINT32_MAX;
    uint32_t cp = s[0] & (l == 2 ? 0x1Fu : l == 3 ? 0x0Fu : 0x07u);
    for (size_t k = 1; k < l; k++) cp = (cp << 6) | (s[k] & 0x3Fu);
    return cp;
}

/* ------------------------------------------------------------- building */

static tok_status tok_new(bpe_tokenizer **out, tok_error *err) {
    bpe_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return tok_error_set(err, TOK_ERR_NOMEM, "tokenizer: no memory");
    *out = t;
    return TOK_OK;
}

void bpe_free(bpe_tokenizer *t) {
    if (!t) return;
    free(t->tok_off);
    free(t->tok_len);
    free(t->tok_bytes);
    free(t->pairs);
    free(t->vocab_hash);
    bpe_split_free(t->split);
    free(t);
}

int32_t bpe_vocab_size(const bpe_tokenizer *t) { return t->n_ids; }
size_t bpe_merge_count(const bpe_tokenizer *t) { return t->n_merges; }
int bpe_normalizes(const bpe_tokenizer *t) { return t->split && bpe_split_normalizes(t->split); }

/* A token id from JSON: an integer in [0, BPE_MAX_ID), else -1. */
static int32_t json_id(const json_t *v) {
    if (!json_is_integer(v)) return -1;
    json_int_t i = json_integer_value(v);
    return i >= 0 && i < BPE_MAX_ID ? (int32_t)i : -1;
}

/* Sizes the id tables for ids below n_ids. */
static tok_status tok_alloc_ids(bpe_tokenizer *t, int32_t n_ids, const char *name, tok_error *err) {
    t->n_ids = n_ids;
    t->tok_off = malloc((size_t)n_ids * sizeof *t->tok_off);
    t->tok_len = malloc((size_t)n_ids * sizeof *t->tok_len);
    if (!t->tok_off || !t->tok_len) return tok_error_set(err, TOK_ERR_NOMEM, "%s: no memory for %d ids", name, n_ids);
    for (int32_t i = 0; i < n_ids; i++) t->tok_len[i] = BPE_NO_TOKEN;
    return TOK_OK;
}

/* Gives id the bytes its string stands for: each byte-level character its
 * byte, any other character (an added token's) its own UTF-8. */
static tok_status tok_set_string(bpe_tokenizer *t, const int16_t byte_of[BPE_BYTE_CHARS], int32_t id, const char *str,
                                size_t len, const char *name, tok_error *err) {
    if (t->tok_len[id] != BPE_NO_TOKEN)
        return tok_error_set(err, TOK_ERR_FORMAT, "%s: token id %d is given to two strings (the second \"%.40s\")", name,
                            id, str);
    if (t->tok_bytes_len + len > UINT32_MAX) return tok_error_set(err, TOK_ERR_FORMAT, "%s: vocabulary too large", name);
    if (!t->tok_bytes || t->tok_bytes_len + len > t->tok_bytes_cap) { /* allocated even for an empty token */
        size_t nc = t->tok_bytes_cap ? t->tok_bytes_cap * 2 : 4096;
        while (nc < t->tok_bytes_len + len) nc *= 2; /* (an empty vocabulary string, "": 0 bytes) */
        uint8_t *nb = realloc(t->tok_bytes, nc);
        if (!nb) return tok_error_set(err, TOK_ERR_NOMEM, "%s: no memory", name);
        t->tok_bytes = nb;
        t->tok_bytes_cap = nc;
    }
    uint8_t *dst = t->tok_bytes + t->tok_bytes_len;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t l;
        uint32_t cp = utf8_get((const uint8_t *)str + i, len - i, &l);
        if (cp < BPE_BYTE_CHARS && byte_of[cp] >= 0) dst[n++] = (uint8_t)byte_of[cp];
        else memcpy(dst + n, str + i, l), n += l;
        i += l;
    }
    t->tok_off[id] = (uint32_t)t->tok_bytes_len;
    t->tok_len[id] = (uint32_t)n;
    t->tok_bytes_len += n;
    return TOK_OK;
}

/* What the loader has: the vocabulary object and the merges, one of two
 * shapes (tokenizer.json's array, merges.txt's lines). */
typedef struct merge_source {
    const json_t *array;      /* tokenizer.json: "a b" strings or ["a", "b"] pairs */
    const char *text;         /* merges.txt */
    size_t text_len;
    const char *name;         /* for errors */
} merge_source;

/* merges.txt: a line that is neither blank nor the "#version" header. */
static int is_merge_line(const char *line, size_t len) {
    return len > 0 && !(len >= 8 && memcmp(line, "#version", 8) == 0);
}

/* Counts the merges of src (merges.txt: lines other than blank ones and
 * the "#version" header). */
static size_t merges_count(const merge_source *src) {
    if (src->array) return json_array_size(src->array);
    size_t n = 0, pos = 0, len;
    const char *line;
    while (bpe_next_line(src->text, src->text_len, &pos, &line, &len))
        n += is_merge_line(line, len);
    return n;
}

/* Adds one merge (a, b) of rank `rank`: both and their concatenation must
 * be tokens. As in tokenizers, a pair listed twice keeps the later rank. */
static tok_status add_merge(bpe_tokenizer *t, const json_t *vocab, const char *a, size_t alen, const char *b,
                           size_t blen, size_t rank, const char *where, tok_error *err) {
    char small[256];
    char *cat = alen + blen + 1 <= sizeof small ? small : malloc(alen + blen + 1);
    if (!cat) return tok_error_set(err, TOK_ERR_NOMEM, "%s: no memory", where);
    memcpy(cat, a, alen);
    memcpy(cat + alen, b, blen);
    cat[alen + blen] = '\0';
    int32_t ida = json_id(json_object_getn(vocab, a, alen));
    int32_t idb = json_id(json_object_getn(vocab, b, blen));
    int32_t idm = json_id(json_object_getn(vocab, cat, alen + blen));
    tok_status st = TOK_OK;
    if (ida < 0 || idb < 0 || idm < 0)
        st = tok_error_set(err, TOK_ERR_FORMAT, "%s: merge \"%.*s %.*s\": \"%.*s\" is not in the vocabulary", where,
                          (int)(alen > 60 ? 60 : alen), a, (int)(blen > 60 ? 60 : blen), b,
                          ida < 0 ? (int)(alen > 60 ? 60 : alen) : idb < 0 ? (int)(blen > 60 ? 60 : blen)
                                                                          : (int)(alen + blen > 60 ? 60 : alen + blen),
                          ida < 0 ? a : idb < 0 ? b : cat);
    if (cat != small) free(cat);
    if (st != TOK_OK) return st;
    uint64_t key = (uint64_t)(uint32_t)ida << 32 | (uint32_t)idb;
    bpe_pair *p = &t->pairs[pair_slot(t, key)];
    if (p->key == BPE_EMPTY_KEY) t->n_merges++;
    p->key = key;
    p->rank = (int32_t)rank;
    p->merged = idm;
    return TOK_OK;
}

/* One merge "a b": exactly one space between two non-empty tokens. */
static tok_status add_merge_string(bpe_tokenizer *t, const json_t *vocab, const char *s, size_t len, size_t rank,
                                  const char *where, tok_error *err) {
    const char *sp = memchr(s, ' ', len);
    if (!sp || sp == s || sp == s + len - 1 || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s)))
        return tok_error_set(err, TOK_ERR_FORMAT, "%s: merge \"%.*s%s\" is not two tokens separated by one space",
                            where, (int)(len > 80 ? 80 : len), s, len > 80 ? "..." : ""); /* the line only */
    return add_merge(t, vocab, s, (size_t)(sp - s), sp + 1, len - (size_t)(sp + 1 - s), rank, where, err);
}

static tok_status load_merges(bpe_tokenizer *t, const json_t *vocab, const merge_source *src, tok_error *err) {
    size_t n = merges_count(src);
    if (n == 0) return tok_error_set(err, TOK_ERR_FORMAT, "%s: the merge table is empty; a BPE tokenizer needs merges", src->name);
    if (n > (size_t)INT32_MAX / 4)
        return tok_error_set(err, TOK_ERR_FORMAT, "%s: %zu merges are too many", src->name, n);
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    t->pairs = malloc(cap * sizeof *t->pairs);
    if (!t->pairs) return tok_error_set(err, TOK_ERR_NOMEM, "%s: no memory for %zu merges", src->name, n);
    for (size_t i = 0; i < cap; i++) t->pairs[i].key = BPE_EMPTY_KEY;
    t->pair_mask = cap - 1;
    char where[600];
    tok_status st = TOK_OK;
    if (src->array) {
        for (size_t i = 0; i < n && st == TOK_OK; i++) {
            const json_t *m = json_array_get(src->array, i);
            snprintf(where, sizeof where, "%s: model.merges[%zu]", src->name, i);
            if (json_is_string(m)) {
                st = add_merge_string(t, vocab, json_string_value(m), json_string_length(m), i, where, err);
            } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                       json_is_string(json_array_get(m, 1)) && json_string_length(json_array_get(m, 0)) &&
                       json_string_length(json_array_get(m, 1))) {
                const json_t *a = json_array_get(m, 0), *b = json_array_get(m, 1);
                st = add_merge(t, vocab, json_string_value(a), json_string_length(a), json_string_value(b),
                               json_string_length(b), i, where, err);
            } else {
                st = tok_error_set(err, TOK_ERR_FORMAT, "%s: neither a string \"a b\" nor a pair [\"a\", \"b\"] of tokens",
                                  where);
            }
        }
        return st;
    }
    size_t rank = 0, lineno = 0, pos = 0, len;
    const char *line;
    while (st == TOK_OK && bpe_next_line(src->text, src->text_len, &pos, &line, &len)) {
        lineno++;
        if (!is_merge_line(line, len)) continue;
        snprintf(where, sizeof where, "%s:%zu", src->name, lineno);
        st = add_merge_string(t, vocab, line, len, rank++, where, err);
    }
    return st;
}

/* Builds the tokenizer from a vocabulary object, merges and (may be NULL)
 * tokenizer.json's added_tokens. */
static tok_status build(bpe_tokenizer *t, const json_t *vocab, const char *vocab_name, const json_t *added,
                       const merge_source *merges, tok_error *err) {
    if (!json_is_object(vocab) || json_object_size(vocab) == 0)
        return tok_error_set(err, TOK_ERR_FORMAT, "%s: the vocabulary must be a non-empty object of token: id",
                            vocab_name);
    int32_t max_id = -1;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)vocab, key, v) {
        int32_t id = json_id(v);
        if (id < 0)
            return tok_error_set(err, TOK_ERR_FORMAT, "%s: token \"%.40s\": the id must be an integer in [0, %d)",
                                vocab_name, key, BPE_MAX_ID);
        if (id > max_id) max_id = id;
    }
    size_t n_added = added ? json_array_size(added) : 0;
    for (size_t i = 0; i < n_added; i++) {
        const json_t *a = json_array_get(added, i);
        int32_t id = json_id(json_object_get(a, "id"));
        if (!json_is_object(a) || id < 0 || !json_is_string(json_object_get(a, "content")))
            return tok_error_set(err, TOK_ERR_FORMAT,
                                "%s: added_tokens[%zu] needs an \"id\" in [0, %d) and a string \"content\"",
                                vocab_name, i, BPE_MAX_ID);
        if (id > max_id) max_id = id;
    }
    tok_status st = tok_alloc_ids(t, max_id + 1, vocab_name, err);
    if (st != TOK_OK) return st;
    uint32_t cp[256];
    byte_chars(cp);
    int16_t byte_of[BPE_BYTE_CHARS];
    for (int i = 0; i < BPE_BYTE_CHARS; i++) byte_of[i] = -1;
    for (int b = 0; b < 256; b++) byte_of[cp[b]] = (int16_t)b;
    size_t key_len;
    json_object_keylen_foreach((json_t *)vocab, key, key_len, v) {
        if ((st = tok_set_string(t, byte_of, json_id(v), key, key_len, vocab_name, err)) != TOK_OK) return st;
    }
    for (size_t i = 0; i < n_added; i++) { /* an added token also in the vocabulary keeps its vocabulary bytes */
        const json_t *a = json_array_get(added, i);
        int32_t id = json_id(json_object_get(a, "id"));
        const json_t *c = json_object_get(a, "content");
        if (t->tok_len[id] != BPE_NO_TOKEN) {
            /* matched in text (the Split shape), it must decode to its own content */
            if (t->split && json_id(json_object_getn(vocab, json_string_value(c), json_string_length(c))) != id)
                return tok_error_set(err, TOK_ERR_FORMAT,
                                    "%s: added_tokens[%zu] \"%.40s\" has id %d, which the vocabulary gives to another "
                                    "string", vocab_name, i, json_string_value(c), id);
            continue;
        }
        if ((st = tok_set_string(t, byte_of, id, json_string_value(c), json_string_length(c), vocab_name, err)) != TOK_OK)
            return st;
    }
    for (int b = 0; b < 256; b++) {
        char s[4];
        size_t l = utf8_put(cp[b], s);
        int32_t id = json_id(json_object_getn(vocab, s, l));
        if (id < 0)
            return tok_error_set(err, TOK_ERR_FORMAT,
                                "%s: byte 0x%02X (\"%.*s\") has no token; a byte-level BPE vocabulary holds all 256 bytes",
                                vocab_name, b, (int)l, s);
        t->byte_id[b] = id;
    }
    return load_merges(t, vocab, merges, err);
}

/* ------------------------------------------------------ ignore_merges */

/* With ignore_merges, a piece that is a vocabulary token is that token
 * (as tokenizers' BPE does); added tokens that are not in model.vocab are
 * not looked up. */
static tok_status build_vocab_hash(bpe_tokenizer *t, const json_t *vocab, const char *name, tok_error *err) {
    size_t cap = 16;
    while (cap < 2 * json_object_size(vocab)) cap *= 2;
    t->vocab_hash = malloc(cap * sizeof *t->vocab_hash);
    if (!t->vocab_hash) return tok_error_set(err, TOK_ERR_NOMEM, "%s: no memory for the vocabulary's index", name);
    t->vocab_mask = cap - 1;
    for (size_t i = 0; i < cap; i++) t->vocab_hash[i] = -1;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)vocab, key, v) {
        int32_t id = json_id(v);
        const uint8_t *s = t->tok_bytes + t->tok_off[id];
        size_t h = bytes_hash(s, t->tok_len[id]);
        while (t->vocab_hash[h & t->vocab_mask] >= 0) h++;
        t->vocab_hash[h & t->vocab_mask] = id;
    }
    (void)key;
    return TOK_OK;
}

/* A field of tokenizer.json that must be absent, null, false or "" (a
 * feature this tokenizer does not have). */
static tok_status refuse_feature(const json_t *obj, const char *field, const char *where, const char *name,
                                tok_error *err) {
    const json_t *v = json_object_get(obj, field);
    if (!v || json_is_null(v) || json_is_false(v) || (json_is_string(v) && json_string_length(v) == 0)) return TOK_OK;
    return tok_error_set(err, TOK_ERR_UNSUPPORTED, "%s: %s.%s is set; this byte-level BPE tokenizer does not support it",
                        name, where, field);
}

/* The pre-tokenizer must be ByteLevel with its regex and no prefix space
 * (directly or as the only ByteLevel of a Sequence is not supported). */
static tok_status check_pre_tokenizer(const json_t *pre, const char *name, tok_error *err) {
    const char *type = json_string_value(json_object_get(pre, "type"));
    if (!pre || !type || strcmp(type, "ByteLevel") != 0)
        return tok_error_set(err, TOK_ERR_UNSUPPORTED,
                            "%s: pre_tokenizer is %s; supported are ByteLevel(use_regex true) and "
                            "Sequence[Split(Regex, Isolated), ByteLevel(use_regex false)]",
                            name, type ? type : "missing");
    const json_t *re = json_object_get(pre, "use_regex");
    if (re && !json_is_true(re))
        return tok_error_set(err, TOK_ERR_UNSUPPORTED, "%s: pre_tokenizer.use_regex is false; only the GPT-2 split is supported",
                            name);
    return refuse_feature(pre, "add_prefix_space", "pre_tokenizer", name, err);
}

tok_status bpe_load_tokenizer_json(const char *text, size_t len, const char *name, bpe_tokenizer **out, tok_error *err) {
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return tok_error_set(err, TOK_ERR_FORMAT, "%s: line %d: not valid JSON: %s", name, jerr.line, jerr.text);
    tok_status st = TOK_OK;
    const json_t *model = json_object_get(root, "model");
    const char *type = json_string_value(json_object_get(model, "type"));
    const json_t *merges = json_object_get(model, "merges");
    if (!json_is_object(model))
        st = tok_error_set(err, TOK_ERR_FORMAT, "%s: no \"model\" object", name);
    else if (type && strcmp(type, "BPE") != 0)
        st = tok_error_set(err, TOK_ERR_UNSUPPORTED, "%s: model.type %s; only BPE is supported", name, type);
    else if (!json_is_array(merges))
        st = tok_error_set(err, TOK_ERR_FORMAT, "%s: model.merges must be an array", name);
    const json_t *pre = json_object_get(root, "pre_tokenizer");
    bpe_split *split = NULL;
    if (st != TOK_OK) {
    } else if (bpe_split_claims(pre)) { /* Llama-3 / Qwen2: checks its own normalizer, decoder and added tokens */
        st = bpe_split_load(root, name, &split, err);
    } else if (json_object_get(root, "normalizer") && !json_is_null(json_object_get(root, "normalizer"))) {
        st = tok_error_set(err, TOK_ERR_UNSUPPORTED, "%s: a normalizer is set; only tokenizers without one are supported",
                          name);
    } else {
        st = check_pre_tokenizer(pre, name, err);
    }
    if (st == TOK_OK && ((st = refuse_feature(model, "dropout", "model", name, err)) != TOK_OK ||
                        (st = refuse_feature(model, "continuing_subword_prefix", "model", name, err)) != TOK_OK ||
                        (st = refuse_feature(model, "end_of_word_suffix", "model", name, err)) != TOK_OK ||
                        (st = refuse_feature(model, "byte_fallback", "model", name, err)) != TOK_OK)) {
    }
    const json_t *added = json_object_get(root, "added_tokens");
    if (st == TOK_OK && added && !json_is_array(added))
        st = tok_error_set(err, TOK_ERR_FORMAT, "%s: added_tokens must be an array", name);
    bpe_tokenizer *t = NULL;
    if (st == TOK_OK) st = tok_new(&t, err);
    if (st == TOK_OK) {
        t->split = split; /* t owns it from here */
        split = NULL;
        char vname[600];
        snprintf(vname, sizeof vname, "%s: model.vocab", name);
        merge_source src = {.array = merges, .name = name};
        st = build(t, json_object_get(model, "vocab"), vname, added, &src, err);
    }
    if (st == TOK_OK && json_is_true(json_object_get(model, "ignore_merges")))
        st = build_vocab_hash(t, json_object_get(model, "vocab"), name, err);
    bpe_split_free(split);
    json_decref(root);
    if (st != TOK_OK) {
        bpe_free(t);
        return st;
    }
    *out = t;
    return TOK_OK;
}

tok_status bpe_load_vocab_merges(const char *vocab_json, size_t vocab_len, const char *vocab_name, const char *merges,
                                size_t merges_len, const char *merges_name, bpe_tokenizer **out, tok_error *err) {
    *out = NULL;
    json_error_t jerr;
    json_t *vocab = json_loadb(vocab_json, vocab_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!vocab)
        return tok_error_set(err, TOK_ERR_FORMAT, "%s: line %d: not valid JSON: %s", vocab_name, jerr.line, jerr.text);
    bpe_tokenizer *t = NULL;
    tok_status st = tok_new(&t, err);
    if (st == TOK_OK) {
        merge_source src = {.text = merges, .text_len = merges_len, .name = merges_name};
        st = build(t, vocab, vocab_name, NULL, &src, err);
    }
    json_decref(vocab);
    if (st != TOK_OK) {
        bpe_free(t);
        return st;
    }
    *out = t;
    return TOK_OK;
}

tok_status bpe_load_dir(const char *dir, bpe_read_fn read, bpe_tokenizer **out, tok_error *err) {
    *out = NULL;
    char p1[4096], p2[4096];
    if ((size_t)snprintf(p1, sizeof p1, "%s/tokenizer.json", dir) >= sizeof p1)
        return tok_error_set(err, TOK_ERR_INVALID, "tokenizer: the path %.80s... is too long", dir);
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;
    tok_error e1;
    tok_status st = read(p1, "tokenizer.json", BPE_JSON_MAX_BYTES, &a, &alen, &e1);
    if (st == TOK_OK) {
        st = bpe_load_tokenizer_json(a, alen, p1, out, err);
        free(a);
        return st;
    }
    if (st != TOK_ERR_NOT_FOUND) {
        if (err) *err = e1;
        return st;
    }
    snprintf(p1, sizeof p1, "%s/vocab.json", dir);
    snprintf(p2, sizeof p2, "%s/merges.txt", dir);
    st = read(p1, "vocab.json", BPE_JSON_MAX_BYTES, &a, &alen, err);
    if (st == TOK_ERR_NOT_FOUND) {
        tok_error_set(err, TOK_ERR_NOT_FOUND, "tokenizer: %s has neither tokenizer.json nor vocab.json + merges.txt", dir);
        return tok_error_hint(err, "a Hugging Face checkpoint of a GPT-2 style model carries one of the two");
    }
    if (st == TOK_OK) st = read(p2, "merges.txt", BPE_MERGES_MAX_BYTES, &b, &blen, err);
    if (st == TOK_OK) st = bpe_load_vocab_merges(a, alen, p1, b, blen, p2, out, err);
    free(a);
    free(b);
    return st;
}
