/* cpu_threads.h: what `threads = 0` runs on the CPU (cpu_threads.c): for
 * each phase (prefill, decode), the fastest of 1 thread, one per physical
 * core (when SMT siblings share cores) and every online CPU, measured on
 * the model's own weights when a case begins; nothing is kept across
 * processes. docs/engine.md, "Threads".
 */
#ifndef ENG_CPU_THREADS_H
#define ENG_CPU_THREADS_H

#include "forward.h"

typedef enum eng_phase { ENG_PHASE_PREFILL = 0, ENG_PHASE_DECODE = 1, ENG_PHASE_COUNT = 2 } eng_phase;

/* The most thread counts one probe compares (1, physical cores, online). */
enum { ENG_THREADS_MAX_CANDIDATES = 3 };

/* How much faster (a fraction of the fewer threads' time) more threads must
 * be to be chosen: measured times on a shared machine jitter by a few per
 * cent, and fewer threads leave the rest of the machine alone. */
#define ENG_THREADS_MARGIN 0.05

typedef struct eng_threads_probe {
    int n;                                            /* candidates, [1, ENG_THREADS_MAX_CANDIDATES] */
    int threads[ENG_THREADS_MAX_CANDIDATES];          /* ascending, distinct */
    double ms[ENG_PHASE_COUNT][ENG_THREADS_MAX_CANDIDATES]; /* best time of each; NaN: not measured */
    int rows[ENG_PHASE_COUNT];                        /* the rows (tokens) each phase was measured at */
    int chosen[ENG_PHASE_COUNT];                      /* the threads each phase runs on */
} eng_threads_probe;

/* The thread counts to compare on a machine of `online` CPUs and `cores`
 * physical cores, ascending and distinct, into out; returns how many: 1,
 * cores when 1 < cores < online, online when > 1. */
int eng_threads_candidates(int online, int cores, int out[ENG_THREADS_MAX_CANDIDATES]);
/* The index of the candidate to run among n measured times (ascending
 * thread counts): the first, unless a later one is faster than the best so
 * far by more than ENG_THREADS_MARGIN; a NaN time is never chosen over a
 * measured one (all NaN: 0). */
int eng_threads_pick(const double *ms, int n);

/* Measures one phase at one thread count: milliseconds, NaN when it could
 * not be measured. */
typedef double (*eng_threads_measure_fn)(void *ctx, eng_phase phase, int threads);
/* Fills p for online CPUs and cores: the candidates, measure's times (each
 * phase's candidates measured reps times, interleaved so a change of load
 * hits them alike; the best kept) and the choices. rows are the caller's to
 * set. */
void eng_threads_choose(eng_threads_probe *p, int online, int cores, int reps, eng_threads_measure_fn measure,
                        void *ctx);

/* eng_threads_choose on m's weights and pool (made with `online` threads):
 * prefill = layer 0's matrices at min(prefill_tokens, 256) rows, decode =
 * the first min(layers, 4) layers' matrices at decode_rows rows (so the
 * weights stream from memory as a decode step's do), each through
 * eng_linear_parallel on the candidate's active threads, after one warm-up
 * run. Leaves the pool at all its threads. BC_ERR_NOMEM for the scratch
 * activations. */
bc_status eng_threads_probe_model(eng_model *m, int prefill_tokens, int decode_rows, eng_threads_probe *p,
                                  bc_error *err);

#endif
