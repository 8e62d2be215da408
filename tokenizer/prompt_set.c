/* prompt_set.c: reading and tokenizing a text prompt set (prompt_set.h). */
#define _POSIX_C_SOURCE 200809L
#include "prompt_set.h"
#include "text_lines.h"

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

int bpe_prompt_format_from_name(const char *name) {
    if (!name || !strcmp(name, "auto")) return BPE_PROMPTS_AUTO;
    if (!strcmp(name, "jsonl")) return BPE_PROMPTS_JSONL;
    if (!strcmp(name, "lines")) return BPE_PROMPTS_LINES;
    return -1;
}

void bpe_prompt_set_free(bpe_prompt_set *s) {
    if (!s) return;
    for (int i = 0; i < s->count; i++) free(s->prompts[i].ids);
    free(s->prompts);
    s->prompts = NULL;
    s->count = 0;
}

static int ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* Encodes text[0..len) as the set's next prompt (line lineno). */
static tok_status add_prompt(bpe_prompt_set *s, int *cap, const char *text, size_t len, int lineno,
                            const bpe_tokenizer *t, int32_t bos_id, const char *path, tok_error *err) {
    if (s->count == INT_MAX) return tok_error_set(err, TOK_ERR_FORMAT, "prompts %s: too many prompts", path);
    if (s->count == *cap) {
        int nc = *cap ? (*cap > INT_MAX / 2 ? INT_MAX : *cap * 2) : 64;
        bpe_prompt *np = realloc(s->prompts, (size_t)nc * sizeof *np);
        if (!np) return tok_error_set(err, TOK_ERR_NOMEM, "prompts %s: no memory", path);
        s->prompts = np;
        *cap = nc;
    }
    bpe_ids ids = {0};
    tok_status st = TOK_OK;
    if (bos_id >= 0 && (ids.ids = malloc(64 * sizeof *ids.ids)) != NULL) {
        ids.cap = 64;
        ids.ids[ids.n++] = bos_id;
    } else if (bos_id >= 0) {
        st = tok_error_set(err, TOK_ERR_NOMEM, "prompts %s: no memory", path);
    }
    if (st == TOK_OK) st = bpe_encode(t, text, len, &ids, err);
    if (st == TOK_OK && ids.n > INT_MAX)
        st = tok_error_set(err, TOK_ERR_FORMAT, "prompts %s:%d: too many tokens", path, lineno);
    if (st != TOK_OK) {
        free(ids.ids);
        return st;
    }
    s->prompts[s->count++] = (bpe_prompt){.ids = ids.ids, .n = (int)ids.n, .line = lineno};
    return TOK_OK;
}

/* One JSON line: the object's string field. */
static tok_status json_line_text(const char *line, size_t len, const char *field, int lineno, const char *path,
                                json_t **root, const char **text, size_t *text_len, tok_error *err) {
    json_error_t jerr;
    *root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!*root)
        return tok_error_set(err, TOK_ERR_FORMAT, "prompts %s:%d: not a JSON object: %s", path, lineno, jerr.text);
    const json_t *v = json_object_get(*root, field);
    if (!json_is_object(*root))
        return tok_error_set(err, TOK_ERR_FORMAT, "prompts %s:%d: not a JSON object", path, lineno);
    if (!v) {
        tok_error_set(err, TOK_ERR_FORMAT, "prompts %s:%d: no field \"%s\"", path, lineno, field);
        return tok_error_hint(err, "the field holding the prompt is set by prompts_field (benchctl prompts --field)");
    }
    if (!json_is_string(v))
        return tok_error_set(err, TOK_ERR_FORMAT, "prompts %s:%d: field \"%s\" is not a string", path, lineno, field);
    if (json_string_length(v) == 0)
        return tok_error_set(err, TOK_ERR_FORMAT, "prompts %s:%d: field \"%s\" is empty", path, lineno, field);
    *text = json_string_value(v);
    *text_len = json_string_length(v);
    return TOK_OK;
}

tok_status bpe_prompt_set_read(bpe_prompt_set *out, const char *path, bpe_read_fn read, uint64_t max_bytes,
                              bpe_prompt_format format, const char *field, const bpe_tokenizer *t, int32_t bos_id,
                              tok_error *err) {
    memset(out, 0, sizeof *out);
    if (!field || !field[0]) field = "text";
    if (format == BPE_PROMPTS_AUTO)
        format = ends_with(path, ".jsonl") || ends_with(path, ".json") ? BPE_PROMPTS_JSONL : BPE_PROMPTS_LINES;
    char *text = NULL;
    size_t len = 0;
    tok_status st = read(path, "prompts", max_bytes, &text, &len, err);
    if (st != TOK_OK) return st;
    bpe_prompt_set s = {0};
    int cap = 0, lineno = 0;
    size_t pos = 0, n;
    const char *line;
    while (st == TOK_OK && bpe_next_line(text, len, &pos, &line, &n)) {
        if (lineno == INT_MAX) {
            st = tok_error_set(err, TOK_ERR_FORMAT, "prompts %s: too many lines", path);
            break;
        }
        lineno++;
        size_t k = 0;
        while (k < n && (line[k] == ' ' || line[k] == '\t')) k++;
        if (k == n) continue; /* blank */
        if (format == BPE_PROMPTS_LINES) {
            if (memchr(line, '\0', n)) {
                st = tok_error_set(err, TOK_ERR_FORMAT, "prompts %s:%d: a NUL byte; the file must be text", path, lineno);
                break;
            }
            st = add_prompt(&s, &cap, line, n, lineno, t, bos_id, path, err);
        } else {
            json_t *root = NULL;
            const char *pt = NULL;
            size_t pl = 0;
            st = json_line_text(line, n, field, lineno, path, &root, &pt, &pl, err);
            if (st == TOK_OK) st = add_prompt(&s, &cap, pt, pl, lineno, t, bos_id, path, err);
            json_decref(root);
        }
    }
    free(text);
    if (st == TOK_OK && s.count == 0)
        st = tok_error_set(err, TOK_ERR_FORMAT, "prompts %s: no prompts (%s)", path,
                          format == BPE_PROMPTS_JSONL ? "one JSON object a line" : "one prompt a line");
    if (st != TOK_OK) {
        bpe_prompt_set_free(&s);
        return st;
    }
    *out = s;
    return TOK_OK;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

bpe_length_summary bpe_length_summary_of(const int *lengths, int n) {
    bpe_length_summary r = {0, 0, 0};
    if (n <= 0) return r;
    int small[256];
    int *v = n <= 256 ? small : malloc((size_t)n * sizeof *v);
    if (!v) { /* no memory for the median: min and max still */
        r.min = r.max = lengths[0];
        for (int i = 1; i < n; i++) {
            if (lengths[i] < r.min) r.min = lengths[i];
            if (lengths[i] > r.max) r.max = lengths[i];
        }
        r.p50 = -1 /* unknown */;
        return r;
    }
    memcpy(v, lengths, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_int);
    r.min = v[0];
    r.p50 = v[(n - 1) / 2];
    r.max = v[n - 1];
    if (v != small) free(v);
    return r;
}
