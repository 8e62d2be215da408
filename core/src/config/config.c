/* config.c: bench.cfg (libconfig) parsed into a bc_config and validated:
 * the schema (the keys of every group, the matrix, sampling, run,
 * distributed) and bc_config_load. The plugin lists (backend, backends,
 * precisions, cache_policies, reporters, plugin_path) are config_plugins.c,
 * the file's text and includes and the hash config_file.c,
 * matrix.backend_settings config_axes.c, the tree helpers config_tree.c,
 * did-you-mean suggest.c.
 *
 * Order of work in bc_config_load:
 *   read the file (I/O and syntax errors) -> apply --reporter -> apply --set
 *   overrides to the tree (so --set reporters.[0].settings.path=... reaches a
 *   --reporter's) -> walk the tree against the schema, filling bc_config
 *   -> hash the tree as libconfig writes it back (config_sha256).
 * Every error is "<where>: <setting>: <what is allowed> (got <value>)", where
 * <where> is "file:line" for settings read from the file and "--set KEY" or
 * "--reporter" for settings the command line made. The first error wins.
 * The schema lives in docs/config.md; keep the two in step.
 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <libconfig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_axes.h"
#include "config_file.h"
#include "config_ints.h"
#include "config_schema.h"
#include "config_tree.h"
#include "overrides.h"
#include "suggest.h"

/* Largest matrix value: libconfig reads plain integers as 32-bit ints. */
#define BC_CFG_MAX_SIZE 2147483647LL

/* The largest case: batch_sizes x samples_per_prompt rows (the effective
 * batch), and rows x (prompt + response) tokens. Both are checked on the
 * matrix's largest values (every pair of values is a case), in 64 bits where
 * neither product can wrap (2^31 x 2^31 and 2^24 x 2^32). */
#define BC_CFG_MAX_EFFECTIVE_BATCH (1LL << 24)
#define BC_CFG_MAX_CASE_TOKENS (1LL << 32)

/* run.min_iterations / run.max_iterations: the largest value (the runner
 * keeps every measured value of every case), and the defaults when only
 * some of the adaptive keys are given. 6 is the fewest iterations the 95%
 * interval of the median needs (stats.h, BC_MEDIAN_CI_MIN_N). */
#define BC_CFG_MAX_ITERATIONS 100000
#define BC_CFG_DEFAULT_MIN_ITERATIONS 6
#define BC_CFG_DEFAULT_MAX_ITERATIONS 50


bc_status bc_cfg_check_keys(const bc_config *cfg, const config_setting_t *group, const char *path,
                            const char *const *allowed, size_t n, bc_error *err) {
    int len = config_setting_length(group);
    for (int i = 0; i < len; i++) {
        const config_setting_t *m = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(m);
        size_t k = 0;
        while (k < n && strcmp(allowed[k], name) != 0) k++;
        if (k < n) continue;
        char mpath[256];
        bc_cfg_path_join(mpath, sizeof mpath, path, name);
        const char *hint = bc_suggest(name, allowed, n);
        if (hint) return bc_cfg_fail(cfg, err, BC_ERR_SETTING, m, mpath, "unknown key (did you mean '%s'?)", hint);
        char list[256] = "";
        for (size_t j = 0; j < n; j++) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", j ? ", " : "", allowed[j]);
        }
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, m, mpath, "unknown key; allowed here: %s", list);
    }
    return BC_OK;
}


/* Optional integer member in [min, max]; what is "an integer >= 1" etc. */
static bc_status get_int_in(const bc_config *cfg, const config_setting_t *group, const char *name, const char *path,
                            long long min, long long max, const char *what, long long *out, bc_error *err) {
    const config_setting_t *s = group ? config_setting_get_member(group, name) : NULL;
    if (!s) return BC_OK;
    char got[96];
    bc_cfg_describe(s, got, sizeof got);
    if (!bc_cfg_is_int(s)) return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "must be %s (got %s)", what, got);
    long long v = config_setting_get_int64(s);
    if (v < min) return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "must be %s (got %s)", what, got);
    if (v > max) return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "must be %s and <= %lld (got %s)", what, max, got);
    *out = v;
    return BC_OK;
}

