/* compare_cmd.c: the `benchctl compare` command: its usage text, its
 * options, reading the runs (two or more files, or one split --by an axis),
 * the outputs (analysis/compare_write.c, compare_html.c) and the exit
 * status. The comparison itself is analysis/compare.c. */
#define _GNU_SOURCE
#include "compare.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "termsafe.h"

/* The console or markdown comparison on stdout, with terminal controls in
 * the runs' names and hosts escaped (termsafe.h): the files are not ours. */
static void write_text_safely(int markdown, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) { /* out of memory: nothing sensible to print */
        fprintf(stderr, "benchctl: compare: out of memory\n");
        return;
    }
    if (markdown) bc_cmp_write_markdown(mem, pairs, n_pairs, opt);
    else bc_cmp_write_console(mem, pairs, n_pairs, opt);
    fclose(mem);
    bc_text safe = {0};
    bc_text_put_terminal(&safe, buf, len, 1);
    if (safe.failed) fprintf(stderr, "benchctl: compare: out of memory\n");
    else if (safe.len) fwrite(safe.buf, 1, safe.len, stdout);
    free(safe.buf);
    free(buf);
}

enum { EXIT_OK = 0, EXIT_WORSE = 1, EXIT_USAGE = 2, EXIT_NOT_COMPARABLE = 3 };

/* --------------------------------------------------------- the command */

const char bc_compare_usage[] =
    "usage: benchctl compare [options] BASE OTHER [OTHER...]\n"
    "       benchctl compare [options] --by AXIS RUN\n"
    "       benchctl compare [options] --pair AXIS BASE OTHER [OTHER...]\n"
    "\n"
    "Compares finished runs case by case: each OTHER against BASE (A = BASE,\n"
    "B = OTHER). Each file is a benchctl JSON report (.gz too), a jsonl journal,\n"
    "or JSON with the seed's keys (DeepSpeed's OPSD rollout benchmark).\n"
    "Cases match by their key (shape, dtype, cache behaviour, the settings\n"
    "the matrix varied, the backend); with --by or --pair, by their key\n"
    "without that axis. Per case and metric: the medians, the change (the\n"
    "factor by which B is better or worse: \"2.90x faster\") with its 95%\n"
    "bootstrap interval, the two-sided Mann-Whitney U test, and a verdict:\n"
    "BETTER/WORSE (p < alpha and the interval beyond the threshold's factor),\n"
    "SAME (the interval within it), NOISE, UNDERPOWERED (too few iterations to\n"
    "reach p < alpha), MISSING (one side lacks it), FAILED (a side not ok),\n"
    "CHANGED (BETTER/WORSE for a metric no direction is better for).\n"
    "  --metric NAME      a per-iteration field to compare; repeatable or a,b\n"
    "                     (default tokens_per_second,total_ms); which way is\n"
    "                     better is the metric's own (the report's \"metrics\")\n"
    "  --alpha X          significance level (default 0.01)\n"
    "  --threshold X      smallest change that counts: 0.03 or 3%, a factor of\n"
    "                     1.03 either way (default 3%)\n"
    "  --format F         console (default), md (GitHub table) or json\n"
    "  --html FILE        also write a forest plot as one self-contained HTML file\n"
    "  --by AXIS          within one run: the cases of the first value the run\n"
    "                     takes on AXIS (BASE) against those of each other\n"
    "                     value, matched on every other axis. AXIS: precision,\n"
    "                     cache_policy, batch_size, samples_per_prompt,\n"
    "                     prompt_length, response_length, backend (a run with a\n"
    "                     backends list) or a setting of matrix.backend_settings\n"
    "  --pair AXIS        two or more runs whose cases differ in AXIS: matched\n"
    "                     on every other axis (e.g. an fp32 run against a bf16 one)\n"
    "  --ignore-env       compare runs whose environments differ, listing how\n"
    "  --fail-on WHAT     worse: exit 1 on any WORSE; change: on WORSE or BETTER;\n"
    "                     never. Default: worse, and never with --by or --pair\n"
    "                     (one engine slower than another is no regression)\n"
    "Exit status: 0 nothing --fail-on fails on, 1 something it fails on,\n"
    "2 usage, unreadable input or an --html file that cannot be written,\n"
    "3 not comparable (environments differ without --ignore-env, or no case\n"
    "matched).\n";

