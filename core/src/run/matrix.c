/* matrix.c: builds the case matrix in requested order and sorts it into
 * execution order (grouped by the costly axes, then largest effective batch
 * first, stable). */
#include "matrix.h"

#include <stdlib.h>
#include <string.h>

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

uint32_t bc_matrix_rebuild_axes(uint32_t backend_rebuild_axes) {
    if (backend_rebuild_axes == 0) return BC_AXIS_PRECISION;
    return backend_rebuild_axes & ~(uint32_t)BC_AXIS_NONE;
}

static int same_name(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static uint32_t n_case_settings(const bc_case *c) {
    return BC_HAS(c, bc_case, n_settings) && c->setting_values ? c->n_settings : 0;
}

int bc_matrix_case_has_settings(const bc_case *c, const char *const *values, size_t n) {
    if (n_case_settings(c) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (!same_name(c->setting_values[i], values[i])) return 0;
    return 1;
}

int bc_matrix_same_backend(const bc_case *a, const bc_case *b) {
    if (BC_HAS(a, bc_case, backend) && BC_HAS(b, bc_case, backend) && !same_name(a->backend, b->backend)) return 0;
    return bc_matrix_case_has_settings(a, n_case_settings(b) ? b->setting_values : NULL, n_case_settings(b));
}

int bc_matrix_same_axes(const bc_case *a, const bc_case *b, uint32_t axes) {
    if ((axes & BC_AXIS_PRECISION) && !same_name(a->precision, b->precision)) return 0;
    if ((axes & BC_AXIS_CACHE_POLICY) && !same_name(a->cache_policy, b->cache_policy)) return 0;
    if ((axes & BC_AXIS_BATCH_SIZE) && a->batch_size != b->batch_size) return 0;
    if ((axes & BC_AXIS_SAMPLES_PER_PROMPT) && a->samples_per_prompt != b->samples_per_prompt) return 0;
    if ((axes & BC_AXIS_PROMPT_LENGTH) && a->prompt_length != b->prompt_length) return 0;
    if ((axes & BC_AXIS_RESPONSE_LENGTH) && a->response_length != b->response_length) return 0;
    return 1;
}

int bc_matrix_same_group(const bc_case *a, const bc_case *b, uint32_t axes) {
    /* two instances never share a group: the cases run instance by instance */
    return bc_matrix_same_backend(a, b) && bc_matrix_same_axes(a, b, axes);
}

/* a runs before b: an earlier group, or the same group and a larger effective batch */
static int runs_before(const size_t *group, const bc_case *cases, size_t a, size_t b) {
    if (group[a] != group[b]) return group[a] < group[b];
    return bc_case_effective_batch(&cases[a]) > bc_case_effective_batch(&cases[b]);
}

void bc_matrix_order_groups(const bc_case *cases, size_t n, const size_t *group, size_t *order) {
    for (size_t i = 0; i < n; i++) order[i] = i;
    /* insertion sort: stable, and matrices are small (tens to hundreds) */
    for (size_t i = 1; i < n; i++) {
        size_t v = order[i];
        size_t j = i;
        while (j > 0 && (group ? runs_before(group, cases, v, order[j - 1])
                               : bc_case_effective_batch(&cases[v]) > bc_case_effective_batch(&cases[order[j - 1]]))) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
}

void bc_matrix_execution_order(const bc_case *cases, size_t n, uint32_t axes, size_t *order) {
    /* group[i]: the requested index of the first case in i's group, so groups
     * keep the order their first case was requested in */
    size_t *group = malloc((n ? n : 1) * sizeof *group); /* owned here */
    for (size_t i = 0; group && i < n; i++) {
        group[i] = i;
        for (size_t j = 0; j < i; j++)
            if (bc_matrix_same_group(&cases[j], &cases[i], axes)) {
                group[i] = group[j];
                break;
            }
    }
    bc_matrix_order_groups(cases, n, group, order);
    free(group);
}
