/* report.h: reading a bc_run_report the same way in every reporter: case
 * status names, a case's dtype, byte counts in MiB, the ok/failed/skipped
 * counts, and the optional parts of the report (run->backend, run->sampling,
 * cr->memory may be NULL, and a struct from an older writer may stop short
 * of a field) read as "unknown" instead of being dereferenced blindly.
 * Part of benchctl_reporter_common (compiled into each plugin; not the ABI).
 */
#ifndef BENCHCTL_REPORTERS_REPORT_H
#define BENCHCTL_REPORTERS_REPORT_H

#include <stdint.h>

#include "benchctl/plugin.h"

/* run->backend->field when the host described the backend and its struct
 * holds field; else unknown (NULL for strings, -1 for counts). */
#define BC_RUN_BACKEND(run, field, unknown) \
    ((run)->backend && BC_HAS((run)->backend, bc_backend_info, field) ? (run)->backend->field : (unknown))

/* run->sampling->field, or unknown when the host gave no sampling. */
#define BC_RUN_SAMPLING(run, field, unknown) \
    ((run)->sampling && BC_HAS((run)->sampling, bc_sampling, field) ? (run)->sampling->field : (unknown))

/* cr->memory->field in bytes, or -1 when the backend reported no memory. */
#define BC_CASE_MEMORY(cr, field) \
    ((cr)->memory && BC_HAS((cr)->memory, bc_memory_stats, field) ? (cr)->memory->field : (int64_t)-1)

/* cr->field when the host's case reports hold it (their element size,
 * run->case_report_size, reaches past it), else unknown: how a reporter
 * reads a case field added after 2.0 and still runs in an older host. */
#define BC_CASE_FIELD(run, cr, field, unknown) \
    (BC_ELEM_HAS((run)->case_report_size, bc_case_report, field) ? (cr)->field : (unknown))

/* run->field when the host's run report holds it, else unknown. */
#define BC_RUN_FIELD(run, field, unknown) (BC_HAS((run), bc_run_report, field) ? (run)->field : (unknown))

/* The name of why cr's measured iterations stopped ("fixed", "stable",
 * "max_iterations", "max_seconds", "interrupted", "failed"), or NULL when
 * the case never reached them or the host does not say (an older host). */
const char *bc_case_stop_reason(const bc_run_report *run, const bc_case_report *cr);

/* Whether cr's numbers look noisy: the coefficient of variation of its
 * total_ms above max_cv, or the CPU steal share while it ran above
 * max_steal (each ignored when unknown). */
int bc_case_unstable(const bc_run_report *run, const bc_case_report *cr, double max_cv, double max_steal);

/* "ok", "failed" or "skipped" ("unknown" for a status from a newer minor). */
const char *bc_case_status_name(bc_case_status s);

/* The dtype a case ran in: its precision's dtype name ("bfloat16"), else the
 * precision plugin's name, else NULL. */
const char *bc_case_dtype(const bc_case *c);

/* The backend that ran the case (2.2: a run with a backends list names each
 * case's), or NULL from an older host. */
const char *bc_case_backend(const bc_case *c);

/* The backend settings the matrix varies (2.3: matrix.backend_settings):
 * how many; their names and this case's values are c->setting_names[i] and
 * c->setting_values[i]. 0 without such axes or from an older host. */
uint32_t bc_case_n_settings(const bc_case *c);

/* bytes / 2^20, or NAN when bytes is negative (unknown). */
double bc_bytes_to_mib(int64_t bytes);

/* How the cases of a run ended. */
typedef struct bc_case_counts {
    uint32_t ok, failed, skipped;
} bc_case_counts;

/* Counts every case of run (all run->n_cases, walked with their element
 * size): ok, failed, and skipped for the rest (skipped, never started, or a
 * status this code does not know), so ok + failed + skipped == n_cases. */
bc_case_counts bc_count_cases(const bc_run_report *run);

#endif
