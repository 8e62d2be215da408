/* console_tables.c: the console reporter's final tables (console_tables.h),
 * built into a bc_text at close: the title, the changed backend settings,
 * the case table (what ran, how long, how noisy), the phase table (where
 * the time went, how busy the machine was), the backends' declared metrics,
 * the ranks table of a distributed run, the legend, the unstable footnote
 * and the grouped failure messages. Every number is looked up by field and
 * statistic name, so a host without one shows "-"; every cell is escaped
 * for the terminal (termsafe.h) before the widths are measured.
 */
#define _POSIX_C_SOURCE 200809L
#include "console_tables.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "termsafe.h"

/* A cell holds the widest text a fill writes: "W (LO-HI)" of three int64 values, 62 bytes. */
enum { CELL_LEN = 64, MAX_COLS = 32 };

/* What the tables are drawn from: the run, and when a case counts as unstable. */
typedef struct view {
    const bc_run_report *run;
    double max_cv, max_steal;
} view;

/* The text of one case's cell. */
typedef void (*fill_fn)(char *cell, const view *v, const bc_case_report *cr);

/* One column: its header, whether it holds numbers (right-aligned), and
 * either a fill function or a statistic (stat of field, decimals). */
typedef struct column {
    const char *header;
    int right;
    fill_fn fill;
    const char *field, *stat;
    int decimals;
    int setting; /* > 0: the value of the case's backend setting number setting - 1 (bc_case_n_settings) */
} column;

/* "-" when not measured, else fixed decimals, into cell of size bytes. */
static void fmt_num_in(char *cell, size_t size, double x, int decimals) {
    if (!bc_is_measured(x) || !isfinite(x))
        snprintf(cell, size, "-");
    else
        snprintf(cell, size, "%.*f", decimals, x);
}

/* fmt_num_in into a table cell (CELL_LEN bytes). */
static void fmt_num(char *cell, double x, int decimals) { fmt_num_in(cell, CELL_LEN, x, decimals); }

static void fill_index(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    snprintf(cell, CELL_LEN, "%u", cr->c->index);
}

static void fill_batch(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    snprintf(cell, CELL_LEN, "%u", cr->c->batch_size);
}

static void fill_samples(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    snprintf(cell, CELL_LEN, "%u", cr->c->samples_per_prompt);
}

/* The prompt width that ran ("16"), with the shortest and longest real
 * prompt when they differ from it ("37 (12-37)"); the requested length
 * while nothing ran; "-" when a prompts file decides and nothing ran. */
static void fill_prompt(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    int64_t width = cr->prompt_width_tokens >= 0 ? cr->prompt_width_tokens : (int64_t)cr->c->prompt_length;
    int64_t lo = cr->prompt_min_tokens, hi = cr->prompt_max_tokens;
    if (width <= 0)
        snprintf(cell, CELL_LEN, "-");
    else if (lo >= 0 && hi >= 0 && (lo != width || hi != width))
        snprintf(cell, CELL_LEN, "%lld (%lld-%lld)", (long long)width, (long long)lo, (long long)hi);
    else
        snprintf(cell, CELL_LEN, "%lld", (long long)width);
}

/* The requested length, "128->97" when fewer tokens came back. */
static void fill_response(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    const bc_case *c = cr->c;
    if (cr->returned_response_length >= 0 && cr->returned_response_length != (int64_t)c->response_length)
        snprintf(cell, CELL_LEN, "%u->%lld", c->response_length, (long long)cr->returned_response_length);
    else
        snprintf(cell, CELL_LEN, "%u", c->response_length);
}

static void fill_precision(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    snprintf(cell, CELL_LEN, "%s", cr->c->precision ? cr->c->precision : "?");
}

static void fill_cache(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    snprintf(cell, CELL_LEN, "%s", cr->c->cache_policy ? cr->c->cache_policy : "?");
}

static void fill_status(char *cell, const view *v, const bc_case_report *cr) {
    /* "ok*": taken from the journal of the run being resumed (the legend says so) */
    int resumed = BC_CASE_FIELD(v->run, cr, resumed, 0) != 0;
    snprintf(cell, CELL_LEN, "%s%s", bc_case_status_name(cr->status), resumed ? "*" : "");
}

static void fill_peak(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    fmt_num(cell, cr->peak_memory_mib, 1);
}

