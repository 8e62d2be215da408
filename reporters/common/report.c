/* report.c: see report.h. */
#include "report.h"

#include <math.h>

const char *bc_case_status_name(bc_case_status s) {
    switch (s) {
    case BC_CASE_OK: return "ok";
    case BC_CASE_FAILED: return "failed";
    case BC_CASE_SKIPPED: return "skipped";
    }
    return "unknown";
}

const char *bc_case_backend(const bc_case *c) { return BC_HAS(c, bc_case, backend) ? c->backend : NULL; }

uint32_t bc_case_n_settings(const bc_case *c) {
    return BC_HAS(c, bc_case, n_settings) && c->setting_names && c->setting_values ? c->n_settings : 0;
}

const char *bc_case_dtype(const bc_case *c) {
    if (!c) return NULL;
    if (c->precision_ops && c->precision_ops->dtype) return c->precision_ops->dtype;
    return c->precision;
}

double bc_bytes_to_mib(int64_t bytes) { return bytes < 0 ? NAN : (double)bytes / (1024.0 * 1024.0); }

bc_case_counts bc_count_cases(const bc_run_report *run) {
    bc_case_counts n = {0, 0, 0};
    for (uint32_t i = 0; i < run->n_cases; i++) {
        bc_case_status s = run->cases ? bc_run_case(run, i)->status : BC_CASE_SKIPPED;
        if (s == BC_CASE_OK)
            n.ok++;
        else if (s == BC_CASE_FAILED)
            n.failed++;
        else
            n.skipped++;
    }
    return n;
}

const char *bc_case_stop_reason(const bc_run_report *run, const bc_case_report *cr) {
    bc_stop_reason r = BC_CASE_FIELD(run, cr, stop_reason, BC_STOP_NONE);
    return r == BC_STOP_NONE ? NULL : bc_stop_reason_name(r);
}

int bc_case_unstable(const bc_run_report *run, const bc_case_report *cr, double max_cv, double max_steal) {
    double cv = bc_case_stat(run, cr, bc_run_field_index(run, "total_ms"), bc_run_stat_index(run, "cv"));
    double steal = BC_CASE_FIELD(run, cr, cpu_steal_share, NAN);
    return (isfinite(cv) && cv > max_cv) || (isfinite(steal) && steal > max_steal);
}
