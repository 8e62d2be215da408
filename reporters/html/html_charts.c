/* html_charts.c: the html reporter's charts, inline SVG styled only by the
 * page's classes (so dark mode recolours them). Each chart is one
 * <section>: a legend in HTML where it needs one, the SVG, a note naming
 * the cases that could not be drawn and why, and a "how to read this"
 * paragraph.
 *
 *   throughput     tokens/s (mean) against effective batch (log2 axis), one
 *                  panel per (prompt, response) length, one line per series
 *   stages         per case, the means of the five stages as a stacked bar,
 *                  with a mark at the mean of total_ms
 *   distributions  per case, every iteration's total_ms relative to the
 *                  case's median, as points over a box (quartiles, median,
 *                  whiskers at 1.5 IQR)
 *   progression    per case, total_ms by iteration index (small multiples)
 *   memory         peak and held memory against effective batch, panels and
 *                  series as for throughput
 *
 * Sizes are fixed in px (the page is 1100 px wide at most; the SVGs scale
 * down on narrower windows); coordinates are written with one decimal, so
 * the same run always gives the same bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_page.h"
#include "htmlw.h"
#include "report.h"

#define CHART_W 1040.0 /* full chart width, px */
/* Bounds that keep a page small when a case ran thousands of iterations
 * (run.max_iterations allows 100000): */
#define MAX_POINTS 200 /* distributions: every iteration as a point up to this many; past it, the outliers */
#define MAX_LINE 300   /* progression: line points; past it, the means of consecutive runs of iterations */
#define MAX_MARKED 100 /* progression: a marker (with its value on hover) per iteration up to this many */

/* ------------------------------------------------------------- helpers */

/* A plot area in SVG px (x0 left, x1 right, y0 top, y1 bottom) and its axes. */
typedef struct plot {
    double x0, x1, y0, y1;
    bc_ticks xt, yt;
    int xlog; /* x is a log2 axis */
} plot;

static double sx(const plot *p, double v) {
    double lo = p->xt.lo, hi = p->xt.hi;
    if (p->xlog) v = log2(v), lo = log2(lo), hi = log2(hi);
    return p->x0 + (v - lo) / (hi - lo) * (p->x1 - p->x0);
}

static double sy(const plot *p, double v) {
    return p->y1 - (v - p->yt.lo) / (p->yt.hi - p->yt.lo) * (p->y1 - p->y0);
}

static void svg_open(bc_text *t, double w, double h, const char *title) {
    bc_text_printf(t, "<div class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                      "viewBox=\"0 0 %.0f %.0f\" role=\"img\"><title>", w, h, w, h);
    bc_html_text(t, title);
    bc_text_puts(t, "</title>\n");
}

static void svg_close(bc_text *t) { bc_text_puts(t, "</svg></div>\n"); }

/* <text> at (x, y) with a class and an anchor (start, middle, end). */
static void text_at(bc_text *t, double x, double y, const char *cls, const char *anchor, const char *s) {
    bc_text_printf(t, "<text x=\"%.1f\" y=\"%.1f\"", x, y);
    if (cls) bc_text_printf(t, " class=\"%s\"", cls);
    if (anchor && strcmp(anchor, "start") != 0) bc_text_printf(t, " text-anchor=\"%s\"", anchor);
    bc_text_puts(t, ">");
    bc_html_text(t, s);
    bc_text_puts(t, "</text>");
}

/* A tick label; on a linear axis reaching 10000 or more, in thousands ("12k"). */
static void tick_label(char *buf, size_t size, double v, const bc_ticks *tk, int log_axis) {
    if (log_axis) {
        bc_html_format_number(buf, size, v);
        if (v >= 1.0) snprintf(buf, size, "%.0f", v);
        return;
    }
    if (tk->hi >= 10000.0) {
        size_t n = (size_t)bc_html_format_tick(buf, size, v / 1000.0, tk->step / 1000.0);
        if (n + 2 <= size && strcmp(buf, "0") != 0) buf[n] = 'k', buf[n + 1] = '\0';
        return;
    }
    bc_html_format_tick(buf, size, v, tk->step);
}

/* Horizontal grid lines and labels of the y axis, the axis line, and the
 * axis title rotated at x = title_x (none when title is NULL). */
