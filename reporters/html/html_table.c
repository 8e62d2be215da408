/* html_table.c: the html page's warnings (failed, skipped and unstable
 * cases) and its case table (a backend column with several backends,
 * heat-scaled number cells), with the tables of the row latencies and the
 * backends' declared metrics under it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_page.h"
#include "htmlw.h"
#include "report.h"

/* -------------------------------------------------------- the warnings */

/* A threshold as a percentage, without trailing zeros: 0.05 -> "5". */
static void format_percent(char *buf, size_t size, double fraction) {
    snprintf(buf, size, "%.3g", fraction * 100.0);
    for (char *c = buf; *c; c++)
        if (*c == ',') *c = '.';
}

static int same_outcome(const bc_case_report *a, const bc_case_report *b) {
    return a->status == b->status && a->error_code == b->error_code && hp_same_str(a->message, b->message);
}

/* One item per distinct (status, error, message) of the cases that did not
 * finish ok, then one for the unstable cases. */
void hp_put_warnings(hp_page *pg) {
    bc_text *t = pg->t;
    unsigned char *pick = calloc(pg->n ? pg->n : 1, 1);
    if (!pick) {
        t->failed = 1;
        return;
    }
    bc_text_puts(t, "<section id=\"warnings\">\n<h2>Warnings</h2>\n<ul class=\"warnings\">\n");
    int any = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const bc_case_report *cr = pg->cases[i].cr;
        if (cr->status == BC_CASE_OK) continue;
        int seen = 0;
        for (uint32_t j = 0; j < i && !seen; j++) seen = same_outcome(pg->cases[j].cr, cr);
        if (seen) continue;
        for (uint32_t j = 0; j < pg->n; j++) pick[j] = j >= i && same_outcome(pg->cases[j].cr, cr);
        bc_text_printf(t, "<li class=\"%s\">", cr->status == BC_CASE_FAILED ? "bad" : "warn");
        uint32_t count = 0;
        for (uint32_t j = 0; j < pg->n; j++) count += pick[j];
        bc_text_puts(t, count == 1 ? "Case " : "Cases ");
        hp_put_case_list(pg, pick);
        bc_text_printf(t, " %s", bc_case_status_name(cr->status));
        if (cr->error_code != BC_OK) bc_text_printf(t, " (%s)", bc_status_name(cr->error_code));
        if (cr->message && *cr->message) {
            bc_text_puts(t, ": <span class=\"mono\">");
            bc_html_text(t, cr->message);
            bc_text_puts(t, "</span>");
        }
        bc_text_puts(t, "</li>\n");
        any = 1;
    }
    uint32_t n_unstable = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        pick[i] = k->ok && isfinite(k->total_cv) && k->total_cv > pg->unstable_cv;
        n_unstable += pick[i];
    }
    if (n_unstable) {
        char thr[32];
        format_percent(thr, sizeof thr, pg->unstable_cv);
        bc_text_printf(t, "<li class=\"warn\">%s (coefficient of variation of total_ms above %s%%): ",
                       n_unstable == 1 ? "Unstable case" : "Unstable cases", thr);
        uint32_t listed = 0;
        for (uint32_t i = 0; i < pg->n; i++) {
            if (!pick[i]) continue;
            char cv[32];
            bc_html_format_number(cv, sizeof cv, pg->cases[i].total_cv * 100.0);
            bc_text_printf(t, "%s#%u (%s%%)", listed++ ? ", " : "", pg->cases[i].cr->c->index, cv);
        }
        bc_text_puts(t, ". Their numbers move from one iteration to the next more than the threshold allows: "
                        "compare them with care, or run more iterations on a quieter machine.</li>\n");
        any = 1;
    }
    if (!any) {
        char thr[32];
        format_percent(thr, sizeof thr, pg->unstable_cv);
        bc_text_printf(t, "<li class=\"good\">None: every case finished, and no case&#39;s total_ms varies by more "
                          "than %s%% (coefficient of variation).</li>\n", thr);
    }
    bc_text_puts(t, "</ul>\n</section>\n");
    free(pick);
}

