/* bpe_split.c: the Split pre-tokenizer of Llama-3 / Qwen2 tokenizer.json
 * files through PCRE2, and the added tokens matched before it
 * (bpe_split.h).
 *
 * Encoding runs three stages over the text:
 *   0. the added tokens that are not normalized (all special tokens) are
 *      found in the raw text;
 *   1. the text between them is normalized (NFC through utf8proc, or not
 *      at all) and the normalized added tokens are found in it;
 *   2. the text between those is split by the pattern.
 * This is the order tokenizers' added vocabulary uses. At each stage a token
 * is matched leftmost first, the longest of those that start there.
 *
 * The pattern is compiled as written, except that \s and \S become
 * \p{White_Space} and \P{White_Space}: PCRE2's \s also takes U+180E, which
 * the Oniguruma engine of tokenizers (and Unicode) does not count as white
 * space. */
#define _POSIX_C_SOURCE 200809L
#define PCRE2_CODE_UNIT_WIDTH 8
#include "bpe_split.h"

#include <pcre2.h>
#include <stdio.h>
#include <utf8proc.h>
#include <stdlib.h>
#include <string.h>

#include "bpe_unicode.h"

typedef struct added_tok {
    uint32_t off, len; /* its bytes in bpe_split.bytes */
    int32_t id;
    uint8_t first; /* its first byte */
} added_tok;

enum { STAGE_RAW = 0, STAGE_NORMALIZED = 1, STAGE_REGEX = 2 };

struct bpe_split {
    pcre2_code *re;
    int nfc;               /* the normalizer is NFC */
    uint8_t *bytes;        /* every added token's content */
    added_tok *tok[2];     /* [STAGE_RAW]: "normalized": false; [STAGE_NORMALIZED]: true; sorted by first byte, longest first */
    size_t n_tok[2];
    uint32_t first[2][257]; /* tok[s][first[s][b] .. first[s][b + 1]) start with byte b */
};

void bpe_split_free(bpe_split *sp) {
    if (!sp) return;
    pcre2_code_free(sp->re);
    free(sp->bytes);
    free(sp->tok[0]);
    free(sp->tok[1]);
    free(sp);
}

/* ------------------------------------------------------------ the shape */

static const char *type_of(const json_t *o) {
    const char *t = json_string_value(json_object_get(o, "type"));
    return t ? t : "(no type)";
}

static int is_type(const json_t *o, const char *type) { return strcmp(type_of(o), type) == 0; }

int bpe_split_claims(const json_t *pre) { return is_type(pre, "Sequence") || is_type(pre, "Split"); }

/* Appends a short description of one pre-tokenizer to buf (for errors). */
static void describe_one(const json_t *p, char *buf, size_t cap) {
    size_t k = strlen(buf);
    if (k >= cap - 1) return;
    if (is_type(p, "Split")) {
        const json_t *pat = json_object_get(p, "pattern");
        const char *kind = json_object_get(pat, "Regex") ? "Regex" : json_object_get(pat, "String") ? "String" : "?";
        const char *beh = json_string_value(json_object_get(p, "behavior"));
        snprintf(buf + k, cap - k, "Split(%s, %s%s)", kind, beh ? beh : "?",
                 json_is_true(json_object_get(p, "invert")) ? ", invert" : "");
    } else if (is_type(p, "ByteLevel")) {
        snprintf(buf + k, cap - k, "ByteLevel(use_regex %s%s)",
                 json_is_false(json_object_get(p, "use_regex")) ? "false" : "true",
                 json_is_true(json_object_get(p, "add_prefix_space")) ? ", add_prefix_space" : "");
    } else {
        snprintf(buf + k, cap - k, "%s", type_of(p));
    }
}

static void describe(const json_t *pre, char *buf, size_t cap) {
    buf[0] = '\0';
    if (!is_type(pre, "Sequence")) {
        describe_one(pre, buf, cap);
        return;
    }
    const json_t *list = json_object_get(pre, "pretokenizers");
    strncat(buf, "Sequence[", cap - strlen(buf) - 1);
    for (size_t i = 0; i < json_array_size(list); i++) {
        if (i) strncat(buf, ", ", cap - strlen(buf) - 1);
        describe_one(json_array_get(list, i), buf, cap);
    }
    strncat(buf, "]", cap - strlen(buf) - 1);
}

/* The pattern with \s and \S as White_Space (see the top of the file);
 * \Q...\E is copied as it is. *out_n is its length (a pattern may hold a
 * NUL). NULL for no memory; the caller frees. */