static void y_axis(bc_text *t, const plot *p, const char *title, double title_x) {
    char lab[40];
    for (int i = 0; i < p->yt.n; i++) {
        double y = sy(p, p->yt.v[i]);
        bc_text_printf(t, "<line class=\"gr\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", p->x0, y, p->x1, y);
        tick_label(lab, sizeof lab, p->yt.v[i], &p->yt, 0);
        text_at(t, p->x0 - 5, y + 3.5, NULL, "end", lab);
    }
    bc_text_printf(t, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", p->x0, p->y0, p->x0,
                   p->y1);
    if (title) {
        bc_text_printf(t, "<text transform=\"rotate(-90)\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"m\">",
                       -(p->y0 + p->y1) / 2, title_x);
        bc_html_text(t, title);
        bc_text_puts(t, "</text>\n");
    }
}

/* Tick marks and labels of the x axis, the axis line, and its title
 * centred below (none when title is NULL). */
static void x_axis(bc_text *t, const plot *p, const char *title) {
    char lab[40];
    for (int i = 0; i < p->xt.n; i++) {
        double x = sx(p, p->xt.v[i]);
        if (x < p->x0 - 0.5 || x > p->x1 + 0.5) continue;
        bc_text_printf(t, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, p->y1, x,
                       p->y1 + 4);
        tick_label(lab, sizeof lab, p->xt.v[i], &p->xt, p->xlog);
        text_at(t, x, p->y1 + 15, NULL, "middle", lab);
    }
    bc_text_printf(t, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", p->x0, p->y1, p->x1,
                   p->y1);
    if (title) {
        text_at(t, (p->x0 + p->x1) / 2, p->y1 + 31, "m", "middle", title);
        bc_text_puts(t, "\n");
    }
}

