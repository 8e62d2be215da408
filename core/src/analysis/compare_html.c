/* compare_html.c: `benchctl compare --html FILE`: a forest plot of a
 * comparison as one self-contained page. Inline CSS and SVG only: no
 * script, no font, no image, no link to anything outside the file; light
 * and dark through prefers-color-scheme. The page is well-formed XML
 * (void elements closed, text escaped), so `xmllint --noout` checks it.
 *
 * One SVG per compared file. Each row is a case and metric: on the left
 * the case and metric, in the middle the change (the factor by which B is
 * better, right of 1 = B better) on a log axis, symmetric about 1, as a dot
 * with its bootstrap interval as a bar, over the shaded threshold band and
 * the line at 1, coloured by verdict; on the right the change ("2.90x
 * faster") and the verdict in words. Each row's <title> (a tooltip) has
 * the numbers. The axis reaches the largest factor shown, up to 10^6;
 * beyond that a bar is drawn to its edge with an arrow head.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "htmlw.h"

/* Layout, in SVG user units (px at 100%). */
enum {
    ROW_H = 22,   /* one case and metric */
    TOP = 34,     /* above the first row: the axis labels */
    BOTTOM = 12,  /* below the last row */
    PLOT_W = 420, /* the change axis */
    GAP = 32,     /* between the axis and the words: room for the last tick's label */
    RIGHT_W = 200, /* change and verdict in words */
    CHAR_W = 7    /* a character of the 12px labels, roughly */
};

/* Writes s as XML text, escaped the one way the html reporter escapes it
 * (lib/html/htmlw.c: the special characters, and bytes that are not
 * XML characters or not UTF-8), so a file name or label cannot break the
 * page. */
static void xml_text(FILE *out, const char *s) {
    bc_text t = {0};
    bc_html_text(&t, s);
    if (t.buf && !t.failed) fputs(t.buf, out);
    free(t.buf);
}

static const char k_style[] =
    ":root{color-scheme:light dark;--bg:#ffffff;--fg:#1f2328;--muted:#59636e;--grid:#d1d9e0;"
    "--band:rgba(9,105,218,0.10);--better:#1a7f37;--worse:#cf222e;--same:#0969da;--noise:#9a6700;"
    "--under:#8250df;--missing:#818b98}\n"
    "@media (prefers-color-scheme: dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--grid:#3d444d;"
    "--band:rgba(56,139,253,0.16);--better:#3fb950;--worse:#f85149;--same:#58a6ff;--noise:#d29922;"
    "--under:#ab7df8;--missing:#7d8590}}\n"
    "body{background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;"
    "margin:24px;max-width:1200px}\n"
    "h1{font-size:20px;margin:0 0 12px}h2{font-size:16px;margin:28px 0 6px;word-break:break-all}\n"
    "ul{margin:4px 0 10px;padding-left:20px;color:var(--muted)}code{font-size:13px}\n"
    "svg{display:block;max-width:100%;height:auto;margin:8px 0}\n"
    "svg text{fill:var(--fg);font:12px system-ui,-apple-system,'Segoe UI',sans-serif}\n"
    "svg text.muted{fill:var(--muted)}\n"
    ".band{fill:var(--band)}.grid{stroke:var(--grid);stroke-width:1}.zero{stroke:var(--muted);stroke-width:1}\n"
    ".bar{stroke-width:5;stroke-linecap:round}.dot{stroke:var(--bg);stroke-width:1.5}\n"
    ".BETTER{stroke:var(--better);fill:var(--better)}.WORSE{stroke:var(--worse);fill:var(--worse)}\n"
    ".SAME{stroke:var(--same);fill:var(--same)}.NOISE{stroke:var(--noise);fill:var(--noise)}\n"
    ".UNDERPOWERED{stroke:var(--under);fill:var(--under)}\n"
    ".MISSING,.FAILED{stroke:var(--missing);fill:var(--missing)}\n"
    "svg text.BETTER,svg text.WORSE,svg text.SAME,svg text.NOISE,svg text.UNDERPOWERED,svg text.MISSING,"
    "svg text.FAILED{stroke:none;font-weight:600}\n"
    "svg text.BETTER{fill:var(--better)}svg text.WORSE{fill:var(--worse)}svg text.SAME{fill:var(--same)}"
    "svg text.NOISE{fill:var(--noise)}svg text.UNDERPOWERED{fill:var(--under)}"
    "svg text.MISSING,svg text.FAILED{fill:var(--missing)}\n"
    "table{border-collapse:collapse;margin:6px 0 14px}th,td{padding:3px 10px;border-bottom:1px solid var(--grid);"
    "text-align:right}th:first-child,td:first-child{text-align:left}\n"
    "p.legend{color:var(--muted);font-size:13px;max-width:900px}\n";