/* Optional number member (an int is accepted); ok(v) decides the range. */
static bc_status get_number(const bc_config *cfg, const config_setting_t *group, const char *name, const char *path,
                            int (*ok)(double), const char *what, double *out, bc_error *err) {
    const config_setting_t *s = group ? config_setting_get_member(group, name) : NULL;
    if (!s) return BC_OK;
    char got[96];
    bc_cfg_describe(s, got, sizeof got);
    if (!bc_cfg_is_number(s)) return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "must be %s (got %s)", what, got);
    double v = bc_cfg_number(s);
    if (!isfinite(v) || !ok(v)) return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "must be %s (got %s)", what, got);
    *out = v;
    return BC_OK;
}

static int ok_temperature(double v) { return v >= 0.0; }
static int ok_top_p(double v) { return v > 0.0 && v <= 1.0; }
static int ok_rel_ci(double v) { return v > 0.0 && v <= 1.0; }
static int ok_seconds(double v) { return v > 0.0; }

/* ---------------------------------------------------------------- schema */

static const char *const k_top_keys[] = {"plugin_path", "backend", "backends", "precisions", "cache_policies",
                                         "matrix",      "sampling", "run",      "reporters", "distributed",
                                         "score"};
static const char *const k_score_keys[] = {"backend", "precision", "settings"};
static const char *const k_distributed_keys[] = {"mode", "comm", "timeout_s"};
static const char *const k_matrix_keys[] = {"batch_sizes", "samples_per_prompt", "prompt_lengths",
                                            "response_lengths", "backend_settings"};
static const char *const k_sampling_keys[] = {"temperature", "top_p", "top_k", "seed"};
static const char *const k_run_keys[] = {"warmup", "iterations", "min_iterations", "max_iterations", "target_rel_ci",
                                         "max_seconds_per_case", "isolation",
                                         "case_timeout_s", "quiet_check", "refit"};
#define SIZES_WHAT "a non-empty list of integers >= 1"

/* One matrix value e (at path) into *out: an integer in [1, BC_CFG_MAX_SIZE]. */
static bc_status parse_size(const bc_config *cfg, const config_setting_t *e, const char *path, uint32_t *out,
                            bc_error *err) {
    char got[96];
    bc_cfg_describe(e, got, sizeof got);
    if (!bc_cfg_is_int(e) || config_setting_get_int64(e) < 1)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, e, path, "must be %s (got %s)", SIZES_WHAT, got);
    if (config_setting_get_int64(e) > BC_CFG_MAX_SIZE)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, e, path, "must be %s and <= %lld (got %s)", SIZES_WHAT,
                           BC_CFG_MAX_SIZE, got);
    *out = (uint32_t)config_setting_get_int64(e);
    return BC_OK;
}

/* matrix.<key>: a non-empty list of distinct integers >= 1, or one integer
 * (a one-element list). When absent: an error, or, if absent_value is not
 * NULL, the one value *absent_value. */
