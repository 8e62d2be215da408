/* html_charts_iter.c: the html reporter's charts of each case's iterations
 * and ranks, inline SVG like html_charts.c:
 *   distributions  per case, every iteration's total_ms relative to the
 *                  case's median, as points over a box (quartiles, median,
 *                  whiskers at 1.5 IQR)
 *   progression    per case, total_ms by iteration index (small multiples)
 *   ranks          a replicate distributed run: each rank's mean total_ms
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_svg.h"
#include "report.h"

/* ---------------------------------------------------------- distributions */

/* The finite total_ms values of case k, in iteration order, into v (room
 * for n_iterations); returns how many. */
static uint32_t total_values(const hp_page *pg, const hp_case *k, double *v) {
    const bc_case_report *cr = k->cr;
    uint32_t n = 0;
    if (pg->f_total < 0 || !cr->values) return 0;
    for (uint32_t i = 0; i < cr->n_iterations; i++) {
        double x = cr->values[(size_t)i * pg->run->n_fields + (size_t)pg->f_total];
        if (isfinite(x)) v[n++] = x;
    }
    return n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile q of sorted[n] by linear interpolation between order statistics. */
static double quantile(const double *sorted, uint32_t n, double q) {
    double h = (n - 1) * q;
    uint32_t lo = (uint32_t)floor(h);
    if (lo + 1 >= n) return sorted[n - 1];
    return sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo]);
}

typedef struct box {
    double med, q1, q3, wlo, whi; /* whiskers: the furthest values within 1.5 IQR of the box */
} box;

static box box_of(const double *sorted, uint32_t n) {
    box b;
    b.med = quantile(sorted, n, 0.5);
    b.q1 = quantile(sorted, n, 0.25);
    b.q3 = quantile(sorted, n, 0.75);
    double iqr = b.q3 - b.q1;
    b.wlo = b.q1;
    b.whi = b.q3;
    for (uint32_t i = 0; i < n; i++) {
        if (sorted[i] >= b.q1 - 1.5 * iqr && sorted[i] < b.wlo) b.wlo = sorted[i];
        if (sorted[i] <= b.q3 + 1.5 * iqr && sorted[i] > b.whi) b.whi = sorted[i];
    }
    return b;
}

static uint32_t max_iterations(const hp_page *pg) {
    uint32_t m = 1;
    for (uint32_t i = 0; i < pg->n; i++)
        if (pg->cases[i].cr->n_iterations > m) m = pg->cases[i].cr->n_iterations;
    return m;
}

/* % above (+) or below (-) the median. */
static double rel(double v, double med) { return (v / med - 1.0) * 100.0; }