static char *rewrite_pattern(const char *p, size_t n, size_t *out_n) {
    char *out = malloc(n * 8 + 1); /* "\s" (2 bytes) grows to 15 */
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (p[i] != '\\' || i + 1 == n) {
            out[k++] = p[i++];
            continue;
        }
        char c = p[i + 1];
        if (c == 's' || c == 'S') {
            const char *w = c == 's' ? "\\p{White_Space}" : "\\P{White_Space}";
            memcpy(out + k, w, 15);
            k += 15;
            i += 2;
        } else if (c == 'Q') { /* literal up to \E */
            const char *e = NULL;
            for (size_t j = i + 2; j + 1 < n; j++)
                if (p[j] == '\\' && p[j + 1] == 'E') {
                    e = p + j + 2;
                    break;
                }
            size_t m = e ? (size_t)(e - (p + i)) : n - i;
            memcpy(out + k, p + i, m);
            k += m;
            i += m;
        } else {
            out[k++] = p[i];
            out[k++] = c;
            i += 2;
        }
    }
    out[k] = '\0';
    *out_n = k;
    return out;
}

static tok_status compile_pattern(bpe_split *sp, const json_t *pattern, const char *name, tok_error *err) {
    const json_t *rx = json_object_get(pattern, "Regex");
    const json_t *lit = json_object_get(pattern, "String");
    const json_t *v = rx ? rx : lit;
    if (!json_is_string(v))
        return tok_error_set(err, TOK_ERR_FORMAT, "%s: pre_tokenizer Split.pattern must be {\"Regex\": ...} or {\"String\": ...}",
                            name);
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
    char *src = NULL;
    size_t src_len = json_string_length(v);
    if (rx) {
        if (!(src = rewrite_pattern(json_string_value(v), src_len, &src_len)))
            return tok_error_set(err, TOK_ERR_NOMEM, "%s: no memory for the pattern", name);
    } else {
        opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_LITERAL; /* PCRE2_UCP is refused with a literal */
    }
    int code;
    PCRE2_SIZE at;
    sp->re = pcre2_compile((PCRE2_SPTR)(src ? src : json_string_value(v)), src_len, opts, &code, &at, NULL);
    free(src);
    if (!sp->re) {
        PCRE2_UCHAR msg[200];
        pcre2_get_error_message(code, msg, sizeof msg);
        return tok_error_set(err, TOK_ERR_FORMAT, "%s: pre_tokenizer Split pattern \"%.80s\": PCRE2 refuses it: %s", name,
                            json_string_value(v), (const char *)msg);
    }
    (void)pcre2_jit_compile(sp->re, PCRE2_JIT_COMPLETE); /* without the JIT (not built for this CPU), it interprets */
    return TOK_OK;
}

static tok_status check_shape(bpe_split *sp, const json_t *pre, const char *name, tok_error *err) {
    const json_t *list = json_object_get(pre, "pretokenizers");
    const json_t *split = json_array_get(list, 0), *bl = json_array_get(list, 1);
    const char *beh = json_string_value(json_object_get(split, "behavior"));
    int ok = is_type(pre, "Sequence") && json_array_size(list) == 2 && is_type(split, "Split") && beh &&
             strcmp(beh, "Isolated") == 0 && !json_is_true(json_object_get(split, "invert")) &&
             is_type(bl, "ByteLevel") && json_is_false(json_object_get(bl, "use_regex")) &&
             !json_is_true(json_object_get(bl, "add_prefix_space"));
    if (!ok) {
        char what[300];
        describe(pre, what, sizeof what);
        return tok_error_set(err, TOK_ERR_UNSUPPORTED,
                            "%s: pre_tokenizer is %s; supported are ByteLevel(use_regex true) and "
                            "Sequence[Split(Regex, Isolated), ByteLevel(use_regex false)]",
                            name, what);
    }
    return compile_pattern(sp, json_object_get(split, "pattern"), name, err);
}

/* --------------------------------------------------------- added tokens */

static const uint8_t *tok_bytes(const bpe_split *sp, const added_tok *a) { return sp->bytes + a->off; }