static bc_status parse_sizes(const bc_config *cfg, const config_setting_t *matrix, const char *key,
                             const uint32_t *absent_value, uint32_t **out, size_t *n_out, bc_error *err) {
    char path[128], got[96];
    bc_cfg_path_join(path, sizeof path, "matrix", key);
    const config_setting_t *list = config_setting_get_member(matrix, key);
    if (!list && !absent_value) return bc_cfg_fail(cfg, err, BC_ERR_SETTING, matrix, path, "is required: %s", SIZES_WHAT);
    if (!list || bc_cfg_is_int(list)) {
        *out = calloc(1, sizeof **out);
        if (!*out) return bc_cfg_nomem(err);
        *n_out = 1;
        if (!list) return (*out)[0] = *absent_value, BC_OK;
        return parse_size(cfg, list, path, &(*out)[0], err);
    }
    if (!bc_cfg_is_list(list) || config_setting_length(list) == 0) {
        bc_cfg_describe(list, got, sizeof got);
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, list, path, "must be %s (got %s)", SIZES_WHAT, got);
    }
    size_t n = (size_t)config_setting_length(list);
    *out = calloc(n, sizeof **out);
    if (!*out) return bc_cfg_nomem(err);
    for (size_t i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        bc_status st = parse_size(cfg, e, path, &(*out)[i], err);
        if (st) return st;
        for (size_t j = 0; j < i; j++) {
            if ((*out)[j] == (*out)[i])
                return bc_cfg_fail(cfg, err, BC_ERR_SETTING, e, path,
                                   "duplicate value %u (each value must appear once; it names one set of cases)",
                                   (unsigned)(*out)[i]);
        }
        *n_out = i + 1;
    }
    return BC_OK;
}


/* run.isolation ("none" or "process") and run.case_timeout_s (> 0, only
 * with "process": the parent kills a case's process that runs longer). */
static bc_status parse_isolation(bc_config *cfg, const config_setting_t *run, bc_error *err) {
    cfg->isolation = BC_CFG_DEFAULT_ISOLATION;
    cfg->case_timeout_s = NAN;
    const config_setting_t *s = run ? config_setting_get_member(run, "isolation") : NULL;
    if (s) {
        char got[96];
        bc_cfg_describe(s, got, sizeof got);
        const char *v = config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;
        if (v && strcmp(v, "none") == 0) cfg->isolation = 0;
        else if (v && strcmp(v, "process") == 0) cfg->isolation = 1;
        else
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, "run.isolation", "must be \"none\" or \"process\" (got %s)",
                               got);
    }
    bc_status st = get_number(cfg, run, "case_timeout_s", "run.case_timeout_s", ok_seconds, "a number of seconds > 0",
                              &cfg->case_timeout_s, err);
    if (st) return st;
    if (!isnan(cfg->case_timeout_s) && !cfg->isolation)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, config_setting_get_member(run, "case_timeout_s"),
                           "run.case_timeout_s", "needs run.isolation = \"process\" (a case in benchctl's own "
                           "process cannot be stopped safely)");
    return BC_OK;
}

/* The run group: warmup, and the rule that stops a case's measured
 * iterations: a fixed count (iterations) or adaptive (min_iterations,
 * max_iterations, target_rel_ci); max_seconds_per_case caps either. */