void hp_chart_distributions(hp_page *pg) {
    bc_text *t = pg->t;
    hp_section_open(t, "distributions", "Per-iteration distributions of total_ms");
    unsigned char *notok = hp_flags(pg), *nodata = hp_flags(pg);
    double *v = malloc(max_iterations(pg) * sizeof *v), *sorted = malloc(max_iterations(pg) * sizeof *sorted);
    if (!notok || !nodata || !v || !sorted) {
        t->failed = 1;
        goto out;
    }
    uint32_t rows = 0;
    double lo = 0.0, hi = 0.0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (!k->ok) {
            notok[i] = 1;
            continue;
        }
        uint32_t n = total_values(pg, k, v);
        memcpy(sorted, v, n * sizeof *v);
        qsort(sorted, n, sizeof *sorted, cmp_double);
        double med = n ? quantile(sorted, n, 0.5) : NAN;
        if (!n || !(med > 0)) {
            nodata[i] = 1;
            continue;
        }
        rows++;
        if (rel(sorted[0], med) < lo) lo = rel(sorted[0], med);
        if (rel(sorted[n - 1], med) > hi) hi = rel(sorted[n - 1], med);
    }
    if (rows == 0) {
        bc_text_puts(t, "<p class=\"note\">Nothing to draw: no case that finished has a measured total_ms.</p>\n");
        hp_not_drawn(pg, notok, nodata, "no total_ms measured");
        goto done;
    }
    if (hi - lo < 1.0) lo -= 0.5, hi += 0.5; /* every case flat: show +-0.5 % at least */
    const double row_h = 22.0, top = 8.0;
    hp_plot p;
    memset(&p, 0, sizeof p);
    p.x0 = hp_label_width(pg);
    p.x1 = CHART_W - 190;
    p.y0 = top;
    p.y1 = top + rows * row_h + 4;
    bc_ticks_linear(&p.xt, lo, hi, 8);
    hp_svg_open(t, CHART_W, p.y1 + 44, "Each iteration's total_ms relative to its case's median, with box plots");
    hp_x_grid(t, &p);
    double x_zero = hp_sx(&p, 0.0);
    uint32_t r = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (!k->ok || nodata[i]) continue;
        uint32_t n = total_values(pg, k, v);
        memcpy(sorted, v, n * sizeof *v);
        qsort(sorted, n, sizeof *sorted, cmp_double);
        box b = box_of(sorted, n);
        double cy = top + r * row_h + row_h / 2 + 2;
        if (r % 2 == 0) hp_band(t, cy, row_h);
        r++;
        hp_text_at(t, p.x0 - 8, cy + 3.5, "lab", "end", k->label);
        double xq1 = hp_sx(&p, rel(b.q1, b.med)), xq3 = hp_sx(&p, rel(b.q3, b.med));
        double xlo = hp_sx(&p, rel(b.wlo, b.med)), xhi = hp_sx(&p, rel(b.whi, b.med));
        bc_text_printf(t, "<line class=\"wh\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", xlo, cy, xq1, cy);
        bc_text_printf(t, "<line class=\"wh\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", xq3, cy, xhi, cy);
        bc_text_printf(t, "<line class=\"wh\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", xlo, cy - 4, xlo,
                       cy + 4);
        bc_text_printf(t, "<line class=\"wh\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", xhi, cy - 4, xhi,
                       cy + 4);
        bc_text_printf(t, "<rect class=\"box\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"12\"/>", xq1, cy - 6,
                       xq3 - xq1);
        bc_text_printf(t, "<line class=\"med\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x_zero, cy - 6,
                       x_zero, cy + 6);
        /* Every iteration as a point, up to MAX_POINTS of them; past that,
         * only the outliers, at most MAX_POINTS / 2 from each end. */
        for (uint32_t j = 0; j < n; j++) {
            double x = n <= MAX_POINTS ? v[j] : sorted[j];
            if (n > MAX_POINTS && ((x >= b.wlo && x <= b.whi) || (j >= MAX_POINTS / 2 && j < n - MAX_POINTS / 2)))
                continue;
            char num[32];
            bc_html_format_number(num, sizeof num, x);
            /* a fixed vertical spread by position, so equal values stay visible */
            double dy = ((double)(j % 5) - 2.0) * 2.0;
            bc_text_printf(t, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.6\"><title>",
                           hp_sx(&p, rel(x, b.med)), cy + dy);
            bc_html_text(t, k->label);
            bc_text_printf(t, ": a measured iteration, %s ms</title></circle>", num);
        }
        char med[32], cv[32];
        bc_html_format_number(med, sizeof med, b.med);
        bc_html_format_number(cv, sizeof cv, k->total_cv * 100.0);
        int unstable = isfinite(k->total_cv) && k->total_cv > pg->unstable_cv;
        bc_text_printf(t, "<text x=\"%.1f\" y=\"%.1f\"%s>p50 %s ms \xC2\xB7 cv %s%s \xC2\xB7 n %u</text>\n",
                       p.x1 + 12, cy + 3.5, unstable ? " class=\"bad\"" : "", med, cv[0] ? cv : "-",
                       cv[0] ? "%" : "", n);
    }
    bc_text_printf(t, "<line class=\"zero\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x_zero, p.y0, x_zero,
                   p.y1);
    hp_x_axis(t, &p, "total_ms, % above (+) or below (\xE2\x88\x92) the case's median");
    hp_svg_close(t);
    hp_not_drawn(pg, notok, nodata, "no total_ms measured");