static int tok_cmp(const void *x, const void *y) {
    const added_tok *a = x, *b = y;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static tok_status load_added(bpe_split *sp, const json_t *added, const char *name, tok_error *err) {
    size_t n = json_array_size(added), total = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(added, i);
        const json_t *c = json_object_get(a, "content");
        if (!json_is_string(c)) continue; /* bpe.c's build refuses it */
        static const char *const refused[] = {"single_word", "lstrip", "rstrip"};
        for (size_t r = 0; r < 3; r++)
            if (json_is_true(json_object_get(a, refused[r])))
                return tok_error_set(err, TOK_ERR_UNSUPPORTED,
                                    "%s: added_tokens[%zu] \"%.40s\" has %s set; only tokens matched as they are "
                                    "(single_word, lstrip, rstrip false) are supported",
                                    name, i, json_string_value(c), refused[r]);
        total += json_string_length(c);
    }
    if (total > UINT32_MAX) return tok_error_set(err, TOK_ERR_FORMAT, "%s: added_tokens are too large", name);
    sp->bytes = malloc(total ? total : 1);
    sp->tok[0] = malloc((n ? n : 1) * sizeof *sp->tok[0]);
    sp->tok[1] = malloc((n ? n : 1) * sizeof *sp->tok[1]);
    if (!sp->bytes || !sp->tok[0] || !sp->tok[1])
        return tok_error_set(err, TOK_ERR_NOMEM, "%s: no memory for %zu added tokens", name, n);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(added, i);
        const json_t *c = json_object_get(a, "content");
        const json_t *id = json_object_get(a, "id");
        if (!json_is_string(c) || json_string_length(c) == 0 || !json_is_integer(id)) continue;
        /* tokenizers' default: a special token is not normalized, another one is */
        const json_t *nz = json_object_get(a, "normalized");
        int normalized = nz ? json_is_true(nz) : !json_is_true(json_object_get(a, "special"));
        int s = normalized ? STAGE_NORMALIZED : STAGE_RAW;
        size_t len = json_string_length(c);
        memcpy(sp->bytes + off, json_string_value(c), len);
        sp->tok[s][sp->n_tok[s]++] = (added_tok){.off = (uint32_t)off, .len = (uint32_t)len,
                                                 .id = (int32_t)json_integer_value(id),
                                                 .first = (uint8_t)json_string_value(c)[0]};
        off += len;
    }
    for (int s = 0; s < 2; s++) {
        qsort(sp->tok[s], sp->n_tok[s], sizeof *sp->tok[s], tok_cmp);
        size_t k = 0;
        for (int b = 0; b <= 256; b++) {
            while (k < sp->n_tok[s] && sp->tok[s][k].first < b) k++;
            sp->first[s][b] = (uint32_t)k;
        }
    }
    return TOK_OK;
}

tok_status bpe_split_load(const json_t *root, const char *name, bpe_split **out, tok_error *err) {
    *out = NULL;
    const json_t *norm = json_object_get(root, "normalizer");
    int nfc = norm && is_type(norm, "NFC");
    if (norm && !json_is_null(norm) && !nfc)
        return tok_error_set(err, TOK_ERR_UNSUPPORTED,
                            "%s: normalizer %s is not supported; with a Split pre-tokenizer only none or NFC is", name,
                            type_of(norm));
    const json_t *dec = json_object_get(root, "decoder");
    if (dec && !json_is_null(dec) && !is_type(dec, "ByteLevel"))
        return tok_error_set(err, TOK_ERR_UNSUPPORTED, "%s: decoder %s; with a Split pre-tokenizer only ByteLevel is supported",
                            name, type_of(dec));
    bpe_split *sp = calloc(1, sizeof *sp);
    if (!sp) return tok_error_set(err, TOK_ERR_NOMEM, "%s: no memory", name);
    sp->nfc = nfc;
    tok_status st = check_shape(sp, json_object_get(root, "pre_tokenizer"), name, err);
    if (st == TOK_OK) st = load_added(sp, json_object_get(root, "added_tokens"), name, err);
    if (st != TOK_OK) {
        bpe_split_free(sp);
        return st;
    }
    *out = sp;
    return TOK_OK;
}

/* ------------------------------------------------------------ splitting */

/* The length of the maximal invalid UTF-8 sequence at s (whose first
 * character bpe_utf8_char found invalid): a lead byte and the continuation
 * bytes that may still follow it, as Python's and Rust's lossy decoders
 * replace them with one U+FFFD. */