static void fill_held(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    fmt_num(cell, bc_bytes_to_mib(cr->held_between_rollouts_bytes), 1);
}

static void fill_iterations(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    snprintf(cell, CELL_LEN, "%u", cr->n_iterations);
}

/* Why the iterations stopped, in a few letters; "-" when not said. */
static void fill_stop(char *cell, const view *v, const bc_case_report *cr) {
    static const char *const label[] = {[BC_STOP_NONE] = "-",       [BC_STOP_FIXED] = "fixed",
                                        [BC_STOP_STABLE] = "stable", [BC_STOP_MAX_ITERATIONS] = "max_iter",
                                        [BC_STOP_MAX_SECONDS] = "max_time", [BC_STOP_INTERRUPTED] = "interrupted",
                                        [BC_STOP_FAILED] = "failed"};
    bc_stop_reason r = BC_CASE_FIELD(v->run, cr, stop_reason, BC_STOP_NONE);
    snprintf(cell, CELL_LEN, "%s", (unsigned)r < sizeof label / sizeof label[0] ? label[r] : "?");
}

/* The coefficient of variation of total_ms in percent, followed by "!" for
 * an unstable case (a space otherwise, so the digits stay aligned). */
static void fill_cv(char *cell, const view *v, const bc_case_report *cr) {
    double cv = bc_case_stat(v->run, cr, bc_run_field_index(v->run, "total_ms"), bc_run_stat_index(v->run, "cv"));
    int unstable = bc_case_unstable(v->run, cr, v->max_cv, v->max_steal);
    if (!isfinite(cv))
        snprintf(cell, CELL_LEN, "-%s", unstable ? "!" : " ");
    else
        snprintf(cell, CELL_LEN, "%.1f%s", 100.0 * cv, unstable ? "!" : " ");
}

/* The 1-minute load average when the case began and ended: "0.52/1.10". */
static void fill_load(char *cell, const view *v, const bc_case_report *cr) {
    char a[CELL_LEN / 2 - 1], b[CELL_LEN / 2 - 1]; /* "a/b" always fits a cell */
    fmt_num_in(a, sizeof a, BC_CASE_FIELD(v->run, cr, load_avg_start, NAN), 2);
    fmt_num_in(b, sizeof b, BC_CASE_FIELD(v->run, cr, load_avg_end, NAN), 2);
    if (strcmp(a, "-") == 0 && strcmp(b, "-") == 0) snprintf(cell, CELL_LEN, "-");
    else snprintf(cell, CELL_LEN, "%s/%s", a, b);
}

static void fill_steal(char *cell, const view *v, const bc_case_report *cr) {
    fmt_num(cell, 100.0 * BC_CASE_FIELD(v->run, cr, cpu_steal_share, NAN), 1);
}

/* What ran and how long it took. */
static void fill_backend(char *cell, const view *v, const bc_case_report *cr) {
    (void)v;
    snprintf(cell, CELL_LEN, "%s", bc_case_backend(cr->c) ? bc_case_backend(cr->c) : "-");
}

/* 1 when the run's cases name more than one backend. */
static int several_backends(const bc_run_report *run) {
    const char *first = NULL;
    for (uint32_t i = 0; i < run->n_cases; i++) {
        const char *b = bc_case_backend(bc_run_case(run, i)->c);
        if (b && !first) first = b;
        else if (b && strcmp(b, first) != 0) return 1;
    }
    return 0;
}

static const column backend_column = {"backend", 0, fill_backend, NULL, NULL, 0, 0};

static const column case_columns[] = {
    {"#", 1, fill_index, NULL, NULL, 0, 0},
    {"batch", 1, fill_batch, NULL, NULL, 0, 0},
    {"x", 1, fill_samples, NULL, NULL, 0, 0},
    {"prompt", 1, fill_prompt, NULL, NULL, 0, 0},
    {"resp", 1, fill_response, NULL, NULL, 0, 0},
    {"precision", 0, fill_precision, NULL, NULL, 0, 0},
    {"cache", 0, fill_cache, NULL, NULL, 0, 0},
    {"status", 0, fill_status, NULL, NULL, 0, 0},
    {"n", 1, fill_iterations, NULL, NULL, 0, 0},
    {"stop", 0, fill_stop, NULL, NULL, 0, 0},
    {"total_ms", 1, NULL, "total_ms", "p50", 2, 0}, /* the median, as HTML and compare */
    {"p95", 1, NULL, "total_ms", "p95", 2, 0},
    {"cv% ", 1, fill_cv, NULL, NULL, 0, 0},
    {"tok/s", 1, NULL, "tokens_per_second", "p50", 1, 0},
    {"peak_MiB", 1, fill_peak, NULL, NULL, 0, 0},
    {"held_MiB", 1, fill_held, NULL, NULL, 0, 0},
};