done:
    hp_how(t, "One row per case that finished. Each point is one measured iteration&#8217;s total_ms, placed by how "
           "far it lies from the case&#8217;s own median, in percent, so cases of very different speeds share one "
           "scale; the points are spread up and down only to keep equal values apart. The box spans the middle "
           "half of the iterations (first to third quartile), the thick line is the median, and the whiskers reach "
           "the furthest iterations within 1.5 times the box&#8217;s width; points beyond them are outliers (a case "
           "of more than 200 iterations shows only those as points, at most the 100 lowest and 100 highest). A "
           "narrow box means a repeatable case. On the right: the median in ms, the coefficient of variation "
           "(red above the unstable threshold) and the number of iterations.");
out:
    if (!notok || !nodata || !v || !sorted) bc_text_puts(t, "</section>\n");
    free(notok);
    free(nodata);
    free(v);
    free(sorted);
}

/* ------------------------------------------------------------ progression */

void hp_chart_progression(hp_page *pg) {
    bc_text *t = pg->t;
    hp_section_open(t, "progression", "Iteration progression");
    unsigned char *notok = hp_flags(pg), *nodata = hp_flags(pg);
    double *v = malloc(max_iterations(pg) * sizeof *v);
    if (!notok || !nodata || !v) {
        t->failed = 1;
        goto out;
    }
    uint32_t panels = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (!k->ok)
            notok[i] = 1;
        else if (total_values(pg, k, v) == 0)
            nodata[i] = 1;
        else
            panels++;
    }
    if (panels == 0) {
        bc_text_puts(t, "<p class=\"note\">Nothing to draw: no case that finished has a measured total_ms.</p>\n");
        hp_not_drawn(pg, notok, nodata, "no total_ms measured");
        goto done;
    }
    const uint32_t cols = 5;
    const double pw = CHART_W / cols, ph = 116.0;
    uint32_t rows = (panels + cols - 1) / cols;
    hp_svg_open(t, CHART_W, rows * ph, "total_ms by iteration index, one small panel per case");
    uint32_t panel = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (!k->ok || nodata[i]) continue;
        const bc_case_report *cr = k->cr;
        double ox = (panel % cols) * pw, oy = (panel / cols) * ph;
        panel++;
        /* every iteration, NaN kept, so the x position is the iteration index */
        uint32_t n = cr->n_iterations;
        double lo = INFINITY, hi = -INFINITY;
        for (uint32_t j = 0; j < n; j++) {
            double x = cr->values[(size_t)j * pg->run->n_fields + (size_t)pg->f_total];
            v[j] = x;
            if (isfinite(x)) {
                if (x < lo) lo = x;
                if (x > hi) hi = x;
            }
        }
        hp_plot p;
        memset(&p, 0, sizeof p);
        p.x0 = ox + 50;
        p.x1 = ox + pw - 12;
        p.y0 = oy + 36;
        p.y1 = oy + ph - 22;
        double pad = hi > lo ? (hi - lo) * 0.12 : fabs(hi) * 0.01 + 1e-9;
        p.yt.lo = lo - pad;
        p.yt.hi = hi + pad;
        p.xt.lo = 1.0;
        p.xt.hi = n > 1 ? (double)n : 2.0;
        char title[sizeof k->label];
        snprintf(title, sizeof title, "%s", k->label);
        hp_text_at(t, ox + 6, oy + 13, "lab t", "start", title);
        char med[32], cv[32];
        bc_html_format_number(med, sizeof med, k->total_p50);
        bc_html_format_number(cv, sizeof cv, k->total_cv * 100.0);
        int unstable = isfinite(k->total_cv) && k->total_cv > pg->unstable_cv;
        bc_text_printf(t, "<text x=\"%.1f\" y=\"%.1f\" class=\"%s\">p50 %s ms \xC2\xB7 cv %s%s</text>\n", ox + 6,
                       oy + 27, unstable ? "bad" : "m", med[0] ? med : "-", cv[0] ? cv : "-", cv[0] ? "%" : "");
        bc_text_printf(t, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", p.x0, p.y0,
                       p.x1 - p.x0, p.y1 - p.y0);
        if (isfinite(k->total_p50)) {
            double ym = hp_sy(&p, k->total_p50);
            bc_text_printf(t, "<line class=\"mid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", p.x0, ym, p.x1,
                           ym);
        }
        char a[32], b[32];
        bc_html_format_number(a, sizeof a, hi);
        bc_html_format_number(b, sizeof b, lo);
        hp_text_at(t, p.x0 - 4, hp_sy(&p, hi) + 3.5, "m", "end", a);
        if (hi > lo) hp_text_at(t, p.x0 - 4, hp_sy(&p, lo) + 3.5, "m", "end", b);
        char last[16];
        snprintf(last, sizeof last, "%u", n);
        hp_text_at(t, n > 1 ? p.x0 : (p.x0 + p.x1) / 2, p.y1 + 13, "m", n > 1 ? "start" : "middle", "1");
        if (n > 1) hp_text_at(t, p.x1, p.y1 + 13, "m", "end", last);
        bc_text_puts(t, "\n");
        /* The line, broken where an iteration was not measured; past
         * MAX_LINE iterations it joins the means of MAX_LINE consecutive
         * runs of them (in place: bin b only reads v[b..]). */
        uint32_t bins = n <= MAX_LINE ? n : MAX_LINE;
        for (uint32_t bin = 0; bins < n && bin < bins; bin++) {
            uint32_t from = (uint32_t)((uint64_t)bin * n / bins), to = (uint32_t)((uint64_t)(bin + 1) * n / bins);
            double sum = 0.0;
            uint32_t m = 0;
            for (uint32_t j = from; j < to; j++)
                if (isfinite(v[j])) sum += v[j], m++;
            v[bin] = m ? sum / m : NAN;
        }
        bc_text_puts(t, "<path class=\"ln k0\" style=\"stroke-width:1.5\" d=\"");
        int pen = 0, started = 0;
        for (uint32_t bin = 0; bin < bins; bin++) {
            if (!isfinite(v[bin])) {
                pen = 0;
                continue;
            }
            /* the bin's middle iteration, 1-based */
            double from = (double)((uint64_t)bin * n / bins), to = (double)((uint64_t)(bin + 1) * n / bins);
            double it = 1.0 + (from + to - 1.0) / 2;
            double x = n > 1 ? hp_sx(&p, it) : (p.x0 + p.x1) / 2;
            bc_text_printf(t, "%s%.1f %.1f", pen ? " L" : (started ? " M" : "M"), x, hp_sy(&p, v[bin]));
            pen = started = 1;
        }
        bc_text_puts(t, "\"/>");
        for (uint32_t j = 0; n <= MAX_MARKED && j < n; j++) {
            if (!isfinite(v[j])) continue;
            double x = n > 1 ? hp_sx(&p, j + 1.0) : (p.x0 + p.x1) / 2;
            char num[32];
            bc_html_format_number(num, sizeof num, v[j]);
            bc_text_printf(t, "<circle class=\"ptl\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\"><title>", x, hp_sy(&p, v[j]));
            bc_html_text(t, k->label);
            bc_text_printf(t, ": iteration %u, %s ms</title></circle>", j + 1, num);
        }
        bc_text_puts(t, "\n");
    }
    hp_svg_close(t);
    hp_not_drawn(pg, notok, nodata, "no total_ms measured");
