/* agreement.h: the token agreement between backend instances (a bench.cfg
 * backends list, or the combinations of matrix.backend_settings): for greedy
 * float32 cases, the share of a case's generated tokens equal to those of
 * the same case (same axes) on the first instance that ran it, from each
 * case's last measured rollout (bc_generation_stats.tokens).
 */
#ifndef BENCHCTL_AGREEMENT_H
#define BENCHCTL_AGREEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

/* One case's tokens: rows x cols ids, row-major, owned (free()). */
typedef struct bc_case_tokens {
    int32_t *ids;
    int64_t rows, cols;
} bc_case_tokens;

/* 1 when case c takes part: greedy sampling and the float32 dtype. */
int bc_agreement_applies(const bc_case *c);

/* Keeps (replaces) t with a copy of g's tokens, when c takes part and g has
 * them; on no memory t stays empty. */
void bc_agreement_keep(bc_case_tokens *t, const bc_case *c, const bc_generation_stats *g);

/* reports[k].token_agreement for every case k of cases[0..n) with tokens
 * whose same case ran earlier in cases[] (the requested order: the first
 * instance first) on another instance (another backend, or other values of
 * the settings the matrix varies) with tokens; the others keep theirs. */
void bc_agreement_compute(const bc_case *cases, size_t n, const bc_case_tokens *tokens, bc_case_report *reports);

void bc_agreement_free(bc_case_tokens *tokens, size_t n);

#endif