/* Where the time went: the phases of a rollout (means over iterations). */
static const column phase_columns[] = {
    {"#", 1, fill_index, NULL, NULL, 0, 0},
    {"ttft_ms", 1, NULL, "time_to_first_token_ms", "mean", 2, 0},
    {"ms/tok_p50", 1, NULL, "decode_ms_per_token_p50", "mean", 3, 0},
    {"ms/tok_p95", 1, NULL, "decode_ms_per_token_p95", "mean", 3, 0},
    {"prefill_ms", 1, NULL, "prefill_forward_ms", "mean", 2, 0},
    {"decode_ms", 1, NULL, "decode_forward_ms", "mean", 2, 0},
    {"prefill_tok/s", 1, NULL, "prefill_tokens_per_second", "mean", 1, 0},
    {"decode_tok/s", 1, NULL, "decode_tokens_per_second", "mean", 1, 0},
    {"load", 1, fill_load, NULL, NULL, 0, 0},
    {"steal%", 1, fill_steal, NULL, NULL, 0, 0},
};

/* The per-row latencies (the host's row fields): the mean over the measured
 * iterations of each rollout's percentile over its rows; shown when the run
 * has them. */
static const column row_columns[] = {
    {"#", 1, fill_index, NULL, NULL, 0, 0},
    {"ttft_p50", 1, NULL, "row_ttft_ms_p50", "mean", 2, 0}, {"ttft_p99", 1, NULL, "row_ttft_ms_p99", "mean", 2, 0},
    {"tpot_p50", 1, NULL, "row_tpot_ms_p50", "mean", 3, 0}, {"tpot_p99", 1, NULL, "row_tpot_ms_p99", "mean", 3, 0},
    {"e2e_p50", 1, NULL, "row_e2e_ms_p50", "mean", 2, 0},   {"e2e_p99", 1, NULL, "row_e2e_ms_p99", "mean", 2, 0},
    {"rows/s", 1, NULL, "rows_per_second", "mean", 2, 0},
};

/* The score stage, refit and the RL frameworks' names (a 2.6 host's
 * fields), shown when a case measured any of them. */
static const column rl_columns[] = {
    {"#", 1, fill_index, NULL, NULL, 0, 0},
    {"score_ms", 1, NULL, "score_ms", "mean", 3, 0},
    {"gap_mean", 1, NULL, "logprob_gap_mean", "mean", 5, 0},
    {"gap_max", 1, NULL, "logprob_gap_max", "mean", 5, 0},
    {"kl_k3", 1, NULL, "kl_k3", "mean", 6, 0},
    {"refit_ms", 1, NULL, "refit_ms", "mean", 3, 0},
    {"refit_GB/s", 1, NULL, "refit_gb_per_s", "mean", 2, 0},
    {"step_ms", 1, NULL, "rollout_step_ms", "mean", 3, 0},
    {"response_length/mean", 1, NULL, "response_length/mean", "mean", 1, 0},
    {"clip_ratio", 1, NULL, "response_length/clip_ratio", "mean", 3, 0},
};

/* 1 when some case has a measured value of the field called name. */
static int any_measured(const bc_run_report *run, const char *name) {
    int f = bc_run_field_index(run, name), n = bc_run_stat_index(run, "n");
    for (uint32_t i = 0; f >= 0 && n >= 0 && i < run->n_cases; i++)
        if (bc_case_stat(run, bc_run_case(run, i), f, n) > 0) return 1;
    return 0;
}

/* A distributed case (docs/scale.md); NULL in a single-process run. */
static const bc_case_distributed *case_dist(const view *v, const bc_case_report *cr) {
    return BC_RUN_FIELD(v->run, distributed, NULL) ? BC_CASE_FIELD(v->run, cr, distributed, NULL) : NULL;
}

