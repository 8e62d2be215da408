/* clock.h: the engine's one wall clock, CLOCK_MONOTONIC in milliseconds, for
 * the stage times it reports (rollout marks, continuous batching's scheduler
 * and cache times, LoRA fuse and unfuse). Needs _POSIX_C_SOURCE >= 199309L
 * in the including file, before its first header.
 */
#ifndef ENG_CLOCK_H
#define ENG_CLOCK_H

#include <time.h>

static inline double eng_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

#endif