static bc_status parse_run(bc_config *cfg, const config_setting_t *root, bc_error *err) {
    config_setting_t *run = NULL;
    bc_status st = bc_cfg_get_group(cfg, root, "run", "run", &run, err);
    if (st) return st;
    if (run && (st = bc_cfg_check_keys(cfg, run, "run", k_run_keys, COUNT(k_run_keys), err))) return st;
    long long v = 1;
    if ((st = get_int_in(cfg, run, "warmup", "run.warmup", 0, UINT32_MAX, "an integer >= 0", &v, err))) return st;
    cfg->warmup = (uint32_t)v;
    v = 5;
    if ((st = get_int_in(cfg, run, "iterations", "run.iterations", 1, UINT32_MAX, "an integer >= 1", &v, err)))
        return st;
    cfg->iterations = (uint32_t)v;
    long long lo = 0, hi = 0;
    if ((st = get_int_in(cfg, run, "min_iterations", "run.min_iterations", 1, BC_CFG_MAX_ITERATIONS,
                         "an integer >= 1", &lo, err)) ||
        (st = get_int_in(cfg, run, "max_iterations", "run.max_iterations", 1, BC_CFG_MAX_ITERATIONS,
                         "an integer >= 1", &hi, err)))
        return st;
    cfg->target_rel_ci = cfg->max_seconds_per_case = NAN;
    if ((st = get_number(cfg, run, "target_rel_ci", "run.target_rel_ci", ok_rel_ci,
                         "a number in (0, 1], a fraction of the median (0.02 = 2%)", &cfg->target_rel_ci, err)) ||
        (st = get_number(cfg, run, "max_seconds_per_case", "run.max_seconds_per_case", ok_seconds,
                         "a number of seconds > 0", &cfg->max_seconds_per_case, err)))
        return st;

    if ((st = parse_isolation(cfg, run, err))) return st;
    cfg->quiet_check = BC_CFG_QUIET_WARN;
    const config_setting_t *quiet_s = run ? config_setting_get_member(run, "quiet_check") : NULL;
    if (quiet_s) {
        static const char *const names[] = {"off", "warn", "refuse"};
        const char *v = config_setting_type(quiet_s) == CONFIG_TYPE_STRING ? config_setting_get_string(quiet_s) : NULL;
        int found = -1;
        for (int i = 0; v && i < 3; i++)
            if (strcmp(v, names[i]) == 0) found = i;
        char got[96];
        bc_cfg_describe(quiet_s, got, sizeof got);
        if (found < 0)
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, quiet_s, "run.quiet_check",
                               "must be \"warn\", \"refuse\" or \"off\" (got %s)", got);
        cfg->quiet_check = found;
    }
    cfg->refit = BC_CFG_REFIT_OFF;
    const config_setting_t *refit_s = run ? config_setting_get_member(run, "refit") : NULL;
    if (refit_s) {
        static const char *const names[] = {"off", "per_rollout", "per_case"};
        const char *v = config_setting_type(refit_s) == CONFIG_TYPE_STRING ? config_setting_get_string(refit_s) : NULL;
        int found = -1;
        for (int i = 0; v && i < 3; i++)
            if (strcmp(v, names[i]) == 0) found = i;
        char got[96];
        bc_cfg_describe(refit_s, got, sizeof got);
        if (found < 0)
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, refit_s, "run.refit",
                               "must be \"off\", \"per_rollout\" or \"per_case\" (got %s)", got);
        cfg->refit = found;
    }

    const config_setting_t *it_s = run ? config_setting_get_member(run, "iterations") : NULL;
    const config_setting_t *min_s = run ? config_setting_get_member(run, "min_iterations") : NULL;
    const config_setting_t *max_s = run ? config_setting_get_member(run, "max_iterations") : NULL;
    const config_setting_t *target_s = run ? config_setting_get_member(run, "target_rel_ci") : NULL;
    const config_setting_t *adaptive_s = min_s ? min_s : max_s ? max_s : target_s;
    cfg->adaptive = adaptive_s != NULL;
    if (!cfg->adaptive) {
        cfg->min_iterations = cfg->max_iterations = cfg->iterations;
        return BC_OK;
    }
    char where[256];
    const char *adaptive_key = min_s ? "min_iterations" : max_s ? "max_iterations" : "target_rel_ci";
    if (it_s) {
        char path[64];
        snprintf(path, sizeof path, "run.%s", adaptive_key);
        bc_cfg_locate(cfg, adaptive_s, path, where, sizeof where);
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, it_s, "run.iterations",
                           "a fixed count, which contradicts run.%s (%s): give either iterations, or "
                           "min_iterations/max_iterations/target_rel_ci for a count that adapts",
                           adaptive_key, where);
    }
    if (!max_s) hi = lo > BC_CFG_DEFAULT_MAX_ITERATIONS ? lo : BC_CFG_DEFAULT_MAX_ITERATIONS;
    if (!min_s) lo = hi < BC_CFG_DEFAULT_MIN_ITERATIONS ? hi : BC_CFG_DEFAULT_MIN_ITERATIONS;
    if (lo > hi) {
        bc_cfg_locate(cfg, max_s, "run.max_iterations", where, sizeof where);
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, min_s, "run.min_iterations",
                           "must be <= run.max_iterations (%lld, %s) (got %lld)", hi, where, lo);
    }
    if (target_s && hi < BC_CFG_DEFAULT_MIN_ITERATIONS)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, max_s, "run.max_iterations",
                           "must be >= %d with run.target_rel_ci: the 95%% interval of the median needs %d "
                           "iterations (got %lld)",
                           BC_CFG_DEFAULT_MIN_ITERATIONS, BC_CFG_DEFAULT_MIN_ITERATIONS, hi);
    cfg->min_iterations = (uint32_t)lo;
    cfg->max_iterations = cfg->iterations = (uint32_t)hi;
    return BC_OK;
}