static size_t invalid_len(const uint8_t *s, size_t n) {
    uint8_t b0 = s[0], lo = 0x80, hi = 0xBF;
    size_t need;
    if (b0 >= 0xC2 && b0 <= 0xDF) need = 1;
    else if (b0 == 0xE0) need = 2, lo = 0xA0;
    else if (b0 >= 0xE1 && b0 <= 0xEF) need = 2, hi = b0 == 0xED ? 0x9F : 0xBF;
    else if (b0 == 0xF0) need = 3, lo = 0x90;
    else if (b0 >= 0xF1 && b0 <= 0xF3) need = 3;
    else if (b0 == 0xF4) need = 3, hi = 0x8F;
    else return 1;
    size_t k = 1;
    while (k <= need && k < n) {
        uint8_t c = s[k];
        if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) break;
        k++;
    }
    return k;
}

/* A UTF-8 subject for PCRE2 and, when the text had invalid bytes, where
 * each of its byte offsets starts in the text. */
typedef struct subject {
    const uint8_t *s;
    size_t n;
    uint8_t *own;  /* the lossy copy, or NULL when s is the text */
    size_t *back;  /* [n + 1] offsets in the text, or NULL */
} subject;

static tok_status subject_make(subject *u, const uint8_t *s, size_t n, tok_error *err) {
    *u = (subject){.s = s, .n = n};
    size_t i = 0;
    while (i < n) {
        bpe_class cls;
        size_t l = bpe_utf8_char(s + i, n - i, &cls);
        if (l == 1 && s[i] >= 0x80) break;
        i += l;
    }
    if (i == n) return TOK_OK;
    u->own = malloc(3 * n);
    u->back = malloc((3 * n + 1) * sizeof *u->back);
    if (!u->own || !u->back) {
        free(u->own), free(u->back);
        return tok_error_set(err, TOK_ERR_NOMEM, "tokenizer: no memory for a text of %zu bytes", n);
    }
    size_t k = 0;
    for (i = 0; i < n;) {
        bpe_class cls;
        size_t l = bpe_utf8_char(s + i, n - i, &cls);
        if (l == 1 && s[i] >= 0x80) {
            l = invalid_len(s + i, n - i);
            memcpy(u->own + k, "\xEF\xBF\xBD", 3);
            for (int j = 0; j < 3; j++) u->back[k + (size_t)j] = i;
            k += 3;
        } else {
            memcpy(u->own + k, s + i, l);
            for (size_t j = 0; j < l; j++) u->back[k + j] = i;
            k += l;
        }
        i += l;
    }
    u->back[k] = n;
    u->s = u->own;
    u->n = k;
    return TOK_OK;
}

static tok_status emit(const subject *u, const uint8_t *text, size_t a, size_t b, bpe_piece_fn fn, void *ctx,
                      tok_error *err) {
    size_t oa = u->back ? u->back[a] : a, ob = u->back ? u->back[b] : b;
    return fn(ctx, text + oa, ob - oa, -1, err);
}

