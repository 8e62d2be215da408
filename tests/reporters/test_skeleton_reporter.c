/* test_skeleton_reporter.c: docs/examples/skeleton_reporter.c compiles
 * (with -Werror, against the public header only) and behaves as its
 * comments say.
 *
 * The skeleton is built as benchctl-skeleton_reporter.so in this test's own
 * folder (not the plugins folder, so benchctl never lists it), dlopened, and
 * driven through a whole run with the reporter fixture's host and run
 * report (reporter_fixture.h), whose arrays are wider than this header's
 * structs, as a newer host's would be.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reporter_fixture.h"

typedef struct fixture {
    char dir[512];
    char path[600];
    char setting[700];
    rf_run run;
    bc_host host;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || rf_make_dir(f->dir, "test_skeleton_reporter") != 0) {
        free(f);
        return -1;
    }
    rf_run_init(&f->run, 0);
    f->host = rf_host(0);
    snprintf(f->path, sizeof f->path, "%s/out/summary.txt", f->dir);
    snprintf(f->setting, sizeof f->setting, "path=%s", f->path);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rf_remove_tree(f->dir);
    free(f);
    return 0;
}

static void load(rf_plugin *p, const char *const *overrides, int n) {
    assert_int_equal(rf_load_file(p, SKELETON_REPORTER_SO, "skeleton_reporter", overrides, n), 0);
}

/* Runs the skeleton with the path setting and one more; returns the file. */
static char *run_skeleton(fixture *f, const char *extra) {
    const char *overrides[2] = {f->setting, extra};
    rf_plugin p;
    load(&p, overrides, extra ? 2 : 1);
    bc_error err = {0};
    bc_status st = rf_drive(&p, &f->host, &f->run, &err);
    if (st != BC_OK) fprintf(stderr, "skeleton_reporter: %s\n", err.message);
    assert_int_equal(st, BC_OK);
    rf_unload(&p);
    char *text = rf_slurp(f->path);
    assert_non_null(text);
    return text;
}

/* The line of text that starts with prefix (copied into line[512]). */
static void find_line(const char *text, const char *prefix, char *line) {
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, prefix, strlen(prefix)) != 0) continue;
        size_t n = strcspn(l, "\n");
        assert_true(n < 512);
        memcpy(line, l, n);
        line[n] = '\0';
        return;
    }
    fail_msg("no line starts with \"%s\" in:\n%s", prefix, text);
}

/* "name=value" as the skeleton writes it: %.6g, or "-" when not measured. */
static void assert_has_value(const char *line, const char *name, double value) {
    char expect[128];
    if (isnan(value))
        snprintf(expect, sizeof expect, " %s=-", name);
    else
        snprintf(expect, sizeof expect, " %s=%.6g", name, value);
    if (!strstr(line, expect)) fail_msg("\"%s\" lacks \"%s\"", line, expect);
}

static void test_descriptor(void **state) {
    (void)state;
    rf_plugin p;
    load(&p, NULL, 0);
    assert_int_equal(p.desc->kind, BC_KIND_REPORTER);
    assert_int_equal(p.desc->struct_size, sizeof(bc_plugin_desc));
    assert_int_equal(p.desc->setting_size, sizeof(bc_setting_desc));
    assert_int_equal(p.desc->n_settings, 2);
    assert_string_equal(p.desc->settings[0].name, "path");
    assert_string_equal(p.desc->settings[1].name, "field");
    assert_non_null(p.desc->check_settings);
    assert_int_equal(p.ops->struct_size, sizeof(bc_reporter_ops));
    assert_non_null(p.ops->open);
    assert_non_null(p.ops->close);
    assert_non_null(p.ops->destroy);
    assert_non_null(p.ops->case_started);
    assert_non_null(p.ops->case_finished);
    assert_non_null(p.ops->iteration_finished);
    rf_unload(&p);
}

/* One line per case in requested order, every statistic of the host's
 * table, values as the host computed them. */
