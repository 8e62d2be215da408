/* matrix.h: the case matrix and its schedule.
 *
 * Requested order: the Cartesian product of the axes, outermost first:
 *   precision, cache_policy, batch_size, samples_per_prompt, prompt_length,
 *   response_length
 * (so response_length varies fastest). case.index is the position in this
 * order, and reports list cases in it.
 *
 * Execution order (the run's plan, plan.h, holds it): cases run instance by
 * instance, and an instance's are grouped by the axes its backend says are costly
 * to switch (bc_backend_ops.rebuild_axes; precision when it does not say), so
 * the backend rebuilds its state (weights in another precision) once per
 * group; groups run in the order their first case is requested. Within a
 * group, a stable sort by effective batch (batch_size x samples_per_prompt),
 * largest first, so workspaces are sized once. Ties keep the requested order.
 */
#ifndef BENCHCTL_MATRIX_H
#define BENCHCTL_MATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

/* The axes; every list must be non-empty. Strings and ops are borrowed: the
 * cases point at them, so they must outlive the cases. precision_ops and
 * cache_ops may be NULL (then case.precision_ops is NULL and release_cache 0).
 * A prompt length of 0 means "the backend's prompts decide" (a prompts file). */
typedef struct bc_matrix_axes {
    const char *const *precisions;
    const bc_precision_ops *const *precision_ops; /* n_precisions, or NULL */
    size_t n_precisions;
    const char *const *cache_policies;
    const bc_cache_ops *const *cache_ops; /* n_cache_policies, or NULL */
    size_t n_cache_policies;
    const uint32_t *batch_sizes; size_t n_batch_sizes;
    const uint32_t *samples_per_prompt; size_t n_samples_per_prompt;
    const uint32_t *prompt_lengths; size_t n_prompt_lengths;
    const uint32_t *response_lengths; size_t n_response_lengths;
    const bc_sampling *sampling; /* borrowed like the strings */
} bc_matrix_axes;

/* Builds every case in requested order into *out_cases (malloc'ed, owned by
 * the caller, freed with free()). release_cache is what the cache policy's
 * release_after_rollout says for the case. */
bc_status bc_matrix_build(const bc_matrix_axes *axes, bc_case **out_cases, size_t *out_n, bc_error *err);

/* The bc_axis bits a backend's rebuild_axes stands for: 0 (not said) is
 * BC_AXIS_PRECISION, BC_AXIS_NONE is no axis. */
uint32_t bc_matrix_rebuild_axes(uint32_t backend_rebuild_axes);

/* 1 when a and b agree on every axis in axes (bc_axis bits). */
int bc_matrix_same_axes(const bc_case *a, const bc_case *b, uint32_t axes);

/* 1 when a and b run on the same backend instance (bc_matrix_same_backend)
 * and agree on every axis in axes (bc_axis bits): groups never span two
 * instances, so the execution order runs the cases instance by instance. */
int bc_matrix_same_group(const bc_case *a, const bc_case *b, uint32_t axes);

/* 1 when case c's backend setting values (bc_case.setting_values, since
 * 2.3) are values[n]; a case without them has none (n 0). */
int bc_matrix_case_has_settings(const bc_case *c, const char *const *values, size_t n);

/* 1 when a and b run on the same backend instance: the same backend
 * (bc_case.backend) with the same setting values. */
int bc_matrix_same_backend(const bc_case *a, const bc_case *b);

/* Fills order[n] with indices into cases[]: by group (group[k], the
 * requested index of case k's group's first case; NULL: one group), then
 * largest effective batch first, ties in requested order. The run's plan
 * (plan.h) orders its cases with it. */
void bc_matrix_order_groups(const bc_case *cases, size_t n, const size_t *group, size_t *order);

/* Fills order[n] with indices into cases[] in execution order, grouping by
 * axes (the result of bc_matrix_rebuild_axes) and by the instance each case
 * names (bc_matrix_same_group). */
void bc_matrix_execution_order(const bc_case *cases, size_t n, uint32_t axes, size_t *order);

#endif
