/* plan.c: the run's plan (plan.h): each case's instance and rebuild group,
 * the execution order and where the backend builds. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "matrix.h"

bc_status bc_plan_build(bc_plan *p, const bc_case *cases, size_t n, const size_t *instance,
                        const uint32_t *axes, size_t n_instances, bc_error *err) {
    *p = (bc_plan){.n = n, .n_instances = n_instances};
    size_t m = n ? n : 1;
    p->order = calloc(m, sizeof *p->order);
    p->instance = calloc(m, sizeof *p->instance);
    p->group = calloc(m, sizeof *p->group);
    p->build = calloc(m, sizeof *p->build);
    if (!p->order || !p->instance || !p->group || !p->build)
        return bc_error_set(err, BC_ERR_NOMEM, "plan: out of memory for %zu cases", n);
    for (size_t k = 0; k < n; k++) {
        size_t inst = instance ? instance[k] : 0;
        if (inst >= n_instances)
            return bc_error_set(err, BC_ERR_INTERNAL, "plan: case %u on instance %zu of %zu", cases[k].index, inst,
                                n_instances);
        p->instance[k] = inst;
        p->group[k] = k;
        for (size_t j = 0; j < k; j++)
            if (p->instance[j] == inst && bc_matrix_same_axes(&cases[j], &cases[k], axes[inst])) {
                p->group[k] = p->group[j];
                break;
            }
    }
    bc_matrix_order_groups(cases, n, p->group, p->order);
    for (size_t i = 0; i < n; i++) {
        p->build[i] = i == 0 || p->group[p->order[i]] != p->group[p->order[i - 1]];
        p->n_builds += p->build[i];
    }
    return BC_OK;
}

void bc_plan_free(bc_plan *p) {
    free(p->order);
    free(p->instance);
    free(p->group);
    free(p->build);
    *p = (bc_plan){0};
}
