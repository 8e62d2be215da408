/* selection.h: running part of a matrix, chosen on the command line.
 *
 *   --cases LIST   case indexes (as `benchctl plan` and the reports show
 *                  them, from 0) and inclusive ranges, comma-separated:
 *                  "3,5-7". Order and repeats do not matter: it is a set.
 *   --only FILTER  axis=value conditions, comma-separated:
 *                  "precision=bf16,batch_size=4". Conditions on different
 *                  axes must all hold; repeating an axis allows any of its
 *                  values ("precision=bf16,precision=fp16"). Axes:
 *                  precision (plugin name or dtype), cache_policy,
 *                  batch_size, samples_per_prompt, prompt_length (0: from
 *                  the backend's prompts), response_length.
 * Both given: a case must satisfy both. The selected cases keep their
 * matrix index and their requested order; the others are not run and not
 * reported. Every error names the option and what is wrong, e.g.
 *   --cases 3,20: case 20 does not exist: the matrix has 16 cases, 0-15
 */
#ifndef BENCHCTL_SELECTION_H
#define BENCHCTL_SELECTION_H

#include <stddef.h>

#include "benchctl/plugin.h"

/* Keeps, in place, the cases of cases[*n] that cases_opt and only_opt
 * select (either may be NULL: no condition), in their order, and sets *n to
 * their count. On a syntax error, an index outside the matrix, a value no
 * case has, or an empty selection, returns BC_ERR_INVALID with err set and
 * leaves the cases alone. */
bc_status bc_selection_apply(bc_case *cases, size_t *n, const char *cases_opt, const char *only_opt, bc_error *err);

#endif