#define DIST_FILL(name, expr, decimals)                                               \
    static void name(char *cell, const view *v, const bc_case_report *cr) {            \
        const bc_case_distributed *cd = case_dist(v, cr);                              \
        fmt_num(cell, cd ? (expr) : NAN, decimals);                                    \
    }
DIST_FILL(fill_step_tps, cd->step_tokens_per_second, 1)
DIST_FILL(fill_ideal_tps, cd->ideal_tokens_per_second, 1)
DIST_FILL(fill_efficiency, cd->straggler_efficiency, 3)
DIST_FILL(fill_tax, cd->straggler_tax_ms, 2)
DIST_FILL(fill_rank_min, cd->rank_time_min_ms, 2)
DIST_FILL(fill_rank_mean, cd->rank_time_mean_ms, 2)
DIST_FILL(fill_rank_max, cd->rank_time_max_ms, 2)
DIST_FILL(fill_rank_std, cd->rank_time_std_ms, 2)
DIST_FILL(fill_peak_max, cd->peak_memory_max_mib, 1)
DIST_FILL(fill_peak_sum, cd->peak_memory_sum_mib, 1)

/* replicate: "rank@host" of the slowest rank; shard: of the rank that ran it */
static void fill_rank(char *cell, const view *v, const bc_case_report *cr) {
    const bc_case_distributed *cd = case_dist(v, cr);
    int32_t rank = !cd ? -1 : cd->rank >= 0 ? cd->rank : cd->slowest_rank;
    const char *host = !cd ? NULL : cd->rank >= 0 ? cd->host : cd->slowest_host;
    if (rank < 0) snprintf(cell, CELL_LEN, "-");
    else snprintf(cell, CELL_LEN, "%d@%.30s", (int)rank, host ? host : "?");
}

static void fill_forced(char *cell, const view *v, const bc_case_report *cr) {
    const bc_case_distributed *cd = case_dist(v, cr);
    snprintf(cell, CELL_LEN, "%s", !cd || cd->full_length < 0 ? "-" : cd->full_length ? "yes" : "no");
}