static size_t utf8_len(uint8_t b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

static tok_status regex_split(const bpe_split *sp, const uint8_t *text, size_t len, bpe_piece_fn fn, void *ctx,
                             tok_error *err) {
    if (len == 0) return TOK_OK;
    subject u;
    tok_status st = subject_make(&u, text, len, err);
    if (st != TOK_OK) return st;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) st = tok_error_set(err, TOK_ERR_NOMEM, "tokenizer: no memory for the pre-tokenizer's match");
    size_t pos = 0, last = 0;
    uint32_t mopts = 0;
    while (st == TOK_OK && pos < u.n) {
        int rc = pcre2_match(sp->re, u.s, u.n, pos, mopts, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !(mopts & PCRE2_NO_JIT)) {
            mopts |= PCRE2_NO_JIT; /* the interpreter keeps its backtracking on the heap */
            continue;
        }
        if (rc < 0) {
            PCRE2_UCHAR msg[200];
            pcre2_get_error_message(rc, msg, sizeof msg);
            st = tok_error_set(err, TOK_ERR_INVALID, "tokenizer: the pre-tokenizer's pattern failed at byte %zu: %s",
                              u.back ? u.back[pos] : pos, (const char *)msg);
            break;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (ms > last) st = emit(&u, text, last, ms, fn, ctx, err);
        if (st == TOK_OK && me > ms) st = emit(&u, text, ms, me, fn, ctx, err);
        last = me > ms ? me : ms;
        pos = me > ms ? me : ms + (ms < u.n ? utf8_len(u.s[ms]) : 1);
    }
    if (st == TOK_OK && last < u.n) st = emit(&u, text, last, u.n, fn, ctx, err);
    pcre2_match_data_free(md);
    free(u.own);
    free(u.back);
    return st;
}

/* NFC of text[0..len) into *out (the caller frees it): each run of valid
 * UTF-8 is normalized by utf8proc, each invalid sequence is kept as it is
 * (U+FFFD, which it stands for, is a starter that composes with nothing,
 * so the runs normalize on their own). */
static tok_status nfc_of(const uint8_t *text, size_t len, uint8_t **out, size_t *out_len, tok_error *err) {
    size_t cap = len + 16, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) return tok_error_set(err, TOK_ERR_NOMEM, "tokenizer: no memory to normalize %zu bytes", len);
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len) { /* the valid run [i, j) */
            bpe_class cls;
            size_t l = bpe_utf8_char(text + j, len - j, &cls);
            if (l == 1 && text[j] >= 0x80) break;
            j += l;
        }
        uint8_t *norm = NULL;
        size_t m = 0;
        if (j > i) {
            utf8proc_ssize_t r = utf8proc_map(text + i, (utf8proc_ssize_t)(j - i), &norm, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            if (r < 0) {
                free(buf);
                return tok_error_set(err, r == UTF8PROC_ERROR_NOMEM ? TOK_ERR_NOMEM : TOK_ERR_INVALID,
                                    "tokenizer: NFC of the text at byte %zu: %s", i, utf8proc_errmsg(r));
            }
            m = (size_t)r;
        }
        size_t bad = j < len ? invalid_len(text + j, len - j) : 0;
        if (n + m + bad > cap) {
            while (n + m + bad > cap) cap *= 2;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(norm), free(buf);
                return tok_error_set(err, TOK_ERR_NOMEM, "tokenizer: no memory to normalize %zu bytes", len);
            }
            buf = nb;
        }
        if (m) memcpy(buf + n, norm, m);
        free(norm);
        n += m;
        memcpy(buf + n, text + j, bad);
        n += bad;
        i = j + bad;
    }
    *out = buf;
    *out_len = n;
    return TOK_OK;
}

static tok_status match_added(const bpe_split *sp, int s, const uint8_t *text, size_t len, bpe_piece_fn fn, void *ctx,
                             tok_error *err);

/* Stage s on text[0..len): the regex split, or the added tokens of that
 * stage (stage 1 on the normalized text). */
static tok_status run_stage(const bpe_split *sp, int s, const uint8_t *text, size_t len, bpe_piece_fn fn, void *ctx,
                           tok_error *err) {
    if (s == STAGE_REGEX) return regex_split(sp, text, len, fn, ctx, err);
    if (s != STAGE_NORMALIZED || !sp->nfc) return match_added(sp, s, text, len, fn, ctx, err);
    uint8_t *norm = NULL;
    size_t n = 0;
    tok_status st = nfc_of(text, len, &norm, &n, err);
    if (st != TOK_OK) return st;
    st = match_added(sp, s, norm, n, fn, ctx, err);
    free(norm);
    return st;
}

/* Finds stage s's added tokens in text[0..len); the rest goes to stage s + 1. */
static tok_status match_added(const bpe_split *sp, int s, const uint8_t *text, size_t len, bpe_piece_fn fn, void *ctx,
                             tok_error *err) {
    const added_tok *tok = sp->tok[s];
    size_t gap = 0;
    tok_status st = TOK_OK;
    for (size_t i = 0; i < len && st == TOK_OK;) {
        const added_tok *hit = NULL;
        for (uint32_t k = sp->first[s][text[i]]; k < sp->first[s][text[i] + 1]; k++)
            if (tok[k].len <= len - i && memcmp(text + i, tok_bytes(sp, &tok[k]), tok[k].len) == 0) {
                hit = &tok[k];
                break;
            }
        if (!hit) {
            i++;
            continue;
        }
        if (i > gap) st = run_stage(sp, s + 1, text + gap, i - gap, fn, ctx, err);
        if (st == TOK_OK) st = fn(ctx, text + i, hit->len, hit->id, err);
        i += hit->len;
        gap = i;
    }
    if (st == TOK_OK && len > gap) st = run_stage(sp, s + 1, text + gap, len - gap, fn, ctx, err);
    return st;
}

int bpe_split_normalizes(const bpe_split *sp) { return sp->nfc; }

tok_status bpe_split_run(const bpe_split *sp, const uint8_t *text, size_t len, bpe_piece_fn fn, void *ctx,
                        tok_error *err) {
    return run_stage(sp, STAGE_RAW, text, len, fn, ctx, err);
}
