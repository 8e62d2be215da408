/* schedule.c: a case's schedule as the host keeps it (schedule.h). */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

static void store_empty(bc_schedule_store *s) {
    free(s->steps);
    free(s->done);
    free(s->first_ms);
    *s = (bc_schedule_store){0};
}

const bc_case_schedule *bc_schedule_keep(bc_schedule_store *s, const bc_generation_stats *g) {
    store_empty(s);
    if (!BC_HAS(g, bc_generation_stats, row_done_step) || !g->row_first_token_ms || !g->row_done_step ||
        g->schedule_rows <= 0 || g->schedule_rows > INT32_MAX || (g->n_decode_steps > 0 && !g->step_active_rows))
        return NULL;
    const size_t steps = g->n_decode_steps, rows = (size_t)g->schedule_rows;
    s->steps = malloc((steps ? steps : 1) * sizeof *s->steps);
    s->done = malloc(rows * sizeof *s->done);
    s->first_ms = malloc(rows * sizeof *s->first_ms);
    if (!s->steps || !s->done || !s->first_ms) {
        store_empty(s);
        return NULL;
    }
    if (steps) memcpy(s->steps, g->step_active_rows, steps * sizeof *s->steps);
    memcpy(s->done, g->row_done_step, rows * sizeof *s->done);
    memcpy(s->first_ms, g->row_first_token_ms, rows * sizeof *s->first_ms);
    s->pub = (bc_case_schedule){.struct_size = sizeof s->pub,
                                .n_steps = (uint32_t)steps,
                                .step_active_rows = s->steps,
                                .n_rows = (int64_t)rows,
                                .row_first_token_ms = s->first_ms,
                                .row_done_step = s->done};
    return &s->pub;
}

void bc_schedule_free(bc_schedule_store *stores, size_t n) {
    if (!stores) return;
    for (size_t k = 0; k < n; k++) store_empty(&stores[k]);
    free(stores);
}