/* Vertical grid lines at the x ticks. */
static void x_grid(bc_text *t, const plot *p) {
    for (int i = 0; i < p->xt.n; i++) {
        double x = sx(p, p->xt.v[i]);
        if (x < p->x0 - 0.5 || x > p->x1 + 0.5) continue;
        bc_text_printf(t, "<line class=\"gr\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, p->y0, x, p->y1);
    }
    bc_text_puts(t, "\n");
}

/* The colour class suffix and dash class of series s: ten colours, then
 * the same colours dashed. */
static int series_colour(int s) { return s % HP_N_COLOURS; }
static const char *series_dash(int s) {
    static const char *const dash[] = {"", " d1", " d2"};
    return dash[(s / HP_N_COLOURS) % 3];
}

/* Width of the case label column for labels of pg->label_chars characters
 * in the 10.5 px monospace font. */
static double label_width(const hp_page *pg) {
    double w = 14.0 + 6.4 * pg->label_chars;
    return w < 80.0 ? 80.0 : w > 300.0 ? 300.0 : w;
}

/* The shaded band behind every other row of a per-case chart. */
static void band(bc_text *t, double cy, double row_h) {
    bc_text_printf(t, "<rect class=\"band\" x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\"/>", cy - row_h / 2,
                   CHART_W, row_h);
}

static void section_open(bc_text *t, const char *id, const char *title) {
    bc_text_printf(t, "<section id=\"%s\">\n<h2>", id);
    bc_html_text(t, title);
    bc_text_puts(t, "</h2>\n");
}

static void how(bc_text *t, const char *text) {
    bc_text_puts(t, "<p class=\"how\"><b>How to read this.</b> ");
    bc_text_puts(t, text); /* static text of this file, already valid markup */
    bc_text_puts(t, "</p>\n</section>\n");
}

/* "Not drawn: #1 (failed or skipped; see Warnings); #4 (no <what>)." for
 * the cases flagged in notok and nodata; nothing when both are empty. */
static void not_drawn(const hp_page *pg, const unsigned char *notok, const unsigned char *nodata, const char *what) {
    bc_text *t = pg->t;
    uint32_t a = 0, b = 0;
    for (uint32_t i = 0; i < pg->n; i++) a += notok[i], b += nodata[i];
    if (!a && !b) return;
    bc_text_puts(t, "<p class=\"note\">Not drawn: ");
    if (a) {
        hp_put_case_list(pg, notok);
        bc_text_puts(t, " (failed or skipped; see Warnings)");
    }
    if (b) {
        if (a) bc_text_puts(t, "; ");
        hp_put_case_list(pg, nodata);
        bc_text_puts(t, " (");
        bc_html_text(t, what);
        bc_text_puts(t, ")");
    }
    bc_text_puts(t, ".</p>\n");
}

/* Scratch flags, one per case; NULL (and t->failed set) when out of memory. */
static unsigned char *flags(const hp_page *pg) {
    unsigned char *f = calloc(pg->n ? pg->n : 1, 1);
    if (!f) pg->t->failed = 1;
    return f;
}

/* ------------------------------------------- faceted charts (x: batch) */

enum { FACET_TPS, FACET_MEMORY };

/* Value v (0: the line, 1: the dashed line) of case k in a faceted chart,
 * in tokens/s or MiB. */
static double facet_value(const hp_case *k, int what, int v) {
    if (what == FACET_TPS) return v == 0 ? k->tps_mean : NAN;
    return v == 0 ? k->peak_mib : k->held_mib;
}

/* The unit a faceted chart draws in: tokens/s, MiB, or GiB from 10 GiB up. */
typedef struct unit {
    double divisor;
    const char *name;
} unit;

/* 1 when case k belongs in the chart being drawn: every case, or only those
 * of pg->scope's backend (the memory chart of a run with several backends). */
static int in_scope(const hp_page *pg, const hp_case *k) {
    if (!pg->scope) return 1;
    const char *b = bc_case_backend(k->cr->c);
    return b && strcmp(b, pg->scope) == 0;
}

static int facet_drawable(const hp_case *k, int what) {
    return k->ok && k->eff_batch > 0 && (isfinite(facet_value(k, what, 0)) || isfinite(facet_value(k, what, 1)));
}

/* The facet's title: "prompt 128 → response 64 tokens". */
static void facet_title(char *buf, size_t size, const hp_facet *f) {
    if (f->prompt > 0)
        snprintf(buf, size, "prompt %u \xE2\x86\x92 response %u tokens", f->prompt, f->response);
    else
        snprintf(buf, size, "prompts from a file \xE2\x86\x92 response %u tokens", f->response);
}

/* A legend entry: a short line with a marker in series s's colour. */
static void legend_series(bc_text *t, int s, const char *label, int hollow, int dashed) {
    int c = series_colour(s);
    bc_text_printf(t, "<span><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"26\" height=\"12\" aria-hidden=\"true\">"
                      "<line class=\"ln k%d%s\" x1=\"1\" y1=\"6\" x2=\"25\" y2=\"6\"/>",
                   c, dashed ? " dh" : series_dash(s));
    if (hollow)
        bc_text_printf(t, "<circle class=\"hollow k%d\" cx=\"13\" cy=\"6\" r=\"3.2\"/>", c);
    else
        bc_text_printf(t, "<circle class=\"f%d\" cx=\"13\" cy=\"6\" r=\"3.5\"/>", c);
    bc_text_puts(t, "</svg>");
    bc_html_text(t, label);
    bc_text_puts(t, "</span>");
}

/* One line (v = 0 solid, filled markers; v = 1 dashed, hollow markers) of
 * series s in facet f: its cases sorted by effective batch. */
static void facet_line(const hp_page *pg, const plot *p, int what, const unit *u, uint32_t f, int s, int v,
                       uint32_t *idx) {
    bc_text *t = pg->t;
    uint32_t n = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (k->facet != (int)f || k->series != s || !k->ok || k->eff_batch == 0 || !in_scope(pg, k) ||
            !isfinite(facet_value(k, what, v)))
            continue;
        uint32_t j = n++; /* insertion sort by effective batch; requested order among equals */
        while (j > 0 && pg->cases[idx[j - 1]].eff_batch > k->eff_batch) idx[j] = idx[j - 1], j--;
        idx[j] = i;
    }
    if (n == 0) return;
    int c = series_colour(s);
    if (n > 1) {
        bc_text_printf(t, "<polyline class=\"ln k%d%s\" points=\"", c, v ? " dh" : series_dash(s));
        for (uint32_t j = 0; j < n; j++) {
            const hp_case *k = &pg->cases[idx[j]];
            bc_text_printf(t, "%s%.1f,%.1f", j ? " " : "", sx(p, (double)k->eff_batch),
                           sy(p, facet_value(k, what, v) / u->divisor));
        }
        bc_text_puts(t, "\"/>\n");
    }
    for (uint32_t j = 0; j < n; j++) {
        const hp_case *k = &pg->cases[idx[j]];
        double val = facet_value(k, what, v) / u->divisor;
        char num[32];
        bc_html_format_number(num, sizeof num, val);
        if (v)
            bc_text_printf(t, "<circle class=\"hollow k%d\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.2\"><title>", c,
                           sx(p, (double)k->eff_batch), sy(p, val));
        else
            bc_text_printf(t, "<circle class=\"f%d\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"><title>", c,
                           sx(p, (double)k->eff_batch), sy(p, val));
        bc_html_text(t, k->label);
        bc_text_printf(t, ": %s %s%s</title></circle>", num, u->name,
                       what == FACET_TPS ? "" : v ? " held between rollouts" : " peak");
    }
    bc_text_puts(t, "\n");
}

