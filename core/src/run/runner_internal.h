/* runner_internal.h: what the runner's files share (runner.c the run over
 * its cases, run_case.c a case's measurement, iteration.c one iteration and
 * its fields, isolation.c a case in a child process, fanout.c the
 * reporters, their journal and the ETA, resume.c a case taken from an
 * earlier run). Not for use outside core/src/run. */
#ifndef BENCHCTL_RUNNER_INTERNAL_H
#define BENCHCTL_RUNNER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "eta.h"
#include "host.h"
#include "runner.h"

static inline double ms_since(uint64_t t0) { return (double)(bc_now_ns() - t0) / 1e6; }

static inline int stop_level(const bc_runner_config *cfg) { return cfg->stop ? (int)*cfg->stop : 0; }

/* One open reporter. */
typedef struct reporter_slot {
    const bc_runner_reporter *r;
    void *inst;     /* owned by the plugin; destroyed by the runner */
    int open;       /* open succeeded */
    int journaling; /* case_finished still called */
    int progress;   /* iteration_finished still called */
} reporter_slot;

/* What the cases of one run share while it goes: the reporters, the report
 * they see, the execution order and the cost model of the ETA. */
typedef struct run_state {
    const bc_runner_config *cfg;
    bc_run_result *res;
    reporter_slot *slots;
    const bc_run_report *run; /* the finished cases so far */
    const struct bc_plan *plan;          /* the cases' instances and order (plan.h) */
    const bc_runner_backend *backends;   /* plan->n_instances: instance i's plugin and instance */
    const struct bc_run_seam *seam;      /* one process (bc_seam_local) or many (seam.h) */
    const size_t *order;      /* execution order: plan->order */
    size_t position;          /* of the running case in order */
    bc_eta eta;               /* fitted on the finished cases */
    int child_fd;             /* >= 0 in an isolated case's child: events go to the parent over it */
    double *row;              /* res->n_fields: a warmup iteration's values, an event's; bc_run's */
    double memcpy_gb_per_s;   /* measured before the first case when refit is on; NAN otherwise */
} run_state;


/* Whether the stable rule applies (adaptive, with a target). */
static inline int has_target(const bc_runner_config *cfg) { return cfg->max_iterations > 0 && cfg->target_rel_ci > 0; }


/* iteration.c */
/* What one iteration does besides the rollout (run_case.c decides). */
typedef struct iteration_in {
    int refit;                       /* the refit hook before the rollout */
    const bc_runner_backend *scorer; /* scores the rollout (cfg->scorer), or NULL */
    double memcpy_gb_per_s;          /* refit_bound_share's bound; NAN unknown */
} iteration_in;
/* Where one iteration stopped, when it did not complete. */
typedef struct iteration_out {
    const char *hook;        /* the hook that failed, or NULL */
    int abandoned;           /* a second interrupt: stopped after a hook */
    bc_generation_stats gen; /* what generate reported */
} iteration_out;
/* The "unknown" memory figures (-1) a case starts from. */
void bc_runner_memory_unknown(bc_memory_stats *m);
/* The values of the declared metrics of scope that instance b (rb) gives
 * (read_metrics), into their columns of row; NaN stays. */
bc_status bc_runner_declared_metrics(const bc_run_result *res, size_t b, const bc_runner_backend *rb,
                                     bc_metric_scope scope, double *row, bc_error *err);
/* One rollout of case c on instance b (rb). row (res->n_fields) gets the
 * values. On a hook error returns it, with out->hook naming the hook. */
bc_status bc_runner_one_iteration(const bc_runner_config *cfg, const bc_run_result *res, size_t b,
                                  const bc_runner_backend *rb, const bc_case *c, const iteration_in *in, int *released,
                                  double *row, iteration_out *out, bc_error *err);

/* run_case.c */
void bc_runner_set_message(bc_run_result *res, size_t k, const char *fmt, ...) BC_PRINTF(3, 4);
/* The stop rule's bounds: [lo, hi] measured iterations. */
void bc_runner_iteration_bounds(const bc_runner_config *cfg, uint32_t *lo, uint32_t *hi);
/* Runs case k (requested index) with the backend instance. */
void bc_runner_run_case(run_state *rs, size_t k);
/* Marks case k skipped by an interrupt, with how far it got (hi: the most
 * measured iterations it could have run; 0 before they started). */
void bc_runner_mark_interrupted(const bc_runner_config *cfg, bc_run_result *res, size_t k, const char *during,
                                uint32_t done, uint32_t hi);

/* isolation.c */
/* Runs case k in a forked child; the parent keeps the reporters, forwards
 * interrupts, enforces cfg->case_timeout_s and turns a child that dies into
 * a failed case. */
void bc_runner_run_case_isolated(run_state *rs, size_t k);
/* In the child: sends one finished iteration (row: n_fields values) to the
 * parent over fd. */
void bc_runner_child_send_event(int fd, int warmup, uint32_t iteration, const double *row, uint32_t n_fields,
                                double elapsed_ms, double rel_ci);

/* fanout.c */
/* Seconds the cases at positions from..n-1 of the order should take, with e. */
double bc_runner_predict_rest_s(const run_state *rs, const bc_eta *e, size_t from);
/* Tells the reporters that have iteration_finished about one iteration
 * (in an isolated case's child: tells the parent). */
void bc_runner_iteration_event(run_state *rs, const bc_case *c, int warmup, uint32_t iteration, const double *row,
                               double elapsed_ms, double rel_ci);
/* Opens every reporter. One that cannot open (since validation proved its
 * path creatable: another run holds the journal, the disk changed) stops
 * the run before its first case: it is reported, the ones opened are
 * destroyed without close (nothing of theirs is written, no other run's
 * report replaced) and its error returned. */
bc_status bc_runner_open_reporters(const bc_runner_config *cfg, const bc_run_report *run, reporter_slot *slots,
                                   bc_run_result *res, bc_error *err);
/* Tells the journaling reporters case k finished. */
void bc_runner_journal_case(const bc_runner_config *cfg, const bc_run_report *run, reporter_slot *slots,
                            bc_run_result *res, size_t k);
/* Closes and destroys every reporter. */
void bc_runner_close_reporters(const bc_runner_config *cfg, const bc_run_report *run, reporter_slot *slots,
                               bc_run_result *res);

/* resume.c */
/* Case k as an earlier run recorded it (cfg->prior[k]). */
void bc_runner_adopt_prior(const bc_runner_config *cfg, bc_run_result *res, size_t k);

#endif
