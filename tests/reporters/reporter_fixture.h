/* reporter_fixture.h: what the reporter tests share: load a reporter plugin
 * from the build tree with dlopen, a minimal host table whose output_* are
 * core's bc_output_* (core/src/output.c), resolved settings, a hand-built run
 * report, and small file helpers.
 *
 * The sample run (rf_run_init) has two cases in requested order:
 *   case 0: ok, B=2 x2, prompt 16, resp 8, precision "bf16" (dtype
 *           "bfloat16"), cache "retain", 3 iterations; every
 *           generation_overhead_ms value is NaN (not measured); peak 12.5 MB.
 *   case 1: failed, B=4 x1, prompt 32, resp 8, precision "fp32" (dtype
 *           "float32"), cache "release", 0 iterations, all stats NaN,
 *           returned length and peak memory unknown, and a message with a
 *           comma and double quotes.
 * With single_precision = 1 both cases are bf16/retain instead.
 */
#ifndef BENCHCTL_TESTS_REPORTER_FIXTURE_H
#define BENCHCTL_TESTS_REPORTER_FIXTURE_H

#include "benchctl/plugin.h"

#define RF_N_CASES 2
#define RF_N_ITER 3
#define RF_MESSAGE "generate: backend \"opt\" failed, out of memory (needed 12 GiB)"

typedef struct rf_plugin {
    void *handle;                 /* dlopen handle, owned */
    const bc_plugin_desc *desc;   /* static in the plugin */
    const bc_reporter_ops *ops;   /* static in the plugin */
    bc_setting_value settings[16]; /* resolved: defaults, then overrides */
} rf_plugin;

typedef struct rf_run {
    bc_run_report run;
    bc_case cases[RF_N_CASES];
    bc_case_report reports[RF_N_CASES];
    double values0[RF_N_ITER * BC_FIELD_COUNT_V1_0];
    bc_stats stats[RF_N_CASES][BC_FIELD_COUNT_V1_0];
} rf_run;

extern const char *const rf_field_names[BC_FIELD_COUNT_V1_0];

/* Loads reporters' benchctl-<name>.so and fills defaults; 0 on success.
 * overrides: "name=value" strings (may be NULL when n_overrides is 0). */
int rf_load(rf_plugin *p, const char *name, const char *const *overrides, int n_overrides);
void rf_unload(rf_plugin *p);

/* A host table; stderr_is_tty as given. */
bc_host rf_host(int stderr_is_tty);

void rf_run_init(rf_run *r, int single_precision);

/* Runs the reporter through open, case_finished for each case, close and
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
