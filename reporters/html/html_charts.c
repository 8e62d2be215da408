/* html_charts.c: the html reporter's charts of the whole matrix, inline SVG styled only by the
 * page's classes (so dark mode recolours them). Each chart is one
 * <section>: a legend in HTML where it needs one, the SVG, a note naming
 * the cases that could not be drawn and why, and a "how to read this"
 * paragraph.
 *
 *   throughput     tokens/s (mean) against effective batch (log2 axis), one
 *                  panel per (prompt, response) length, one line per series
 *   stages         per case, the means of the five stages as a stacked bar,
 *                  with a mark at the mean of total_ms
 *   memory         peak and held memory against effective batch, panels and
 *                  series as for throughput (a chart per backend when
 *                  several ran: their peaks measure different things)
 * The per-iteration charts and the ranks are html_charts_iter.c; the SVG
 * pieces html_svg.c.
 *
 * Sizes are fixed in px (the page is 1100 px wide at most; the SVGs scale
 * down on narrower windows); coordinates are written with one decimal, so
 * the same run always gives the same bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_svg.h"
#include "report.h"

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
    int c = hp_series_colour(s);
    bc_text_printf(t, "<span><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"26\" height=\"12\" aria-hidden=\"true\">"
                      "<line class=\"ln k%d%s\" x1=\"1\" y1=\"6\" x2=\"25\" y2=\"6\"/>",
                   c, dashed ? " dh" : hp_series_dash(s));
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
static void facet_line(const hp_page *pg, const hp_plot *p, int what, const unit *u, uint32_t f, int s, int v,
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
    int c = hp_series_colour(s);
    if (n > 1) {
        bc_text_printf(t, "<polyline class=\"ln k%d%s\" points=\"", c, v ? " dh" : hp_series_dash(s));
        for (uint32_t j = 0; j < n; j++) {
            const hp_case *k = &pg->cases[idx[j]];
            bc_text_printf(t, "%s%.1f,%.1f", j ? " " : "", hp_sx(p, (double)k->eff_batch),
                           hp_sy(p, facet_value(k, what, v) / u->divisor));
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
                           hp_sx(p, (double)k->eff_batch), hp_sy(p, val));
        else
            bc_text_printf(t, "<circle class=\"f%d\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"><title>", c,
                           hp_sx(p, (double)k->eff_batch), hp_sy(p, val));
        bc_html_text(t, k->label);
        bc_text_printf(t, ": %s %s%s</title></circle>", num, u->name,
                       what == FACET_TPS ? "" : v ? " held between rollouts" : " peak");
    }
    bc_text_puts(t, "\n");
}

/* The panels of a faceted chart, the legend above them and the note below. */
static void facet_chart(hp_page *pg, int what) {
    bc_text *t = pg->t;
    unsigned char *notok = hp_flags(pg), *nodata = hp_flags(pg), *used_series = hp_flags(pg), *used_facet = NULL;
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
        hp_not_drawn(pg, notok, nodata, "not measured");
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
    hp_plot p;
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
    hp_svg_open(t, cols * pw, rows * ph, chart_title);
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
        hp_text_at(t, p.x0, oy + 17, "t", "start", title);
        bc_text_puts(t, "\n");
        hp_x_grid(t, &p);
        hp_y_axis(t, &p, u.name, ox + 14);
        hp_x_axis(t, &p, "effective batch (rows, log2 scale)");
        for (uint32_t s = 0; s < pg->n_series; s++) {
            if (!used_series[s]) continue;
            if (what == FACET_MEMORY) facet_line(pg, &p, what, &u, f, (int)s, 1, idx);
            facet_line(pg, &p, what, &u, f, (int)s, 0, idx);
        }
    }
    hp_svg_close(t);
    hp_not_drawn(pg, notok, nodata, what == FACET_TPS ? "no tokens_per_second measured" : "no memory figure");
out:
    free(notok);
    free(nodata);
    free(used_series);
    free(used_facet);
    free(idx);
}

void hp_chart_throughput(hp_page *pg) {
    hp_section_open(pg->t, "throughput", "Throughput against effective batch");
    facet_chart(pg, FACET_TPS);
    hp_how(pg->t, "Each panel holds the cases of one prompt length and one response length; every panel has the same "
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
    hp_section_open(t, "memory", "Memory against effective batch");
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
    hp_how(t, "Panels, axes and lines as in the throughput chart, in MiB (GiB from 10 GiB up). The solid line "
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
    hp_section_open(t, "stages", "Where the time goes");
    unsigned char *notok = hp_flags(pg), *nodata = hp_flags(pg), *miss = hp_flags(pg);
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
        hp_not_drawn(pg, notok, nodata, "no stage measured");
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
    hp_plot p;
    memset(&p, 0, sizeof p);
    p.x0 = hp_label_width(pg);
    p.x1 = CHART_W - 78;
    p.y0 = top;
    p.y1 = top + rows * row_h + 4;
    bc_ticks_linear(&p.xt, 0.0, xmax, 8);
    hp_svg_open(t, CHART_W, p.y1 + 44, "Mean time of each stage per case, stacked, in milliseconds");
    hp_x_grid(t, &p);
    uint32_t r = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (!k->ok || nodata[i]) continue;
        double cy = top + r * row_h + row_h / 2 + 2;
        if (r % 2 == 0) hp_band(t, cy, row_h);
        r++;
        hp_text_at(t, p.x0 - 8, cy + 3.5, "lab", "end", k->label);
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
                           hp_sx(&p, x), cy - 6.5, hp_sx(&p, x + v) - hp_sx(&p, x));
            bc_html_text(t, k->label);
            bc_text_printf(t, ": %s %s ms</title></rect>", stage_names[s], num);
            x += v;
        }
        double end = x;
        char num[32];
        if (bc_html_format_number(num, sizeof num, k->total_mean)) {
            double xt = hp_sx(&p, k->total_mean);
            bc_text_printf(t, "<line class=\"tot\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>", xt,
                           cy - 9, xt, cy + 9);
            bc_html_text(t, k->label);
            bc_text_printf(t, ": total_ms %s ms</title></line>", num);
            if (k->total_mean > end) end = k->total_mean;
            bc_text_printf(t, "<text x=\"%.1f\" y=\"%.1f\">%s ms</text>", hp_sx(&p, end) + 6, cy + 3.5, num);
        }
        bc_text_puts(t, "\n");
    }
    hp_x_axis(t, &p, "milliseconds per rollout (means over the measured iterations)");
    hp_svg_close(t);
    hp_not_drawn(pg, notok, nodata, "no stage measured");
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
    hp_how(t, "One bar per case that finished, in requested order, drawn to one scale. The segments are the means, "
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
