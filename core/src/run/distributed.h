/* distributed.h: a run over several processes (ranks) joined by a comm
 * plugin (plugins/mpi), docs/scale.md. The core never links MPI: every
 * collective goes through the comm plugin's ops (bc_comm_ops, plugin.h).
 *
 *   bc_dist_launcher_comm   which comm the launcher implies ("mpi" under
 *                           mpirun / PMIx), from the environment only
 *   bc_dist_check_srun      refuses srun's N singletons (Slurm says N tasks,
 *                           the world has 1)
 *   bc_dist_open / close    loads the comm plugin, joins the job, learns
 *                           every rank's host and local rank
 *   bc_dist_broadcast_text, bc_dist_agree_status, bc_dist_check_same
 *                           rank 0 reads the config and sends it; every rank
 *                           agrees it could build its context and runs the
 *                           same plugins (naming the rank and the difference)
 * During the run, the runner's seam (bc_dist_seam, seam.h; dist_seam.c)
 * calls, outside every timed region:
 *   replicate   bc_dist_barrier before each iteration, bc_dist_agree after
 *               it (any rank failed? rank 0's stop decision, interrupts),
 *               bc_dist_replicate_collect after each case (per-rank times
 *               gathered, aggregates computed: bc_dist_aggregate)
 *   shard       case at execution position i runs on rank i % world_size;
 *               after each round of world_size cases bc_dist_shard_exchange
 *               gives every rank every case of the round
 *
 * Ownership: bc_dist owns its loader (and so the comm plugin), the comm
 * instance, the rank table and the per-case results it hands reporters
 * (bc_case_report.distributed points into them); bc_dist_close frees all.
 */
#ifndef BENCHCTL_DISTRIBUTED_H
#define BENCHCTL_DISTRIBUTED_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"
#include "loader.h"

struct bc_run_result;

#define BC_DIST_HOST_MAX 128
#define BC_DIST_DEVICE_MAX 64

typedef enum bc_dist_mode { BC_DIST_REPLICATE = 0, BC_DIST_SHARD = 1 } bc_dist_mode;

typedef struct bc_dist {
    bc_loader loader;         /* owns the comm plugin */
    const bc_plugin *comm;
    void *inst;               /* the comm instance, closed by bc_dist_close */
    int32_t rank, world_size, local_rank;
    bc_dist_mode mode;
    char (*hosts)[BC_DIST_HOST_MAX];     /* world_size, rank order */
    char (*devices)[BC_DIST_DEVICE_MAX]; /* world_size: each rank's backend device ("" unknown) */
    int32_t *local_ranks;                /* world_size */
    bc_rank_info *rank_infos;            /* world_size, pointing into the arrays above */
    bc_distributed report;               /* run report's distributed block */
    /* Per case (bc_dist_results_alloc): the report block and n_cases x 3 x
     * world_size doubles (rank_time_ms, rank_tokens_per_second,
     * rank_peak_memory_mib) it points into. */
    size_t n_cases;
    bc_case_distributed *cases;
    double *per_rank;
    char failed_hook[BC_DIST_HOST_MAX + 96]; /* "rank 1 (host): generate", after bc_dist_agree */
    /* The seam's state during a run: the interrupt level agreed at the last
     * step (replicate), the case this rank ran in the current round (shard,
     * -1 none). */
    int agreed_stop;
    int64_t round_case;
    /* The comm instance's settings (its own table's defaults, timeout_s set
     * by bc_dist_set_timeout): live until close, as plugin.h promises. */
    bc_setting_value *comm_values;
    bc_settings comm_settings;
    /* A collective that failed (a rank missed distributed.timeout_s): its
     * message, "" while every collective succeeded. Once set, no rank is in
     * step any more: no later collective is called, every later step fails
     * with this message, and bc_dist_close ends the job (rank 0 after its
     * reports are written). */
    char broken[512];
    unsigned char *known; /* shard, n_cases: this rank ran or received case k */
} bc_dist;

/* bench.cfg's distributed.timeout_s when it gives none (docs/scale.md). */
#define BC_DIST_DEFAULT_TIMEOUT_S 1800.0

struct bc_run_seam;

/* The runner's seam for d's mode (seam.h): replicate or shard. seam->ctx
 * is d, which must outlive the run. */
void bc_dist_seam(bc_dist *d, struct bc_run_seam *seam);

/* The comm plugin the launcher implies, from the environment alone: "mpi"
 * when OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK is set; NULL otherwise.
 * BENCHCTL_COMM=NAME overrides it ("none": no comm). */
const char *bc_dist_launcher_comm(void);

/* Fails (BC_ERR_SETTING, with a hint) when Slurm says this step has more
 * than one task (SLURM_STEP_NUM_TASKS, else SLURM_NTASKS inside a step) and
 * world_size is 1: srun started singletons that each think they are alone. */
bc_status bc_dist_check_srun(int world_size, bc_error *err);