static int usage_error(const char *hint, const char *fmt, ...) BC_PRINTF(2, 3);
static int usage_error(const char *hint, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("benchctl: compare: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fprintf(stderr, "benchctl: hint: %s\n", hint ? hint : "see benchctl compare --help");
    return EXIT_USAGE;
}

typedef enum fail_on { FAIL_ON_WORSE, FAIL_ON_CHANGE, FAIL_ON_NEVER } fail_on;
typedef enum out_format { FORMAT_CONSOLE, FORMAT_MD, FORMAT_JSON } out_format;

typedef struct compare_args {
    bc_cmp_options opt;
    const char **metrics; /* owned array of pointers into metric_text */
    size_t metrics_cap;
    char **metric_text;   /* owned copies of the --metric values */
    size_t n_metric_text;
    const char **files;
    size_t n_files;
    out_format format;
    fail_on fail;
    const char *html;
    const char *by; /* --by AXIS: one file, the axis's first value against each other, or NULL */
    int fail_given; /* --fail-on was on the command line */
    int help;
} compare_args;

/* A number in (lo, hi) or [lo, hi) (lo_open); "3%" is 0.03 when percent. */
static int parse_fraction(const char *s, double lo, double hi, int lo_open, int percent, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno) return -1;
    if (percent && *end == '%') v /= 100.0, end++;
    if (*end || !isfinite(v) || v >= hi || v < lo || (lo_open && v == lo)) return -1;
    *out = v;
    return 0;
}

/* Adds the names of a comma-separated list to a->metrics. */
static int add_metrics(compare_args *a, const char *list) {
    char *copy = strdup(list);
    if (!copy) return -1;
    a->metric_text[a->n_metric_text++] = copy;
    for (char *save = NULL, *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        for (size_t i = 0; i < a->opt.n_metrics; i++)
            if (strcmp(a->metrics[i], name) == 0) goto next; /* given twice: once */
        if (a->opt.n_metrics == a->metrics_cap) {
            size_t cap = a->metrics_cap ? 2 * a->metrics_cap : 8;
            const char **grown = realloc((void *)a->metrics, cap * sizeof *grown);
            if (!grown) return -1;
            a->metrics = grown;
            a->metrics_cap = cap;
        }
        a->metrics[a->opt.n_metrics++] = name;
    next:;
    }
    return 0;
}

