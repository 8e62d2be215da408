/* schedule.h: a case's schedule as the host keeps it (bc_case_schedule):
 * the per-step active rows and each row's first token and completion step
 * of the case's last measured rollout, copied from its
 * bc_generation_stats.
 */
#ifndef BENCHCTL_SCHEDULE_H
#define BENCHCTL_SCHEDULE_H

#include <stdint.h>

#include "benchctl/plugin.h"

/* One case's schedule: pub points into the owned arrays. */
typedef struct bc_schedule_store {
    bc_case_schedule pub;
    int32_t *steps, *done; /* [n_steps], [n_rows]; owned (free()) */
    double *first_ms;      /* [n_rows]; owned */
} bc_schedule_store;

/* Keeps (replaces) s with a copy of g's schedule; returns &s->pub, or NULL
 * when g has none (s emptied) or on no memory (s emptied). */
const bc_case_schedule *bc_schedule_keep(bc_schedule_store *s, const bc_generation_stats *g);

void bc_schedule_free(bc_schedule_store *stores, size_t n);

#endif
