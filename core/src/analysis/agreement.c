/* agreement.c: the token agreement between backends (agreement.h). */
#include "agreement.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix.h"

static int same_text(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

int bc_agreement_applies(const bc_case *c) {
    const char *dtype = c->precision_ops && c->precision_ops->dtype ? c->precision_ops->dtype : c->precision;
    return c->sampling && !(c->sampling->temperature > 0) && dtype && strcmp(dtype, "float32") == 0;
}

void bc_agreement_keep(bc_case_tokens *t, const bc_case *c, const bc_generation_stats *g) {
    if (!bc_agreement_applies(c) || !BC_HAS(g, bc_generation_stats, token_stride) || !g->tokens ||
        g->token_rows <= 0 || g->token_cols <= 0 || g->token_stride < g->token_cols)
        return;
    size_t n = (size_t)g->token_rows * (size_t)g->token_cols;
    int32_t *ids = realloc(t->ids, n * sizeof *ids);
    if (!ids) {
        free(t->ids);
        *t = (bc_case_tokens){0};
        return;
    }
    for (int64_t r = 0; r < g->token_rows; r++)
        memcpy(ids + r * g->token_cols, g->tokens + r * g->token_stride, (size_t)g->token_cols * sizeof *ids);
    *t = (bc_case_tokens){.ids = ids, .rows = g->token_rows, .cols = g->token_cols};
}

/* The same case on another backend instance: every axis equal, the backend
 * or its varied settings (matrix.backend_settings) not. */
static int same_case_other_backend(const bc_case *a, const bc_case *b) {
    return a->batch_size == b->batch_size && a->samples_per_prompt == b->samples_per_prompt &&
           a->prompt_length == b->prompt_length && a->response_length == b->response_length &&
           same_text(a->precision, b->precision) && same_text(a->cache_policy, b->cache_policy) &&
           !bc_matrix_same_backend(a, b);
}

void bc_agreement_compute(const bc_case *cases, size_t n, const bc_case_tokens *tokens, bc_case_report *reports) {
    for (size_t k = 0; k < n; k++) {
        if (!tokens[k].ids) continue;
        for (size_t j = 0; j < k; j++) {
            if (!tokens[j].ids || !same_case_other_backend(&cases[j], &cases[k])) continue;
            int64_t rows = tokens[k].rows < tokens[j].rows ? tokens[k].rows : tokens[j].rows;
            int64_t cols = tokens[k].cols < tokens[j].cols ? tokens[k].cols : tokens[j].cols;
            int64_t equal = 0;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t t = 0; t < cols; t++)
                    equal += tokens[k].ids[r * tokens[k].cols + t] == tokens[j].ids[r * tokens[j].cols + t];
            /* tokens one side lacks count as disagreeing */
            int64_t most = (tokens[k].rows > tokens[j].rows ? tokens[k].rows : tokens[j].rows) *
                           (tokens[k].cols > tokens[j].cols ? tokens[k].cols : tokens[j].cols);
            reports[k].token_agreement = most > 0 ? (double)equal / (double)most : NAN;
            break;
        }
    }
}

void bc_agreement_free(bc_case_tokens *tokens, size_t n) {
    for (size_t k = 0; tokens && k < n; k++) free(tokens[k].ids);
    free(tokens);
}