/* How the ranks of a replicate run did (shard: where each case ran). */
static const column replicate_columns[] = {
    {"#", 1, fill_index, NULL, NULL, 0, 0},
    {"step_tok/s", 1, fill_step_tps, NULL, NULL, 0, 0},
    {"ideal_tok/s", 1, fill_ideal_tps, NULL, NULL, 0, 0},
    {"strag_eff", 1, fill_efficiency, NULL, NULL, 0, 0},
    {"strag_tax_ms", 1, fill_tax, NULL, NULL, 0, 0},
    {"rank_min", 1, fill_rank_min, NULL, NULL, 0, 0},
    {"rank_mean", 1, fill_rank_mean, NULL, NULL, 0, 0},
    {"rank_max", 1, fill_rank_max, NULL, NULL, 0, 0},
    {"rank_std", 1, fill_rank_std, NULL, NULL, 0, 0},
    {"slowest", 0, fill_rank, NULL, NULL, 0, 0},
    {"peak_max", 1, fill_peak_max, NULL, NULL, 0, 0},
    {"peak_sum", 1, fill_peak_sum, NULL, NULL, 0, 0},
    {"forced", 0, fill_forced, NULL, NULL, 0, 0},
};
static const column shard_columns[] = {
    {"#", 1, fill_index, NULL, NULL, 0, 0},
    {"ran_on", 0, fill_rank, NULL, NULL, 0, 0},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(N_OF(case_columns) < MAX_COLS && N_OF(phase_columns) <= MAX_COLS &&
                   N_OF(replicate_columns) <= MAX_COLS,
               "raise MAX_COLS");

/* One case's cell of column col. */
static void fill_cell(char *cell, const column *col, const view *v, const bc_case_report *cr) {
    if (col->setting > 0) {
        uint32_t i = (uint32_t)col->setting - 1;
        snprintf(cell, CELL_LEN, "%s", i < bc_case_n_settings(cr->c) ? cr->c->setting_values[i] : "-");
        return;
    }
    if (col->fill) {
        col->fill(cell, v, cr);
        return;
    }
    int f = bc_run_field_index(v->run, col->field), s = bc_run_stat_index(v->run, col->stat);
    if (s < 0 && strcmp(col->stat, "p50") == 0) s = bc_run_stat_index(v->run, "mean"); /* a host without medians */
    fmt_num(cell, bc_case_stat(v->run, cr, f, s), col->decimals);
}

static void pad(bc_text *t, size_t n) {
    for (size_t i = 0; i < n; i++) bc_text_put(t, " ", 1);
}

/* One line of a table: cells[k] in columns of width[k], two spaces apart. */
static void put_row(bc_text *t, const column *cols, size_t n_cols, const char *cells, const size_t *width) {
    for (size_t k = 0; k < n_cols; k++) {
        const char *cell = cells + k * CELL_LEN;
        size_t len = strlen(cell);
        if (k > 0) bc_text_put(t, "  ", 2);
        if (cols[k].right) pad(t, width[k] - len);
        bc_text_put(t, cell, len);
        if (!cols[k].right && k + 1 < n_cols) pad(t, width[k] - len);
    }
    bc_text_put(t, "\n", 1);
}

/* A table of every case (requested order): header, a rule of dashes as
 * wide as the table, one aligned row per case. */
static bc_status put_table(bc_text *t, const view *v, const column *cols, size_t n_cols) {
    const bc_run_report *run = v->run;
    size_t n_rows = (size_t)run->n_cases + 1;                  /* the header, then the cases */
    char *cells = calloc(n_rows * n_cols, CELL_LEN);           /* owned here */
    if (!cells) return BC_ERR_NOMEM;
    for (size_t k = 0; k < n_cols; k++) snprintf(cells + k * CELL_LEN, CELL_LEN, "%s", cols[k].header);
    for (uint32_t i = 0; i < run->n_cases; i++)
        for (size_t k = 0; k < n_cols; k++)
            fill_cell(cells + ((i + 1) * n_cols + k) * CELL_LEN, &cols[k], v, bc_run_case(run, i));
    /* a backend name, hostname or setting value from a file or a peer may
     * hold terminal controls: escaped before the widths are measured */
    for (size_t c = n_cols; c < n_rows * n_cols; c++) {
        char safe[CELL_LEN];
        memcpy(cells + c * CELL_LEN, bc_terminal_safe(safe, sizeof safe, cells + c * CELL_LEN), CELL_LEN);
    }
    size_t width[MAX_COLS] = {0}, total = 0;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t k = 0; k < n_cols; k++) {
            size_t len = strlen(cells + (r * n_cols + k) * CELL_LEN);
            if (len > width[k]) width[k] = len;
        }
    for (size_t k = 0; k < n_cols; k++) total += width[k] + (k > 0 ? 2 : 0);
    put_row(t, cols, n_cols, cells, width);
    for (size_t i = 0; i < total; i++) bc_text_put(t, "-", 1);
    bc_text_put(t, "\n", 1);
    for (size_t r = 1; r < n_rows; r++) put_row(t, cols, n_cols, cells + r * n_cols * CELL_LEN, width);
    free(cells);
    return BC_OK;
}

/* Same status and message: such cases share one line under the table. */
static int same_outcome(const bc_case_report *a, const bc_case_report *b) {
    return a->status == b->status && a->message && b->message && strcmp(a->message, b->message) == 0;
}

/* One line per distinct (status, message) of the cases that did not finish
 * ok: "case 3 failed: ..." or "cases 0-2, 5 skipped: ...". */
static void put_outcomes(bc_text *t, const bc_run_report *run) {
    for (uint32_t i = 0; i < run->n_cases; i++) {
        const bc_case_report *cr = bc_run_case(run, i);
        if (cr->status == BC_CASE_OK || !cr->message || !*cr->message) continue;
        int seen = 0; /* an earlier case with this outcome already printed the line */
        for (uint32_t j = 0; j < i && !seen; j++) seen = same_outcome(bc_run_case(run, j), cr);
        if (seen) continue;
        uint32_t n_same = 0;
        for (uint32_t j = i; j < run->n_cases; j++) n_same += same_outcome(bc_run_case(run, j), cr);
        bc_text_puts(t, n_same > 1 ? "cases " : "case ");
        int listed = 0;
        for (uint32_t j = i; j < run->n_cases; j++) {
            if (!same_outcome(bc_run_case(run, j), cr)) continue;
            uint32_t end = j; /* a run of consecutive cases with this outcome: j..end */
            while (end + 1 < run->n_cases && same_outcome(bc_run_case(run, end + 1), cr) &&
                   bc_run_case(run, end + 1)->c->index == bc_run_case(run, end)->c->index + 1)
                end++; /* a selection (--cases) may leave gaps in the indexes */
            bc_text_printf(t, "%s%u", listed ? ", " : "", bc_run_case(run, j)->c->index);
            if (end > j) bc_text_printf(t, "%s%u", end > j + 1 ? "-" : ", ", bc_run_case(run, end)->c->index);
            listed = 1;
            j = end;
        }
        bc_text_printf(t, " %s: %s\n", bc_case_status_name(cr->status), cr->message);
    }
}