static uint32_t max_of(const uint32_t *v, size_t n, size_t *at) {
    uint32_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] > m) m = v[i], *at = i;
    return m;
}

/* The largest case the matrix makes must fit the limits above. */
static bc_status check_case_size(const bc_config *cfg, const config_setting_t *matrix, bc_error *err) {
    size_t ib = 0, is = 0, ip = 0, ir = 0;
    const uint64_t b = max_of(cfg->batch_sizes, cfg->n_batch_sizes, &ib);
    const uint64_t sp = max_of(cfg->samples_per_prompt, cfg->n_samples_per_prompt, &is);
    const uint64_t p = max_of(cfg->prompt_lengths, cfg->n_prompt_lengths, &ip);
    const uint64_t r = max_of(cfg->response_lengths, cfg->n_response_lengths, &ir);
    const uint64_t rows = b * sp; /* < 2^62 */
    if (rows > (uint64_t)BC_CFG_MAX_EFFECTIVE_BATCH)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, matrix, "matrix",
                           "batch_sizes %llu x samples_per_prompt %llu = %llu rows in one case; the effective batch "
                           "must be <= %lld (2^24)",
                           (unsigned long long)b, (unsigned long long)sp, (unsigned long long)rows,
                           BC_CFG_MAX_EFFECTIVE_BATCH);
    const uint64_t tokens = rows * (p + r); /* < 2^24 x 2^32 */
    if (tokens > (uint64_t)BC_CFG_MAX_CASE_TOKENS)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, matrix, "matrix",
                           "%llu rows x (prompt_lengths %llu + response_lengths %llu) = %llu tokens in one case; a "
                           "case must hold <= %lld (2^32) tokens",
                           (unsigned long long)rows, (unsigned long long)p, (unsigned long long)r,
                           (unsigned long long)tokens, BC_CFG_MAX_CASE_TOKENS);
    return BC_OK;
}

/* distributed.timeout_s: a collective's deadline, up to about 115 days. */
static int ok_timeout(double v) { return v > 0.0 && v <= 1e7; }

/* The distributed group (docs/scale.md): mode ("replicate" or "shard"),
 * comm (a comm plugin's name, or "auto": the one the launcher implies) and
 * timeout_s (seconds a rank waits in a collective for the others). */
static bc_status parse_distributed(bc_config *cfg, const config_setting_t *root, bc_error *err) {
    cfg->distributed_mode = BC_CFG_DIST_REPLICATE;
    cfg->distributed_timeout_s = BC_CFG_DEFAULT_DIST_TIMEOUT_S;
    config_setting_t *d = NULL;
    bc_status st = bc_cfg_get_group(cfg, root, "distributed", "distributed", &d, err);
    if (st || !d) return st;
    if ((st = bc_cfg_check_keys(cfg, d, "distributed", k_distributed_keys, COUNT(k_distributed_keys), err))) return st;
    if ((st = get_number(cfg, d, "timeout_s", "distributed.timeout_s", ok_timeout, "a number of seconds in (0, 1e7]",
                         &cfg->distributed_timeout_s, err)))
        return st;
    const config_setting_t *m = config_setting_get_member(d, "mode");
    if (m) {
        char got[96];
        bc_cfg_describe(m, got, sizeof got);
        const char *v = config_setting_type(m) == CONFIG_TYPE_STRING ? config_setting_get_string(m) : NULL;
        if (v && strcmp(v, "replicate") == 0) cfg->distributed_mode = BC_CFG_DIST_REPLICATE;
        else if (v && strcmp(v, "shard") == 0) cfg->distributed_mode = BC_CFG_DIST_SHARD;
        else
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, m, "distributed.mode",
                               "must be \"replicate\" or \"shard\" (got %s)", got);
    }
    const config_setting_t *c = config_setting_get_member(d, "comm");
    if (c) {
        const char *v = config_setting_type(c) == CONFIG_TYPE_STRING ? config_setting_get_string(c) : NULL;
        if (!v || !v[0]) {
            char got[96];
            bc_cfg_describe(c, got, sizeof got);
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, c, "distributed.comm",
                               "must be a comm plugin's name (e.g. \"mpi\") or \"auto\" (got %s)", got);
        }
        if (strcmp(v, "auto") != 0 && !(cfg->distributed_comm = bc_cfg_strdup(v))) return bc_cfg_nomem(err);
    }
    return BC_OK;
}

