/* reporter_fixture.h: what the reporter tests share: load a reporter plugin
 * with dlopen, the host table benchctl itself hands plugins (bc_host_init,
 * core/src/host/host.c: its output_* are core's atomic bc_output_*),
 * resolved settings, a hand-built run report, and small file helpers.
 *
 * Every array of the run report, and the settings values, is laid out the
 * way a newer host (a later 2.x minor) would lay it out: each element is
 * RF_PAD bytes larger than this header's struct, the extra bytes filled with
 * 0xA5. A reporter that indexes an array with its own sizeof instead of the
 * element size (bc_run_case, bc_run_plugin, bc_setting_at, ...) reads
 * garbage and fails the tests.
 *
 * The sample run (rf_run_init) has three cases in requested order:
 *   case 0: ok, B=2 x2, prompt 16 (width, shortest and longest 16), resp 8,
 *           precision "bf16" (dtype "bfloat16"), cache "retain", rebuilt,
 *           3 iterations; every generation_overhead_ms is NaN (not
 *           measured), and so are the cache timings (retain runs no cache
 *           hook); peak 12.5 MiB, 1.5 MiB held between rollouts.
 *   case 1: failed (error_code BC_ERR_NOMEM), B=8 x1, prompt 32, resp 8,
 *           precision "fp32" (dtype "float32"), cache "release", rebuilt,
 *           0 iterations, all stats NaN (n = 0), no memory report
 *           (cr->memory NULL), returned length, prompt lengths, peak and
 *           held memory unknown, and a message with a comma and double
 *           quotes.
 *   case 2: ok, B=1 x3, prompts from a file (prompt_length 0) that ran
 *           37 tokens wide with prompts of 12 to 37 tokens, resp 8,
 *           precision "bf16", cache "release", not rebuilt, 3 iterations;
 *           peak 3.25 MiB, 1 MiB held between rollouts.
 * ABI 2.1 fields: case 0 stopped "stable" (total_ms_rel_ci 0.0125, load
 * 0.5 -> 0.75, no steal), case 1 "failed" (load 1.25 -> 1.5, the rest
 * unknown), case 2 "max_iterations" (0.25, load unknown, steal 0.05); the
 * run: a fixed count (min = max = RF_N_ITER, no target, no time cap) over
 * the whole matrix (no selection).
 * Execution order (rf_drive): case 1, case 0, case 2 (largest effective
 * batch first); a reporter with iteration_finished gets, for each case
 * that measured something, one warmup event and one per iteration (ETA
 * 83 s, then one less each time) A case
 * a test marks resumed (ABI 2.5) gets neither case_started nor iteration
 * events, only case_finished, as the host does with a journal's cases.
 */
#ifndef BENCHCTL_TESTS_REPORTER_FIXTURE_H
#define BENCHCTL_TESTS_REPORTER_FIXTURE_H

#include <stddef.h>

#include "benchctl/plugin.h"

#define RF_N_CASES 3
#define RF_N_ITER 3
#define RF_N_FIELDS 17    /* the host's fields (all of them) */
#define RF_N_FIELDS_OLD 12 /* RF_OLD_FIELDS: the fields of a host before time_to_first_token_ms */
#define RF_MAX_STATS 10
#define RF_PAD 40 /* bytes a newer host appends to every array element */
#define RF_MESSAGE "generate: backend \"opt\" failed, out of memory (needed 12 GiB)"

/* rf_run_init flags. */
enum {
    RF_SINGLE_PRECISION = 1 << 0, /* every case bf16/retain */
    RF_EXTRA_STAT = 1 << 1,       /* a tenth statistic "p42" (nearest rank) after "max" */
    RF_OLD_FIELDS = 1 << 2,       /* only the first RF_N_FIELDS_OLD fields */
    RF_FEW_STATS = 1 << 3,        /* only the statistics "n", "mean", "max" */
    RF_NO_BACKEND = 1 << 4,       /* run->backend and run->sampling NULL */
    RF_HOST_2_0 = 1 << 5          /* an ABI 2.0 host: case reports RF_REPORT_SIZE_2_0 bytes apart and a run
                                     report that both end before the 2.1 fields (what follows a case report
                                     is the next one, so a reporter that reads past its end reads garbage) */
};

/* A 2.0 host's bc_case_report: everything before the 2.1 fields. */
#define RF_REPORT_SIZE_2_0 offsetof(bc_case_report, total_ms_rel_ci)

/* The host's fields, in report order. */
enum {
    RF_F_PROMPT_EXPANSION_MS = 0,
    RF_F_GENERATION_MS,
    RF_F_POST_PROCESSING_MS,
    RF_F_TOTAL_MS,
    RF_F_TOKENS_PER_SECOND,
    RF_F_NUM_GENERATED_TOKENS,
    RF_F_PREFILL_FORWARD_MS,
    RF_F_DECODE_FORWARD_MS,
    RF_F_GENERATION_OVERHEAD_MS,
    RF_F_NUM_DECODE_FORWARDS,
    RF_F_CACHE_ACQUIRE_MS,
    RF_F_CACHE_RELEASE_MS,
    RF_F_TIME_TO_FIRST_TOKEN_MS,
    RF_F_DECODE_MS_PER_TOKEN_P50,
    RF_F_DECODE_MS_PER_TOKEN_P95,
    RF_F_PREFILL_TOKENS_PER_SECOND,
    RF_F_DECODE_TOKENS_PER_SECOND
};