/* One line naming the backend settings that differ from their defaults
 * (e.g. "backend settings: shared_prefill=true threads=2"); nothing when all
 * are defaults or the host passes none. */
static void put_changed_settings(bc_text *t, const bc_run_report *run) {
    if (!run->backend_settings || !run->backend_values || !run->backend_setting_size) return;
    int any = 0;
    for (uint32_t i = 0; i < run->n_backend_settings && i < run->backend_values->count; i++) {
        const bc_setting_desc *d = bc_run_backend_setting(run, i);
        const bc_setting_value *v = bc_setting_at(run->backend_values, i);
        const char *prefix = any ? " " : "backend settings: ";
        switch (d->type) {
        case BC_SETTING_INT:
            if (v->i != d->default_int) bc_text_printf(t, "%s%s=%lld", prefix, d->name, (long long)v->i), any = 1;
            break;
        case BC_SETTING_BOOL:
            if ((v->i != 0) != (d->default_int != 0))
                bc_text_printf(t, "%s%s=%s", prefix, d->name, v->i ? "true" : "false"), any = 1;
            break;
        case BC_SETTING_FLOAT:
            if (v->f != d->default_float) bc_text_printf(t, "%s%s=%g", prefix, d->name, v->f), any = 1;
            break;
        default:
            if (v->s && strcmp(v->s, d->default_string ? d->default_string : "") != 0)
                bc_text_printf(t, "%s%s=\"%s\"", prefix, d->name, v->s), any = 1;
            break;
        }
    }
    if (any) bc_text_put(t, "\n", 1);
}

/* "3 measured iterations", or the adaptive rule: "6 to 50 measured
 * iterations (until the median total_ms is within +-2%)". */
static void put_iterations(bc_text *t, const bc_run_report *run) {
    uint32_t lo = BC_RUN_FIELD(run, min_iterations, run->iterations);
    uint32_t hi = BC_RUN_FIELD(run, max_iterations, run->iterations);
    double target = BC_RUN_FIELD(run, target_rel_ci, NAN), secs = BC_RUN_FIELD(run, max_seconds_per_case, NAN);
    if (lo != hi && lo > 0)
        bc_text_printf(t, "%u to %u measured iterations", lo, hi);
    else
        bc_text_printf(t, "%u measured iterations", hi);
    if (isfinite(target)) bc_text_printf(t, " (until the median total_ms is within +-%g%%)", 100.0 * target);
    if (isfinite(secs)) bc_text_printf(t, ", at most %g s", secs);
}

static void put_title(bc_text *t, const bc_run_report *run) {
    const char *model = BC_RUN_BACKEND(run, model, NULL), *device = BC_RUN_BACKEND(run, device, NULL);
    bc_text_printf(t, "benchctl %s: %s on %s, %u warmup + ", run->benchctl_version ? run->benchctl_version : "",
                   model ? model : "?", device ? device : "?", run->warmup);
    put_iterations(t, run);
    bc_text_puts(t, " per case\n");
    const bc_distributed *d = BC_RUN_FIELD(run, distributed, NULL);
    if (d)
        bc_text_printf(t, "ranks: %u (%s, through %s)%s\n", d->world_size, d->mode ? d->mode : "?",
                       d->comm ? d->comm : "?",
                       d->mode && strcmp(d->mode, "shard") == 0
                           ? "; each case ran on one rank, valid when the ranks share nothing"
                           : "; the first tables are rank 0's figures, the ranks table every rank's and the job's");
    const char *cases = BC_RUN_FIELD(run, selected_cases, NULL), *only = BC_RUN_FIELD(run, selected_only, NULL);
    if (cases || only)
        bc_text_printf(t, "selected: %u of %u cases (%s%s%s%s%s)\n", run->n_cases,
                       BC_RUN_FIELD(run, n_matrix_cases, run->n_cases), cases ? "--cases " : "", cases ? cases : "",
                       cases && only ? " " : "", only ? "--only " : "", only ? only : "");
}