/* A string member key of group at path, or NULL when absent; anything but a
 * non-empty string fails. */
static bc_status get_name(const bc_config *cfg, const config_setting_t *group, const char *key, const char *path,
                          const char *what, const config_setting_t **out, bc_error *err) {
    *out = config_setting_get_member(group, key);
    if (!*out) return BC_OK;
    if (config_setting_type(*out) == CONFIG_TYPE_STRING && config_setting_get_string(*out)[0]) return BC_OK;
    char got[96];
    bc_cfg_describe(*out, got, sizeof got);
    return bc_cfg_fail(cfg, err, BC_ERR_SETTING, *out, path, "must be %s (got %s)", what, got);
}

/* The score group: { backend = "..."; precision = "fp32"; settings = { ... }; },
 * every key optional (an empty group scores with the run's backend in fp32). */
static bc_status parse_score(bc_config *cfg, const config_setting_t *root, bc_error *err) {
    config_setting_t *score = NULL;
    bc_status st = bc_cfg_get_group(cfg, root, "score", "score", &score, err);
    if (st || !score) return st;
    if ((st = bc_cfg_check_keys(cfg, score, "score", k_score_keys, COUNT(k_score_keys), err))) return st;
    const config_setting_t *backend_s = NULL, *precision_s = NULL;
    if ((st = get_name(cfg, score, "backend", "score.backend",
                       "a backend plugin's name or the label of an entry of backends", &backend_s, err)) ||
        (st = get_name(cfg, score, "precision", "score.precision", "a precision plugin's name (\"fp32\")",
                       &precision_s, err)))
        return st;
    config_setting_t *settings = NULL;
    if ((st = bc_cfg_get_group(cfg, score, "settings", "score.settings", &settings, err))) return st;
    cfg->score_given = 1;
    cfg->score.name = backend_s ? bc_cfg_strdup(config_setting_get_string(backend_s)) : NULL;
    cfg->score.settings = settings;
    cfg->score.where = bc_cfg_strdup("score");
    cfg->score.line = (int)config_setting_source_line(backend_s ? backend_s : score);
    cfg->score_precision.name = bc_cfg_strdup(precision_s ? config_setting_get_string(precision_s) : "fp32");
    cfg->score_precision.where = bc_cfg_strdup(precision_s ? "score.precision" : "score.precision (default)");
    cfg->score_precision.line = (int)config_setting_source_line(precision_s ? precision_s : score);
    if ((backend_s && !cfg->score.name) || !cfg->score.where || !cfg->score_precision.name ||
        !cfg->score_precision.where)
        return bc_cfg_nomem(err);
    return BC_OK;
}

