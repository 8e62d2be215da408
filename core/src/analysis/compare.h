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
 *   3. cases matched by bc_runfile_case.key, or (an axis given: compare
 *      --by AXIS within one run, --pair AXIS across runs) by the key without
 *      that axis, so that a case of A meets the case of B that differs from
 *      it in that axis alone; for each matched case and each metric, one
 *      bc_cmp_row with the medians, the change and its interval, the U
 *      test's p and a verdict; each case found on one side only gives
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
    double threshold; /* a factor of 1 + threshold either way (0.03: 1.03x faster or slower) is too small to count */
    double level;     /* confidence level of the interval (0.95) */
    unsigned resamples;
    uint64_t seed;
    int ignore_env; /* environments that differ are reported, not refused */
    /* --pair AXIS: two runs' cases match on every axis but this one (an axis
     * name as bc_cmp_axis_known takes); NULL: on their whole key */
    const char *pair_axis;
} bc_cmp_options;

/* The axes a case can be paired across: "precision" (the precision plugin's
 * name; its key part is the dtype), "cache_policy", "batch_size",
 * "samples_per_prompt", "prompt_length", "response_length", "backend" (the
 * backend each case names) and any backend setting the matrix varied.
 * Whether axis is one of them for some case of rf. */
int bc_cmp_axis_known(const bc_runfile *rf, const char *axis);

/* The values rf's cases take on axis, in the order they first appear, as a
 * malloc'ed array of malloc'ed strings (*out, owned by the caller: free
 * with bc_cmp_axis_values_free). Returns the count; 0 and NULL when no case
 * has one; (size_t)-1 without memory. */
size_t bc_cmp_axis_values(const bc_runfile *rf, const char *axis, char ***out);
void bc_cmp_axis_values_free(char **values, size_t n);

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
    /* the change: the log of the factor by which B is better, ln(B/A) where
     * higher is better (or neither), ln(A/B) where lower is: positive = B
     * better, symmetric (2x faster and 2x slower are +-0.693) */
    double change, change_lo, change_hi;
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
    double geomean_change; /* bc_cmp_change of it (a log factor) */
    size_t n_ratios;
} bc_cmp_summary;

/* One file compared against the baseline. */
typedef struct bc_cmp_pair {
    const bc_runfile *a, *b;
    /* What each side is called in the outputs: the path, or "PATH [VALUE]"
     * (--by backend), "PATH [AXIS=VALUE]" (--by another axis). */
    char name_a[512], name_b[512];
    size_t n_cases_a, n_cases_b; /* the side's cases (those taking its value on --by's axis) */
    /* The backend each side's cases name (a worker's engine), else the
     * run's; "?" when neither says. */
    char backend_a[128], backend_b[128];
    /* The axis the cases were paired across (--by, --pair), NULL when none,
     * and the values each side's cases take on it ("fp32"; "fp32, fp16"). */
    const char *axis;
    char axis_a[256], axis_b[256];
    char **keys; /* owned: the match key of each row's case (rows point into it) */
    size_t n_keys;
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

/* Compares b against a, pairing on opt->pair_axis when it is set.
 * BC_ERR_NOT_FOUND when a metric is not a field of either file (err names
 * it and lists the fields) or the axis is no case's; BC_ERR_NOMEM. */
bc_status bc_cmp_pair_build(const bc_runfile *a, const bc_runfile *b, const bc_cmp_options *opt, bc_cmp_pair *out,
                            bc_error *err);

/* compare --by AXIS: the cases of a whose value on axis is value_a against
 * the cases of b (often the same run) whose value is value_b, matched on
 * every other axis. opt->pair_axis is not used. */
bc_status bc_cmp_pair_build_by(const bc_runfile *a, const char *value_a, const bc_runfile *b, const char *value_b,
                               const char *axis, const bc_cmp_options *opt, bc_cmp_pair *out, bc_error *err);

/* The change of a row or summary in words: "2.90x faster", "158x slower",
 * "1.00x" (no change), "-" (none); faster/slower for a time or a rate,
 * smaller/larger for a size, better/worse for other directed metrics,
 * higher/lower for a metric no direction is better for. unit is the
 * metric's (its descriptor's), NULL when unknown. */
void bc_cmp_fmt_change(char *buf, size_t cap, double change, bc_metric_better better, const char *unit);

/* The interval of a change in words: "[2.71x, 3.10x] faster",
 * "[1.02x slower, 1.05x faster]", "-". */
void bc_cmp_fmt_interval(char *buf, size_t cap, double lo, double hi, bc_metric_better better, const char *unit);

/* The metric's unit in A's descriptors (B's when A has none), or NULL. */
const char *bc_cmp_pair_unit(const bc_cmp_pair *pair, size_t metric);
void bc_cmp_pair_free(bc_cmp_pair *pair);

/* Whether rf's backend marks the setting called name BC_SETTING_WORKLOAD
 * (the reports' "workload_settings"; compare_env.c). */
int bc_cmp_is_workload(const bc_runfile *rf, const char *name);

/* The environment differences alone (step 1), into out (n_env entries at
 * most BC_CMP_MAX_ENV). Returns how many; *n_refusing gets the refusing ones. */
#define BC_CMP_MAX_ENV 32
size_t bc_cmp_env_compare(const bc_runfile *a, const bc_runfile *b, bc_cmp_env_diff *out, size_t *n_refusing);

/* "ok", "failed" or "skipped": a case's status as the JSON output names it. */
const char *bc_cmp_status_word(bc_case_status s);

/* A short description of a case: "B=2 x1 8->4 float32 retain"; the
 * _without form leaves out what axis says (NULL: nothing), as the rows of
 * a comparison across that axis are labelled. */
void bc_cmp_case_label(const bc_runfile_case *c, char *buf, size_t cap);
void bc_cmp_case_label_without(const bc_runfile_case *c, const char *axis, char *buf, size_t cap);

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
 * Returns the exit status: 0 nothing --fail-on fails on (by default WORSE
 * for runs compared whole, nothing for --by and --pair), 1 a verdict
 * --fail-on fails on, 2 usage or unreadable input, 3 not comparable. */
int bc_cmd_compare(int argc, char **argv);

#endif
