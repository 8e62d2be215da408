/* memcpy_bound.c: the host's memcpy bandwidth (memcpy_bound.h). */
#include "memcpy_bound.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

double bc_memcpy_gb_per_s(size_t bytes, int repeats) {
    if (bytes == 0) bytes = BC_MEMCPY_PROBE_BYTES;
    if (repeats < 1) repeats = BC_MEMCPY_PROBE_REPEATS;
    unsigned char *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst) {
        free(src), free(dst);
        return NAN;
    }
    memset(src, 0x5a, bytes); /* both resident before the first timed copy */
    memset(dst, 0, bytes);
    double best_s = INFINITY;
    for (int i = 0; i < repeats; i++) {
        src[(size_t)i % bytes] = (unsigned char)i; /* each copy moves different bytes */
        uint64_t t0 = bc_now_ns();
        memcpy(dst, src, bytes);
        __asm__ volatile("" : : "r"(dst) : "memory"); /* the copy is observed: not elided before free */
        double s = (double)(bc_now_ns() - t0) / 1e9;
        if (s < best_s) best_s = s;
    }
    free(src), free(dst);
    return isfinite(best_s) && best_s > 0 ? (double)bytes / best_s / 1e9 : NAN;
}
