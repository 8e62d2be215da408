/* suggest.c: did-you-mean: the candidate nearest a misspelt word
 * (bc_suggest, declared in suggest.h), for unknown settings, plugins and
 * reporters; a long name's short form (bc_suggest: bfloat16 -> bf16); and
 * two names joined (bc_suggest_joined: libconfig joins adjacent strings,
 * so [ "bf16" "fp32" ] is one name, bf16fp32). */
#include "suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Optimal-string-alignment distance, case-insensitive; words longer than
 * BC_SUGGEST_MAX_LEN count as far from everything. */
#define BC_SUGGEST_MAX_LEN 63

static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > BC_SUGGEST_MAX_LEN || lb > BC_SUGGEST_MAX_LEN) return (size_t)-1;
    size_t rows[3][BC_SUGGEST_MAX_LEN + 1]; /* rows i-2, i-1, i of the DP table */
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++) prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            size_t cost = ca == cb ? 0 : 1;
            size_t best = prev[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            if (prev[j - 1] + cost < best) best = prev[j - 1] + cost;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) && tolower((unsigned char)a[i - 2]) == cb &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1; /* transposition */
            cur[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

/* The digits word ends in ("16" of "bfloat16"); "" when none. */
static const char *trailing_number(const char *word) {
    const char *end = word + strlen(word), *p = end;
    while (p > word && isdigit((unsigned char)p[-1])) p--;
    return p;
}

/* Whether short_form may abbreviate word: shorter, the same first letter
 * and the same trailing number (bf16 of bfloat16, fp32 of float32). */
static int abbreviates(const char *short_form, const char *word) {
    size_t ls = strlen(short_form), lw = strlen(word);
    const char *ns = trailing_number(short_form), *nw = trailing_number(word);
    if (ls >= lw || !*ns || strcmp(ns, nw) != 0 || tolower((unsigned char)short_form[0]) != tolower((unsigned char)word[0]))
        return 0;
    return 1;
}

/* The one candidate that abbreviates word (bfloat16 -> bf16, float32 ->
 * fp32, float16 -> fp16), or NULL when none or several do. */
static const char *short_form(const char *word, const char *const *candidates, size_t n) {
    const char *found = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!candidates[i] || !abbreviates(candidates[i], word)) continue;
        if (found) return NULL;
        found = candidates[i];
    }
    return found;
}

int bc_suggest_joined(const char *word, const char *const *candidates, size_t n, const char **first,
                      const char **second) {
    if (!word || !candidates) return 0;
    size_t lw = strlen(word);
    for (size_t i = 0; i < n; i++) {
        if (!candidates[i]) continue;
        size_t li = strlen(candidates[i]);
        if (li == 0 || li >= lw || strncmp(word, candidates[i], li) != 0) continue;
        for (size_t j = 0; j < n; j++)
            if (candidates[j] && strcmp(word + li, candidates[j]) == 0) {
                *first = candidates[i];
                *second = candidates[j];
                return 1;
            }
    }
    return 0;
}

void bc_suggest_hint(const char *word, const char *const *candidates, size_t n, char *buf, size_t cap) {
    const char *a, *b, *near;
    buf[0] = '\0';
    if (bc_suggest_joined(word, candidates, n, &a, &b))
        snprintf(buf, cap, "'%s' is '%s' and '%s' joined: libconfig joins adjacent strings, so a comma may be "
                           "missing: [ \"%s\", \"%s\" ]", word, a, b, a, b);
    else if ((near = bc_suggest(word, candidates, n)) != NULL)
        snprintf(buf, cap, "did you mean '%s'?", near);
}

const char *bc_suggest(const char *word, const char *const *candidates, size_t n) {
    if (!word || !candidates) return NULL;
    size_t len = strlen(word);
    size_t limit = len <= 3 ? 1 : len <= 6 ? 2 : 3;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        if (!candidates[i]) continue;
        size_t d = edit_distance(word, candidates[i]);
        if (d <= limit && d < best_d && d < strlen(candidates[i])) {
            best = candidates[i];
            best_d = d;
        }
    }
    return best ? best : short_form(word, candidates, n);
}
