/* schedule.h: a case's schedule as the host keeps it (bc_case_schedule):
 * the per-step active rows and each row's first token and completion step
 * of the case's last measured rollout, copied from its bc_generation_stats
 * (the runner) or read back from a report (runfile.c).
 */
#ifndef BENCHCTL_SCHEDULE_H
#define BENCHCTL_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

/* One case's schedule: pub points into the owned arrays (pub.struct_size
 * 0: none). */
typedef struct bc_schedule_store {
    bc_case_schedule pub;
    int32_t *steps, *done; /* [n_steps], [n_rows]; owned (free()) */
    double *first_ms;      /* [n_rows]; owned */
} bc_schedule_store;

/* Empties s, then sizes it for n_steps steps and n_rows >= 1 rows (pub
 * filled, the arrays uninitialised); returns &s->pub, or NULL on no memory
 * or bad sizes (s empty). */
const bc_case_schedule *bc_schedule_alloc(bc_schedule_store *s, uint32_t n_steps, int64_t n_rows);

/* Keeps (replaces) s with a copy of from (NULL: none); returns &s->pub, or
 * NULL when there is none or on no memory (s empty either way). */
const bc_case_schedule *bc_schedule_copy(bc_schedule_store *s, const bc_case_schedule *from);

/* bc_schedule_copy of g's schedule (bc_generation_stats step_active_rows to
 * row_done_step). */
const bc_case_schedule *bc_schedule_keep(bc_schedule_store *s, const bc_generation_stats *g);

/* Frees s's arrays and empties it. */
void bc_schedule_clear(bc_schedule_store *s);

/* Clears n stores and frees the array. */
void bc_schedule_free(bc_schedule_store *stores, size_t n);

#endif
