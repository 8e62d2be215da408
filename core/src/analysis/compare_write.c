/* compare_write.c: `benchctl compare`'s text outputs: the console table,
 * the GitHub markdown table and the JSON document, each from the pairs
 * compare.c built (compare.h). The HTML forest plot is compare_html.c. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compare.h"

/* -------------------------------------------------------------- output */

/* The case label of a row: from A's case, or B's when A has none, without
 * the axis the pair was made across. */
static void row_label(const bc_cmp_pair *pair, const bc_cmp_row *r, char *buf, size_t cap) {
    bc_cmp_case_label_without(r->ca ? r->ca : r->cb, pair->axis, buf, cap);
}

/* A number in at most 7 characters where it can: 12345.6, 0.110961, 1.2e+06. */
static void fmt_num(char *buf, size_t cap, double v) {
    if (!isfinite(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%.6g", v);
}

static void fmt_p(char *buf, size_t cap, double p) {
    if (!isfinite(p)) snprintf(buf, cap, "-");
    else if (p < 1e-4) snprintf(buf, cap, "%.1e", p);
    else snprintf(buf, cap, "%.4f", p);
}

static void fmt_n(char *buf, size_t cap, const bc_cmp_row *r) {
    if (r->verdict == BC_VERDICT_FAILED || (r->verdict == BC_VERDICT_MISSING && (!r->ca || !r->cb)))
        snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%zu/%zu", r->n_a, r->n_b);
}

/* One row's cells, as text. */
typedef struct row_cells {
    char label[96], n[24], a[24], b[24], ratio[24], change[40], interval[64], p[24];
} row_cells;

static void cells_of(const bc_cmp_pair *pair, const bc_cmp_row *r, row_cells *c) {
    const char *unit = bc_cmp_pair_unit(pair, r->metric);
    row_label(pair, r, c->label, sizeof c->label);
    fmt_n(c->n, sizeof c->n, r);
    fmt_num(c->a, sizeof c->a, r->median_a);
    fmt_num(c->b, sizeof c->b, r->median_b);
    if (isfinite(r->ratio)) snprintf(c->ratio, sizeof c->ratio, "%.3f", r->ratio);
    else snprintf(c->ratio, sizeof c->ratio, "-");
    bc_cmp_fmt_change(c->change, sizeof c->change, r->change, r->better, unit);
    bc_cmp_fmt_interval(c->interval, sizeof c->interval, r->change_lo, r->change_hi, r->better, unit);
    fmt_p(c->p, sizeof c->p, r->p);
}

/* "A: base.json: backend testbackend, model x, device cpu, 4 cases, 8 iterations, git abc":
 * one side of the pair (b: B), named and counted as that side's cases. */
static void describe_run(char *buf, size_t cap, const bc_cmp_pair *pair, int b) {
    static const char *const formats[] = {"?", "benchctl JSON", "benchctl journal", "seed JSON"};
    const bc_runfile *rf = b ? pair->b : pair->a;
    size_t n = b ? pair->n_cases_b : pair->n_cases_a;
    snprintf(buf, cap, "%s (%s%s): backend %s, model %s, device %s, %zu case%s, %u iterations%s%s%s%s",
             b ? pair->name_b : pair->name_a, formats[(unsigned)rf->format < 4 ? rf->format : 0],
             rf->format == BC_RUNFILE_JOURNAL && !rf->complete ? ", unfinished" : "",
             b ? pair->backend_b : pair->backend_a, rf->model ? rf->model : "?", rf->device ? rf->device : "?", n,
             n == 1 ? "" : "s",
             rf->iterations, rf->git_commit ? ", git " : "", rf->git_commit ? rf->git_commit : "",
             rf->start_time ? ", " : "", rf->start_time ? rf->start_time : "");
}

/* The verdict counts that are not 0: "3 WORSE, 1 NOISE". */
static void fmt_counts(char *buf, size_t cap, const bc_cmp_summary *s) {
    size_t used = 0;
    buf[0] = '\0';
    for (int v = 0; v < BC_N_VERDICTS; v++)
        if (s->counts[v] && used < cap)
            used += (size_t)snprintf(buf + used, cap - used, "%s%zu %s", used ? ", " : "", s->counts[v],
                                     bc_verdict_name((bc_verdict)v));
    if (!used) snprintf(buf, cap, "no rows");
}

static size_t cases_of(const bc_cmp_pair *pair) { return pair->n_matched + pair->n_only_a + pair->n_only_b; }

/* The lines every text format has around its table, each passed to line()
 * without a line end; bullet is what starts a list item. */
typedef void (*line_fn)(FILE *out, const char *text);

static void env_lines(FILE *out, const bc_cmp_pair *pair, line_fn line) {
    char text[1024];
    if (pair->axis) {
        snprintf(text, sizeof text, "paired on every axis but %s: %s %s (A) against %s (B)", pair->axis, pair->axis,
                 pair->axis_a, pair->axis_b);
        line(out, text);
    }
    if (pair->n_env_refusing == 0) {
        line(out, "environment: the same in every field both files state");
    }
    for (size_t i = 0; i < pair->n_env; i++) {
        const bc_cmp_env_diff *d = &pair->env[i];
        if (d->refuses)
            snprintf(text, sizeof text, "environment differs (--ignore-env): %s: %s (A) vs %s (B)", d->field, d->a,
                     d->b);
        else if (d->a[0] && d->b[0])
            snprintf(text, sizeof text, "differs (informational): %s: %s (A) vs %s (B)", d->field, d->a, d->b);
        else
            snprintf(text, sizeof text, "not compared, %s does not say: %s (%s: %s)", d->a[0] ? "B" : "A", d->field,
                     d->a[0] ? "A" : "B", d->a[0] ? d->a : d->b);
        line(out, text);
    }
    if (pair->n_settings) {
        size_t used = (size_t)snprintf(text, sizeof text, "what changed between the runs (backend settings):");
        for (size_t i = 0; i < pair->n_settings && used < sizeof text; i++) {
            const bc_cmp_setting_change *s = &pair->settings[i];
            used += (size_t)snprintf(text + used, sizeof text - used, "%s %s: %s -> %s", i ? ";" : "", s->name,
                                     s->a ? s->a : "(not set)", s->b ? s->b : "(not set)");
        }
        line(out, text);
    }
    if (pair->duplicate_key_warning[0]) line(out, pair->duplicate_key_warning);
}

static void console_line(FILE *out, const char *text) { fprintf(out, "%s\n", text); }

/* The column widths of the console table. */
typedef struct widths {
    int label, metric, n, a, b, ratio, change, interval, p;
} widths;

static int max_i(int x, int y) { return x > y ? x : y; }

static widths table_widths(const bc_cmp_pair *pair) {
    widths w = {4, 6, 3, 8, 8, 5, 6, 12, 6};
    for (size_t i = 0; i < pair->n_rows; i++) {
        row_cells c;
        cells_of(pair, &pair->rows[i], &c);
        w.label = max_i(w.label, (int)strlen(c.label));
        w.metric = max_i(w.metric, (int)strlen(pair->metrics[pair->rows[i].metric]));
        w.n = max_i(w.n, (int)strlen(c.n));
        w.a = max_i(w.a, (int)strlen(c.a));
        w.b = max_i(w.b, (int)strlen(c.b));
        w.ratio = max_i(w.ratio, (int)strlen(c.ratio));
        w.change = max_i(w.change, (int)strlen(c.change));
        w.interval = max_i(w.interval, (int)strlen(c.interval));
        w.p = max_i(w.p, (int)strlen(c.p));
    }
    return w;
}

static void legend_lines(FILE *out, const bc_cmp_options *opt, line_fn line) {
    char text[640];
    snprintf(text, sizeof text,
              "A, B: medians over the measured iterations; change: the factor by which B is better or worse than A "
             "(B/A where higher is better, A/B where lower is, B/A higher or lower where neither: the metric's own "
             "descriptor), the same either way round");
    line(out, text);
    snprintf(text, sizeof text,
             "interval: %g%% percentile bootstrap of the ratio of medians (%u resamples, seed %llu); p: two-sided "
             "Mann-Whitney U",
             100.0 * opt->level, opt->resamples, (unsigned long long)opt->seed);
    line(out, text);
    snprintf(text, sizeof text,
             "BETTER/WORSE: p < %g and the whole interval beyond a factor of %g; SAME: the whole interval within "
             "a factor of %g; UNDERPOWERED: too few iterations to reach p < %g; NOISE: neither",
             opt->alpha, 1 + opt->threshold, 1 + opt->threshold, opt->alpha);
    line(out, text);
}

void bc_cmp_write_console(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt) {
    char text[1024];
    for (size_t k = 0; k < n_pairs; k++) {
        const bc_cmp_pair *pair = &pairs[k];
        if (k) fputc('\n', out);
        describe_run(text, sizeof text, pair, 0);
        fprintf(out, "A: %s\n", text);
        describe_run(text, sizeof text, pair, 1);
        fprintf(out, "B: %s\n", text);
        env_lines(out, pair, console_line);
        fputc('\n', out);
        widths w = table_widths(pair);
        fprintf(out, "%-*s  %-*s  %*s  %*s  %*s  %*s  %*s  %-*s  %*s  %s\n", w.label, "case", w.metric, "metric", w.n,
                "n", w.a, "A", w.b, "B", w.ratio, "B/A", w.change, "change", w.interval, "interval", w.p, "p",
                "verdict");
        int total = w.label + w.metric + w.n + w.a + w.b + w.ratio + w.change + w.interval + w.p + 2 * 9 + 12;
        for (int i = 0; i < total; i++) fputc('-', out);
        fputc('\n', out);
        for (size_t i = 0; i < pair->n_rows; i++) {
            const bc_cmp_row *r = &pair->rows[i];
            row_cells c;
            cells_of(pair, r, &c);
            fprintf(out, "%-*s  %-*s  %*s  %*s  %*s  %*s  %*s  %-*s  %*s  %s%s%s\n", w.label, c.label, w.metric,
                    pair->metrics[r->metric], w.n, c.n, w.a, c.a, w.b, c.b, w.ratio, c.ratio, w.change, c.change,
                    w.interval, c.interval, w.p, c.p, bc_verdict_name(r->verdict), r->note[0] ? "  " : "", r->note);
        }
        fputc('\n', out);
        fprintf(out, "%zu case%s: %zu matched, %zu only in A, %zu only in B\n", cases_of(pair),
                cases_of(pair) == 1 ? "" : "s", pair->n_matched, pair->n_only_a, pair->n_only_b);
        for (size_t m = 0; m < pair->n_metrics; m++) {
            const bc_cmp_summary *s = &pair->summary[m];
            char counts[256], ratio[32], change[40];
            fmt_counts(counts, sizeof counts, s);
            fmt_num(ratio, sizeof ratio, s->geomean_ratio);
            bc_cmp_fmt_change(change, sizeof change, s->geomean_change, s->better, bc_cmp_pair_unit(pair, m));
            fprintf(out, "%s (%s is better): %s; geometric mean of B/A %s (%s)\n", pair->metrics[m],
                    bc_metric_better_name(s->better), counts, ratio, change);
        }
    }
    fputc('\n', out);
    legend_lines(out, opt, console_line);
}

/* ------------------------------------------------------------ markdown */

static void md_bullet(FILE *out, const char *text) {
    fputs("- ", out);
    for (const char *p = text; *p; p++) {
        if (strchr("|*`<[]\\", *p)) fputc('\\', out); /* GitHub leaves intraword _ alone */
        fputc(*p, out);
    }
    fputc('\n', out);
}

/* A table cell: '|' escaped so it cannot end the cell. */
static void md_cell(FILE *out, const char *text) {
    fputs(" ", out);
    for (const char *p = text; *p; p++) {
        if (*p == '|') fputc('\\', out);
        fputc(*p, out);
    }
    fputs(" |", out);
}

void bc_cmp_write_markdown(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt) {
    char text[1024];
    for (size_t k = 0; k < n_pairs; k++) {
        const bc_cmp_pair *pair = &pairs[k];
        fprintf(out, "%s### `", k ? "\n" : "");
        for (const char *p = pair->name_b; *p; p++) fputc(*p == '`' ? '\'' : *p, out);
        fputs("` against `", out);
        for (const char *p = pair->name_a; *p; p++) fputc(*p == '`' ? '\'' : *p, out);
        fputs("`\n\n", out);
        describe_run(text, sizeof text, pair, 0);
        char line[1100];
        snprintf(line, sizeof line, "A: %s", text);
        md_bullet(out, line);
        describe_run(text, sizeof text, pair, 1);
        snprintf(line, sizeof line, "B: %s", text);
        md_bullet(out, line);
        env_lines(out, pair, md_bullet);
        fputs("\n| case | metric | n | A | B | B/A | change | interval | p | verdict |\n"
              "|---|---|--:|--:|--:|--:|--:|:-:|--:|---|\n",
              out);
        for (size_t i = 0; i < pair->n_rows; i++) {
            const bc_cmp_row *r = &pair->rows[i];
            row_cells c;
            cells_of(pair, r, &c);
            fputc('|', out);
            md_cell(out, c.label);
            md_cell(out, pair->metrics[r->metric]);
            md_cell(out, c.n);
            md_cell(out, c.a);
            md_cell(out, c.b);
            md_cell(out, c.ratio);
            md_cell(out, c.change);
            md_cell(out, c.interval);
            md_cell(out, c.p);
            const char *bold = r->verdict == BC_VERDICT_WORSE || r->verdict == BC_VERDICT_BETTER ? "**" : "";
            snprintf(text, sizeof text, "%s%s%s%s%s", bold, bc_verdict_name(r->verdict), bold, r->note[0] ? " " : "",
                     r->note);
            md_cell(out, text);
            fputc('\n', out);
        }
        fprintf(out, "\n%zu case%s: %zu matched, %zu only in A, %zu only in B.\n\n", cases_of(pair),
                cases_of(pair) == 1 ? "" : "s", pair->n_matched, pair->n_only_a, pair->n_only_b);
        for (size_t m = 0; m < pair->n_metrics; m++) {
            const bc_cmp_summary *s = &pair->summary[m];
            char counts[256], ratio[32], change[40];
            fmt_counts(counts, sizeof counts, s);
            fmt_num(ratio, sizeof ratio, s->geomean_ratio);
            bc_cmp_fmt_change(change, sizeof change, s->geomean_change, s->better, bc_cmp_pair_unit(pair, m));
            fprintf(out, "- **%s** (%s is better): %s; geometric mean of B/A %s (%s)\n", pair->metrics[m],
                    bc_metric_better_name(s->better), counts, ratio, change);
        }
    }
    fputc('\n', out);
    legend_lines(out, opt, md_bullet);
}

/* ---------------------------------------------------------------- JSON */

/* A number, or null when it is not finite (JSON has no NaN). */
static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *jstr_or_null(const char *s) { return s ? json_string(s) : json_null(); }

/* One side of the pair (b: B): named, its backend and its cases as that side's. */
static json_t *json_run(const bc_cmp_pair *pair, int b) {
    static const char *const formats[] = {"?", "json", "journal", "seed_json"};
    const bc_runfile *rf = b ? pair->b : pair->a;
    json_t *run = json_pack("{s:s, s:s, s:s, s:b, s:s, s:o, s:o, s:o, s:I, s:i}", "path", b ? pair->name_b : pair->name_a,
                            "file", rf->path, "format", formats[(unsigned)rf->format < 4 ? rf->format : 0], "complete",
                            rf->complete, "backend", b ? pair->backend_b : pair->backend_a, "model",
                            jstr_or_null(rf->model), "git_commit", jstr_or_null(rf->git_commit), "start_time",
                            jstr_or_null(rf->start_time), "n_cases", (json_int_t)(b ? pair->n_cases_b : pair->n_cases_a),
                            "iterations", (int)rf->iterations);
    if (run && pair->axis) json_object_set_new(run, "axis_values", json_string(b ? pair->axis_b : pair->axis_a));
    return run;
}

static json_t *json_case_ref(const bc_runfile_case *c) {
    if (!c) return json_null();
    return json_pack("{s:i, s:s}", "index", (int)c->index, "status", bc_cmp_status_word(c->status));
}

static json_t *json_pair(const bc_cmp_pair *pair) {
    json_t *env = json_array(), *settings = json_array(), *rows = json_array(), *summary = json_object();
    for (size_t i = 0; i < pair->n_env; i++) {
        const bc_cmp_env_diff *d = &pair->env[i];
        json_array_append_new(env, json_pack("{s:s, s:o, s:o, s:b}", "field", d->field, "a",
                                             d->a[0] ? json_string(d->a) : json_null(), "b",
                                             d->b[0] ? json_string(d->b) : json_null(), "refuses", d->refuses));
    }
    for (size_t i = 0; i < pair->n_settings; i++) {
        const bc_cmp_setting_change *s = &pair->settings[i];
        json_array_append_new(settings, json_pack("{s:s, s:o, s:o}", "name", s->name, "a", jstr_or_null(s->a), "b",
                                                  jstr_or_null(s->b)));
    }
    for (size_t i = 0; i < pair->n_rows; i++) {
        const bc_cmp_row *r = &pair->rows[i];
        char label[96], change[40], interval[64];
        const char *unit = bc_cmp_pair_unit(pair, r->metric);
        row_label(pair, r, label, sizeof label);
        bc_cmp_fmt_change(change, sizeof change, r->change, r->better, unit);
        bc_cmp_fmt_interval(interval, sizeof interval, r->change_lo, r->change_hi, r->better, unit);
        json_t *row = json_pack("{s:s, s:s, s:o, s:o, s:s, s:b, s:I, s:I, s:o, s:o}", "key", r->key, "label", label,
                                "a", json_case_ref(r->ca), "b", json_case_ref(r->cb), "metric",
                                pair->metrics[r->metric], "higher_is_better", r->better == BC_BETTER_HIGHER, "n_a",
                                (json_int_t)r->n_a, "n_b", (json_int_t)r->n_b, "median_a", jnum(r->median_a),
                                "median_b", jnum(r->median_b));
        json_object_set_new(row, "better", json_string(bc_metric_better_name(r->better)));
        json_object_set_new(row, "ratio", jnum(r->ratio));
        json_object_set_new(row, "ratio_low", jnum(r->ratio_lo));
        json_object_set_new(row, "ratio_high", jnum(r->ratio_hi));
        json_object_set_new(row, "change", jnum(r->change));
        json_object_set_new(row, "change_low", jnum(r->change_lo));
        json_object_set_new(row, "change_high", jnum(r->change_hi));
        json_object_set_new(row, "factor", jnum(isfinite(r->change) ? exp(fabs(r->change)) : NAN));
        json_object_set_new(row, "change_text", json_string(change));
        json_object_set_new(row, "interval_text", json_string(interval));
        json_object_set_new(row, "u", jnum(r->u_a));
        json_object_set_new(row, "p", jnum(r->p));
        json_object_set_new(row, "p_method", isfinite(r->p) ? json_string(r->exact ? "exact" : "normal") : json_null());
        json_object_set_new(row, "min_p", jnum(r->min_p));
        json_object_set_new(row, "verdict", json_string(bc_verdict_name(r->verdict)));
        json_object_set_new(row, "note", json_string(r->note));
        json_array_append_new(rows, row);
    }
    for (size_t m = 0; m < pair->n_metrics; m++) {
        const bc_cmp_summary *s = &pair->summary[m];
        json_t *counts = json_object();
        char gtext[40];
        bc_cmp_fmt_change(gtext, sizeof gtext, s->geomean_change, s->better, bc_cmp_pair_unit(pair, m));
        for (int v = 0; v < BC_N_VERDICTS; v++)
            json_object_set_new(counts, bc_verdict_name((bc_verdict)v), json_integer((json_int_t)s->counts[v]));
        json_object_set_new(summary, pair->metrics[m],
                            json_pack("{s:b, s:s, s:o, s:o, s:o, s:s, s:I}", "higher_is_better",
                                      s->better == BC_BETTER_HIGHER, "better", bc_metric_better_name(s->better),
                                      "counts", counts, "geomean_ratio", jnum(s->geomean_ratio), "geomean_change",
                                      jnum(s->geomean_change), "geomean_change_text", gtext, "n_ratios",
                                      (json_int_t)s->n_ratios));
    }
    json_t *doc = json_pack("{s:o, s:o, s:b, s:o, s:o, s:I, s:I, s:I, s:o, s:o}", "a", json_run(pair, 0), "b",
                     json_run(pair, 1), "comparable", pair->n_env_refusing == 0 && pair->n_matched > 0, "environment",
                     env, "settings_changed", settings, "n_matched", (json_int_t)pair->n_matched, "n_only_a",
                     (json_int_t)pair->n_only_a, "n_only_b", (json_int_t)pair->n_only_b, "rows", rows, "summary",
                     summary);
    if (doc) json_object_set_new(doc, "paired_across", pair->axis ? json_string(pair->axis) : json_null());
    return doc;
}

bc_status bc_cmp_write_json(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt,
                            int exit_status, bc_error *err) {
    json_t *metrics = json_array(), *comparisons = json_array();
    for (size_t m = 0; m < opt->n_metrics; m++) json_array_append_new(metrics, json_string(opt->metrics[m]));
    for (size_t k = 0; k < n_pairs; k++) json_array_append_new(comparisons, json_pair(&pairs[k]));
    json_t *doc = json_pack("{s:i, s:o, s:f, s:f, s:f, s:I, s:I, s:b, s:o, s:i}", "compare_version", 2, "metrics",
                            metrics, "alpha", opt->alpha, "threshold", opt->threshold, "confidence_level", opt->level,
                            "resamples", (json_int_t)opt->resamples, "seed", (json_int_t)opt->seed, "ignore_env",
                            opt->ignore_env, "comparisons", comparisons, "exit_status", exit_status);
    /* json_pack fails (NULL) on any NULL part, i.e. when memory ran out */
    if (!doc || json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) != 0) {
        json_decref(doc);
        return bc_error_set(err, BC_ERR_NOMEM, "compare: the JSON document could not be written");
    }
    fputc('\n', out);
    json_decref(doc);
    return BC_OK;
}