/* The panels of a faceted chart, the legend above them and the note below. */
static void facet_chart(hp_page *pg, int what) {
    bc_text *t = pg->t;
    unsigned char *notok = flags(pg), *nodata = flags(pg), *used_series = flags(pg), *used_facet = NULL;
    uint32_t *idx = calloc(pg->n ? pg->n : 1, sizeof *idx);
    if (pg->n_facets) used_facet = calloc(pg->n_facets, 1);
    if (!notok || !nodata || !used_series || !idx || (pg->n_facets && !used_facet)) {
        t->failed = 1;
        goto out;
    }
    double xlo = INFINITY, xhi = -INFINITY, ymin = INFINITY, ymax = 0.0;
    int any_held = 0;
    uint32_t drawn = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (!in_scope(pg, k)) continue;
        if (!k->ok) {
            notok[i] = 1;
            continue;
        }
        if (!facet_drawable(k, what)) {
            nodata[i] = 1;
            continue;
        }
        drawn++;
        used_series[k->series] = 1;
        used_facet[k->facet] = 1;
        double b = (double)k->eff_batch;
        if (b < xlo) xlo = b;
        if (b > xhi) xhi = b;
        for (int v = 0; v < 2; v++) {
            double y = facet_value(k, what, v);
            if (isfinite(y) && y > ymax) ymax = y;
            if (isfinite(y) && y < ymin) ymin = y;
        }
        any_held |= isfinite(facet_value(k, what, 1));
    }
    if (drawn == 0) {
        bc_text_printf(t, "<p class=\"note\">Nothing to draw: no case that finished has %s.</p>\n",
                       what == FACET_TPS ? "a measured tokens_per_second" : "a peak or held memory figure");
        not_drawn(pg, notok, nodata, "not measured");
        goto out;
    }

    bc_text_puts(t, "<div class=\"legend\">");
    for (uint32_t s = 0; s < pg->n_series; s++)
        if (used_series[s]) legend_series(t, (int)s, pg->series[s].label, 0, 0);
    bc_text_puts(t, "</div>\n");
    if (what == FACET_MEMORY) {
        bc_text_puts(t, "<div class=\"legend\">");
        legend_series(t, HP_N_COLOURS - 1, "peak (solid, filled)", 0, 0);
        if (any_held) legend_series(t, HP_N_COLOURS - 1, "held between rollouts (dashed, hollow)", 1, 1);
        bc_text_puts(t, "</div>\n");
    }

    uint32_t n_panels = 0;
    for (uint32_t f = 0; f < pg->n_facets; f++) n_panels += used_facet[f];
    uint32_t cols = n_panels < 3 ? n_panels : 3, rows = (n_panels + cols - 1) / cols;
    double pw = cols == 1 ? CHART_W / 2 : CHART_W / cols, ph = 250.0;
    plot p;
    memset(&p, 0, sizeof p);
    p.xlog = 1;
    bc_ticks_log2(&p.xt, xlo, xhi, (int)((pw - 80) / 34));
    unit u = {1.0, what == FACET_TPS ? "tokens/s" : "MiB"};
    if (what == FACET_MEMORY && ymax >= 10240.0) u = (unit){1024.0, "GiB"};
    ymin /= u.divisor;
    ymax /= u.divisor;
    /* from zero, unless every value sits in the top half: then the axis
     * zooms in on them (its labels say where it starts) */
    if (ymin > 0.5 * ymax)
        bc_ticks_linear(&p.yt, ymin - (ymax - ymin) * 0.1, ymax + (ymax - ymin) * 0.1, 5);
    else
        bc_ticks_linear(&p.yt, 0.0, ymax * 1.04, 5);
    char chart_title[200];
    snprintf(chart_title, sizeof chart_title, "%s%s%s",
             what == FACET_TPS ? "Throughput (tokens/s, mean) against effective batch, per prompt and response length"
                               : "Peak and held memory (MiB) against effective batch, per prompt and response length",
             pg->scope ? ", backend " : "", pg->scope ? pg->scope : "");
    svg_open(t, cols * pw, rows * ph, chart_title);
    uint32_t panel = 0;
    for (uint32_t f = 0; f < pg->n_facets; f++) {
        if (!used_facet[f]) continue;
        double ox = (panel % cols) * pw, oy = (panel / cols) * ph;
        panel++;
        p.x0 = ox + 62;
        p.x1 = ox + pw - 16;
        p.y0 = oy + 30;
        p.y1 = oy + ph - 46;
        char title[96];
        facet_title(title, sizeof title, &pg->facets[f]);
        text_at(t, p.x0, oy + 17, "t", "start", title);
        bc_text_puts(t, "\n");
        x_grid(t, &p);
        y_axis(t, &p, u.name, ox + 14);
        x_axis(t, &p, "effective batch (rows, log2 scale)");
        for (uint32_t s = 0; s < pg->n_series; s++) {
            if (!used_series[s]) continue;
            if (what == FACET_MEMORY) facet_line(pg, &p, what, &u, f, (int)s, 1, idx);
            facet_line(pg, &p, what, &u, f, (int)s, 0, idx);
        }
    }
    svg_close(t);
    not_drawn(pg, notok, nodata, what == FACET_TPS ? "no tokens_per_second measured" : "no memory figure");