/* The factors the axis may end at (either way), round numbers. */
static const double k_factors[] = {1.02, 1.05, 1.1, 1.2, 1.5, 2,    3,    5,    10,   20,   50,  100,
                                   200,  500,  1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6};
#define N_FACTORS (sizeof k_factors / sizeof k_factors[0])

/* The axis reaches +-range (a log factor): the smallest round factor that
 * holds every interval end and twice the threshold's factor; beyond 10^6
 * bars are clipped. */
static double axis_range(const bc_cmp_pair *pair, double threshold) {
    double need = 2 * log1p(threshold);
    for (size_t i = 0; i < pair->n_rows; i++) {
        const bc_cmp_row *r = &pair->rows[i];
        double ends[] = {r->change_lo, r->change_hi, r->change};
        for (int k = 0; k < 3; k++)
            if (isfinite(ends[k]) && fabs(ends[k]) > need) need = fabs(ends[k]);
    }
    for (size_t k = 0; k < N_FACTORS; k++)
        if (need <= log(k_factors[k]) + 1e-12) return log(k_factors[k]);
    return log(k_factors[N_FACTORS - 1]);
}

/* The round factor nearest (on the log axis) to the middle of [1, exp(range)]. */
static double mid_tick(double range) {
    double best = log(k_factors[0]);
    for (size_t k = 0; k < N_FACTORS; k++)
        if (log(k_factors[k]) < range && fabs(log(k_factors[k]) - range / 2) < fabs(best - range / 2))
            best = log(k_factors[k]);
    return best;
}

/* A tick's label: "1", "x2", "/2", "x1.5", "/100". */
static void tick_label(char *buf, size_t cap, double c) {
    double f = exp(fabs(c));
    if (fabs(c) < 1e-12) snprintf(buf, cap, "1");
    else snprintf(buf, cap, "%s%g", c > 0 ? "&#215;" : "&#247;", f);
}

/* The x of a change on the axis [x0, x0 + PLOT_W], clipped to it. */
static double x_of(double change, double range, double x0) {
    double c = change < -range ? -range : change > range ? range : change;
    return x0 + (c + range) / (2 * range) * PLOT_W;
}