done:
    hp_how(t, "One small panel per case that finished: total_ms of each measured iteration, in the order they ran "
           "(1 is the first after warmup), the dotted line at the median. Each panel has its own vertical scale, "
           "labelled with the slowest and fastest iteration, so judge the size of a movement by those labels and "
           "by the cv above the panel, not by the height of the line. A first iteration far above the rest, or a "
           "line that keeps falling, means the warmup was too short; a line that keeps rising points at the "
           "machine (heat, other load). Past 300 iterations the line joins the means of 300 consecutive runs of "
           "iterations, and past 100 the iterations are not marked one by one.");
out:
    if (!notok || !nodata || !v) bc_text_puts(t, "</section>\n");
    free(notok);
    free(nodata);
    free(v);
}

/* ----------------------------------------------------------------- ranks */

/* A replicate case's distributed block (docs/scale.md), or NULL. */
static const bc_case_distributed *ranks_of(const hp_page *pg, const hp_case *k) {
    const bc_case_distributed *cd = BC_CASE_FIELD(pg->run, k->cr, distributed, NULL);
    return k->ok && cd && cd->rank < 0 && cd->rank_time_ms && cd->n_ranks > 0 ? cd : NULL;
}

int hp_has_ranks(const hp_page *pg) {
    const bc_distributed *d = BC_RUN_FIELD(pg->run, distributed, NULL);
    return d && !(d->mode && strcmp(d->mode, "replicate") != 0);
}