/* ------------------------------------------------------- the case table */

/* Column ranges for the heat scale, over the cases that finished ok. */
typedef struct range {
    double lo, hi;
} range;

static void widen(range *r, double v) {
    if (!isfinite(v)) return;
    if (v < r->lo) r->lo = v;
    if (v > r->hi) r->hi = v;
}

/* A number cell; its background's strength scales with v within r (the
 * column's range), in the colour rgb_var names. "-" when not measured. */
static void heat_cell(bc_text *t, double v, const range *r, const char *rgb_var) {
    char num[32];
    if (!bc_html_format_number(num, sizeof num, v)) {
        bc_text_puts(t, "<td class=\"num na\" title=\"not measured\">-</td>");
        return;
    }
    double alpha = r->hi > r->lo ? 0.06 + 0.5 * (v - r->lo) / (r->hi - r->lo) : 0.2;
    bc_text_printf(t, "<td class=\"num\" style=\"background:rgba(var(%s),%.2f)\">%s</td>", rgb_var, alpha, num);
}

static void put_prompt_cell(bc_text *t, const bc_case_report *cr) {
    int64_t width = cr->prompt_width_tokens >= 0 ? cr->prompt_width_tokens : (int64_t)cr->c->prompt_length;
    int64_t lo = cr->prompt_min_tokens, hi = cr->prompt_max_tokens;
    bc_text_puts(t, "<td class=\"num\">");
    if (width <= 0)
        bc_text_puts(t, "file");
    else if (lo >= 0 && hi >= 0 && (lo != width || hi != width))
        bc_text_printf(t, "%lld (%lld\xE2\x80\x93%lld)", (long long)width, (long long)lo, (long long)hi);
    else
        bc_text_printf(t, "%lld", (long long)width);
    bc_text_puts(t, "</td>");
}

/* The fields [first, end) as a table: one row per case, the mean of each,
 * headed with its name and unit and its help as the tooltip; nothing when
 * the range is empty. */
static void put_field_table(hp_page *pg, uint32_t first, uint32_t end) {
    const bc_run_report *run = pg->run;
    bc_text *t = pg->t;
    if (first >= end || end > run->n_fields || !bc_run_field_desc(run, first)) return;
    bc_text_puts(t, "<div class=\"tablewrap\"><table class=\"matrix declared\">\n<thead><tr><th class=\"num\">#</th>");
    for (uint32_t f = first; f < end; f++) {
        const bc_metric_desc *d = bc_run_field_desc(run, f);
        bc_text_puts(t, "<th class=\"num\" title=\"");
        bc_html_text(t, d->help ? d->help : "");
        bc_text_puts(t, "\">");
        bc_html_text(t, run->field_names[f]);
        bc_text_puts(t, " (");
        bc_html_text(t, d->unit ? d->unit : "");
        bc_text_puts(t, ")</th>");
    }
    bc_text_puts(t, "</tr></thead>\n<tbody>\n");
    for (uint32_t i = 0; i < pg->n; i++) {
        const bc_case_report *cr = pg->cases[i].cr;
        bc_text_printf(t, "<tr><td class=\"num\">%u</td>", cr->c->index);
        for (uint32_t f = first; f < end; f++) {
            char num[32];
            double x = hp_case_stat(run, cr, (int)f, "mean");
            if (bc_html_format_number(num, sizeof num, x)) bc_text_printf(t, "<td class=\"num\">%s</td>", num);
            else bc_text_puts(t, "<td class=\"num na\" title=\"not measured\">-</td>");
        }
        bc_text_puts(t, "</tr>\n");
    }
    bc_text_puts(t, "</tbody></table></div>\n");
}

