/* test_config.c: bench.cfg loading (core/src/config/config.c).
 *
 * - cases/good.cfg and cases/minimal.cfg: every field, and every default;
 * - cases/bad-*.cfg: each file's first line is "# expect: <text>", and loading
 *   it must fail with "<file name><text>" in the message;
 * - unreadable files, --set overrides, --reporter, plugin settings against a
 *   hand-made settings table, bc_suggest, the config hash;
 * - configs/bench.cfg and the configs/examples files load.
 * Fixtures: a temporary folder per test for configs written on the fly.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bc_test_assert.h"

#include "config.h"
#include "settings.h"
#include "suggest.h"

#define CASES BENCHCTL_SOURCE_DIR "/tests/config/cases/"

#define assert_contains(hay, needle)                                                      \
    do {                                                                                  \
        const char *hay_ = (hay), *needle_ = (needle);                                    \
        if (!strstr(hay_, needle_)) fail_msg("\n  got:  %s\n  want: ...%s...", hay_, needle_); \
    } while (0)

/* ------------------------------------------------------------- fixture */

typedef struct fx {
    char dir[64];   /* temporary folder, removed in teardown */
    char path[128]; /* dir/bench.cfg */
    bc_config cfg;
    bc_error err;
} fx;

static int setup(void **state) {
    fx *f = calloc(1, sizeof *f);
    if (!f) return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/bc_test_config.XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof f->path, "%s/bench.cfg", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx *f = *state;
    bc_config_free(&f->cfg);
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void write_file(const char *path, const char *text) {
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    assert_int_equal(fputs(text, out) >= 0, 1);
    assert_int_equal(fclose(out), 0);
}

/* Writes text to f->path and loads it. */
static bc_status load_text(fx *f, const char *text, const char *const *sets, size_t n_sets, const char *reporters) {
    bc_config_free(&f->cfg);
    write_file(f->path, text);
    memset(&f->err, 0, sizeof f->err);
    return bc_config_load(&f->cfg, f->path, sets, n_sets, reporters, &f->err);
}

/* Loading must fail with want in the message, and leave cfg empty. */
static void expect_fail(fx *f, const char *text, const char *const *sets, size_t n_sets, const char *reporters,
                        const char *want) {
    bc_status st = load_text(f, text, sets, n_sets, reporters);
    if (st == BC_OK) fail_msg("loaded, but expected an error containing: %s", want);
    assert_contains(f->err.message, want);
    assert_null(f->cfg.cfg);
    assert_null(f->cfg.path);
    assert_int_equal(f->cfg.n_precisions, 0);
}

/* Lines 1-3 of most inline configs. */
#define BASE                                                                                                 \
    "backend = { name = \"opt\"; };\n"                                                                      \
    "precisions = [ \"bf16\" ];\n"                                                                          \
    "matrix = { batch_sizes = [1]; samples_per_prompt = [1]; prompt_lengths = [8]; response_lengths = [4]; };\n"

/* ------------------------------------------------------- good configs */

static void test_good_config_every_field(void **state) {
    fx *f = *state;
    bc_status st = bc_config_load(&f->cfg, CASES "good.cfg", NULL, 0, NULL, &f->err);
    if (st) fail_msg("%s", f->err.message);
    bc_config *c = &f->cfg;
    assert_string_equal(c->path, CASES "good.cfg");
    assert_int_equal(c->n_plugin_paths, 2);
    assert_string_equal(c->plugin_paths[0], "extra/plugins");
    assert_string_equal(c->plugin_paths[1], "/opt/benchctl/plugins");

    assert_string_equal(c->backend.name, "opt");
    assert_non_null(c->backend.settings);
    assert_int_equal(c->backend.line, 3);
    assert_string_equal(c->backend.where, "backend");

    assert_int_equal(c->n_precisions, 2);
    assert_string_equal(c->precisions[0].name, "bf16");
    assert_string_equal(c->precisions[1].name, "fp32");
    assert_null(c->precisions[0].settings);
    assert_string_equal(c->precisions[1].where, "precisions.[1]");
    assert_int_equal(c->precisions[1].line, 4);

    assert_int_equal(c->n_cache_policies, 2);
    assert_string_equal(c->cache_policies[0].name, "retain");
    assert_null(c->cache_policies[0].settings);
    assert_string_equal(c->cache_policies[1].name, "release");
    assert_non_null(c->cache_policies[1].settings);

    assert_int_equal(c->n_batch_sizes, 2);
    assert_int_equal(c->batch_sizes[0], 1);
    assert_int_equal(c->batch_sizes[1], 4);
    assert_int_equal(c->n_samples_per_prompt, 2);
    assert_int_equal(c->samples_per_prompt[1], 4);
    assert_int_equal(c->n_prompt_lengths, 1);
    assert_int_equal(c->prompt_lengths[0], 128);
    assert_int_equal(c->n_response_lengths, 2);
    assert_int_equal(c->response_lengths[0], 32);
    assert_int_equal(c->response_lengths[1], 64);

    assert_float_equal(c->sampling.temperature, 0.7, 1e-12);
    assert_float_equal(c->sampling.top_p, 0.9, 1e-12);
    assert_int_equal(c->sampling.top_k, 50);
    assert_int_equal(c->sampling.seed, 7);
    assert_int_equal(c->warmup, 0);
    assert_int_equal(c->iterations, 3);

    assert_int_equal(c->n_reporters, 3);
    assert_string_equal(c->reporters[0].name, "console");
    assert_string_equal(c->reporters[1].name, "json");
    assert_non_null(c->reporters[1].settings);
    assert_string_equal(c->reporters[1].where, "reporters.[1]");
    assert_int_equal(c->reporters[1].line, 15);
    assert_string_equal(c->reporters[2].name, "csv");
    assert_null(c->reporters[2].settings);

    assert_non_null(c->sha256);
    assert_int_equal(strlen(c->sha256), 64);
    assert_int_equal(strspn(c->sha256, "0123456789abcdef"), 64);
    assert_non_null(c->cfg);
    assert_int_equal(c->n_overrides, 0);
}

static void test_minimal_config_defaults(void **state) {
    fx *f = *state;
    bc_status st = bc_config_load(&f->cfg, CASES "minimal.cfg", NULL, 0, NULL, &f->err);
    if (st) fail_msg("%s", f->err.message);
    bc_config *c = &f->cfg;
    assert_string_equal(c->backend.name, "opt");
    assert_null(c->backend.settings);
    assert_int_equal(c->n_plugin_paths, 0);
    assert_int_equal(c->n_cache_policies, 1);
    assert_string_equal(c->cache_policies[0].name, "retain");
    assert_int_equal(c->n_reporters, 1);
    assert_string_equal(c->reporters[0].name, "console");
    assert_int_equal(c->reporters[0].line, 0);
    assert_float_equal(c->sampling.temperature, 0.0, 0);
    assert_float_equal(c->sampling.top_p, 1.0, 0);
    assert_int_equal(c->sampling.top_k, 0);
    assert_int_equal(c->sampling.seed, 1234);
    assert_int_equal(c->warmup, 1);
    assert_int_equal(c->iterations, 5);
    /* the fixed count: no adaptive rule, no time cap */
    assert_int_equal(c->adaptive, 0);
    assert_int_equal(c->min_iterations, 5);
    assert_int_equal(c->max_iterations, 5);
    assert_nan(c->target_rel_ci);
    assert_nan(c->max_seconds_per_case);
}

/* The adaptive keys: what each alone implies, and the time cap with a fixed count. */
static void test_adaptive_iterations(void **state) {
    fx *f = *state;
    static const struct {
        const char *run;
        int adaptive;
        uint32_t lo, hi;
        double target, seconds;
    } k[] = {
        {"run = { target_rel_ci = 0.02; };", 1, 6, 50, 0.02, NAN},
        {"run = { min_iterations = 10; };", 1, 10, 50, NAN, NAN},
        {"run = { min_iterations = 80; };", 1, 80, 80, NAN, NAN},
        {"run = { max_iterations = 3; };", 1, 3, 3, NAN, NAN},
        {"run = { min_iterations = 2; max_iterations = 9; target_rel_ci = 1; max_seconds_per_case = 30; };", 1, 2,
         9, 1.0, 30.0},
        {"run = { iterations = 7; max_seconds_per_case = 2.5; };", 0, 7, 7, NAN, 2.5},
        {"run = { warmup = 0; };", 0, 5, 5, NAN, NAN},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, BASE "%s\n", k[i].run);
        bc_status st = load_text(f, text, NULL, 0, NULL);
        if (st) fail_msg("%s: %s", k[i].run, f->err.message);
        const bc_config *c = &f->cfg;
        assert_int_equal(c->adaptive, k[i].adaptive);
        assert_int_equal(c->min_iterations, k[i].lo);
        assert_int_equal(c->max_iterations, k[i].hi);
        assert_int_equal(c->iterations, k[i].hi); /* the most a case may measure */
        if (isnan(k[i].target)) assert_nan(c->target_rel_ci);
        else assert_double_close(c->target_rel_ci, k[i].target, 0);
        if (isnan(k[i].seconds)) assert_nan(c->max_seconds_per_case);
        else assert_double_close(c->max_seconds_per_case, k[i].seconds, 0);
    }
    /* the contradiction, made on the command line: both places named */
    const char *sets[] = {"run.iterations=3", "run.max_iterations=20"};
    expect_fail(f, BASE, sets, 2, NULL,
                "--set run.iterations: a fixed count, which contradicts run.max_iterations (--set run.max_iterations)");
    const char *one[] = {"run.target_rel_ci=0.05"};
    assert_int_equal(load_text(f, BASE "run = { iterations = 4; };\n", one, 1, NULL), BC_ERR_SETTING);
    assert_contains(f->err.message, "bench.cfg:4: run.iterations: a fixed count, which contradicts run.target_rel_ci "
                                    "(--set run.target_rel_ci)");
}