out:
    free(notok);
    free(nodata);
    free(used_series);
    free(used_facet);
    free(idx);
}

void hp_chart_throughput(hp_page *pg) {
    section_open(pg->t, "throughput", "Throughput against effective batch");
    facet_chart(pg, FACET_TPS);
    how(pg->t, "Each panel holds the cases of one prompt length and one response length; every panel has the same "
               "axes, so panels compare directly. Across, the effective batch (batch \xC3\x97 samples per prompt, "
               "the rows generated at once) on a log2 scale; up, the mean of tokens_per_second, the generated tokens "
               "of all rows over the generate stage (from zero, unless every value lies in the top half of the "
               "range: then the axis starts near the smallest, so read its labels). One line per samples-per-prompt "
               "value and precision (and cache policy), naming only those that vary in the run. A line that keeps "
               "rising means the hardware still has room for larger batches; where it flattens, more rows no longer "
               "buy throughput. Hover a point for its case.");
}

/* What backend b's peak figure measures, from its cases' memory reports:
 * the accelerator's peak when one reports a device peak, else the host
 * peak as the backend measures it. */
static const char *peak_kind(const hp_page *pg, const char *b) {
    for (uint32_t i = 0; i < pg->n; i++) {
        const bc_case_report *cr = pg->cases[i].cr;
        const char *cb = bc_case_backend(cr->c);
        if (cb && strcmp(cb, b) == 0 && cr->memory && cr->memory->device_peak_bytes >= 0)
            return "peak on the accelerator (device_peak_bytes)";
    }
    return "peak on the host as this backend measures it (host_peak_bytes)";
}

void hp_chart_memory(hp_page *pg) {
    bc_text *t = pg->t;
    section_open(t, "memory", "Memory against effective batch");
    if (!pg->several_backends) {
        facet_chart(pg, FACET_MEMORY);
    } else {
        /* backends measure their peak differently (a native engine: its
         * allocator's high-water mark; a worker: its process's peak RSS),
         * so each gets its own chart and axis, titled by what it measures */
        for (uint32_t i = 0; i < pg->n; i++) {
            const char *b = bc_case_backend(pg->cases[i].cr->c);
            int seen = !b;
            for (uint32_t j = 0; j < i && !seen; j++) {
                const char *o = bc_case_backend(pg->cases[j].cr->c);
                seen = o && strcmp(o, b) == 0;
            }
            if (seen) continue;
            bc_text_puts(t, "<h3>Backend <span class=\"mono\">");
            bc_html_text(t, b);
            bc_text_puts(t, "</span>: ");
            bc_html_text(t, peak_kind(pg, b));
            bc_text_puts(t, "</h3>\n");
            pg->scope = b;
            facet_chart(pg, FACET_MEMORY);
            pg->scope = NULL;
        }
    }
    how(t, "Panels, axes and lines as in the throughput chart, in MiB (GiB from 10 GiB up). The solid line "
           "with filled points is the peak during the measured rollouts (the accelerator&#8217;s peak on a "
           "device, else the backend&#8217;s host peak: a native engine&#8217;s allocator high-water mark, a "
           "worker&#8217;s process peak RSS with its interpreter and framework); the dashed line with hollow points "
           "is what the backend still held between rollouts, after the cache policy ran. The gap between them is "
           "what releasing the cache gives back between rollouts; the slope shows how the KV cache and "
           "workspace grow with the rows. With several backends each has its own chart and axis, titled by what "
           "its peak measures: the figures of different backends measure different things and do not compare.");
}

/* ---------------------------------------------------------------- stages */

static const char *const stage_names[HP_N_STAGES] = {"prompt expansion", "prefill forward", "decode forward",
                                                     "generation overhead", "post-processing"};
static const char *const stage_fields[HP_N_STAGES] = {"prompt_expansion_ms", "prefill_forward_ms",
                                                      "decode_forward_ms", "generation_overhead_ms",
                                                      "post_processing_ms"};