static void html_plot(FILE *out, const bc_cmp_pair *pair, const bc_cmp_options *opt) {
    int label_w = 0, metric_w = 0;
    for (size_t i = 0; i < pair->n_rows; i++) {
        char label[96];
        bc_cmp_case_label_without(pair->rows[i].ca ? pair->rows[i].ca : pair->rows[i].cb, pair->axis, label,
                                  sizeof label);
        int lw = (int)strlen(label) * CHAR_W, mw = (int)strlen(pair->metrics[pair->rows[i].metric]) * CHAR_W;
        label_w = lw > label_w ? lw : label_w;
        metric_w = mw > metric_w ? mw : metric_w;
    }
    label_w += 16;
    metric_w += 16;
    double x0 = label_w + metric_w, range = axis_range(pair, opt->threshold);
    int width = (int)x0 + PLOT_W + GAP + RIGHT_W, height = TOP + (int)pair->n_rows * ROW_H + BOTTOM;
    int y_end = TOP + (int)pair->n_rows * ROW_H;
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
            "aria-label=\"change per case and metric, positive is better, with its interval\">\n",
            width, height, width, height);
    /* the threshold band, the grid, the zero line, the axis labels */
    double band_l = x_of(-log1p(opt->threshold), range, x0), band_r = x_of(log1p(opt->threshold), range, x0);
    fprintf(out, "<rect class=\"band\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"/>\n", band_l, TOP - 6,
            band_r - band_l, y_end - TOP + 6);
    double mid = mid_tick(range), ticks[] = {-range, -mid, 0, mid, range};
    for (int t = 0; t < 5; t++) {
        double c = ticks[t], x = x_of(c, range, x0);
        char label[32];
        tick_label(label, sizeof label, c);
        fprintf(out, "<line class=\"%s\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", t != 2 ? "grid" : "zero",
                x, TOP - 6, x, y_end);
        fprintf(out, "<text class=\"muted\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x, TOP - 12,
                label);
    }
    fprintf(out, "<text class=\"muted\" x=\"8\" y=\"%d\">case</text>\n", TOP - 12);
    fprintf(out, "<text class=\"muted\" x=\"%d\" y=\"%d\">metric</text>\n", label_w, TOP - 12);
    fprintf(out, "<text class=\"muted\" x=\"%.1f\" y=\"%d\">change (B better &#8594;)</text>\n", x0 + PLOT_W + GAP,
            TOP - 12);
    for (size_t i = 0; i < pair->n_rows; i++) {
        const bc_cmp_row *r = &pair->rows[i];
        const char *verdict = bc_verdict_name(r->verdict), *metric = pair->metrics[r->metric];
        double y = TOP + (double)i * ROW_H + ROW_H / 2.0;
        char label[96], change[40], interval[64];
        const char *unit = bc_cmp_pair_unit(pair, r->metric);
        bc_cmp_case_label_without(r->ca ? r->ca : r->cb, pair->axis, label, sizeof label);
        bc_cmp_fmt_change(change, sizeof change, r->change, r->better, unit);
        bc_cmp_fmt_interval(interval, sizeof interval, r->change_lo, r->change_hi, r->better, unit);
        fputs("<g>\n<title>", out);
        xml_text(out, label);
        fprintf(out, ", %s: %s", metric, verdict);
        if (isfinite(r->change))
            fprintf(out, "; %s %s; B/A %.4g; medians A %.6g, B %.6g; p %.3g; n %zu/%zu", change, interval, r->ratio,
                    r->median_a, r->median_b, r->p, r->n_a, r->n_b);
        if (r->note[0]) {
            fputs("; ", out);
            xml_text(out, r->note);
        }
        fputs("</title>\n", out);
        fprintf(out, "<text x=\"8\" y=\"%.1f\" dominant-baseline=\"middle\">", y);
        xml_text(out, label);
        fprintf(out, "</text>\n<text class=\"muted\" x=\"%d\" y=\"%.1f\" dominant-baseline=\"middle\">", label_w, y);
        xml_text(out, metric);
        fputs("</text>\n", out);
        if (isfinite(r->change_lo) && isfinite(r->change_hi)) {
            double xl = x_of(r->change_lo, range, x0), xh = x_of(r->change_hi, range, x0);
            fprintf(out, "<line class=\"bar %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", verdict, xl, y,
                    xh, y);
            /* arrow heads where the interval runs off the axis */
            if (r->change_lo < -range)
                fprintf(out, "<path class=\"%s\" d=\"M%.1f %.1f l8 -6 v12 z\"/>\n", verdict, x0 - 4, y);
            if (r->change_hi > range)
                fprintf(out, "<path class=\"%s\" d=\"M%.1f %.1f l-8 -6 v12 z\"/>\n", verdict, x0 + PLOT_W + 4, y);
        }
        if (isfinite(r->change))
            fprintf(out, "<circle class=\"dot %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\"/>\n", verdict,
                    x_of(r->change, range, x0), y);
        else
            fprintf(out, "<text class=\"muted\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                         "dominant-baseline=\"middle\">no change to show</text>\n",
                    x0 + PLOT_W / 2.0, y);
        fprintf(out, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" dominant-baseline=\"middle\">", verdict,
                x0 + PLOT_W + GAP, y);
        if (isfinite(r->change)) fprintf(out, "%s ", change);
        fprintf(out, "%s</text>\n</g>\n", verdict);
    }
    fputs("</svg>\n", out);
}

