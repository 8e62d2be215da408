/* weights.c: the weights' arena every family's weights hold (weights.h);
 * its layout is the tensor table's (tensor_table.c). */
#include "weights.h"

#include "kv_cache.h"

#include <stdlib.h>

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