void hp_chart_stages(hp_page *pg) {
    bc_text *t = pg->t;
    section_open(t, "stages", "Where the time goes");
    unsigned char *notok = flags(pg), *nodata = flags(pg), *miss = flags(pg);
    if (!notok || !nodata || !miss) goto out;
    uint32_t rows = 0;
    double xmax = 0.0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        double sum = 0.0;
        int any = 0;
        for (int s = 0; s < HP_N_STAGES; s++)
            if (isfinite(k->stage[s]) && k->stage[s] > 0) sum += k->stage[s], any = 1;
        if (!k->ok)
            notok[i] = 1;
        else if (!any)
            nodata[i] = 1;
        else
            rows++;
        if (k->ok && any) {
            if (sum > xmax) xmax = sum;
            if (isfinite(k->total_mean) && k->total_mean > xmax) xmax = k->total_mean;
        }
    }
    if (rows == 0) {
        bc_text_puts(t, "<p class=\"note\">Nothing to draw: no case that finished has a measured stage.</p>\n");
        not_drawn(pg, notok, nodata, "no stage measured");
        goto done;
    }
    bc_text_puts(t, "<div class=\"legend\">");
    for (int s = 0; s < HP_N_STAGES; s++) {
        bc_text_printf(t, "<span><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"12\" height=\"12\" "
                          "aria-hidden=\"true\"><rect class=\"g%d\" width=\"12\" height=\"12\"/></svg>", s);
        bc_html_text(t, stage_names[s]);
        bc_text_puts(t, "</span>");
    }
    bc_text_puts(t, "<span><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"8\" height=\"14\" aria-hidden=\"true\">"
                    "<line class=\"tot\" x1=\"4\" y1=\"0\" x2=\"4\" y2=\"14\"/></svg>total_ms (mean)</span>");
    bc_text_puts(t, "</div>\n");

    const double row_h = 20.0, top = 8.0;
    plot p;
    memset(&p, 0, sizeof p);
    p.x0 = label_width(pg);
    p.x1 = CHART_W - 78;
    p.y0 = top;
    p.y1 = top + rows * row_h + 4;
    bc_ticks_linear(&p.xt, 0.0, xmax, 8);
    svg_open(t, CHART_W, p.y1 + 44, "Mean time of each stage per case, stacked, in milliseconds");
    x_grid(t, &p);
    uint32_t r = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (!k->ok || nodata[i]) continue;
        double cy = top + r * row_h + row_h / 2 + 2;
        if (r % 2 == 0) band(t, cy, row_h);
        r++;
        text_at(t, p.x0 - 8, cy + 3.5, "lab", "end", k->label);
        double x = 0.0;
        for (int s = 0; s < HP_N_STAGES; s++) {
            double v = k->stage[s];
            if (!isfinite(v)) {
                miss[i] |= (unsigned char)(1u << s);
                continue;
            }
            if (v <= 0) continue;
            char num[32];
            bc_html_format_number(num, sizeof num, v);
            bc_text_printf(t, "<rect class=\"g%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"13\"><title>", s,
                           sx(&p, x), cy - 6.5, sx(&p, x + v) - sx(&p, x));
            bc_html_text(t, k->label);
            bc_text_printf(t, ": %s %s ms</title></rect>", stage_names[s], num);
            x += v;
        }
        double end = x;
        char num[32];
        if (bc_html_format_number(num, sizeof num, k->total_mean)) {
            double xt = sx(&p, k->total_mean);
            bc_text_printf(t, "<line class=\"tot\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>", xt,
                           cy - 9, xt, cy + 9);
            bc_html_text(t, k->label);
            bc_text_printf(t, ": total_ms %s ms</title></line>", num);
            if (k->total_mean > end) end = k->total_mean;
            bc_text_printf(t, "<text x=\"%.1f\" y=\"%.1f\">%s ms</text>", sx(&p, end) + 6, cy + 3.5, num);
        }
        bc_text_puts(t, "\n");
    }
    x_axis(t, &p, "milliseconds per rollout (means over the measured iterations)");
    svg_close(t);
    not_drawn(pg, notok, nodata, "no stage measured");
    /* Stages a drawn case lacks: its bar is short of the total mark by them. */
    for (int s = 0; s < HP_N_STAGES; s++) {
        unsigned char *pick = nodata; /* reused: nodata is not needed any more */
        uint32_t n = 0;
        for (uint32_t i = 0; i < pg->n; i++) n += (pick[i] = (unsigned char)((miss[i] >> s) & 1u));
        if (!n) continue;
        bc_text_puts(t, "<p class=\"note\">");
        bc_html_text(t, stage_names[s]);
        if (bc_run_field_index(pg->run, stage_fields[s]) < 0) {
            bc_text_puts(t, ": this run has no field ");
            bc_html_text(t, stage_fields[s]);
            bc_text_puts(t, "; no bar has that segment.</p>\n");
            continue;
        }
        bc_text_puts(t, " (");
        bc_html_text(t, stage_fields[s]);
        bc_text_puts(t, ") not measured in ");
        hp_put_case_list(pg, pick);
        bc_text_puts(t, ": those bars lack that segment.</p>\n");
    }