/* The case counts and what the columns mean. */
static void put_legend(bc_text *t, const bc_run_report *run) {
    bc_case_counts n = bc_count_cases(run);
    bc_text_printf(t, "%u case%s: %u ok, %u failed, %u skipped.\n", run->n_cases, run->n_cases == 1 ? "" : "s", n.ok,
                   n.failed, n.skipped);
    bc_text_puts(t, "total_ms: one rollout, tok/s: generated tokens per second: medians over the measured iterations "
                    "(p95, cv%: total_ms's spread);\n");
    bc_text_puts(t, "the other figures are means. peak_MiB: peak memory; held_MiB: memory held between rollouts; "
                    "ttft_ms: time to first token;\n");
    bc_text_puts(t, "ms/tok_p50/p95: a rollout's median and p95 decode step; prefill/decode: forward time and tokens "
                    "per second of each phase;\n");
    bc_text_puts(t, "n, stop: measured iterations and why they stopped; cv%: stddev / mean of total_ms; load: 1-minute "
                    "load average at the case's start/end;\n");
    bc_text_puts(t, "steal%: CPU time the hypervisor took while the case ran.\n");
    uint32_t n_resumed = 0;
    for (uint32_t i = 0; i < run->n_cases; i++) n_resumed += BC_CASE_FIELD(run, bc_run_case(run, i), resumed, 0) != 0;
    if (n_resumed)
        bc_text_printf(t, "ok*: %u case%s taken from the journal of the resumed run (measured then, under that run's "
                          "load).\n", n_resumed, n_resumed == 1 ? "" : "s");
    const bc_distributed *d = BC_RUN_FIELD(run, distributed, NULL);
    if (d && !(d->mode && strcmp(d->mode, "shard") == 0))
        bc_text_puts(t, "Ranks (docs/scale.md): the tables marked rank 0 are rank 0's own figures (its tok/s: the median "
                        "tokens_per_second of its generate stage,\nso it differs from the JSON's "
                        "rank_tokens_per_second[0], rank 0's tokens over its total_ms);\n"
                        "step_tok/s: all ranks' tokens / the slowest rank's time per step; "
                        "ideal_tok/s: sum of the ranks' own rates;\nstrag_eff: mean / max rank time; strag_tax_ms: "
                        "max - median rank time; rank_*: rank times in ms; slowest: rank@host; peak_*: MiB over "
                        "ranks;\nforced: every rank returned response_length tokens (no early stop).\n");
}

/* The footnote of the "!" mark, naming the unstable cases; nothing when
 * none is. */
static void put_unstable(bc_text *t, const view *v) {
    const bc_run_report *run = v->run;
    uint32_t n = 0;
    for (uint32_t i = 0; i < run->n_cases; i++)
        n += (uint32_t)bc_case_unstable(run, bc_run_case(run, i), v->max_cv, v->max_steal);
    if (n == 0) return;
    bc_text_printf(t, "! unstable: the cv of total_ms is above %g%% or the CPU steal above %g%%, so the numbers are "
                      "noisy (a busy or shared machine?):\n  case%s",
                   100.0 * v->max_cv, 100.0 * v->max_steal, n == 1 ? "" : "s");
    uint32_t listed = 0;
    for (uint32_t i = 0; i < run->n_cases; i++)
        if (bc_case_unstable(run, bc_run_case(run, i), v->max_cv, v->max_steal))
            bc_text_printf(t, "%s%u", listed++ ? "," : " ", bc_run_case(run, i)->c->index);
    bc_text_puts(t, "; rerun them on a quiet machine (benchctl run FILE --cases");
    listed = 0;
    for (uint32_t i = 0; i < run->n_cases; i++)
        if (bc_case_unstable(run, bc_run_case(run, i), v->max_cv, v->max_steal))
            bc_text_printf(t, "%s%u", listed++ ? "," : " ", bc_run_case(run, i)->c->index);
    bc_text_puts(t, ") or with more iterations.\n");
}

/* The backends' declared metrics (a 2.4 host's fields past n_host_fields),
 * a column each: the mean over the measured iterations, headed "name
 * (unit)"; nothing when there are none. */