/* Walks the whole tree; fills cfg. */
static bc_status validate(bc_config *cfg, const config_setting_t *root, bc_error *err) {
    bc_status st = bc_cfg_check_keys(cfg, root, "", k_top_keys, COUNT(k_top_keys), err);
    if (st) return st;
    if ((st = bc_cfg_parse_plugin_path(cfg, root, err))) return st;
    if ((st = parse_distributed(cfg, root, err))) return st;

    const config_setting_t *backend = config_setting_get_member(root, "backend");
    const config_setting_t *backends = config_setting_get_member(root, "backends");
    if (backend && backends)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, backends, "backends",
                           "given with backend: give one backend, or a list of them in backends");
    if (!backend && !backends)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, NULL, "backend",
                    "is required: %s, e.g. backend = { name = \"opt\"; }; (or a list of them in backends)", SPEC_FORMS);
    if (backends && (st = bc_cfg_parse_backends(cfg, backends, err))) return st;
    if (backend && (st = bc_cfg_parse_spec(cfg, backend, "backend", &cfg->backend, err))) return st;

    if ((st = bc_cfg_parse_spec_list(cfg, root, "precisions", NULL, 1, &cfg->precisions, &cfg->n_precisions, err)))
        return st;
    if ((st = bc_cfg_parse_spec_list(cfg, root, "cache_policies", "retain", 1, &cfg->cache_policies,
                              &cfg->n_cache_policies, err)))
        return st;

    config_setting_t *matrix = NULL;
    if ((st = bc_cfg_get_group(cfg, root, "matrix", "matrix", &matrix, err))) return st;
    if (!matrix)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, NULL, "matrix",
                    "is required: a group { batch_sizes = [...]; samples_per_prompt = [...]; prompt_lengths = [...]; "
                    "response_lengths = [...]; }");
    if ((st = bc_cfg_check_keys(cfg, matrix, "matrix", k_matrix_keys, COUNT(k_matrix_keys), err))) return st;
    static const uint32_t from_prompts = 0; /* prompt length 0: the backend's prompts decide */
    if ((st = parse_sizes(cfg, matrix, "batch_sizes", NULL, &cfg->batch_sizes, &cfg->n_batch_sizes, err))) return st;
    if ((st = parse_sizes(cfg, matrix, "samples_per_prompt", NULL, &cfg->samples_per_prompt,
                          &cfg->n_samples_per_prompt, err)))
        return st;
    cfg->prompt_lengths_given = config_setting_get_member(matrix, "prompt_lengths") != NULL;
    if ((st = parse_sizes(cfg, matrix, "prompt_lengths", &from_prompts, &cfg->prompt_lengths, &cfg->n_prompt_lengths,
                          err)))
        return st;
    if ((st = parse_sizes(cfg, matrix, "response_lengths", NULL, &cfg->response_lengths, &cfg->n_response_lengths,
                          err)))
        return st;
    if ((st = check_case_size(cfg, matrix, err))) return st;
    if ((st = bc_cfg_parse_setting_axes(cfg, matrix, err))) return st;

    config_setting_t *sampling = NULL;
    if ((st = bc_cfg_get_group(cfg, root, "sampling", "sampling", &sampling, err))) return st;
    if (sampling && (st = bc_cfg_check_keys(cfg, sampling, "sampling", k_sampling_keys, COUNT(k_sampling_keys), err)))
        return st;
    cfg->sampling.struct_size = sizeof cfg->sampling;
    cfg->sampling.temperature = 0.0;
    cfg->sampling.top_p = 1.0;
    cfg->sampling.top_k = 0;
    cfg->sampling.seed = 1234;
    if ((st = get_number(cfg, sampling, "temperature", "sampling.temperature", ok_temperature,
                         "a number >= 0 (0 = greedy)", &cfg->sampling.temperature, err)))
        return st;
    if ((st = get_number(cfg, sampling, "top_p", "sampling.top_p", ok_top_p, "a number in (0, 1] (1 = off)",
                         &cfg->sampling.top_p, err)))
        return st;
    long long v = cfg->sampling.top_k;
    if ((st = get_int_in(cfg, sampling, "top_k", "sampling.top_k", 0, INT64_MAX, "an integer >= 0 (0 = off)", &v,
                         err)))
        return st;
    cfg->sampling.top_k = v;
    v = (long long)cfg->sampling.seed;
    if ((st = get_int_in(cfg, sampling, "seed", "sampling.seed", 0, INT64_MAX, "an integer >= 0", &v, err)))
        return st;
    cfg->sampling.seed = (uint64_t)v;

    if ((st = parse_run(cfg, root, err))) return st;
    if ((st = parse_score(cfg, root, err))) return st;

    return bc_cfg_parse_spec_list(cfg, root, "reporters", "console", 0, &cfg->reporters, &cfg->n_reporters, err);
}


