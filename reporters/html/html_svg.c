/* html_svg.c: see html_svg.h. Coordinates are written with one decimal,
 * so the same run always gives the same bytes. */
#include "html_svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double hp_sx(const hp_plot *p, double v) {
    double lo = p->xt.lo, hi = p->xt.hi;
    if (p->xlog) v = log2(v), lo = log2(lo), hi = log2(hi);
    return p->x0 + (v - lo) / (hi - lo) * (p->x1 - p->x0);
}

double hp_sy(const hp_plot *p, double v) {
    return p->y1 - (v - p->yt.lo) / (p->yt.hi - p->yt.lo) * (p->y1 - p->y0);
}

void hp_svg_open(bc_text *t, double w, double h, const char *title) {
    bc_text_printf(t, "<div class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                      "viewBox=\"0 0 %.0f %.0f\" role=\"img\"><title>", w, h, w, h);
    bc_html_text(t, title);
    bc_text_puts(t, "</title>\n");
}

void hp_svg_close(bc_text *t) { bc_text_puts(t, "</svg></div>\n"); }

/* <text> at (x, y) with a class and an anchor (start, middle, end). */
void hp_text_at(bc_text *t, double x, double y, const char *cls, const char *anchor, const char *s) {
    bc_text_printf(t, "<text x=\"%.1f\" y=\"%.1f\"", x, y);
    if (cls) bc_text_printf(t, " class=\"%s\"", cls);
    if (anchor && strcmp(anchor, "start") != 0) bc_text_printf(t, " text-anchor=\"%s\"", anchor);
    bc_text_puts(t, ">");
    bc_html_text(t, s);
    bc_text_puts(t, "</text>");
}

/* A tick label; on a linear axis reaching 10000 or more, in thousands ("12k"). */
static void hp_tick_label(char *buf, size_t size, double v, const bc_ticks *tk, int log_axis) {
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
void hp_y_axis(bc_text *t, const hp_plot *p, const char *title, double title_x) {
    char lab[40];
    for (int i = 0; i < p->yt.n; i++) {
        double y = hp_sy(p, p->yt.v[i]);
        bc_text_printf(t, "<line class=\"gr\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", p->x0, y, p->x1, y);
        hp_tick_label(lab, sizeof lab, p->yt.v[i], &p->yt, 0);
        hp_text_at(t, p->x0 - 5, y + 3.5, NULL, "end", lab);
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
void hp_x_axis(bc_text *t, const hp_plot *p, const char *title) {
    char lab[40];
    for (int i = 0; i < p->xt.n; i++) {
        double x = hp_sx(p, p->xt.v[i]);
        if (x < p->x0 - 0.5 || x > p->x1 + 0.5) continue;
        bc_text_printf(t, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, p->y1, x,
                       p->y1 + 4);
        hp_tick_label(lab, sizeof lab, p->xt.v[i], &p->xt, p->xlog);
        hp_text_at(t, x, p->y1 + 15, NULL, "middle", lab);
    }
    bc_text_printf(t, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", p->x0, p->y1, p->x1,
                   p->y1);
    if (title) {
        hp_text_at(t, (p->x0 + p->x1) / 2, p->y1 + 31, "m", "middle", title);
        bc_text_puts(t, "\n");
    }
}

/* Vertical grid lines at the x ticks. */
void hp_x_grid(bc_text *t, const hp_plot *p) {
    for (int i = 0; i < p->xt.n; i++) {
        double x = hp_sx(p, p->xt.v[i]);
        if (x < p->x0 - 0.5 || x > p->x1 + 0.5) continue;
        bc_text_printf(t, "<line class=\"gr\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, p->y0, x, p->y1);
    }
    bc_text_puts(t, "\n");
}

/* The colour class suffix and dash class of series s: ten colours, then
 * the same colours dashed. */
int hp_series_colour(int s) { return s % HP_N_COLOURS; }
const char *hp_series_dash(int s) {
    static const char *const dash[] = {"", " d1", " d2"};
    return dash[(s / HP_N_COLOURS) % 3];
}

/* Width of the case label column for labels of pg->label_chars characters
 * in the 10.5 px monospace font. */
double hp_label_width(const hp_page *pg) {
    double w = 14.0 + 6.4 * pg->label_chars;
    return w < 80.0 ? 80.0 : w > 300.0 ? 300.0 : w;
}

/* The shaded band behind every other row of a per-case chart. */
void hp_band(bc_text *t, double cy, double row_h) {
    bc_text_printf(t, "<rect class=\"band\" x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\"/>", cy - row_h / 2,
                   CHART_W, row_h);
}

void hp_section_open(bc_text *t, const char *id, const char *title) {
    bc_text_printf(t, "<section id=\"%s\">\n<h2>", id);
    bc_html_text(t, title);
    bc_text_puts(t, "</h2>\n");
}

void hp_how(bc_text *t, const char *text) {
    bc_text_puts(t, "<p class=\"how\"><b>How to read this.</b> ");
    bc_text_puts(t, text); /* static text of this file, already valid markup */
    bc_text_puts(t, "</p>\n</section>\n");
}

/* "Not drawn: #1 (failed or skipped; see Warnings); #4 (no <what>)." for
 * the cases flagged in notok and nodata; nothing when both are empty. */
void hp_not_drawn(const hp_page *pg, const unsigned char *notok, const unsigned char *nodata, const char *what) {
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
unsigned char *hp_flags(const hp_page *pg) {
    unsigned char *f = calloc(pg->n ? pg->n : 1, 1);
    if (!f) pg->t->failed = 1;
    return f;
}