static void test_int_accepted_for_float(void **state) {
    fx *f = *state;
    bc_status st = load_text(f, BASE "sampling = { temperature = 1; top_p = 1; };\n", NULL, 0, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_float_equal(f->cfg.sampling.temperature, 1.0, 0);
    assert_float_equal(f->cfg.sampling.top_p, 1.0, 0);
}

/* ---------------------------------------------------------- bad files */

static const char *const k_bad_cases[] = {
    "unknown-top-key", "unknown-run-key", "unknown-key-no-hint", "unknown-matrix-key", "unknown-spec-key",
    "iterations-string", "iterations-zero", "iterations-float", "warmup-negative", "temperature-negative",
    "top-p-zero", "top-p-above-one", "top-k-negative", "seed-string", "sampling-not-group", "zero-batch",
    "empty-list", "negative-length", "float-size", "string-size", "duplicate-size", "missing-matrix-key",
    "missing-matrix", "missing-backend", "missing-precisions", "empty-precisions", "precision-number",
    "duplicate-precision", "backend-number", "backends-and-backend", "backends-same-label", "backends-empty",
    "backends-label-type", "backend-label", "backend-no-name", "backend-empty-name", "settings-not-group",
    "empty-reporters", "reporter-group-no-name", "plugin-path-number", "syntax-error", "duplicate-key",
    "iterations-too-large", "iterations-and-adaptive", "min-above-max", "target-needs-six", "target-zero",
    "max-seconds-negative", "max-iterations-too-large", "min-iterations-zero", "int-wraps-size",
    "int-wraps-iterations", "int-wraps-hex", "int64-too-large", "int-wraps-in-list", "effective-batch", "case-tokens",
    "axis-empty", "axis-duplicate", "axis-group", "axis-not-group", "axis-list-in-list",
};

/* Every cases/bad-*.cfg fails with the message its first line expects. */
static void test_bad_files(void **state) {
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof k_bad_cases / sizeof k_bad_cases[0]; i++) {
        char path[512], base[128], line[512], want[640];
        snprintf(base, sizeof base, "bad-%s.cfg", k_bad_cases[i]);
        snprintf(path, sizeof path, CASES "%s", base);
        FILE *in = fopen(path, "r");
        if (!in) fail_msg("cannot open %s", path);
        char *got_line = fgets(line, sizeof line, in);
        fclose(in);
        assert_non_null(got_line);
        line[strcspn(line, "\n")] = '\0';
        const char *tag = "# expect: ";
        if (strncmp(line, tag, strlen(tag)) != 0) fail_msg("%s: first line must be '# expect: ...'", base);
        snprintf(want, sizeof want, "%s%s", base, line + strlen(tag));

        bc_config cfg;
        bc_error err = {0};
        bc_status st = bc_config_load(&cfg, path, NULL, 0, NULL, &err);
        if (st == BC_OK) {
            print_error("%s: loaded, but expected: %s\n", base, want);
            failures++;
            bc_config_free(&cfg);
        } else if (!strstr(err.message, want)) {
            print_error("%s:\n  got:  %s\n  want: ...%s...\n", base, err.message, want);
            failures++;
        } else if (cfg.cfg || cfg.path) {
            print_error("%s: cfg not left empty after an error\n", base);
            failures++;
        }
    }
    assert_int_equal(failures, 0);

    /* Every bad-*.cfg in the folder is in the list above. */
    DIR *d = opendir(CASES);
    assert_non_null(d);
    size_t on_disk = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "bad-", 4) == 0 && len > 4 && strcmp(e->d_name + len - 4, ".cfg") == 0) on_disk++;
    }
    closedir(d);
    assert_int_equal(on_disk, sizeof k_bad_cases / sizeof k_bad_cases[0]);
}