/* The backends' declared metrics (a 2.4 host's fields past n_host_fields),
 * then the per-row latencies (the host's row_ttft_ms_p50 .. rows_per_second),
 * each a table by put_field_table. */
static void put_declared(hp_page *pg) {
    const bc_run_report *run = pg->run;
    put_field_table(pg, BC_RUN_FIELD(run, n_host_fields, run->n_fields), run->n_fields);
    int a = bc_run_field_index(run, "row_ttft_ms_p50"), b = bc_run_field_index(run, "rows_per_second");
    if (a >= 0 && b >= a) put_field_table(pg, (uint32_t)a, (uint32_t)b + 1);
    /* a 2.6 host's: the score stage and refit, then the RL frameworks' names,
     * each table when some case measured one of its fields */
    static const char *const ranges[][2] = {{"score_ms", "rollout_step_ms"},
                                            {"response_length/mean", "slowest_row/response_length"}};
    for (size_t r = 0; r < 2; r++) {
        a = bc_run_field_index(run, ranges[r][0]), b = bc_run_field_index(run, ranges[r][1]);
        int measured = 0;
        for (uint32_t i = 0; a >= 0 && b >= a && i < pg->n && !measured; i++)
            for (int f = a; f <= b && !measured; f++)
                measured = bc_is_measured(hp_case_stat(run, pg->cases[i].cr, f, "mean"));
        if (measured) put_field_table(pg, (uint32_t)a, (uint32_t)b + 1);
    }
}