void hp_chart_ranks(hp_page *pg) {
    if (!hp_has_ranks(pg)) return;
    const bc_distributed *d = BC_RUN_FIELD(pg->run, distributed, NULL);
    bc_text *t = pg->t;
    hp_section_open(t, "ranks", "Ranks: each rank\xE2\x80\x99s time per case"); /* text, escaped: no entity */
    uint32_t rows = 0;
    double xmax = 0.0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const bc_case_distributed *cd = ranks_of(pg, &pg->cases[i]);
        if (!cd) continue;
        rows += cd->n_ranks;
        for (uint32_t r = 0; r < cd->n_ranks; r++)
            if (isfinite(cd->rank_time_ms[r]) && cd->rank_time_ms[r] > xmax) xmax = cd->rank_time_ms[r];
    }
    if (rows == 0 || xmax <= 0) {
        bc_text_puts(t, "<p class=\"note\">Nothing to draw: no case finished on every rank.</p>\n");
    } else {
        const double row_h = 14.0, gap = 8.0, top = 8.0;
        hp_plot p;
        memset(&p, 0, sizeof p);
        p.x0 = hp_label_width(pg);
        p.x1 = CHART_W - 150;
        p.y0 = top;
        uint32_t n_cases = 0;
        for (uint32_t i = 0; i < pg->n; i++) n_cases += ranks_of(pg, &pg->cases[i]) != NULL;
        p.y1 = top + rows * row_h + n_cases * gap + 4;
        bc_ticks_linear(&p.xt, 0.0, xmax, 8);
        hp_svg_open(t, CHART_W, p.y1 + 44, "Each rank's mean total_ms per case, in milliseconds; the slowest rank darker");
        hp_x_grid(t, &p);
        double y = top;
        for (uint32_t i = 0; i < pg->n; i++) {
            const hp_case *k = &pg->cases[i];
            const bc_case_distributed *cd = ranks_of(pg, k);
            if (!cd) continue;
            hp_text_at(t, p.x0 - 8, y + row_h / 2 + 3.5, "lab", "end", k->label);
            for (uint32_t r = 0; r < cd->n_ranks; r++, y += row_h) {
                double v = cd->rank_time_ms[r];
                if (!isfinite(v)) continue;
                const bc_rank_info *ri = r < d->world_size ? bc_dist_rank(d, r) : NULL;
                char num[32];
                bc_html_format_number(num, sizeof num, v);
                bc_text_printf(t, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"10\"><title>",
                               (int32_t)r == cd->slowest_rank ? "f1" : "f0", hp_sx(&p, 0), y + 2, hp_sx(&p, v) - hp_sx(&p, 0));
                bc_html_text(t, k->label);
                bc_html_textf(t, ": rank %u (%s) %s ms", r, ri && ri->host ? ri->host : "?", num);
                bc_text_printf(t, "</title></rect><text x=\"%.1f\" y=\"%.1f\">", hp_sx(&p, v) + 6, y + 11);
                bc_html_textf(t, "r%u %s ms", r, num);
                bc_text_puts(t, "</text>");
            }
            y += gap;
            bc_text_puts(t, "\n");
        }
        hp_x_axis(t, &p, "milliseconds per rollout (each rank's mean over the measured iterations)");
        hp_svg_close(t);
    }
    hp_how(t, "One group of bars per case that finished, one bar per rank in rank order, drawn to one scale: the "
           "rank&#8217;s mean total_ms. The darker bar is the slowest rank, the one every step of a replicate run "
           "waits for; the gap between it and the others is the straggler tax (docs/scale.md).");
}
