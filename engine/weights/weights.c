/* weights.c: the weights' arena every family's weights hold (weights.h). */
#include "weights.h"

#include "kv_cache.h"

#include <stdlib.h>

static size_t align_up(size_t n) { return (n + 63) / 64 * 64; }

void eng_layout_matrix(eng_layout *l, eng_matrix *m, int rows, int cols) {
    m->dtype = l->dtype;
    m->rows = rows;
    m->cols = cols;
    m->data = l->base ? l->base + l->off : NULL;
    l->off += align_up(eng_matrix_bytes(l->dtype, (size_t)rows, (size_t)cols));
}

float *eng_layout_vector(eng_layout *l, size_t n) {
    float *p = l->base ? (float *)(void *)(l->base + l->off) : NULL;
    l->off += align_up(n * sizeof(float));
    return p;
}

bc_status eng_weights_arena(eng_weights *w, size_t bytes, const char *what, bc_error *err) {
    w->arena = eng_stream_alloc(bytes);
    if (!w->arena)
        return bc_error_set(err, BC_ERR_NOMEM, "weights %s (%s): cannot allocate %zu bytes", what,
                            eng_dtype_name(w->dtype), bytes);
    w->arena_bytes = bytes;
    return BC_OK;
}

void eng_weights_arena_free(eng_weights *w) {
    free(w->arena);
    w->arena = NULL;
    w->arena_bytes = 0;
}