static void html_summary(FILE *out, const bc_cmp_pair *pair) {
    fputs("<table>\n<tr><th>metric</th>", out);
    for (int v = 0; v < BC_N_VERDICTS; v++) fprintf(out, "<th>%s</th>", bc_verdict_name((bc_verdict)v));
    fputs("<th>geometric mean of B/A</th><th>change</th></tr>\n", out);
    char change[40];
    for (size_t m = 0; m < pair->n_metrics; m++) {
        const bc_cmp_summary *s = &pair->summary[m];
        fputs("<tr><td>", out);
        xml_text(out, pair->metrics[m]);
        fputs("</td>", out);
        for (int v = 0; v < BC_N_VERDICTS; v++) fprintf(out, "<td>%zu</td>", s->counts[v]);
        if (isfinite(s->geomean_ratio)) fprintf(out, "<td>%.4g</td>", s->geomean_ratio);
        else fputs("<td>-</td>", out);
        bc_cmp_fmt_change(change, sizeof change, s->geomean_change, s->better, bc_cmp_pair_unit(pair, m));
        fprintf(out, "<td>%s</td></tr>\n", change);
    }
    fputs("</table>\n", out);
}

/* One list item with the environment line, escaped. */
static void html_li(FILE *out, const char *text) {
    fputs("<li>", out);
    xml_text(out, text);
    fputs("</li>\n", out);
}

void bc_cmp_write_html(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
          "<title>benchctl compare</title>\n<style>\n",
          out);
    fputs(k_style, out);
    fputs("</style>\n</head>\n<body>\n<h1>benchctl compare</h1>\n", out);
    for (size_t k = 0; k < n_pairs; k++) {
        const bc_cmp_pair *pair = &pairs[k];
        fputs("<h2>B = <code>", out);
        xml_text(out, pair->name_b);
        fputs("</code> against A = <code>", out);
        xml_text(out, pair->name_a);
        fputs("</code></h2>\n<ul>\n", out);
        char text[1024];
        if (pair->axis) {
            snprintf(text, sizeof text, "paired on every axis but %s: %s %s (A) against %s (B)", pair->axis,
                     pair->axis, pair->axis_a, pair->axis_b);
            html_li(out, text);
        }
        if (pair->n_env_refusing == 0) html_li(out, "environment: the same in every field both files state");
        for (size_t i = 0; i < pair->n_env; i++) {
            const bc_cmp_env_diff *d = &pair->env[i];
            if (d->a[0] && d->b[0])
                snprintf(text, sizeof text, "%s %s: %s (A) vs %s (B)",
                         d->refuses ? "environment differs:" : "differs (informational):", d->field, d->a, d->b);
            else
                snprintf(text, sizeof text, "not compared, %s does not say: %s", d->a[0] ? "B" : "A", d->field);
            html_li(out, text);
        }
        for (size_t i = 0; i < pair->n_settings; i++) {
            const bc_cmp_setting_change *s = &pair->settings[i];
            snprintf(text, sizeof text, "changed between the runs: %s: %s -> %s", s->name, s->a ? s->a : "(not set)",
                     s->b ? s->b : "(not set)");
            html_li(out, text);
        }
        snprintf(text, sizeof text, "%zu matched cases, %zu only in A, %zu only in B", pair->n_matched, pair->n_only_a,
                 pair->n_only_b);
        html_li(out, text);
        fputs("</ul>\n", out);
        html_plot(out, pair, opt);
        html_summary(out, pair);
    }
    fprintf(out,
            "<p class=\"legend\">How to read this: each row is one case and metric. The dot is the factor by which B "
            "is better than A, on a log axis, right of 1 better (for a rate, B/A; for a time or size, A/B), from the "
            "medians over the measured iterations: &#215;2 is twice as good, &#247;2 half as good, the same distance "
            "either way. The bar is its %g%% percentile bootstrap interval "
            "(%u resamples, seed %llu); the shaded band is a factor of %g either way. BETTER or WORSE needs the two-sided "
            "Mann-Whitney U test at p &lt; %g and the whole bar outside the band; SAME means the whole bar is inside "
            "it; NOISE, neither; UNDERPOWERED, too few iterations for any p below %g. Hover a row for its numbers."
            "</p>\n</body>\n</html>\n",
            100 * opt->level, opt->resamples, (unsigned long long)opt->seed, 1 + opt->threshold, opt->alpha,
            opt->alpha);
}
