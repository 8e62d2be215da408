/* matrix.c: builds the case matrix in requested order and sorts it into
 * execution order (largest effective batch first, stable). */
#include "matrix.h"

#include <stdlib.h>

bc_status bc_matrix_build(const bc_matrix_axes *a, bc_case **out_cases, size_t *out_n, bc_error *err) {
    *out_cases = NULL;
    *out_n = 0;
    size_t dims[6] = {a->n_precisions,         a->n_cache_policies, a->n_batch_sizes,
                      a->n_samples_per_prompt, a->n_prompt_lengths, a->n_response_lengths};
    static const char *const dim_names[6] = {"precisions",         "cache_policies", "batch_sizes",
                                             "samples_per_prompt", "prompt_lengths", "response_lengths"};
    size_t total = 1;
    for (int d = 0; d < 6; d++) {
        if (dims[d] == 0) return bc_error_set(err, BC_ERR_INVALID, "matrix: %s is empty", dim_names[d]);
        if (total > SIZE_MAX / dims[d] / sizeof(bc_case))
            return bc_error_set(err, BC_ERR_INVALID, "matrix: too many cases");
        total *= dims[d];
    }
    if (total > UINT32_MAX) return bc_error_set(err, BC_ERR_INVALID, "matrix: %zu cases is too many", total);
    bc_case *cases = calloc(total, sizeof *cases); /* owned by the caller on success */
    if (!cases) return bc_error_set(err, BC_ERR_NOMEM, "matrix: out of memory for %zu cases", total);

    size_t k = 0;
    for (size_t ip = 0; ip < a->n_precisions; ip++)
        for (size_t ic = 0; ic < a->n_cache_policies; ic++)
            for (size_t ib = 0; ib < a->n_batch_sizes; ib++)
                for (size_t is = 0; is < a->n_samples_per_prompt; is++)
                    for (size_t il = 0; il < a->n_prompt_lengths; il++)
                        for (size_t ir = 0; ir < a->n_response_lengths; ir++) {
                            bc_case *c = &cases[k];
                            c->struct_size = sizeof *c;
                            c->index = (uint32_t)k;
                            c->batch_size = a->batch_sizes[ib];
                            c->samples_per_prompt = a->samples_per_prompt[is];
                            c->prompt_length = a->prompt_lengths[il];
                            c->response_length = a->response_lengths[ir];
                            c->precision = a->precisions[ip];
                            c->precision_ops = a->precision_ops ? a->precision_ops[ip] : NULL;
                            c->cache_policy = a->cache_policies[ic];
                            c->sampling = a->sampling;
                            const bc_cache_ops *cops = a->cache_ops ? a->cache_ops[ic] : NULL;
                            c->release_cache = (cops && cops->release_after_rollout)
                                                   ? (cops->release_after_rollout(c) != 0)
                                                   : 0;
                            k++;
                        }
    *out_cases = cases;
    *out_n = total;
    return BC_OK;
}

void bc_matrix_execution_order(const bc_case *cases, size_t n, size_t *order) {
    for (size_t i = 0; i < n; i++) order[i] = i;
    /* insertion sort: stable, and matrices are small (tens to hundreds) */
    for (size_t i = 1; i < n; i++) {
        size_t v = order[i];
        uint64_t key = bc_case_effective_batch(&cases[v]);
        size_t j = i;
        while (j > 0 && bc_case_effective_batch(&cases[order[j - 1]]) < key) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
}
