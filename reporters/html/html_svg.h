/* html_svg.h: the SVG pieces the html reporter's chart files share (not
 * the ABI): a plot area and its scales, axes, grids, text, a section with
 * its "how to read this" paragraph, the note of the cases not drawn.
 *   html_svg.c           these pieces
 *   html_charts.c        throughput, memory, stages
 *   html_charts_iter.c   distributions, progression, ranks
 */
#ifndef BENCHCTL_REPORTERS_HTML_SVG_H
#define BENCHCTL_REPORTERS_HTML_SVG_H

#include "html_page.h"
#include "htmlw.h"

#define CHART_W 1040.0 /* full chart width, px */
/* Bounds that keep a page small when a case ran thousands of iterations
 * (run.max_iterations allows 100000): */
#define MAX_POINTS 200 /* distributions: every iteration as a point up to this many; past it, the outliers */
#define MAX_LINE 300   /* progression: line points; past it, the means of consecutive runs of iterations */
#define MAX_MARKED 100 /* progression: a marker (with its value on hover) per iteration up to this many */

/* A plot area in SVG px (x0 left, x1 right, y0 top, y1 bottom) and its axes. */
typedef struct hp_plot {
    double x0, x1, y0, y1;
    bc_ticks xt, yt;
    int xlog; /* x is a log2 axis */
} hp_plot;

/* The SVG x and y of value v on p's axes (x on a log2 axis when p->xlog). */
double hp_sx(const hp_plot *p, double v);
double hp_sy(const hp_plot *p, double v);

/* Opens a chart: <div class="chart"><svg ...> of w x h px with its <title>;
 * hp_svg_close closes both. */
void hp_svg_open(bc_text *t, double w, double h, const char *title);
void hp_svg_close(bc_text *t);

/* <text> at (x, y) with a class and an anchor (start, middle, end). */
void hp_text_at(bc_text *t, double x, double y, const char *cls, const char *anchor, const char *s);

/* Horizontal grid lines and labels of the y axis, the axis line, and the
 * axis title rotated at x = title_x (none when title is NULL). */
void hp_y_axis(bc_text *t, const hp_plot *p, const char *title, double title_x);

/* Tick marks and labels of the x axis, the axis line, and its title
 * centred below (none when title is NULL). */
void hp_x_axis(bc_text *t, const hp_plot *p, const char *title);

/* Vertical grid lines at the x ticks. */
void hp_x_grid(bc_text *t, const hp_plot *p);

/* The colour index and dash class (" d1", " d2" or "") of series s: ten
 * colours, then the same colours dashed. */
int hp_series_colour(int s);
const char *hp_series_dash(int s);

/* The px width the longest case label needs. */
double hp_label_width(const hp_page *pg);

/* A light band behind a row centred at cy, row_h px high. */
void hp_band(bc_text *t, double cy, double row_h);

/* <section id="ID"><h2>TITLE</h2> (title escaped as text). */
void hp_section_open(bc_text *t, const char *id, const char *title);

/* The "How to read this." paragraph (text: this reporter's static markup)
 * and the end of the section. */
void hp_how(bc_text *t, const char *text);

/* "Not drawn: #1 (failed or skipped; see Warnings); #4 (WHAT)." for the
 * cases flagged in notok and nodata; nothing when both are empty. */
void hp_not_drawn(const hp_page *pg, const unsigned char *notok, const unsigned char *nodata, const char *what);

/* Scratch flags, one per case (caller frees); NULL, and t->failed set,
 * when out of memory. */
unsigned char *hp_flags(const hp_page *pg);

#endif