/* The value of option argv[*i] ("--name VALUE" or "--name=VALUE"), or NULL
 * when the argument is not that option. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *missing) {
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

static int parse_compare_args(int argc, char **argv, compare_args *a) {
    bc_cmp_options_default(&a->opt);
    a->metric_text = calloc((size_t)argc + 1, sizeof *a->metric_text);
    a->files = calloc((size_t)argc + 1, sizeof *a->files);
    if (!a->metric_text || !a->files) return usage_error(NULL, "out of memory");
    size_t n_given = 0; /* --metric options seen */
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v;
        int missing = 0;
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            a->help = 1;
        } else if (strcmp(s, "--ignore-env") == 0) {
            a->opt.ignore_env = 1;
        } else if ((v = option_value(argc, argv, &i, "--metric", &missing))) {
            if (!n_given++) a->opt.n_metrics = 0; /* the first --metric replaces the default */
            if (add_metrics(a, v) != 0) return usage_error(NULL, "out of memory");
        } else if ((v = option_value(argc, argv, &i, "--alpha", &missing))) {
            if (parse_fraction(v, 0, 1, 1, 0, &a->opt.alpha) != 0)
                return usage_error("e.g. --alpha 0.05", "--alpha '%s': expected a number between 0 and 1", v);
        } else if ((v = option_value(argc, argv, &i, "--threshold", &missing))) {
            if (parse_fraction(v, 0, 1e6, 0, 1, &a->opt.threshold) != 0)
                return usage_error("a fraction or a percentage: --threshold 0.05 or --threshold 5% (a factor of 1.05)",
                                   "--threshold '%s': expected a relative change of 0 or more", v);
        } else if ((v = option_value(argc, argv, &i, "--format", &missing))) {
            if (strcmp(v, "console") == 0) a->format = FORMAT_CONSOLE;
            else if (strcmp(v, "md") == 0 || strcmp(v, "markdown") == 0) a->format = FORMAT_MD;
            else if (strcmp(v, "json") == 0) a->format = FORMAT_JSON;
            else return usage_error("--format console, md or json", "unknown format '%s'", v);
        } else if ((v = option_value(argc, argv, &i, "--fail-on", &missing))) {
            if (strcmp(v, "worse") == 0) a->fail = FAIL_ON_WORSE;
            else if (strcmp(v, "change") == 0) a->fail = FAIL_ON_CHANGE;
            else if (strcmp(v, "never") == 0) a->fail = FAIL_ON_NEVER;
            else return usage_error("--fail-on worse, change or never", "--fail-on '%s': unknown", v);
            a->fail_given = 1;
        } else if ((v = option_value(argc, argv, &i, "--by", &missing))) {
            if (!*v) return usage_error("--by precision, backend, ... (benchctl compare --help)", "--by: empty");
            a->by = v;
        } else if ((v = option_value(argc, argv, &i, "--pair", &missing))) {
            if (!*v) return usage_error("--pair precision, backend, ... (benchctl compare --help)", "--pair: empty");
            a->opt.pair_axis = v;
        } else if ((v = option_value(argc, argv, &i, "--html", &missing))) {
            a->html = v;
        } else if (missing) {
            return usage_error(NULL, "%s needs a value", s);
        } else if (s[0] == '-' && s[1] != '\0') {
            return usage_error(NULL, "unknown option '%s'", s);
        } else {
            a->files[a->n_files++] = s;
        }
    }
    if (n_given) a->opt.metrics = a->metrics;
    if (a->help) return 0;
    if (n_given && a->opt.n_metrics == 0) return usage_error("e.g. --metric total_ms", "--metric: no field named");
    if (a->by && a->opt.pair_axis)
        return usage_error("--by AXIS compares within one run, --pair AXIS across runs", "--by and --pair together");
    if (!a->fail_given && (a->by || a->opt.pair_axis)) a->fail = FAIL_ON_NEVER;
    if (a->by && a->n_files != 1)
        return usage_error("e.g. benchctl compare --by backend run.json", "--by %s compares within one run, got %zu",
                           a->by, a->n_files);
    if (!a->by && a->n_files < 2)
        return usage_error("e.g. benchctl compare base.json new.json", "needs two or more runs, got %zu", a->n_files);
    return 0;
}

static void free_compare_args(compare_args *a) {
    for (size_t i = 0; i < a->n_metric_text; i++) free(a->metric_text[i]);
    free(a->metric_text), free((void *)a->metrics), free((void *)a->files);
}

/* Writes the HTML forest plot to path atomically (output.h). */
static bc_status write_html_file(const char *path, const bc_cmp_pair *pairs, size_t n_pairs,
                                 const bc_cmp_options *opt, bc_error *err) {
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    bc_cmp_write_html(mem, pairs, n_pairs, opt);
    if (fclose(mem) != 0) {
        free(text);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    }
    bc_output *out = bc_output_open(path, err);
    bc_status st = out ? bc_output_write(out, text, len, err) : err->code;
    if (out && st == BC_OK) st = bc_output_commit(out, err);
    else if (out) bc_output_abort(out);
    free(text);
    return st;
}

/* The exit status the verdicts give under --fail-on. */
static int verdict_exit(const bc_cmp_pair *pairs, size_t n_pairs, fail_on fail) {
    for (size_t k = 0; k < n_pairs; k++)
        for (size_t i = 0; i < pairs[k].n_rows; i++) {
            bc_verdict v = pairs[k].rows[i].verdict;
            if (fail != FAIL_ON_NEVER && v == BC_VERDICT_WORSE) return EXIT_WORSE;
            if (fail == FAIL_ON_CHANGE && v == BC_VERDICT_BETTER) return EXIT_WORSE;
        }
    return EXIT_OK;
}