extern const char *const rf_field_names[RF_N_FIELDS];

/* Array elements as a newer host lays them out (see the top). */
typedef union rf_wide_value { bc_setting_value v; unsigned char bytes[sizeof(bc_setting_value) + RF_PAD]; } rf_wide_value;
typedef union rf_wide_desc { bc_setting_desc d; unsigned char bytes[sizeof(bc_setting_desc) + RF_PAD]; } rf_wide_desc;
typedef union rf_wide_ref { bc_plugin_ref p; unsigned char bytes[sizeof(bc_plugin_ref) + RF_PAD]; } rf_wide_ref;
typedef union rf_wide_report { bc_case_report r; unsigned char bytes[sizeof(bc_case_report) + RF_PAD]; } rf_wide_report;

typedef struct rf_plugin {
    void *handle;               /* dlopen handle, owned */
    const bc_plugin_desc *desc; /* static in the plugin */
    const bc_reporter_ops *ops; /* static in the plugin */
    rf_wide_value values[16];   /* resolved: defaults, then overrides */
    bc_settings settings;       /* points at values */
} rf_plugin;

typedef struct rf_run {
    bc_run_report run; /* points into the rest of this struct: never copy an rf_run */
    bc_backend_info backend;
    bc_sampling sampling;
    bc_case cases[RF_N_CASES];
    rf_wide_report reports[RF_N_CASES];
    /* RF_HOST_2_0: the reports as a 2.0 host lays them out */
    _Alignas(8) unsigned char narrow[RF_N_CASES][RF_REPORT_SIZE_2_0];
    bc_memory_stats memory[RF_N_CASES];
    double values[RF_N_CASES][RF_N_ITER * RF_N_FIELDS];   /* n_iterations x n_fields */
    double stats[RF_N_CASES][RF_N_FIELDS * RF_MAX_STATS]; /* n_fields x n_stats */
    const char *stat_names[RF_MAX_STATS];
    rf_wide_ref plugins[2];
    rf_wide_desc backend_settings[2];
    rf_wide_value backend_value_rows[2];
    bc_settings backend_values;
} rf_run;

/* Loads reporters' benchctl-<name>.so from the build tree and fills
 * defaults; 0 on success. overrides: "name=value" strings (may be NULL
 * when n_overrides is 0), which must outlive the plugin. */
int rf_load(rf_plugin *p, const char *name, const char *const *overrides, int n_overrides);
/* The same for the plugin at so_path, whose descriptor must be called name. */
int rf_load_file(rf_plugin *p, const char *so_path, const char *name, const char *const *overrides, int n_overrides);
void rf_unload(rf_plugin *p);

/* The real host table (bc_host_init, core/src/host/host.c); stderr_is_tty as given. */
bc_host rf_host(int stderr_is_tty);

/* Builds the sample run (flags: RF_*). */
void rf_run_init(rf_run *r, unsigned flags);

/* Case report i of the sample run (as the run report lays them out). */
bc_case_report *rf_report(rf_run *r, uint32_t i);

/* Statistic stat (by name) of field f of case i, as the host computed it;
 * NAN when the run has no such statistic. */
double rf_stat(const rf_run *r, uint32_t i, int f, const char *stat);

/* The statistics of one field as the host computes them (docs/reporters.md):
 * out[0..n_stats) for the statistics names[], over values[0], values[stride],
 * ... (n_rows of them, at most 64), NaN left out. */
void rf_field_stats(double *out, const char *const *names, uint32_t n_stats, const double *values, uint32_t n_rows,
                    uint32_t stride);

/* Runs the reporter as the host does: check_settings (if any), open with no
 * cases, case_started and case_finished for each case in execution order
 * (run->cases = the finished ones, requested order), close with every case,
 * destroy. Returns the first non-OK status (err filled), else BC_OK. */
bc_status rf_drive(rf_plugin *p, const bc_host *host, rf_run *r, bc_error *err);

/* Makes a fresh folder under the build tree (dir[512]); 0 on success. */
int rf_make_dir(char *dir, const char *prefix);
/* Removes dir and what it holds, unless BENCHCTL_TEST_KEEP is set. */
void rf_remove_tree(const char *dir);
/* Whole file, NUL-terminated, malloc'ed (caller frees); NULL if unreadable. */
char *rf_slurp(const char *path);
/* Whole gzip'ed file, inflated, as above. */
char *rf_slurp_gz(const char *path);
int rf_count_entries(const char *dir);

#endif
