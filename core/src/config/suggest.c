/* suggest.c: did-you-mean: the candidate nearest a misspelt word
 * (bc_suggest, declared in suggest.h), for unknown settings, plugins and
 * reporters. */
#include "suggest.h"

#include <ctype.h>
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
    return best;
}