static void test_report(void **state) {
    fixture *f = *state;
    char *text = run_skeleton(f, NULL);
    assert_true(strncmp(text, "# skeleton_reporter: facebook/opt-125m (synthetic) on cpu, field total_ms\n",
                        strlen("# skeleton_reporter: facebook/opt-125m (synthetic) on cpu, field total_ms\n")) == 0);
    char line[512];
    find_line(text, "case 0 ok:", line);
    for (uint32_t s = 0; s < f->run.run.n_stats; s++) {
        const char *name = f->run.run.stat_names[s];
        assert_has_value(line, name, rf_stat(&f->run, 0, RF_F_TOTAL_MS, name));
    }
    assert_has_value(line, "tok/s", rf_stat(&f->run, 0, RF_F_TOKENS_PER_SECOND, "mean"));
    find_line(text, "case 1 failed (out of memory): " RF_MESSAGE, line);
    find_line(text, "case 2 ok:", line);
    assert_has_value(line, "p50", rf_stat(&f->run, 2, RF_F_TOTAL_MS, "p50"));
    /* requested order: 0, 1, 2 */
    assert_true(strstr(text, "case 0 ") < strstr(text, "case 1 "));
    assert_true(strstr(text, "case 1 ") < strstr(text, "case 2 "));
    free(text);
}

/* The field setting, and a field whose statistics were never measured. */
static void test_other_field(void **state) {
    fixture *f = *state;
    char *text = run_skeleton(f, "field=generation_overhead_ms");
    char line[512];
    find_line(text, "case 0 ok:", line);
    assert_non_null(strstr(line, " n=0 mean=- "));
    free(text);
}

/* A statistic the host adds appears without a change to the skeleton. */
static void test_extra_stat(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_EXTRA_STAT);
    char *text = run_skeleton(f, NULL);
    char line[512];
    find_line(text, "case 0 ok:", line);
    assert_has_value(line, "p42", rf_stat(&f->run, 0, RF_F_TOTAL_MS, "p42"));
    free(text);
}

/* An older host: a statistic looked up by name that it lacks reads "-",
 * and a field it lacks is refused at open. */
static void test_missing_names(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_OLD_FIELDS | RF_FEW_STATS);
    char *text = run_skeleton(f, NULL);
    char line[512];
    find_line(text, "case 0 ok:", line);
    assert_null(strstr(line, "p50="));
    assert_has_value(line, "max", rf_stat(&f->run, 0, RF_F_TOTAL_MS, "max"));
    free(text);

    const char *overrides[2] = {f->setting, "field=time_to_first_token_ms"};
    rf_plugin p;
    load(&p, overrides, 2);
    bc_error err = {0};
    assert_int_equal(rf_drive(&p, &f->host, &f->run, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "time_to_first_token_ms"));
    rf_unload(&p);
}

static bc_status must_not_be_called(const bc_host *host, const char *path, bc_error *err) {
    (void)host;
    (void)path;
    (void)err;
    fail_msg("output_check called through a host table too short to hold it");
    return BC_ERR_INTERNAL;
}

/* check_settings: refuses a path that cannot be created, with the host's
 * code and a message naming the path, creating nothing; passes everything
 * to a host without output_check. */
static void test_check_settings(void **state) {
    fixture *f = *state;
    const char *overrides[1] = {"path=/dev/null/x.txt"};
    rf_plugin p;
    load(&p, overrides, 1);
    bc_error err = {0};
    assert_int_equal(p.desc->check_settings(&f->host, &p.settings, &err), BC_ERR_IO);
    assert_non_null(strstr(err.message, "/dev/null/x.txt"));

    bc_host short_host = f->host; /* a host table that ends before output_check */
    short_host.struct_size = (uint32_t)offsetof(bc_host, output_check);
    short_host.output_check = must_not_be_called;
    assert_int_equal(p.desc->check_settings(&short_host, &p.settings, &err), BC_OK);
    rf_unload(&p);

    const char *empty[1] = {"path="};
    load(&p, empty, 1);
    assert_int_equal(p.desc->check_settings(&f->host, &p.settings, &err), BC_ERR_SETTING);
    rf_unload(&p);

    const char *good[1] = {f->setting};
    load(&p, good, 1);
    assert_int_equal(p.desc->check_settings(&f->host, &p.settings, &err), BC_OK);
    rf_unload(&p);
    assert_int_equal(rf_count_entries(f->dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptor),
        cmocka_unit_test_setup_teardown(test_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extra_stat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_settings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
