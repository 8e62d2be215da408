/* seam.h: what a run over several processes adds to the runner's loop, as
 * one small table of hooks. The loop (runner.c) calls each hook at its
 * point and knows nothing else of distribution: one process runs it with
 * bc_seam_local (every hook a no-op or the process's own answer), a
 * distributed run with distributed.h's bc_dist_seam (the MPI protocol of
 * docs/scale.md: replicate or shard). Every hook runs outside the timed
 * stages of an iteration.
 *
 * Where the loop calls them:
 *   start             once, before the backends are prepared
 *   agree             after each instance's prepare, and once the reporters
 *                     opened: every process starts, or none
 *   runs              per execution position: does this process run its case?
 *   after_step        before a case starts, after begin_case, after every
 *                     iteration (warmup and measured): the processes agree
 *                     on failures, interrupts and the stop rule
 *   before_iteration  before every iteration: the processes start together
 *   stop_level        where the loop decides whether to stop for an interrupt
 *   after_case        after every position: which cases are now finished
 *                     everywhere (their reports complete here), for the journal
 *   abort             a process that cannot go on in step with the others
 */
#ifndef BENCHCTL_SEAM_H
#define BENCHCTL_SEAM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

struct bc_runner_config;
struct bc_run_result;

typedef struct bc_run_seam {
    void *ctx; /* handed to every hook; the seam's, not the runner's */
    /* The run report's distributed block (bc_run_report.distributed); NULL
     * for one process. */
    const bc_distributed *report;
    /* 1 when every case runs in this process, so its tokens are here for
     * the token agreement (agreement.h); 0: the agreement stays NaN. */
    int tokens_here;
    /* Before the run: refuses what the seam cannot do (an error the same on
     * every process) and makes its per-case state. */
    bc_status (*start)(void *ctx, const struct bc_runner_config *cfg, bc_error *err);
    /* Every process says how a step it took went (local, with err's message
     * when not OK); returns the first failing process's code, err set to
     * its message, or BC_OK when every one succeeded. */
    bc_status (*agree)(void *ctx, bc_status local, bc_error *err);
    /* 1 when this process runs the case at execution position `position`. */
    int (*runs)(void *ctx, size_t position);
    /* Before every iteration of a case (warmup and measured). */
    void (*before_iteration)(void *ctx);
    /* After a step of a case (*st its status, *hook the failing hook or
     * NULL, err its message; *stop_rule the stop rule's decision, may be
     * NULL): afterwards *st, *hook and err are the first failing process's
     * and *stop_rule the first process's. stop is the run's interrupt
     * level, raised to the highest any process saw. */
    void (*after_step)(void *ctx, bc_status *st, const char **hook, bc_error *err, volatile sig_atomic_t *stop,
                       int32_t *stop_rule);
    /* The interrupt level the loop decides on: this process's (*stop), or
     * the level every process agreed at the last after_step. */
    int (*stop_level)(void *ctx, volatile sig_atomic_t *stop);
    /* After execution position `position`: k is the case this process
     * handled there (-1: another process's), ran 1 when it ran (or was
     * taken from a resumed run), 0 when it was skipped before starting.
     * Returns how many positions, ending at this one, are now finished for
     * every process (res holds their reports): the loop journals them. */
    size_t (*after_case)(void *ctx, struct bc_run_result *res, size_t position, int64_t k, int ran,
                         volatile sig_atomic_t *stop);
    /* Ends every process of the run with status, why saying why (this
     * process failed where the others go on and would wait for it); one
     * process: returns, and the loop returns its error. */
    void (*abort)(void *ctx, int status, const bc_error *why);
} bc_run_seam;

/* One process: start and agree pass the status through, runs is 1,
 * before_iteration and abort do nothing, after_step leaves everything as
 * it is, stop_level is *stop, after_case returns 1 for a case that ran. */
extern const bc_run_seam bc_seam_local;

#endif