done:
    how(t, "One bar per case that finished, in requested order, drawn to one scale. The segments are the means, "
           "over the measured iterations, of the stages of a rollout, left to right: expanding the prompts, the "
           "prefill forward pass, the decode forward passes, the rest of generate (sampling and bookkeeping, the "
           "generation overhead) and post-processing. The upright mark is the mean of total_ms; when every stage "
           "was measured the bar ends at it, and a gap before it is time in a stage this run did not measure. "
           "Hover a segment for its value.");
out:
    if (!notok || !nodata || !miss) bc_text_puts(t, "</section>\n");
    free(notok);
    free(nodata);
    free(miss);
}

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
    section_open(t, "distributions", "Per-iteration distributions of total_ms");
    unsigned char *notok = flags(pg), *nodata = flags(pg);
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
        not_drawn(pg, notok, nodata, "no total_ms measured");
        goto done;
    }
    if (hi - lo < 1.0) lo -= 0.5, hi += 0.5; /* every case flat: show +-0.5 % at least */
    const double row_h = 22.0, top = 8.0;
    plot p;
    memset(&p, 0, sizeof p);
    p.x0 = label_width(pg);
    p.x1 = CHART_W - 190;
    p.y0 = top;
    p.y1 = top + rows * row_h + 4;
    bc_ticks_linear(&p.xt, lo, hi, 8);
    svg_open(t, CHART_W, p.y1 + 44, "Each iteration's total_ms relative to its case's median, with box plots");
    x_grid(t, &p);
    double x_zero = sx(&p, 0.0);
    uint32_t r = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (!k->ok || nodata[i]) continue;
        uint32_t n = total_values(pg, k, v);
        memcpy(sorted, v, n * sizeof *v);
        qsort(sorted, n, sizeof *sorted, cmp_double);
        box b = box_of(sorted, n);
        double cy = top + r * row_h + row_h / 2 + 2;
        if (r % 2 == 0) band(t, cy, row_h);
        r++;
        text_at(t, p.x0 - 8, cy + 3.5, "lab", "end", k->label);
        double xq1 = sx(&p, rel(b.q1, b.med)), xq3 = sx(&p, rel(b.q3, b.med));
        double xlo = sx(&p, rel(b.wlo, b.med)), xhi = sx(&p, rel(b.whi, b.med));
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
                           sx(&p, rel(x, b.med)), cy + dy);
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
    x_axis(t, &p, "total_ms, % above (+) or below (\xE2\x88\x92) the case's median");
    svg_close(t);
    not_drawn(pg, notok, nodata, "no total_ms measured");