void hp_put_table(hp_page *pg) {
    bc_text *t = pg->t;
    range total = {INFINITY, -INFINITY}, tps = total, cv = total, peak = total, held = total;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (!k->ok) continue;
        widen(&total, k->total_p50);
        widen(&tps, k->tps_mean);
        widen(&cv, k->total_cv * 100.0);
        widen(&peak, k->peak_mib);
        widen(&held, k->held_mib);
    }
    bc_text_puts(t, "<section id=\"cases\">\n<h2>Cases</h2>\n");
    if (pg->n == 0) {
        bc_text_puts(t, "<p class=\"note\">The run has no cases.</p>\n</section>\n");
        return;
    }
    bc_text_puts(t, "<div class=\"tablewrap\"><table class=\"matrix\">\n<thead><tr><th class=\"num\">#</th>");
    if (pg->several_backends) bc_text_puts(t, "<th>backend</th>");
    bc_text_puts(t, "<th class=\"num\">batch</th><th class=\"num\">samples</th>"
                    "<th class=\"num\" title=\"effective batch: batch \xC3\x97 samples per prompt\">rows</th>"
                    "<th class=\"num\">prompt</th><th class=\"num\">response</th><th>precision</th><th>cache</th>");
    /* the backend settings the matrix varies, one column each */
    const bc_case *c0 = pg->cases[0].cr->c;
    for (uint32_t j = 0; j < bc_case_n_settings(c0); j++) {
        bc_text_puts(t, "<th>");
        bc_html_text(t, c0->setting_names[j]);
        bc_text_puts(t, "</th>");
    }
    bc_text_puts(t, "<th>status</th><th class=\"num\">iters</th><th class=\"num\">p50 ms</th>"
                    "<th class=\"num\">cv</th><th class=\"num\">tokens/s</th><th class=\"num\">peak MiB</th>"
                    "<th class=\"num\">held MiB</th></tr></thead>\n<tbody>\n");
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        const bc_case_report *cr = k->cr;
        const bc_case *c = cr->c;
        bc_text_printf(t, "<tr%s><td class=\"num\">%u</td>", k->ok ? "" : " class=\"notok\"", c->index);
        if (pg->several_backends) { /* a backends list: which one ran the case */
            bc_text_puts(t, "<td>");
            bc_html_text(t, hp_known(bc_case_backend(c)));
            bc_text_puts(t, "</td>");
        }
        bc_text_printf(t, "<td class=\"num\">%u</td><td class=\"num\">%u</td><td class=\"num\">%llu</td>",
                       c->batch_size, c->samples_per_prompt, (unsigned long long)k->eff_batch);
        put_prompt_cell(t, cr);
        bc_text_printf(t, "<td class=\"num\">%u", c->response_length);
        if (cr->returned_response_length >= 0 && cr->returned_response_length != (int64_t)c->response_length)
            bc_text_printf(t, "\xE2\x86\x92%lld", (long long)cr->returned_response_length);
        bc_text_puts(t, "</td><td>");
        bc_html_text(t, hp_known(c->precision));
        bc_text_puts(t, "</td><td>");
        bc_html_text(t, hp_known(c->cache_policy));
        for (uint32_t j = 0; j < bc_case_n_settings(c); j++) {
            bc_text_puts(t, "</td><td>");
            bc_html_text(t, c->setting_values[j]);
        }
        bc_text_puts(t, "</td><td class=\"st\"");
        if (!k->ok) { /* why, as a tooltip; the warnings say it in full */
            bc_text_printf(t, " title=\"%s", bc_status_name(cr->error_code));
            if (cr->message && *cr->message) {
                bc_text_puts(t, ": ");
                bc_html_text(t, cr->message);
            }
            bc_text_puts(t, "\"");
        }
        bc_text_printf(t, ">%s", bc_case_status_name(cr->status));
        bc_text_printf(t, "</td><td class=\"num\">%u</td>", cr->n_iterations);
        heat_cell(t, k->total_p50, &total, "--heat-time");
        double cvp = k->total_cv * 100.0;
        char num[32];
        if (bc_html_format_number(num, sizeof num, cvp))
            bc_text_printf(t, "<td class=\"num%s\" style=\"background:rgba(var(--heat-cv),%.2f)\">%s%%</td>",
                           k->total_cv > pg->unstable_cv ? " bad" : "",
                           cv.hi > cv.lo ? 0.06 + 0.5 * (cvp - cv.lo) / (cv.hi - cv.lo) : 0.2, num);
        else
            bc_text_puts(t, "<td class=\"num na\" title=\"not measured\">-</td>");
        heat_cell(t, k->tps_mean, &tps, "--heat-rate");
        heat_cell(t, k->peak_mib, &peak, "--heat-mem");
        heat_cell(t, k->held_mib, &held, "--heat-mem");
        bc_text_puts(t, "</tr>\n");
    }
    bc_text_puts(t, "</tbody></table></div>\n");
    put_declared(pg);
    bc_text_puts(t, "<p class=\"how\"><b>How to read this.</b> One row per case, in the order bench.cfg asks for "
                    "them. <i>backend</i> (a run with a backends list) names the one that ran the case. "
                    "<i>rows</i> is the effective batch, batch \xC3\x97 samples per prompt: the rows "
                    "generated at once. <i>prompt</i> is the width that ran (with the shortest and longest real "
                    "prompt when they differ); <i>response</i> shows \xE2\x80\x9C" "asked\xE2\x86\x92" "returned"
                    "\xE2\x80\x9D when fewer tokens came back; hover a <i>status</i> for why a case failed. "
                    "<i>p50</i> is the median of total_ms over the measured iterations and <i>cv</i> its coefficient "
                    "of variation (red above the unstable threshold); <i>tokens/s</i> is the mean of "
                    "tokens_per_second, <i>peak</i> the peak memory and <i>held</i> the memory still held between "
                    "rollouts. In each number column, the stronger the colour, the larger the value within that "
                    "column (over the cases that finished); a dash means not measured.");
    if (bc_case_n_settings(pg->cases[0].cr->c))
        bc_text_puts(t, " The columns between <i>cache</i> and <i>status</i> are the backend settings the matrix "
                        "varies (matrix.backend_settings), as each case ran them.");
    bc_text_puts(t, "</p>\n</section>\n");
}
