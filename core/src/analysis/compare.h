/* compare.h: `benchctl compare BASE OTHER [OTHER...]`, two or more finished
 * runs (read by runfile.h) compared case by case with statistics
 * (compare_stats.h). docs/cli.md, "compare", is the user's description.
 *
 * Every OTHER is compared against BASE (the first file), one bc_cmp_pair
 * each: A is BASE, B the other file.
 *   1. environments: the fields of k_env_fields (compare.c) whose values
 *      both files state and that differ; a refusing one makes the pair not
 *      comparable unless --ignore-env;
 *   2. backend settings that differ and are not part of the case key:
 *      informational ("what changed between the runs");
 *   3. cases matched by bc_runfile_case.key; for each matched case and each
 *      metric, one bc_cmp_row with the medians, the change and its interval,
 *      the U test's p and a verdict; each case found on one side only gives
 *      MISSING rows;
 *   4. per metric: counts per verdict and the geometric mean of the ratios.
 * Ownership: a pair points into the runfiles it was built from (they must
 * outlive it) and owns its arrays; bc_cmp_pair_free frees them.
 */
#ifndef BENCHCTL_COMPARE_H
#define BENCHCTL_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "benchctl/plugin.h"
#include "compare_stats.h"
#include "runfile.h"

/* How the comparison is made (the command line's options). */
typedef struct bc_cmp_options {
    const char *const *metrics; /* field names; the default is tokens_per_second, total_ms */
    size_t n_metrics;
    double alpha;     /* significance level of the U test (0.01) */
    double threshold; /* relative change below which a difference does not count (0.03) */
    double level;     /* confidence level of the interval (0.95) */
    unsigned resamples;
    uint64_t seed;
    int ignore_env; /* environments that differ are reported, not refused */
} bc_cmp_options;

/* bc_cmp_options with the defaults above. */
void bc_cmp_options_default(bc_cmp_options *opt);

/* Which way field fa of a (fb of b) is better, from the files' metric
 * descriptors (runfile.h field_descs: the reports' "metrics", or this
 * host's for its own fields): A's, or B's where A's says neither. Never
 * from the name. */
bc_metric_better bc_cmp_metric_better(const bc_runfile *a, int fa, const bc_runfile *b, int fb);

/* One environment field that differs between A and B, or that only one of
 * them states. */
typedef struct bc_cmp_env_diff {
    const char *field; /* "model", "cpu_threads", ... (static), or a workload setting's name (the runfile's) */
    char a[160], b[160]; /* the values as text; "" when that file does not say */
    int refuses;         /* both state it, it differs, and it is not informational */
} bc_cmp_env_diff;

/* A backend setting whose value differs (or that one run lacks). */
typedef struct bc_cmp_setting_change {
    const char *name;   /* points into a runfile */
    const char *a, *b;  /* NULL when that run has no such setting */
} bc_cmp_setting_change;

/* One case and metric. */
typedef struct bc_cmp_row {
    const char *key;           /* the case key (runfile.h) */
    const bc_runfile_case *ca; /* A's case, NULL when B has it only */
    const bc_runfile_case *cb; /* B's case, NULL when A has it only */
    size_t metric;             /* index into the options' metrics */
    bc_metric_better better;   /* the metric's (bc_cmp_metric_better) */
    int higher_is_better;      /* better is higher; for neither, change is B/A - 1 and the verdict CHANGED */
    size_t n_a, n_b;           /* measured (non-NaN) values */
    double median_a, median_b; /* NaN when not computed */
    double ratio;              /* median_b / median_a */
    double ratio_lo, ratio_hi; /* bootstrap interval of the ratio */
    double change, change_lo, change_hi; /* positive = B better (compare_stats.h) */
    double p;                  /* two-sided Mann-Whitney p */
    double u_a;                /* U of A's values */
    int exact;                 /* p from the exact distribution */
    double min_p;              /* the smallest p these sizes can give */
    bc_verdict verdict;
    char note[160];            /* why MISSING or FAILED; "" otherwise */
} bc_cmp_row;

/* Per metric: how many rows got each verdict, and the geometric mean of
 * the ratios of the rows that have one (every verdict but MISSING, FAILED). */
typedef struct bc_cmp_summary {
    bc_metric_better better; /* the metric's (bc_cmp_metric_better) */
    size_t counts[BC_N_VERDICTS];
    double geomean_ratio;  /* NaN when no row has a ratio */
    double geomean_change; /* bc_cmp_change of it */
    size_t n_ratios;
} bc_cmp_summary;

/* One file compared against the baseline. */
typedef struct bc_cmp_pair {
    const bc_runfile *a, *b;
    bc_cmp_env_diff *env; /* refusing ones first, then informational, then one-sided */
    size_t n_env, n_env_refusing;
    bc_cmp_setting_change *settings;
    size_t n_settings;
    bc_cmp_row *rows; /* A's cases in A's order (each metric in turn), then B's unmatched cases */
    size_t n_rows;
    size_t n_matched, n_only_a, n_only_b; /* cases */
    bc_cmp_summary *summary;              /* one per metric */
    size_t n_metrics;
    const char *const *metrics;           /* the options' names */
    char duplicate_key_warning[256];      /* "" unless a file holds two cases with one key */
} bc_cmp_pair;

/* Compares b against a. BC_ERR_NOT_FOUND when a metric is not a field of
 * either file (err names it and lists the fields); BC_ERR_NOMEM. */
bc_status bc_cmp_pair_build(const bc_runfile *a, const bc_runfile *b, const bc_cmp_options *opt, bc_cmp_pair *out,
                            bc_error *err);
void bc_cmp_pair_free(bc_cmp_pair *pair);

/* The environment differences alone (step 1), into out (n_env entries at
 * most BC_CMP_MAX_ENV). Returns how many; *n_refusing gets the refusing ones. */
#define BC_CMP_MAX_ENV 32
size_t bc_cmp_env_compare(const bc_runfile *a, const bc_runfile *b, bc_cmp_env_diff *out, size_t *n_refusing);

/* "ok", "failed" or "skipped": a case's status as the JSON output names it. */
const char *bc_cmp_status_word(bc_case_status s);

/* A short description of a case: "B=2 x1 8->4 float32 retain". */
void bc_cmp_case_label(const bc_runfile_case *c, char *buf, size_t cap);

/* The outputs: a console table, a GitHub markdown table, a JSON document
 * (compare_write.c), and a self-contained HTML forest plot (compare_html.c). */
void bc_cmp_write_console(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt);
void bc_cmp_write_markdown(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt);
bc_status bc_cmp_write_json(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt,
                            int exit_status, bc_error *err);
void bc_cmp_write_html(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt);

/* The command (cli/compare_cmd.c). The usage text of `benchctl compare --help`. */
extern const char bc_compare_usage[];

/* `benchctl compare ...`: argv[0] is "compare"; parses its own options.
 * Returns the exit status: 0 no WORSE, 1 a verdict --fail-on fails on,
 * 2 usage or unreadable input, 3 not comparable. */
int bc_cmd_compare(int argc, char **argv);

#endif