done:
    how(t, "One row per case that finished. Each point is one measured iteration&#8217;s total_ms, placed by how "
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
    section_open(t, "progression", "Iteration progression");
    unsigned char *notok = flags(pg), *nodata = flags(pg);
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
        not_drawn(pg, notok, nodata, "no total_ms measured");
        goto done;
    }
    const uint32_t cols = 5;
    const double pw = CHART_W / cols, ph = 116.0;
    uint32_t rows = (panels + cols - 1) / cols;
    svg_open(t, CHART_W, rows * ph, "total_ms by iteration index, one small panel per case");
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
        plot p;
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
        text_at(t, ox + 6, oy + 13, "lab t", "start", title);
        char med[32], cv[32];
        bc_html_format_number(med, sizeof med, k->total_p50);
        bc_html_format_number(cv, sizeof cv, k->total_cv * 100.0);
        int unstable = isfinite(k->total_cv) && k->total_cv > pg->unstable_cv;
        bc_text_printf(t, "<text x=\"%.1f\" y=\"%.1f\" class=\"%s\">p50 %s ms \xC2\xB7 cv %s%s</text>\n", ox + 6,
                       oy + 27, unstable ? "bad" : "m", med[0] ? med : "-", cv[0] ? cv : "-", cv[0] ? "%" : "");
        bc_text_printf(t, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", p.x0, p.y0,
                       p.x1 - p.x0, p.y1 - p.y0);
        if (isfinite(k->total_p50)) {
            double ym = sy(&p, k->total_p50);
            bc_text_printf(t, "<line class=\"mid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", p.x0, ym, p.x1,
                           ym);
        }
        char a[32], b[32];
        bc_html_format_number(a, sizeof a, hi);
        bc_html_format_number(b, sizeof b, lo);
        text_at(t, p.x0 - 4, sy(&p, hi) + 3.5, "m", "end", a);
        if (hi > lo) text_at(t, p.x0 - 4, sy(&p, lo) + 3.5, "m", "end", b);
        char last[16];
        snprintf(last, sizeof last, "%u", n);
        text_at(t, n > 1 ? p.x0 : (p.x0 + p.x1) / 2, p.y1 + 13, "m", n > 1 ? "start" : "middle", "1");
        if (n > 1) text_at(t, p.x1, p.y1 + 13, "m", "end", last);
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
            double x = n > 1 ? sx(&p, it) : (p.x0 + p.x1) / 2;
            bc_text_printf(t, "%s%.1f %.1f", pen ? " L" : (started ? " M" : "M"), x, sy(&p, v[bin]));
            pen = started = 1;
        }
        bc_text_puts(t, "\"/>");
        for (uint32_t j = 0; n <= MAX_MARKED && j < n; j++) {
            if (!isfinite(v[j])) continue;
            double x = n > 1 ? sx(&p, j + 1.0) : (p.x0 + p.x1) / 2;
            char num[32];
            bc_html_format_number(num, sizeof num, v[j]);
            bc_text_printf(t, "<circle class=\"ptl\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\"><title>", x, sy(&p, v[j]));
            bc_html_text(t, k->label);
            bc_text_printf(t, ": iteration %u, %s ms</title></circle>", j + 1, num);
        }
        bc_text_puts(t, "\n");
    }
    svg_close(t);
    not_drawn(pg, notok, nodata, "no total_ms measured");
done:
    how(t, "One small panel per case that finished: total_ms of each measured iteration, in the order they ran "
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
    section_open(t, "ranks", "Ranks: each rank\xE2\x80\x99s time per case"); /* text, escaped: no entity */
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
        plot p;
        memset(&p, 0, sizeof p);
        p.x0 = label_width(pg);
        p.x1 = CHART_W - 150;
        p.y0 = top;
        uint32_t n_cases = 0;
        for (uint32_t i = 0; i < pg->n; i++) n_cases += ranks_of(pg, &pg->cases[i]) != NULL;
        p.y1 = top + rows * row_h + n_cases * gap + 4;
        bc_ticks_linear(&p.xt, 0.0, xmax, 8);
        svg_open(t, CHART_W, p.y1 + 44, "Each rank's mean total_ms per case, in milliseconds; the slowest rank darker");
        x_grid(t, &p);
        double y = top;
        for (uint32_t i = 0; i < pg->n; i++) {
            const hp_case *k = &pg->cases[i];
            const bc_case_distributed *cd = ranks_of(pg, k);
            if (!cd) continue;
            text_at(t, p.x0 - 8, y + row_h / 2 + 3.5, "lab", "end", k->label);
            for (uint32_t r = 0; r < cd->n_ranks; r++, y += row_h) {
                double v = cd->rank_time_ms[r];
                if (!isfinite(v)) continue;
                const bc_rank_info *ri = r < d->world_size ? bc_dist_rank(d, r) : NULL;
                char num[32];
                bc_html_format_number(num, sizeof num, v);
                bc_text_printf(t, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"10\"><title>",
                               (int32_t)r == cd->slowest_rank ? "f1" : "f0", sx(&p, 0), y + 2, sx(&p, v) - sx(&p, 0));
                bc_html_text(t, k->label);
                bc_html_textf(t, ": rank %u (%s) %s ms", r, ri && ri->host ? ri->host : "?", num);
                bc_text_printf(t, "</title></rect><text x=\"%.1f\" y=\"%.1f\">", sx(&p, v) + 6, y + 11);
                bc_html_textf(t, "r%u %s ms", r, num);
                bc_text_puts(t, "</text>");
            }
            y += gap;
            bc_text_puts(t, "\n");
        }
        x_axis(t, &p, "milliseconds per rollout (each rank's mean over the measured iterations)");
        svg_close(t);
    }
    how(t, "One group of bars per case that finished, one bar per rank in rank order, drawn to one scale: the "
           "rank&#8217;s mean total_ms. The darker bar is the slowest rank, the one every step of a replicate run "
           "waits for; the gap between it and the others is the straggler tax (docs/scale.md).");
}
