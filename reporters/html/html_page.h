/* html_page.h: what the two files of the html reporter share (not the ABI):
 * the page being written, with every number the page shows read once from
 * the bc_run_report by name, each case's label, and the facets (prompt x
 * response length) and series (the varying axes other than the batch)
 * that the charts group cases by.
 *
 *   html_reporter.c     the plugin: settings, hooks, the style, the page
 *   html_model.c        the run read once: cases, labels, facets, series
 *   html_header.c       the header and its facts
 *   html_table.c        the warnings and the case table
 *   html_svg.c          the SVG pieces the charts share (html_svg.h)
 *   html_charts.c       throughput, memory, stages
 *   html_charts_iter.c  distributions, progression, ranks
 */
#ifndef BENCHCTL_REPORTERS_HTML_PAGE_H
#define BENCHCTL_REPORTERS_HTML_PAGE_H

#include <stdint.h>
#include <string.h>

#include "benchctl/plugin.h"
#include "report_file.h"

/* The stages of one rollout, as the stacked bars show them, left to right. */
enum { HP_STAGE_EXPANSION = 0, HP_STAGE_PREFILL, HP_STAGE_DECODE, HP_STAGE_OVERHEAD, HP_STAGE_POST, HP_N_STAGES };

/* How many distinct colours series get before they repeat with a dash
 * pattern (the style sheet defines --c0 .. --c9). */
#define HP_N_COLOURS 10

/* One case as the page sees it. Numbers are NAN when not measured (or when
 * the host has no such field or statistic). */
typedef struct hp_case {
    const bc_case_report *cr; /* the host's, valid during close */
    char label[112];          /* "#3 B4x2 128->64 bf16 release", the axes that vary (UTF-8) */
    int ok;                   /* status BC_CASE_OK */
    uint64_t eff_batch;       /* batch_size x samples_per_prompt */
    double total_mean, total_p50, total_cv; /* total_ms statistics */
    double tps_mean;                        /* tokens_per_second mean */
    double stage[HP_N_STAGES];              /* each stage's mean, ms */
    double peak_mib, held_mib;
    int facet;  /* index into hp_page.facets */
    int series; /* index into hp_page.series */
} hp_case;

/* A facet of the throughput and memory charts: one (prompt length,
 * response length) pair, as requested (prompt 0: a prompts file). */
typedef struct hp_facet {
    uint32_t prompt, response;
} hp_facet;

/* A series (one line) of the throughput and memory charts: the cases that
 * share samples per prompt, precision and cache policy; the label names
 * only the axes that vary in the run. */
typedef struct hp_series {
    uint32_t samples;
    const char *precision, *cache; /* the host's strings, valid during close */
    const bc_case *c;              /* its first case: its backend and backend setting values */
    char label[96];
} hp_series;

typedef struct hp_page {
    bc_text *t;               /* the page being written */
    const bc_run_report *run; /* valid during close */
    double unstable_cv;       /* the cv of total_ms above which a case is unstable */
    uint32_t n;               /* cases, requested order */
    hp_case *cases;
    uint32_t n_facets, n_series;
    hp_facet *facets;   /* n_facets, sorted by prompt then response length */
    hp_series *series;  /* n_series, in order of first appearance */
    int f_total;        /* index of the field total_ms, -1 when the host has none */
    int label_chars;    /* the longest case label, in characters */
    int several_backends; /* the cases name more than one backend */
    const char *scope;    /* while a chart is drawn for one backend only: its name; else NULL */
} hp_page;

/* "?" for a missing or empty string. */
static inline const char *hp_known(const char *s) { return s && *s ? s : "?"; }
/* 1 when a and b are the same string (NULL reads as ""). */
static inline int hp_same_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

/* The model (html_model.c): hp_build_model reads pg->run's n cases into
 * pg (cases, facets, series); hp_free_model frees what it allocated. */
bc_status hp_build_model(hp_page *pg, bc_error *err);
void hp_free_model(hp_page *pg);
/* Statistic name of field for cr: the host's, or computed from the values
 * ("mean", "p50", "cv") when the host has no such statistic; NAN unknown. */
double hp_case_stat(const bc_run_report *run, const bc_case_report *cr, int field, const char *name);

/* The page's parts before the charts: the header (html_header.c), the
 * warnings and the case table (html_table.c). */
void hp_put_header(hp_page *pg, const char *title);
void hp_put_warnings(hp_page *pg);
void hp_put_table(hp_page *pg);

/* The charts (html_charts.c), each one <section> with its chart, a note
 * naming what could not be drawn, and a "how to read this" paragraph. */
void hp_chart_throughput(hp_page *pg);
void hp_chart_stages(hp_page *pg);
void hp_chart_distributions(hp_page *pg);
void hp_chart_progression(hp_page *pg);
void hp_chart_memory(hp_page *pg);
/* Per-rank bars of a replicate distributed run (docs/scale.md); nothing
 * in a single-process run. */
void hp_chart_ranks(hp_page *pg);
/* 1 when the page has the ranks section (the nav bar links it). */
int hp_has_ranks(const hp_page *pg);

/* Appends "#1, #3-5, #9" for the cases i (indexes into pg->cases) with
 * pick[i] set, by their requested-order index. Returns how many. */
uint32_t hp_put_case_list(const hp_page *pg, const unsigned char *pick);

#endif