/* Loads the comm plugin called name (search path: plugin_dirs, then the
 * loader's usual places), joins the job and gathers every rank's host and
 * local rank; the mode is replicate until bc_dist_set_mode. d must be
 * zeroed; close it in every case. */
bc_status bc_dist_open(bc_dist *d, const char *name, const char *const *plugin_dirs, size_t n_dirs, bc_error *err);

/* Sets the mode (bench.cfg's distributed.mode), also in the report. */
void bc_dist_set_mode(bc_dist *d, bc_dist_mode mode);

/* Sets the deadline of every later collective (bench.cfg's
 * distributed.timeout_s) where the comm plugin declares a "timeout_s"
 * setting; a comm without one waits as long as its collectives do. */
void bc_dist_set_timeout(bc_dist *d, double seconds);

/* Leaves the job and frees everything d owns. Safe on a zeroed d. After a
 * failed collective (d->broken) it does not return: rank 0 ends the job
 * (exit status 3 once cases ran, else 1); the other ranks wait for that,
 * up to timeout_s + 30 s, then end it themselves. */
void bc_dist_close(bc_dist *d);

/* Ends every rank of the job with status (after a collective failed). */
_Noreturn void bc_dist_abort(bc_dist *d, int status);

/* Rank 0's *text (*len bytes) to every rank: other ranks get a malloc'ed
 * copy (theirs to free; their *text must be NULL on entry). */
bc_status bc_dist_broadcast_text(bc_dist *d, char **text, size_t *len, bc_error *err);

/* Every rank says how its step went (local, with err's message when not
 * OK); every rank returns the first failing rank's code with err set to
 * its message (prefixed "rank R (host): " when R is not this rank), or
 * BC_OK when every rank succeeded. */
bc_status bc_dist_agree_status(bc_dist *d, bc_status local, bc_error *err);

/* Every rank runs the same plugins and versions and the same config:
 * signature is one line per plugin ("backend opt 0.1.0 abi 2.2") and one
 * for the config's digest. On a difference fails (BC_ERR_SETTING) on every
 * rank, naming the first rank that differs from rank 0 and the first line
 * that differs. device is this rank's backend device, for the report. */
bc_status bc_dist_check_same(bc_dist *d, const char *signature, const char *device, bc_error *err);

/* Replicate: every rank has reached the start of an iteration. */
bc_status bc_dist_barrier(bc_dist *d, bc_error *err);

/* Replicate, before a case, after begin_case and after an iteration: every
 * rank gives its status (*st, with *hook and err's message when failed), its
 * stop level (*stop) and stop decision (*stop_reason, may be NULL).
 * Afterwards, on every rank: *st, *hook and err are the first failing
 * rank's ("rank R (host): hook"), *stop is at least the highest level any
 * rank saw, and *stop_reason rank 0's. Returns that highest level: the
 * runner decides on it, not on *stop, which a signal may raise on one rank
 * after the agreement. After a failed collective (d->broken) no rank is
 * asked: *st becomes BC_ERR_IO with d->broken's message (naming the rank
 * that missed the deadline), so the case fails on every rank still
 * running. */
int bc_dist_agree(bc_dist *d, bc_status *st, const char **hook, bc_error *err, volatile sig_atomic_t *stop,
                   int32_t *stop_reason);

/* Allocates the per-case results for n_cases cases. */
bc_status bc_dist_results_alloc(bc_dist *d, size_t n_cases, bc_error *err);

/* Replicate, after case k on every rank: gathers each rank's measured
 * total_ms, tokens and peak memory; fills d->cases[k] (bc_dist_aggregate)
 * and points res->cases[k].distributed at it. Nothing after a failed
 * collective. */
void bc_dist_replicate_collect(bc_dist *d, struct bc_run_result *res, size_t k);

/* Shard, after a round: this rank ran case k (-1: none this round); every
 * rank gets every case of the round into res (report, values, memory,
 * message; statistics recomputed) with d->cases[k] naming the rank and
 * host. *stop becomes the highest level any rank saw. After a failed
 * collective, every case this rank neither ran nor received fails with
 * d->broken's message. */
void bc_dist_shard_exchange(bc_dist *d, struct bc_run_result *res, int64_t k, volatile sig_atomic_t *stop);

/* The replicate aggregates of one case (docs/scale.md), from n_ranks ranks
 * of n_it measured iterations each: ms[r * n_it + i] and tokens[r * n_it +
 * i] are rank r's total_ms and generated tokens of iteration i,
 * peak_mib[r] its peak memory (NAN unknown), returned[r] its returned
 * response length (-1 unknown) against response_length. Fills out's figures
 * and the per-rank arrays rank_time_ms, rank_tps, rank_peak (n_ranks each,
 * the caller's; out points at them). n_it 0: everything NAN. */
void bc_dist_aggregate(uint32_t n_ranks, uint32_t n_it, const double *ms, const double *tokens,
                       const double *peak_mib, const int64_t *returned, uint32_t response_length,
                       bc_case_distributed *out, double *rank_time_ms, double *rank_tps, double *rank_peak);

#endif
