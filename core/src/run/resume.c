/* resume.c: the finished cases of an earlier run, for run --resume (see
 * resume.h), and how the runner takes one (bc_runner_adopt_prior). */
#define _POSIX_C_SOURCE 200809L
#include "resume.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner_internal.h"
#include "schedule.h"

/* The largest time a resumed profile may hold (about 31 years, in ms) and
 * the largest magnitude of any other value: beyond either, the record was
 * not written by a run. */
#define BC_RESUME_MAX_MS 1e12
#define BC_RESUME_MAX_VALUE 1e18

/* 0 when the "ok" record rc holds a measurement a run could have written
 * (resume.h): at least one profile, each with the host-timed stage times
 * (total_ms required, all four finite in [0, BC_RESUME_MAX_MS]), every other
 * value null or finite and at most BC_RESUME_MAX_VALUE in magnitude (a
 * derived figure such as kv_bytes_saved may be negative); else 1 with why
 * filled. */
static int unsound_record(const bc_runfile *rf, const bc_runfile_case *rc, char *why, size_t cap) {
    if (rc->n_iterations == 0) return snprintf(why, cap, "it has no profiles"), 1;
    static const char *const stage[] = {"total_ms", "prompt_expansion_ms", "generation_ms", "post_processing_ms"};
    int total = bc_runfile_field(rf, "total_ms");
    if (total < 0) return snprintf(why, cap, "the journal has no total_ms field"), 1;
    for (uint32_t it = 0; it < rc->n_iterations; it++)
        for (uint32_t f = 0; f < rf->n_fields; f++) {
            double v = rc->values[(size_t)it * rf->n_fields + f];
            const char *name = rf->field_names[f];
            int is_stage = 0;
            for (size_t s = 0; s < sizeof stage / sizeof stage[0]; s++) is_stage |= strcmp(name, stage[s]) == 0;
            if (isnan(v)) {
                if ((int)f == total) return snprintf(why, cap, "profile %u has no total_ms", it + 1), 1;
                continue;
            }
            if (is_stage ? !(v >= 0 && v <= BC_RESUME_MAX_MS) : !(fabs(v) <= BC_RESUME_MAX_VALUE))
                return snprintf(why, cap, "profile %u has %s = %g, which no run measures", it + 1, name, v), 1;
        }
    return 0;
}

/* The replayed report of the case with this index and key (with_backend: the
 * key of a journal whose cases name more than one backend), if it finished
 * on the same backend and its record holds a sound measurement (a record
 * that does not is named on stderr and passed over: the case runs again). */
static const bc_case_report *finished_case(const bc_resume *rs, const bc_case *c, const char *key,
                                           const char *with_backend) {
    for (size_t i = 0; i < rs->rf.n_cases; i++) {
        const bc_runfile_case *rc = &rs->rf.cases[i];
        if (rc->index != c->index || rc->status != BC_CASE_OK) continue;
        if (strcmp(rc->key, key) != 0 && strcmp(rc->key, with_backend) != 0) continue;
        if (rc->backend && c->backend && strcmp(rc->backend, c->backend) != 0) continue;
        char why[160];
        if (unsound_record(&rs->rf, rc, why, sizeof why)) {
            fprintf(stderr, "benchctl: warning: --resume %s: case %u is recorded ok but %s; the record is not taken\n",
                    rs->rf.path, (unsigned)c->index, why);
            continue;
        }
        /* the replay holds the same cases, sorted by index */
        for (size_t j = 0; j < rs->rp.n_cases; j++)
            if (rs->rp.cases[j].index == c->index) return &rs->rp.reports[j];
    }
    return NULL;
}

