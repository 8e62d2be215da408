/* resume.h: `benchctl run FILE --resume JOURNAL`: the cases a killed or
 * interrupted run already finished, taken from its journal (or its JSON
 * report) so they are not run again.
 *
 * The journal must come from a run of the same config: the same SHA-256 of
 * the resolved config text (the reports' config_sha256); another is refused
 * with both hashes. A case is taken when the journal holds it with the same
 * index and the same key (runfile.h: axes, dtype, cache) and status "ok",
 * and its record holds a measurement a run could have written (at least one
 * profile, each with total_ms; stage times finite in [0, 10^12] ms, every
 * other value finite or null and at most 10^18 in magnitude): a record
 * that does not is named on stderr and not taken. Failed, skipped, unsound
 * and missing cases run again. Values are the journal's,
 * in its field order; the runner maps them to its own fields by name.
 *
 * Ownership: bc_resume owns the runfile and its replay;
 * the prior pointers it hands the runner live until bc_resume_free.
 */
#ifndef BENCHCTL_RESUME_H
#define BENCHCTL_RESUME_H

#include <stddef.h>

#include "benchctl/plugin.h"
#include "replay.h"
#include "runfile.h"
#include "runner.h"

typedef struct bc_resume {
    bc_runfile rf;
    bc_replay rp;
    bc_prior_case *priors;     /* n_cases */
    const bc_prior_case **by_case; /* n_cases: &priors[k], or NULL when case k runs */
    size_t n_cases, n_taken;
} bc_resume;

/* Reads path and matches it against cases[n] (the run's, requested order)
 * of the config whose hash is config_sha256. */
bc_status bc_resume_load(bc_resume *rs, const char *path, const bc_case *cases, size_t n, const char *config_sha256,
                         bc_error *err);

void bc_resume_free(bc_resume *rs);

#endif
