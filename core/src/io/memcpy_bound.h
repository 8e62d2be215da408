/* memcpy_bound.h: the host's memcpy bandwidth, the bound a refit's
 * refit_gb_per_s is set against (runner.h, run.refit). */
#ifndef BENCHCTL_MEMCPY_BOUND_H
#define BENCHCTL_MEMCPY_BOUND_H

#include <stddef.h>

/* The probe's default: copies of 256 MiB, the best of 5. */
enum { BC_MEMCPY_PROBE_BYTES = 256 << 20, BC_MEMCPY_PROBE_REPEATS = 5 };

/* Copies bytes (0: BC_MEMCPY_PROBE_BYTES) from one buffer to another
 * repeats times (both touched first, so no page fault is timed) and
 * returns the best copy's rate in GB/s (1e9 bytes per second); NAN when
 * the buffers cannot be allocated. Takes about repeats x bytes / (the
 * bandwidth) seconds plus the first touch: a quarter of a second for the
 * default on a machine of 10 GB/s. */
double bc_memcpy_gb_per_s(size_t bytes, int repeats);

#endif