bc_status bc_resume_load(bc_resume *rs, const char *path, const bc_case *cases, size_t n, const char *config_sha256,
                         bc_error *err) {
    memset(rs, 0, sizeof *rs);
    bc_status st = bc_runfile_read(path, &rs->rf, err);
    if (st != BC_OK) return st;
    if (rs->rf.warning[0]) fprintf(stderr, "benchctl: warning: %s\n", rs->rf.warning);
    if (!rs->rf.config_sha256 || strcmp(rs->rf.config_sha256, config_sha256) != 0) {
        bc_error_set(err, BC_ERR_SETTING, "--resume %s: written by a run of another config (config_sha256 %.16s..., this "
                     "config %.16s...)", path, rs->rf.config_sha256 ? rs->rf.config_sha256 : "missing", config_sha256);
        bc_error_hint(err, "resume with the same FILE and the same --set and --reporter options as the first run");
        return BC_ERR_SETTING;
    }
    if ((st = bc_replay_build(&rs->rf, &rs->rp, err)) != BC_OK) return st;
    rs->n_cases = n;
    rs->priors = calloc(n + 1, sizeof *rs->priors);
    rs->by_case = calloc(n + 1, sizeof *rs->by_case);
    if (!rs->priors || !rs->by_case) return bc_error_set(err, BC_ERR_NOMEM, "--resume: out of memory");
    for (size_t k = 0; k < n; k++) {
        const bc_case *c = &cases[k];
        const char *dtype = c->precision_ops && c->precision_ops->dtype ? c->precision_ops->dtype : c->precision;
        char *key = bc_runfile_key(c->batch_size, c->samples_per_prompt, c->prompt_length, c->response_length, dtype,
                                   c->release_cache ? "release" : "retain");
        key = bc_runfile_key_settings(key, c->setting_names, c->setting_values, c->n_settings);
        char *with_backend = key ? bc_runfile_key_backend(strdup(key), c->backend) : NULL;
        if (!key || !with_backend) {
            free(key), free(with_backend);
            return bc_error_set(err, BC_ERR_NOMEM, "--resume: out of memory");
        }
        const bc_case_report *from = finished_case(rs, c, key, with_backend);
        free(key), free(with_backend);
        if (!from) continue;
        /* the runner maps the journal's fields to its own by name */
        rs->priors[k] = (bc_prior_case){.report = from, .values = from->values, .n_iterations = from->n_iterations,
                                        .field_names = (const char *const *)rs->rf.field_names,
                                        .n_fields = rs->rf.n_fields};
        rs->by_case[k] = &rs->priors[k];
        rs->n_taken++;
    }
    return BC_OK;
}

void bc_resume_free(bc_resume *rs) {
    free(rs->priors);
    free(rs->by_case);
    bc_replay_free(&rs->rp);
    bc_runfile_free(&rs->rf);
    memset(rs, 0, sizeof *rs);
}

/* Case k as an earlier run recorded it (bc_prior_case): values (as many as
 * fit, mapped to this run's columns by name), statistics recomputed from
 * them, and the recorded measurements. */
void bc_runner_adopt_prior(const bc_runner_config *cfg, bc_run_result *res, size_t k) {
    const bc_prior_case *p = cfg->prior[k];
    const bc_case_report *from = p->report;
    bc_case_report *cr = &res->cases[k];
    uint32_t n_it = p->n_iterations < res->rows_per_case ? p->n_iterations : res->rows_per_case;
    const size_t nf = res->n_fields;
    double *values = res->values + k * (size_t)res->rows_per_case * nf;
    for (size_t f = 0; f < nf; f++) { /* the earlier run's columns, by name */
        int g = bc_find_name_(p->field_names, p->n_fields, res->fields.names[f]);
        for (uint32_t it = 0; it < n_it; it++)
            values[(size_t)it * nf + f] = g < 0 ? NAN : p->values[(size_t)it * p->n_fields + (size_t)g];
        bc_stats_compute(values + f, n_it, nf, res->stats + (k * nf + f) * BC_N_STATS, NULL);
    }
    cr->status = BC_CASE_OK;
    cr->error_code = BC_OK;
    cr->n_iterations = n_it;
    cr->resumed = 1; /* the reporters say it came from the journal */
    cr->returned_response_length = from->returned_response_length;
    cr->prompt_width_tokens = from->prompt_width_tokens;
    cr->prompt_min_tokens = from->prompt_min_tokens;
    cr->prompt_max_tokens = from->prompt_max_tokens;
    cr->prompt_p50_tokens = from->prompt_p50_tokens;
    cr->prompt_pad_tokens = from->prompt_pad_tokens;
    cr->peak_memory_mib = from->peak_memory_mib;
    if (from->memory) res->memory[k] = *from->memory;
    res->memory[k].struct_size = sizeof res->memory[k];
    cr->held_between_rollouts_bytes = from->held_between_rollouts_bytes;
    cr->peak_rss_bytes = from->peak_rss_bytes;
    cr->device_free_before_bytes = from->device_free_before_bytes;
    cr->device_free_after_bytes = from->device_free_after_bytes;
    cr->wall_ms = from->wall_ms;
    cr->rebuilt = from->rebuilt;
    cr->total_ms_rel_ci = from->total_ms_rel_ci;
    cr->load_avg_start = from->load_avg_start;
    cr->load_avg_end = from->load_avg_end;
    cr->cpu_steal_share = from->cpu_steal_share;
    cr->stop_reason = from->stop_reason;
    if (BC_ELEM_HAS(from->struct_size, bc_case_report, token_agreement)) cr->token_agreement = from->token_agreement;
    if (BC_ELEM_HAS(from->struct_size, bc_case_report, schedule))
        cr->schedule = bc_schedule_copy(&res->schedules[k], from->schedule);
}