/* Reads every file; on failure prints the error and returns EXIT_USAGE. */
static int read_runs(const compare_args *a, bc_runfile *runs) {
    for (size_t i = 0; i < a->n_files; i++) {
        bc_error err = {0};
        if (bc_runfile_read(a->files[i], &runs[i], &err) != BC_OK) {
            fprintf(stderr, "benchctl: compare: %s\n", err.message);
            if (err.hint[0]) fprintf(stderr, "benchctl: hint: %s\n", err.hint);
            return EXIT_USAGE;
        }
        if (runs[i].warning[0]) fprintf(stderr, "benchctl: warning: %s\n", runs[i].warning);
        if (runs[i].format == BC_RUNFILE_JOURNAL && !runs[i].complete)
            fprintf(stderr, "benchctl: warning: %s: the journal has no end record (the run did not finish); "
                            "comparing the cases it holds\n", runs[i].path);
    }
    return 0;
}

/* --by AXIS: the one file, read once, and the values its cases take on
 * the axis (*values, n_values of them, owned by the caller). */
static int read_run_by_axis(const compare_args *a, bc_runfile *run, char ***values, size_t *n_values) {
    if (read_runs(a, run) != 0) return EXIT_USAGE;
    size_t n = bc_cmp_axis_values(run, a->by, values);
    if (n == (size_t)-1) return usage_error(NULL, "out of memory");
    *n_values = n;
    if (n >= 2) return 0;
    if (strcmp(a->by, "backend") == 0)
        return usage_error("a run with a backends list in its bench.cfg names each case's backend",
                           "--by backend: the cases of %s name %s", a->files[0], n ? "one backend only" : "no backend");
    return usage_error("--by precision, cache_policy, batch_size, samples_per_prompt, prompt_length, response_length, "
                       "backend, or a setting the run's matrix.backend_settings varies",
                       "--by %s: the cases of %s %s", a->by, a->files[0],
                       n ? "take one value of it only" : "do not vary it (no such axis)");
}

/* For two runs no case of which matches: the first axis across which
 * they would (the cases differ in it alone), printed as a hint. */
static void hint_pair_axis(const bc_cmp_pair *pair, const bc_cmp_options *opt) {
    static const char *const axes[] = {"precision", "cache_policy", "backend", "batch_size", "samples_per_prompt",
                                       "prompt_length", "response_length"};
    if (opt->pair_axis || pair->axis) return;
    for (size_t i = 0; i < sizeof axes / sizeof axes[0]; i++) {
        bc_cmp_options o = *opt;
        o.pair_axis = axes[i];
        bc_cmp_pair p;
        bc_error err = {0};
        if (bc_cmp_pair_build(pair->a, pair->b, &o, &p, &err) != BC_OK) continue;
        size_t matched = p.n_matched;
        char va[sizeof p.axis_a], vb[sizeof p.axis_b];
        snprintf(va, sizeof va, "%s", p.axis_a);
        snprintf(vb, sizeof vb, "%s", p.axis_b);
        bc_cmp_pair_free(&p);
        if (matched && strcmp(va, vb) != 0) {
            fprintf(stderr, "benchctl: hint: their cases differ in %s (%s against %s): --pair %s matches them on "
                            "every other axis\n", axes[i], va, vb, axes[i]);
            return;
        }
    }
}

/* Prints why pairs are not comparable (stderr); returns how many are not. */
static size_t report_refusals(const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt) {
    int ignore_env = opt->ignore_env;
    size_t refused = 0;
    for (size_t k = 0; k < n_pairs; k++) {
        const bc_cmp_pair *pair = &pairs[k];
        if (pair->n_env_refusing && !ignore_env) {
            refused++;
            for (size_t i = 0; i < pair->n_env; i++)
                if (pair->env[i].refuses)
                    fprintf(stderr, "benchctl: compare: %s and %s differ in %s: \"%s\" vs \"%s\"\n", pair->name_a,
                            pair->name_b, pair->env[i].field, pair->env[i].a, pair->env[i].b);
        } else if (pair->n_matched == 0) {
            refused++;
            fprintf(stderr, "benchctl: compare: no case of %s matches one of %s\n", pair->name_b, pair->name_a);
            hint_pair_axis(pair, opt);
        }
    }
    return refused;
}