/* libconfig 1.5 keeps the low 32 bits of a plain integer: such literals are
 * refused in the file, in an @include'd file and in a --set value, while
 * 64-bit literals with L, and numbers in strings and comments, pass. */
static void test_int_literals_that_would_wrap(void **state) {
    fx *f = *state;
    bc_status st = load_text(f, BASE "sampling = { seed = 5000000000L; top_k = 0x7fffffff; };\n"
                                    "run = { iterations = 3; /* 4294967296 */ }; # -4294967295\n"
                                    "reporters = ( { name = \"json\"; settings = { path = \"x-4294967296.json\"; }; } );\n",
                             NULL, 0, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_int_equal(f->cfg.sampling.seed, 5000000000ULL);
    assert_int_equal(f->cfg.sampling.top_k, 2147483647);

    const char *sets[] = {"run.iterations=4294967297"};
    expect_fail(f, BASE, sets, 1, NULL,
                "--set run.iterations: 4294967297 does not fit in 32 bits: libconfig reads a plain integer as 32-bit "
                "and would keep 1; write 4294967297L for a 64-bit integer");
    const char *sets_ok[] = {"run.iterations=7L", "sampling.seed=-0"};
    st = load_text(f, BASE, sets_ok, 2, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_int_equal(f->cfg.iterations, 7);

    expect_fail(f, BASE "sampling = { seed = 0x80000000; };\n", NULL, 0, NULL,
                "bench.cfg:4: sampling.seed: 0x80000000 does not fit in 32 bits: libconfig reads a plain integer as "
                "32-bit and would keep -2147483648");
    expect_fail(f, BASE "sampling = { seed = -2147483648; top_k = -2147483649; };\n", NULL, 0, NULL,
                "bench.cfg:4: sampling.top_k: -2147483649 does not fit in 32 bits");

    /* an included file is scanned too, with its own name and line */
    char inc[192];
    snprintf(inc, sizeof inc, "%s/inc.cfg", f->dir);
    write_file(inc, "\nrun = { warmup = 8589934593; };\n");
    expect_fail(f, BASE "@include \"inc.cfg\"\n", NULL, 0, NULL,
                "inc.cfg:2: run.warmup: 8589934593 does not fit in 32 bits");
}

static void test_syntax_error_is_format(void **state) {
    fx *f = *state;
    bc_status st = load_text(f, BASE "run = { iterations = ; };\n", NULL, 0, NULL);
    assert_int_equal(st, BC_ERR_FORMAT);
    assert_contains(f->err.message, "bench.cfg:4: syntax error");
}

static void test_unreadable_files(void **state) {
    fx *f = *state;
    char missing[160];
    snprintf(missing, sizeof missing, "%s/missing.cfg", f->dir);
    bc_status st = bc_config_load(&f->cfg, missing, NULL, 0, NULL, &f->err);
    assert_int_equal(st, BC_ERR_IO);
    assert_contains(f->err.message, "missing.cfg: cannot read: No such file or directory");
    assert_null(strchr(f->err.message, '\n'));

    st = bc_config_load(&f->cfg, f->dir, NULL, 0, NULL, &f->err);
    assert_int_equal(st, BC_ERR_IO);
    assert_contains(f->err.message, ": cannot read: Is a directory");
}

/* ------------------------------------------------------------ overrides */

static void test_overrides_replace_and_create(void **state) {
    fx *f = *state;
    const char *sets[] = {
        "run.iterations=3",          "matrix.batch_sizes=[1,2]",   "backend.settings.threads=2",
        " sampling.temperature = 0.7", "backend.name=\"opt2\"", "run.iterations=4",
    };
    bc_status st = load_text(f, BASE "run = { iterations = 9; warmup = 2; };\n", sets, 6, NULL);
    if (st) fail_msg("%s", f->err.message);
    bc_config *c = &f->cfg;
    assert_int_equal(c->iterations, 4); /* the later --set wins */
    assert_int_equal(c->warmup, 2);     /* untouched */
    assert_int_equal(c->n_batch_sizes, 2);
    assert_int_equal(c->batch_sizes[0], 1);
    assert_int_equal(c->batch_sizes[1], 2);
    assert_float_equal(c->sampling.temperature, 0.7, 1e-12);
    assert_float_equal(c->sampling.top_p, 1.0, 0); /* created group, other keys default */
    assert_string_equal(c->backend.name, "opt2");
    assert_non_null(c->backend.settings);
    assert_int_equal(c->n_overrides, 6);
    assert_string_equal(c->override_keys[2], "backend.settings.threads");
    assert_string_equal(c->override_labels[3], "--set sampling.temperature");
}

static void test_override_bare_word_is_string(void **state) {
    fx *f = *state;
    const char *sets[] = {"backend.name=./libmine.so", "precisions=[\"fp32\", \"bf16\"]"};
    bc_status st = load_text(f, BASE, sets, 2, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_string_equal(f->cfg.backend.name, "./libmine.so");
    assert_int_equal(f->cfg.n_precisions, 2);
    assert_string_equal(f->cfg.precisions[0].name, "fp32");

    const char *sets2[] = {"backend.name=my plugin"}; /* a space: not a bare word, not a value */
    expect_fail(f, BASE, sets2, 1, NULL, "--set backend.name: cannot read the value 'my plugin'");
}

static void test_override_errors(void **state) {
    fx *f = *state;
    struct {
        const char *set, *want;
    } cases[] = {
        {"run.iterations=0", "--set run.iterations: must be an integer >= 1 (got 0)"},
        {"run.iteration=3", "--set run.iteration: unknown key (did you mean 'iterations'?)"},
        {"matrix.batch_sizes=[1,0]", "--set matrix.batch_sizes: must be a non-empty list of integers >= 1 (got 0)"},
        {"matrix.batch_sizes=[]", "--set matrix.batch_sizes: must be a non-empty list of integers >= 1 (got an empty list)"},
        {"sampling.top_p=2", "--set sampling.top_p: must be a number in (0, 1] (1 = off) (got 2)"},
        {"sampling.temperature=-1", "--set sampling.temperature: must be a number >= 0"},
        {"run.iterations=\"3\"", "--set run.iterations: must be an integer >= 1 (got \"3\")"},
        {"run.iterations", "--set 'run.iterations': expected KEY=VALUE"},
        {"=3", "expected KEY=VALUE"},
        {"run.iterations=[1,", "--set run.iterations: cannot read the value '[1,'"},
        {"run..iterations=3", "--set run..iterations: 'run..iterations' is not a setting path"},
        {"run.it$er=3", "--set run.it$er: 'it$er' is not a valid setting name"},
        {"matrix.batch_sizes.x=1", "--set matrix.batch_sizes.x: matrix.batch_sizes is a list, not a group"},
        {"precisions.[0]=\"fp32\"", "cannot be set by index; set the whole list"},
        {"reporters.[3].settings.path=\"x\"", "--set reporters.[3].settings.path: reporters has no element [3]"},
        {"backend.settings=5", "--set backend.settings: must be a group { ... } (got 5)"},
        {"rum.iterations=3", "--set rum.iterations: rum: unknown key (did you mean 'run'?)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *sets[] = {cases[i].set};
        expect_fail(f, BASE "reporters = [ \"console\" ];\n", sets, 1, NULL, cases[i].want);
    }
}

static void test_override_into_list_element(void **state) {
    fx *f = *state;
    const char *sets[] = {"reporters.[1].settings.path=\"other.json\""};
    bc_status st = load_text(f, BASE "reporters = ( \"console\", { name = \"json\"; } );\n", sets, 1, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_non_null(f->cfg.reporters[1].settings);

    static const bc_setting_desc table[] = {
        {"path", BC_SETTING_STRING, 0, 0, "results.json", 0, 0, 0, NULL, "output file", 0},
    };
    static const bc_plugin_desc desc = {BC_PLUGIN_DESC_HEADER, .kind = BC_KIND_REPORTER, .name = "json", .version = "0", .description = "test",
        .settings = table, .n_settings = 1, .setting_size = sizeof(bc_setting_desc)};
    bc_setting_value v[1];
    st = bc_settings_resolve(&f->cfg, &f->cfg.reporters[1], &desc, v, &f->err);
    if (st) fail_msg("%s", f->err.message);
    assert_string_equal(v[0].s, "other.json");
}

static void test_reporter_override(void **state) {
    fx *f = *state;
    bc_status st = load_text(f, BASE "reporters = ( { name = \"json\"; settings = { path = \"a\"; }; } );\n", NULL, 0,
                             " json , csv");
    if (st) fail_msg("%s", f->err.message);
    assert_int_equal(f->cfg.n_reporters, 2);
    assert_string_equal(f->cfg.reporters[0].name, "json");
    assert_null(f->cfg.reporters[0].settings);
    assert_string_equal(f->cfg.reporters[1].name, "csv");
    assert_string_equal(f->cfg.reporters[1].where, "reporters.[1]");
    assert_int_equal(f->cfg.reporters[1].line, 0);

    /* --set applies after --reporter, so it reaches the reporters --reporter names */
    const char *sets[] = {"reporters.[1].settings.path=\"b.csv\""};
    st = load_text(f, BASE "reporters = ( { name = \"json\"; settings = { path = \"a\"; }; } );\n", sets, 1,
                   "json,csv");
    if (st) fail_msg("%s", f->err.message);
    assert_string_equal(f->cfg.reporters[1].name, "csv");
    static const bc_setting_desc table[] = {
        {"path", BC_SETTING_STRING, 0, 0, "benchctl.csv", 0, 0, 0, NULL, "output file", 0},
    };
    static const bc_plugin_desc desc = {BC_PLUGIN_DESC_HEADER, .kind = BC_KIND_REPORTER, .name = "csv", .version = "0", .description = "test",
        .settings = table, .n_settings = 1, .setting_size = sizeof(bc_setting_desc)};
    bc_setting_value v[1];
    st = bc_settings_resolve(&f->cfg, &f->cfg.reporters[1], &desc, v, &f->err);
    if (st) fail_msg("%s", f->err.message);
    assert_string_equal(v[0].s, "b.csv");
    /* the file had two reporters, --reporter names one: reporters.[1] is gone, and the hint says why */
    const char *second[] = {"reporters.[1].settings.path=\"b.csv\""};
    expect_fail(f, BASE "reporters = ( \"json\", \"csv\" );\n", second, 1, "json",
                "--set reporters.[1].settings.path: reporters has no element [1]");
    assert_contains(f->err.hint, "--reporter replaced the file's reporters with its own list (1 of them)");
    expect_fail(f, BASE, NULL, 0, "json,,csv", "--reporter 'json,,csv': expected a comma-separated list");
    expect_fail(f, BASE, NULL, 0, "", "--reporter '': expected a comma-separated list");
}

/* ------------------------------------------------------- plugin settings */

static const char *const k_models[] = {"125m", "350m", "1.3b", NULL};
static const bc_setting_desc k_table[] = {
    {"model", BC_SETTING_ENUM, 0, 0, "125m", 0, 0, 0, k_models, "model size", 0},
    {"threads", BC_SETTING_INT, 0, 0, NULL, 1, 0, 256, NULL, "worker threads, 0 = all cores", 0},
    {"scale", BC_SETTING_FLOAT, 0, 0.5, NULL, 1, 0.0, 1.0, NULL, "a factor", 0},
    {"verbose", BC_SETTING_BOOL, 0, 0, NULL, 0, 0, 0, NULL, "chatty", 0},
    {"weights", BC_SETTING_STRING, 0, 0, "", 0, 0, 0, NULL, "weights file", 0},
    {"budget", BC_SETTING_INT, 7, 0, NULL, 0, 0, 0, NULL, "no range", 0},
};
static const bc_plugin_desc k_desc = {BC_PLUGIN_DESC_HEADER, .kind = BC_KIND_BACKEND, .name = "opt", .version = "0.1.0", .description = "test backend",
        .settings = k_table, .n_settings = 6, .setting_size = sizeof(bc_setting_desc)};

/* Loads "backend = { name = "opt"; settings = { <settings> }; };" + the rest
 * and resolves the backend's settings into v. */
static bc_status resolve_text(fx *f, const char *settings, const char *const *sets, size_t n_sets,
                              bc_setting_value v[6]) {
    char text[1024];
    snprintf(text, sizeof text,
             "backend = { name = \"opt\"; settings = { %s }; };\n"
             "precisions = [ \"bf16\" ];\n"
             "matrix = { batch_sizes = [1]; samples_per_prompt = [1]; prompt_lengths = [8]; response_lengths = [4]; };\n",
             settings);
    bc_status st = load_text(f, text, sets, n_sets, NULL);
    if (st) fail_msg("load: %s", f->err.message);
    return bc_settings_resolve(&f->cfg, &f->cfg.backend, &k_desc, v, &f->err);
}

static void test_resolve_defaults_and_values(void **state) {
    fx *f = *state;
    bc_setting_value v[6];
    bc_status st = resolve_text(f, "", NULL, 0, v);
    if (st) fail_msg("%s", f->err.message);
    assert_string_equal(v[0].s, "125m");
    assert_int_equal(v[1].i, 0);
    assert_float_equal(v[2].f, 0.5, 0);
    assert_int_equal(v[3].i, 0);
    assert_string_equal(v[4].s, "");
    assert_int_equal(v[5].i, 7);

    st = resolve_text(f, "model = \"350m\"; threads = 4; scale = 1; verbose = true; weights = \"w.bin\";", NULL, 0,
                      v);
    if (st) fail_msg("%s", f->err.message);
    assert_string_equal(v[0].s, "350m");
    assert_int_equal(v[1].i, 4);
    assert_float_equal(v[2].f, 1.0, 0); /* an int where a float is expected */
    assert_int_equal(v[3].i, 1);
    assert_string_equal(v[4].s, "w.bin");
    assert_int_equal(v[5].i, 7);

    /* A backend named by a string has no settings group: all defaults. */
    st = load_text(f, "backend = \"opt\";\nprecisions = [ \"bf16\" ];\n"
                      "matrix = { batch_sizes = [1]; samples_per_prompt = [1]; prompt_lengths = [8]; response_lengths = [4]; };\n",
                   NULL, 0, NULL);
    if (st) fail_msg("%s", f->err.message);
    st = bc_settings_resolve(&f->cfg, &f->cfg.backend, &k_desc, v, &f->err);
    if (st) fail_msg("%s", f->err.message);
    assert_string_equal(v[0].s, "125m");
}

static void test_resolve_errors(void **state) {
    fx *f = *state;
    struct {
        const char *settings, *want;
    } cases[] = {
        {"thread = 2;", "bench.cfg:1: backend.settings.thread: plugin 'opt' has no setting 'thread' (did you mean "
                        "'threads'?)"},
        {"colour = 2;", "bench.cfg:1: backend.settings.colour: plugin 'opt' has no setting 'colour'"},
        {"threads = \"2\";", "bench.cfg:1: backend.settings.threads: plugin 'opt': must be an integer in [0, 256] "
                             "(got \"2\")"},
        {"threads = 1000;", "backend.settings.threads: plugin 'opt': must be an integer in [0, 256] (got 1000)"},
        {"threads = -1;", "(got -1)"},
        {"threads = 2.5;", "must be an integer in [0, 256] (got 2.5)"},
        {"scale = 1.5;", "backend.settings.scale: plugin 'opt': must be a number in [0, 1] (got 1.5)"},
        {"scale = \"x\";", "must be a number in [0, 1] (got \"x\")"},
        {"verbose = 1;", "backend.settings.verbose: plugin 'opt': must be true or false (got 1)"},
        {"weights = 3;", "backend.settings.weights: plugin 'opt': must be a string (got 3)"},
        {"model = \"xl\";", "backend.settings.model: plugin 'opt': must be one of \"125m\", \"350m\", \"1.3b\" (got "
                            "\"xl\")"},
        {"model = \"350\";", "(got \"350\"; did you mean \"350m\"?)"},
        {"model = 125;", "must be one of \"125m\", \"350m\", \"1.3b\" (got 125)"},
        {"budget = [1];", "backend.settings.budget: plugin 'opt': must be an integer (got a list)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bc_setting_value v[6];
        bc_status st = resolve_text(f, cases[i].settings, NULL, 0, v);
        if (st == BC_OK) fail_msg("'%s' resolved, but expected: %s", cases[i].settings, cases[i].want);
        assert_int_equal(st, BC_ERR_SETTING);
        assert_contains(f->err.message, cases[i].want);
        /* an unknown key carries a hint saying where the table is */
        if (i < 2) assert_string_equal(f->err.hint, "'benchctl plugins opt' lists its settings");
        else assert_string_equal(f->err.hint, "");
    }
}

/* matrix.backend_settings: the axes in file order with each value's text,
 * then each axis checked against a backend's table as backend.settings is:
 * the row, each value read, and the errors naming file, line and setting. */
/* A config whose matrix.backend_settings (line 5) holds axes. */
#define AXES_CFG(axes)                                                                          \
    "backend = \"opt\";\nprecisions = [ \"bf16\" ];\n"                                          \
    "matrix = { batch_sizes = [1]; samples_per_prompt = [1]; prompt_lengths = [8];\n"           \
    "  response_lengths = [4];\n  backend_settings = { " axes " }; };\n"

static void test_setting_axes(void **state) {
    fx *f = *state;
    bc_status st = load_text(f, AXES_CFG("model = [\"350m\", \"125m\"]; scale = (0.25, 1); verbose = true; threads = 3;"),
                             NULL, 0, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_int_equal(f->cfg.n_setting_axes, 4);
    const bc_setting_axis *ax = f->cfg.setting_axes;
    assert_string_equal(ax[0].name, "model");
    assert_int_equal(ax[0].n_values, 2);
    assert_string_equal(ax[0].texts[0], "350m");
    assert_string_equal(ax[0].texts[1], "125m");
    assert_int_equal(ax[0].line, 5);
    assert_string_equal(ax[1].texts[0], "0.25");
    assert_string_equal(ax[1].texts[1], "1");
    assert_int_equal(ax[2].n_values, 1); /* one value is a list of one */
    assert_string_equal(ax[2].texts[0], "true");
    assert_string_equal(ax[3].texts[0], "3");
    bc_setting_value v[2];
    uint32_t row = 99;
    st = bc_settings_resolve_axis(&f->cfg, &ax[0], &k_desc, "opt", &row, v, &f->err);
    if (st) fail_msg("%s", f->err.message);
    assert_int_equal(row, 0);
    assert_string_equal(v[0].s, "350m");
    assert_string_equal(v[1].s, "125m");
    st = bc_settings_resolve_axis(&f->cfg, &ax[1], &k_desc, "opt", &row, v, &f->err);
    if (st) fail_msg("%s", f->err.message);
    assert_int_equal(row, 2);
    assert_double_close(v[0].f, 0.25, 0);
    assert_double_close(v[1].f, 1.0, 0); /* an int where a float is expected */

    /* values the table refuses, and a setting it lacks */
    struct {
        const char *axes, *want;
    } bad[] = {
        {"model = [\"125m\", \"xl\"];",
         "bench.cfg:5: matrix.backend_settings.model: plugin 'opt': must be one of \"125m\", \"350m\", \"1.3b\" (got "
         "\"xl\")"},
        {"threads = [1, 1000];", "bench.cfg:5: matrix.backend_settings.threads: plugin 'opt': must be an integer in "
                                  "[0, 256] (got 1000)"},
        {"verbose = (true, 1);", "matrix.backend_settings.verbose: plugin 'opt': must be true or false (got 1)"},
        {"thread = [1, 2];", "bench.cfg:5: matrix.backend_settings.thread: plugin 'opt' has no setting 'thread' (did "
                             "you mean 'threads'?)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, AXES_CFG("%s"), bad[i].axes);
        st = load_text(f, text, NULL, 0, NULL);
        if (st) fail_msg("%s", f->err.message);
        st = bc_settings_resolve_axis(&f->cfg, &f->cfg.setting_axes[0], &k_desc, "opt", &row, v, &f->err);
        assert_int_equal(st, BC_ERR_SETTING);
        assert_contains(f->err.message, bad[i].want);
    }
}

static void test_resolve_errors_from_set(void **state) {
    fx *f = *state;
    bc_setting_value v[6];
    const char *sets[] = {"backend.settings.thread=2"};
    bc_status st = resolve_text(f, "", sets, 1, v);
    assert_int_equal(st, BC_ERR_SETTING);
    assert_contains(f->err.message, "--set backend.settings.thread: plugin 'opt' has no setting 'thread' (did you "
                                    "mean 'threads'?)");
    const char *sets2[] = {"backend.settings.threads=300"};
    st = resolve_text(f, "", sets2, 1, v);
    assert_int_equal(st, BC_ERR_SETTING);
    assert_contains(f->err.message, "--set backend.settings.threads: plugin 'opt': must be an integer in [0, 256] "
                                    "(got 300)");
    const char *sets3[] = {"backend.settings.threads=12"};
    st = resolve_text(f, "threads = 3;", sets3, 1, v);
    if (st) fail_msg("%s", f->err.message);
    assert_int_equal(v[1].i, 12);
}

static void test_resolve_plugin_without_settings(void **state) {
    fx *f = *state;
    static const bc_plugin_desc bare = {BC_PLUGIN_DESC_HEADER, .kind = BC_KIND_CACHE, .name = "retain", .version = "0", .description = "test",
        .settings = NULL, .n_settings = 0, .setting_size = 0};
    bc_status st = load_text(f,
                             BASE "cache_policies = ( { name = \"retain\"; settings = { keep = true; }; } );\n",
                             NULL, 0, NULL);
    if (st) fail_msg("%s", f->err.message);
    st = bc_settings_resolve(&f->cfg, &f->cfg.cache_policies[0], &bare, NULL, &f->err);
    assert_int_equal(st, BC_ERR_SETTING);
    assert_contains(f->err.message, "bench.cfg:4: cache_policies.[0].settings.keep: plugin 'retain' has no settings");
}

static void test_missing_key_in_group_made_by_set(void **state) {
    fx *f = *state;
    const char *sets[] = {"matrix.batch_sizes=[1]"};
    expect_fail(f, "backend = \"opt\";\nprecisions = [ \"bf16\" ];\n", sets, 1, NULL,
                "--set matrix.batch_sizes: matrix.samples_per_prompt: is required");
    const char *sets2[] = {"backend.settings.threads=2"};
    expect_fail(f, "precisions = [ \"bf16\" ];\n", sets2, 1, NULL,
                "--set backend.settings.threads: backend.name: is required");
}

static void test_spec_location(void **state) {
    fx *f = *state;
    const char *sets[] = {"backend.name=\"other\""};
    bc_status st = load_text(f, BASE "reporters = ( \"console\",\n  { name = \"json\"; } );\n", sets, 1, NULL);
    if (st) fail_msg("%s", f->err.message);
    char buf[256], want[256];
    bc_config_spec_location(&f->cfg, &f->cfg.backend, buf, sizeof buf);
    assert_string_equal(buf, "--set backend.name");
    bc_config_spec_location(&f->cfg, &f->cfg.reporters[1], buf, sizeof buf);
    snprintf(want, sizeof want, "%s:5", f->path);
    assert_string_equal(buf, want);
    bc_config_spec_location(&f->cfg, &f->cfg.precisions[0], buf, sizeof buf);
    snprintf(want, sizeof want, "%s:2", f->path);
    assert_string_equal(buf, want);
    bc_config_spec_location(&f->cfg, &f->cfg.cache_policies[0], buf, sizeof buf); /* a default */
    assert_string_equal(buf, f->path);

    st = load_text(f, BASE, NULL, 0, "json");
    if (st) fail_msg("%s", f->err.message);
    bc_config_spec_location(&f->cfg, &f->cfg.reporters[0], buf, sizeof buf);
    assert_string_equal(buf, "--reporter");
}

static void test_include_reports_the_included_file(void **state) {
    fx *f = *state;
    char inc[160];
    snprintf(inc, sizeof inc, "%s/part.cfg", f->dir);
    write_file(inc, "# part.cfg\nrun = {\n  iterations = 0; };\n");
    expect_fail(f, BASE "@include \"part.cfg\"\n", NULL, 0, NULL,
                "part.cfg:3: run.iterations: must be an integer >= 1 (got 0)");
    write_file(inc, "run = { iterations = 2; };\n");
    bc_status st = load_text(f, BASE "@include \"part.cfg\"\n", NULL, 0, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_int_equal(f->cfg.iterations, 2);
    unlink(inc);
}

/* ------------------------------------------------------ suggest and hash */

static void test_suggest(void **state) {
    (void)state;
    const char *const keys[] = {"warmup", "iterations"};
    assert_string_equal(bc_suggest("iteration", keys, 2), "iterations");
    assert_string_equal(bc_suggest("itreations", keys, 2), "iterations"); /* transposition */
    assert_string_equal(bc_suggest("Iterations", keys, 2), "iterations");
    assert_string_equal(bc_suggest("warmpu", keys, 2), "warmup");
    assert_null(bc_suggest("banana", keys, 2));
    const char *const one[] = {"b"};
    assert_null(bc_suggest("a", one, 1));
    assert_null(bc_suggest("x", NULL, 0));

    /* a long name's short form: the same first letter and trailing number */
    const char *const plugins[] = {"fp32", "fp16", "bf16", "int8", "retain", "json"};
    assert_string_equal(bc_suggest("bfloat16", plugins, 6), "bf16");
    assert_string_equal(bc_suggest("float32", plugins, 6), "fp32");
    assert_string_equal(bc_suggest("float16", plugins, 6), "fp16");
    assert_null(bc_suggest("bfloat", plugins, 6));
    const char *const twins[] = {"fp16", "f16x16"};
    assert_null(bc_suggest("float16", twins, 2)); /* two short forms: neither */

    /* two names joined, as libconfig reads [ "bf16" "fp32" ] */
    const char *a = NULL, *b = NULL;
    assert_true(bc_suggest_joined("bf16fp32", plugins, 6, &a, &b));
    assert_string_equal(a, "bf16");
    assert_string_equal(b, "fp32");
    assert_false(bc_suggest_joined("bf16", plugins, 6, &a, &b));
    assert_false(bc_suggest_joined("bf16xx", plugins, 6, &a, &b));
    char hint[256];
    bc_suggest_hint("bf16fp32", plugins, 6, hint, sizeof hint);
    assert_string_equal(hint, "'bf16fp32' is 'bf16' and 'fp32' joined: libconfig joins adjacent strings, so a comma "
                              "may be missing: [ \"bf16\", \"fp32\" ]");
    bc_suggest_hint("bfloat16", plugins, 6, hint, sizeof hint);
    assert_string_equal(hint, "did you mean 'bf16'?");
    bc_suggest_hint("banana", plugins, 6, hint, sizeof hint);
    assert_string_equal(hint, "");
}

static void test_hash_follows_the_resolved_tree(void **state) {
    fx *f = *state;
    bc_status st = load_text(f, BASE "run = { iterations = 3; };\n", NULL, 0, NULL);
    if (st) fail_msg("%s", f->err.message);
    char first[65];
    snprintf(first, sizeof first, "%s", f->cfg.sha256);

    /* Comments and layout do not change it. */
    st = load_text(f, "# a comment\n" BASE "run = {\n  iterations = 3; # three\n};\n", NULL, 0, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_string_equal(f->cfg.sha256, first);

    /* A value does, and so does a --set. */
    st = load_text(f, BASE "run = { iterations = 4; };\n", NULL, 0, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_string_not_equal(f->cfg.sha256, first);
    const char *sets[] = {"run.iterations=4"};
    st = load_text(f, BASE "run = { iterations = 3; };\n", sets, 1, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_string_not_equal(f->cfg.sha256, first);
}

/* ------------------------------------------------- the shipped configs */

/* A single value where a list is expected is a one-element list, in the file
 * and from --set; matrix.prompt_lengths may be left out (the backend's
 * prompts decide: one prompt length of 0). */
static void test_single_values_are_lists(void **state) {
    fx *f = *state;
    bc_status st = load_text(f,
                             "backend = \"opt\";\n"
                             "precisions = \"bf16\";\n"
                             "cache_policies = { name = \"release\"; };\n"
                             "matrix = { batch_sizes = 4; samples_per_prompt = [1]; response_lengths = 16; };\n",
                             NULL, 0, NULL);
    if (st) fail_msg("%s", f->err.message);
    bc_config *c = &f->cfg;
    assert_int_equal(c->n_precisions, 1);
    assert_string_equal(c->precisions[0].name, "bf16");
    assert_int_equal(c->n_cache_policies, 1);
    assert_string_equal(c->cache_policies[0].name, "release");
    assert_int_equal(c->n_batch_sizes, 1);
    assert_int_equal(c->batch_sizes[0], 4);
    assert_int_equal(c->n_response_lengths, 1);
    assert_int_equal(c->response_lengths[0], 16);
    assert_int_equal(c->prompt_lengths_given, 0);
    assert_int_equal(c->n_prompt_lengths, 1);
    assert_int_equal(c->prompt_lengths[0], 0);

    const char *sets[] = {"precisions=fp16", "matrix.batch_sizes=2"};
    st = load_text(f, BASE, sets, 2, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_int_equal(f->cfg.n_precisions, 1);
    assert_string_equal(f->cfg.precisions[0].name, "fp16");
    assert_int_equal(f->cfg.n_batch_sizes, 1);
    assert_int_equal(f->cfg.batch_sizes[0], 2);
    assert_int_equal(f->cfg.prompt_lengths_given, 1);
    /* a bad single value still names the setting */
    const char *bad[] = {"precisions=7"};
    expect_fail(f, BASE, bad, 1, NULL, "--set precisions: must be a plugin name or a group");
}

/* "[0]" of a plugin written without brackets (a one-element list) is that
 * plugin: --set reporters.[0].settings.path works whichever way the file
 * wrote reporters, and errors about the setting still name the --set. */
static void test_override_index_zero_of_single_value(void **state) {
    fx *f = *state;
    static const bc_setting_desc table[] = {
        {"path", BC_SETTING_STRING, 0, 0, "results.json", 0, 0, 0, NULL, "output file", 0},
    };
    static const bc_plugin_desc desc = {BC_PLUGIN_DESC_HEADER, .kind = BC_KIND_REPORTER, .name = "json", .version = "0", .description = "test",
        .settings = table, .n_settings = 1, .setting_size = sizeof(bc_setting_desc)};
    const char *sets[] = {"reporters.[0].settings.path=\"other.json\""};
    bc_status st = load_text(f, BASE "reporters = { name = \"json\"; settings = { path = \"a.json\"; }; };\n", sets,
                             1, NULL);
    if (st) fail_msg("%s", f->err.message);
    assert_int_equal(f->cfg.n_reporters, 1);
    bc_setting_value v[1];
    st = bc_settings_resolve(&f->cfg, &f->cfg.reporters[0], &desc, v, &f->err);
    if (st) fail_msg("%s", f->err.message);
    assert_string_equal(v[0].s, "other.json");
    /* the recorded key is the schema's path, so errors point at the --set */
    assert_string_equal(f->cfg.override_keys[0], "reporters.settings.path");
    const char *bad[] = {"reporters.[0].settings.pth=\"x\""};
    st = load_text(f, BASE "reporters = { name = \"json\"; };\n", bad, 1, NULL);
    if (st) fail_msg("%s", f->err.message);
    st = bc_settings_resolve(&f->cfg, &f->cfg.reporters[0], &desc, v, &f->err);
    assert_int_equal(st, BC_ERR_SETTING);
    assert_contains(f->err.message, "--set reporters.[0].settings.pth: reporters.settings.pth: plugin 'json' has no "
                                    "setting 'pth'");
    /* only [0] of a single value; [1] is still refused */
    const char *one[] = {"reporters.[1].settings.path=\"x\""};
    expect_fail(f, BASE "reporters = \"json\";\n", one, 1, NULL,
                "--set reporters.[1].settings.path: reporters has no element [1]");
}

/* The settings module: defaults, formatting, allowed values, is-default. */
static void test_settings_module(void **state) {
    (void)state;
    char buf[256];
    bc_setting_value v;
    for (uint32_t i = 0; i < k_desc.n_settings; i++) {
        bc_setting_default(&k_table[i], &v);
        assert_true(bc_setting_is_default(&k_table[i], &v));
    }
    bc_setting_default(&k_table[1], &v); /* threads: int in [0, 256], default 0 */
    bc_setting_format(&k_table[1], &v, buf, sizeof buf);
    assert_string_equal(buf, "0");
    bc_setting_allowed(&k_table[1], buf, sizeof buf);
    assert_string_equal(buf, "[0, 256]");
    bc_setting_expected(&k_table[1], buf, sizeof buf);
    assert_string_equal(buf, "an integer in [0, 256]");
    v.i = 5;
    assert_false(bc_setting_is_default(&k_table[1], &v));
    bc_setting_allowed(&k_table[0], buf, sizeof buf); /* model: enum */
    assert_string_equal(buf, "125m|350m|1.3b");
    assert_string_equal(bc_setting_type_name(BC_SETTING_ENUM), "enum");
    assert_string_equal(bc_setting_type_name((bc_setting_type)42), "?");
    bc_setting_allowed(&k_table[3], buf, sizeof buf); /* verbose: bool */
    assert_string_equal(buf, "true|false");
    bc_setting_default(&k_table[4], &v); /* weights: string "" */
    bc_setting_format(&k_table[4], &v, buf, sizeof buf);
    assert_string_equal(buf, "\"\"");
}

static void test_shipped_configs_load(void **state) {
    fx *f = *state;
    const char *files[] = {
        BENCHCTL_SOURCE_DIR "/configs/bench.cfg",
        BENCHCTL_SOURCE_DIR "/configs/examples/full.cfg",
        BENCHCTL_SOURCE_DIR "/configs/rollout_lengths.cfg",
        BENCHCTL_SOURCE_DIR "/configs/examples/seed-matrix.cfg",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        bc_config_free(&f->cfg);
        bc_status st = bc_config_load(&f->cfg, files[i], NULL, 0, NULL, &f->err);
        if (st) fail_msg("%s", f->err.message);
        /* rollout_lengths.cfg: the engine's batching and KV layout as axes */
        if (strstr(files[i], "rollout_lengths.cfg")) {
            assert_int_equal(f->cfg.n_setting_axes, 2);
            assert_string_equal(f->cfg.setting_axes[0].name, "batching");
            assert_string_equal(f->cfg.setting_axes[1].texts[1], "paged");
        }
    }
    /* seed-matrix.cfg is the seed's matrix. */
    assert_int_equal(f->cfg.n_batch_sizes, 1);
    assert_int_equal(f->cfg.batch_sizes[0], 1);
    assert_int_equal(f->cfg.n_samples_per_prompt, 2);
    assert_int_equal(f->cfg.samples_per_prompt[1], 4);
    assert_int_equal(f->cfg.prompt_lengths[1], 512);
    assert_int_equal(f->cfg.response_lengths[1], 128);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_config_every_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_minimal_config_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_int_accepted_for_float, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adaptive_iterations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_syntax_error_is_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overrides_replace_and_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_override_bare_word_is_string, setup, teardown),
        cmocka_unit_test_setup_teardown(test_override_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_override_into_list_element, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reporter_override, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_defaults_and_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_errors_from_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_setting_axes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_plugin_without_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_key_in_group_made_by_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spec_location, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include_reports_the_included_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_suggest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hash_follows_the_resolved_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shipped_configs_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_values_are_lists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_override_index_zero_of_single_value, setup, teardown),
        cmocka_unit_test(test_settings_module),
        cmocka_unit_test_setup_teardown(test_int_literals_that_would_wrap, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
