/* schedule.c: a case's schedule as the host keeps it (schedule.h). */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

void bc_schedule_clear(bc_schedule_store *s) {
    free(s->steps);
    free(s->done);
    free(s->first_ms);
    *s = (bc_schedule_store){0};
}

const bc_case_schedule *bc_schedule_alloc(bc_schedule_store *s, uint32_t n_steps, int64_t n_rows) {
    bc_schedule_clear(s);
    if (n_rows < 1 || n_rows > INT32_MAX) return NULL;
    const size_t rows = (size_t)n_rows;
    s->steps = malloc((n_steps ? n_steps : 1) * sizeof *s->steps);
    s->done = malloc(rows * sizeof *s->done);
    s->first_ms = malloc(rows * sizeof *s->first_ms);
    if (!s->steps || !s->done || !s->first_ms) {
        bc_schedule_clear(s);
        return NULL;
    }
    s->pub = (bc_case_schedule){.struct_size = sizeof s->pub,
                                .n_steps = n_steps,
                                .step_active_rows = s->steps,
                                .n_rows = n_rows,
                                .row_first_token_ms = s->first_ms,
                                .row_done_step = s->done};
    return &s->pub;
}

const bc_case_schedule *bc_schedule_copy(bc_schedule_store *s, const bc_case_schedule *from) {
    bc_schedule_clear(s);
    if (!from || !from->row_first_token_ms || !from->row_done_step || (from->n_steps > 0 && !from->step_active_rows) ||
        !bc_schedule_alloc(s, from->n_steps, from->n_rows))
        return NULL;
    const size_t rows = (size_t)from->n_rows;
    if (from->n_steps) memcpy(s->steps, from->step_active_rows, from->n_steps * sizeof *s->steps);
    memcpy(s->done, from->row_done_step, rows * sizeof *s->done);
    memcpy(s->first_ms, from->row_first_token_ms, rows * sizeof *s->first_ms);
    return &s->pub;
}

const bc_case_schedule *bc_schedule_keep(bc_schedule_store *s, const bc_generation_stats *g) {
    if (!BC_HAS(g, bc_generation_stats, row_done_step)) {
        bc_schedule_clear(s);
        return NULL;
    }
    const bc_case_schedule view = {.struct_size = sizeof view,
                                   .n_steps = g->n_decode_steps,
                                   .step_active_rows = g->step_active_rows,
                                   .n_rows = g->schedule_rows,
                                   .row_first_token_ms = g->row_first_token_ms,
                                   .row_done_step = g->row_done_step};
    return bc_schedule_copy(s, &view);
}

void bc_schedule_free(bc_schedule_store *stores, size_t n) {
    if (!stores) return;
    for (size_t k = 0; k < n; k++) bc_schedule_clear(&stores[k]);
    free(stores);
}