int bc_cmd_compare(int argc, char **argv) {
    compare_args a = {0};
    int rc = parse_compare_args(argc, argv, &a);
    if (rc || a.help) {
        if (!rc) fputs(bc_compare_usage, stdout);
        free_compare_args(&a);
        return rc;
    }
    bc_error err = {0};
    if (a.html && bc_output_check(a.html, &err) != BC_OK) {
        fprintf(stderr, "benchctl: compare: --html %s\n", err.message);
        free_compare_args(&a);
        return EXIT_USAGE;
    }
    size_t n_runs = a.n_files, n_values = 0;
    char **values = NULL; /* --by: the axis's values; values[0] is A */
    bc_runfile *runs = calloc(n_runs, sizeof *runs);
    if (!runs) rc = usage_error(NULL, "out of memory");
    else if (a.by) rc = read_run_by_axis(&a, runs, &values, &n_values);
    else rc = read_runs(&a, runs);
    size_t n_builds = a.by ? n_values : n_runs;
    bc_cmp_pair *pairs = calloc(n_builds ? n_builds : 1, sizeof *pairs);
    size_t n_pairs = 0;
    if (!rc && !pairs) rc = usage_error(NULL, "out of memory");
    for (size_t k = 1; !rc && k < n_builds; k++) {
        bc_status st = a.by ? bc_cmp_pair_build_by(&runs[0], values[0], &runs[0], values[k], a.by, &a.opt,
                                                   &pairs[k - 1], &err)
                            : bc_cmp_pair_build(&runs[0], &runs[k], &a.opt, &pairs[k - 1], &err);
        if (st != BC_OK) {
            fprintf(stderr, "benchctl: compare: %s\n", err.message);
            if (err.hint[0]) fprintf(stderr, "benchctl: hint: %s\n", err.hint);
            rc = EXIT_USAGE;
        } else {
            n_pairs++;
        }
    }
    int env_refused = 0;
    if (!rc) {
        for (size_t k = 0; k < n_pairs; k++) env_refused |= pairs[k].n_env_refusing && !a.opt.ignore_env;
        size_t refused = report_refusals(pairs, n_pairs, &a.opt);
        if (env_refused) {
            fprintf(stderr, "benchctl: hint: --ignore-env compares them anyway and lists the differences\n");
            rc = EXIT_NOT_COMPARABLE;
        } else {
            int verdicts = verdict_exit(pairs, n_pairs, a.fail);
            int status = refused ? EXIT_NOT_COMPARABLE : verdicts;
            if (a.format == FORMAT_CONSOLE || a.format == FORMAT_MD)
                write_text_safely(a.format == FORMAT_MD, pairs, n_pairs, &a.opt);
            else if (bc_cmp_write_json(stdout, pairs, n_pairs, &a.opt, status, &err) != BC_OK) {
                fprintf(stderr, "benchctl: compare: %s\n", err.message);
                status = EXIT_USAGE;
            }
            fflush(stdout);
            if (a.html && write_html_file(a.html, pairs, n_pairs, &a.opt, &err) != BC_OK) {
                fprintf(stderr, "benchctl: compare: --html %s\n", err.message);
                status = EXIT_USAGE;
            }
            rc = status;
        }
    }
    for (size_t k = 0; k < n_pairs; k++) bc_cmp_pair_free(&pairs[k]);
    for (size_t i = 0; runs && i < n_runs; i++) bc_runfile_free(&runs[i]);
    free(pairs), free(runs);
    bc_cmp_axis_values_free(values, n_values);
    free_compare_args(&a);
    return rc;
}