bc_status bc_config_load(bc_config *cfg, const char *path, const char *const *overrides, size_t n_overrides,
                         const char *reporter_override, bc_error *err) {
    return bc_config_load_text(cfg, path, NULL, 0, overrides, n_overrides, reporter_override, err);
}

bc_status bc_config_load_text(bc_config *cfg, const char *path, const char *text, size_t text_len,
                              const char *const *overrides, size_t n_overrides, const char *reporter_override,
                              bc_error *err) {
    memset(cfg, 0, sizeof *cfg);
    if (!path) return bc_error_set(err, BC_ERR_SETTING, "no config file given");
    cfg->path = bc_cfg_strdup(path);
    config_t *c = malloc(sizeof *c);
    if (!cfg->path || !c) {
        free(c);
        bc_config_free(cfg);
        return bc_cfg_nomem(err);
    }
    config_init(c);
    cfg->cfg = c;

    bc_status st = bc_cfg_read_file(c, path, text, text_len, err);
    if (!st && reporter_override) st = bc_overrides_apply_reporters(cfg, c, reporter_override, err);
    for (size_t i = 0; !st && i < n_overrides; i++) st = bc_overrides_apply_set(cfg, c, overrides[i], err);
    if (!st) st = validate(cfg, config_root_setting(c), err);
    if (!st) st = bc_cfg_hash_tree(cfg, c, err);
    if (st) bc_config_free(cfg);
    return st;
}


/* ----------------------------------------------------------------- free */

static void free_spec_strings(bc_plugin_spec *spec) {
    free(spec->name);
    free(spec->where);
    free(spec->label);
}

static void free_specs(bc_plugin_spec *specs, size_t n) {
    for (size_t i = 0; specs && i < n; i++) free_spec_strings(&specs[i]);
    free(specs);
}

void bc_config_free(bc_config *cfg) {
    if (!cfg) return;
    free(cfg->path);
    free(cfg->sha256);
    free(cfg->distributed_comm);
    for (size_t i = 0; cfg->plugin_paths && i < cfg->n_plugin_paths; i++) free(cfg->plugin_paths[i]);
    free(cfg->plugin_paths);
    free_spec_strings(&cfg->backend); /* backends_block[0]'s strings, when it was a list */
    for (size_t i = 0; i < cfg->n_more_backends; i++) free_spec_strings(&cfg->more_backends[i]);
    free(cfg->backends_block);
    free_specs(cfg->precisions, cfg->n_precisions);
    free_specs(cfg->cache_policies, cfg->n_cache_policies);
    free_specs(cfg->reporters, cfg->n_reporters);
    free_spec_strings(&cfg->score);
    free_spec_strings(&cfg->score_precision);
    free(cfg->batch_sizes);
    free(cfg->samples_per_prompt);
    free(cfg->prompt_lengths);
    free(cfg->response_lengths);
    for (size_t i = 0; cfg->setting_axes && i < cfg->n_setting_axes; i++) {
        for (size_t j = 0; cfg->setting_axes[i].texts && j < cfg->setting_axes[i].n_values; j++)
            free(cfg->setting_axes[i].texts[j]);
        free(cfg->setting_axes[i].texts);
        free(cfg->setting_axes[i].name);
    }
    free(cfg->setting_axes);
    for (size_t i = 0; i < cfg->n_overrides; i++) {
        free(cfg->override_keys[i]);
        free(cfg->override_labels[i]);
    }
    free(cfg->override_keys);
    free(cfg->override_labels);
    if (cfg->cfg) {
        config_destroy(cfg->cfg);
        free(cfg->cfg);
    }
    memset(cfg, 0, sizeof *cfg);
}