static bc_status put_declared(bc_text *t, const view *v) {
    const bc_run_report *run = v->run;
    uint32_t first = BC_RUN_FIELD(run, n_host_fields, run->n_fields);
    if (first >= run->n_fields || !bc_run_field_desc(run, first)) return BC_OK;
    column cols[MAX_COLS];
    char headers[MAX_COLS][CELL_LEN];
    size_t n_cols = 0;
    cols[n_cols++] = case_columns[0];
    for (uint32_t f = first; f < run->n_fields && n_cols < MAX_COLS; f++, n_cols++) {
        snprintf(headers[n_cols], CELL_LEN, "%s (%s)", run->field_names[f], bc_run_field_desc(run, f)->unit);
        cols[n_cols] = (column){.header = headers[n_cols], .right = 1, .field = run->field_names[f], .stat = "mean",
                                .decimals = 3};
    }
    bc_text_put(t, "\n", 1);
    return put_table(t, v, cols, n_cols);
}

bc_status console_build_report(bc_text *t, const bc_run_report *run, double max_cv, double max_steal) {
    const view view_ = {.run = run, .max_cv = max_cv, .max_steal = max_steal};
    const view *v = &view_;
    put_title(t, v->run);
    put_changed_settings(t, v->run);
    /* with several backends, the case table names each case's after its # */
    column cols[MAX_COLS];
    size_t n_cols = 0;
    /* and then the backend settings the matrix varies, each in its column */
    const bc_case *c0 = v->run->n_cases ? bc_run_case(v->run, 0)->c : NULL;
    uint32_t n_settings = c0 ? bc_case_n_settings(c0) : 0;
    for (size_t k = 0; k < N_OF(case_columns); k++) {
        cols[n_cols++] = case_columns[k];
        if (k == 0 && several_backends(v->run)) cols[n_cols++] = backend_column;
        for (uint32_t i = 0; k == 0 && i < n_settings && n_cols + N_OF(case_columns) < MAX_COLS; i++)
            cols[n_cols++] = (column){.header = c0->setting_names[i], .setting = (int)i + 1};
    }
    const bc_distributed *dist = BC_RUN_FIELD(v->run, distributed, NULL);
    int replicate = dist && !(dist->mode && strcmp(dist->mode, "shard") == 0);
    /* replicate: every rank ran every case; these figures are rank 0's */
    if (replicate) bc_text_puts(t, "rank 0:\n");
    if (put_table(t, v, cols, n_cols) != BC_OK) return BC_ERR_NOMEM;
    bc_text_put(t, "\n", 1);
    if (replicate) bc_text_puts(t, "rank 0:\n");
    if (put_table(t, v, phase_columns, N_OF(phase_columns)) != BC_OK) return BC_ERR_NOMEM;
    if (bc_run_field_index(v->run, "row_ttft_ms_p50") >= 0 &&
        (bc_text_put(t, "\n", 1), replicate ? bc_text_puts(t, "rank 0:\n") : (void)0,
         put_table(t, v, row_columns, N_OF(row_columns))) != BC_OK)
        return BC_ERR_NOMEM;
    int rl = 0;
    for (size_t k = 1; k < N_OF(rl_columns); k++) rl |= any_measured(v->run, rl_columns[k].field);
    if (rl && (bc_text_put(t, "\n", 1), replicate ? bc_text_puts(t, "rank 0:\n") : (void)0,
               put_table(t, v, rl_columns, N_OF(rl_columns))) != BC_OK)
        return BC_ERR_NOMEM;
    if (put_declared(t, v) != BC_OK) return BC_ERR_NOMEM;
    const bc_distributed *d = BC_RUN_FIELD(v->run, distributed, NULL);
    if (d) {
        int shard = d->mode && strcmp(d->mode, "shard") == 0;
        bc_text_put(t, "\n", 1);
        if (!shard) bc_text_puts(t, "every rank, and the job:\n");
        if ((shard ? put_table(t, v, shard_columns, N_OF(shard_columns))
                   : put_table(t, v, replicate_columns, N_OF(replicate_columns))) != BC_OK)
            return BC_ERR_NOMEM;
    }
    put_legend(t, v->run);
    put_unstable(t, v);
    put_outcomes(t, v->run);
    return t->failed ? BC_ERR_NOMEM : BC_OK;
}

