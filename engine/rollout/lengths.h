/* lengths.h: the response length of each row of a rollout, drawn from a
 * distribution with the run's seed, so every engine and every run of a case
 * sees the same lengths. The engine enforces a drawn length by forcing EOS
 * at it (rollout.c); `fixed` keeps every row at the case's response length
 * with no EOS, as without a distribution.
 */
#ifndef ENG_LENGTHS_H
#define ENG_LENGTHS_H

#include <stdint.h>

#include "benchctl/plugin.h"

typedef enum eng_length_kind {
    ENG_LENGTHS_FIXED = 0,     /* every row Tr tokens */
    ENG_LENGTHS_UNIFORM = 1,   /* uniform integers in [ceil(min_ratio * Tr), Tr] */
    ENG_LENGTHS_LOGNORMAL = 2, /* exp(N(mu, sigma^2)) with mean `mean` tokens, rounded, clamped to [1, Tr] */
    ENG_LENGTHS_EMPIRICAL = 3  /* one of `values` at random, clamped to [1, Tr] */
} eng_length_kind;

typedef struct eng_length_dist {
    eng_length_kind kind;
    double min_ratio;        /* uniform: in (0, 1] */
    double mean, sigma;      /* lognormal: mean length in tokens (> 0), spread of the log length (>= 0) */
    const int32_t *values;   /* empirical: [n_values] lengths >= 1; borrowed */
    int n_values;
} eng_length_dist;

/* len[R]: row r's length in [1, Tr], from its own generator of seed. */
void eng_lengths_draw(const eng_length_dist *d, uint64_t seed, int Tr, int R, int *len);

/* The min, p50, p95 and max of len[n] (p50/p95 interpolated between the
 * sorted values, as core's statistics do); scratch holds n ints. */
typedef struct eng_length_summary {
    double min, p50, p95, max;
} eng_length_summary;
eng_length_summary eng_lengths_summarize(const int *len, int n, int *scratch);

/* Reads an empirical distribution: integers >= 1 separated by white space,
 * '#' to the end of a line is a comment. Errors name the file (and line):
 * BC_ERR_NOT_FOUND, BC_ERR_IO, BC_ERR_FORMAT (a value that is not an
 * integer >= 1, or none at all), BC_ERR_NOMEM. *values is the caller's to free. */
bc_status eng_lengths_read(const char *path, int32_t **values, int *n_values, bc_error *err);

#endif
