/* plan.h: the run's plan, built once by the context (context.h) and read by
 * everything after it: `plan` prints it, `validate` counts it, `run` follows
 * it, --resume and --cases/--only work on its cases. Nothing after it looks
 * up the instance a case belongs to; the plan says.
 *
 * A plan holds, for the n selected cases (indexes k into the context's
 * cases, requested order):
 *   instance[k]  the backend instance that runs case k (context.h: the
 *                backends list entry-major, then the setting-axis
 *                combinations);
 *   group[k]     its rebuild group: the requested index of the first case
 *                on the same instance that agrees with it on every axis
 *                that instance's backend rebuilds on (rebuild_axes,
 *                bc_matrix_rebuild_axes) -- each instance by its own
 *                backend's axes, never another's;
 *   order[i]     the case at execution position i: groups in the order
 *                their first case was requested (so instance by instance),
 *                within a group the largest effective batch first, ties in
 *                requested order (matrix.h);
 *   build[i]     1 when position i starts a group: the backend builds its
 *                costly state there (`plan` marks it "build").
 *
 * Ownership: the plan owns its arrays; bc_plan_free frees them.
 */
#ifndef BENCHCTL_PLAN_H
#define BENCHCTL_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

typedef struct bc_plan {
    size_t n;             /* cases */
    size_t n_instances;
    size_t *order;        /* n: execution position -> case */
    size_t *instance;     /* n: case -> instance (< n_instances) */
    size_t *group;        /* n: case -> its group's first case (requested index) */
    unsigned char *build; /* n: execution position -> starts a group */
    size_t n_builds;      /* positions with build set */
} bc_plan;

/* Builds p for cases[n] (requested order): case k runs on instance[k] (<
 * n_instances; NULL: every case on instance 0), and instance i rebuilds on
 * axes[i] (bc_axis bits as bc_matrix_rebuild_axes returns them). p must be
 * zeroed; free it in every case. */
bc_status bc_plan_build(bc_plan *p, const bc_case *cases, size_t n, const size_t *instance,
                        const uint32_t *axes, size_t n_instances, bc_error *err);

/* 1 when the cases at requested indexes a and b share a rebuild group. */
static inline int bc_plan_same_group(const bc_plan *p, size_t a, size_t b) { return p->group[a] == p->group[b]; }

void bc_plan_free(bc_plan *p);

#endif
