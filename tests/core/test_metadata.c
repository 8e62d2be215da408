/* test_metadata.c: run metadata (start time format, CPU model, hostname,
 * plugin list without duplicates) and what bc_run_meta_fill puts in a report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <string.h>

#include "metadata.h"

static void test_meta(void **state) {
    (void)state;
    static const bc_plugin_desc be = {BC_PLUGIN_DESC_HEADER, .kind = BC_KIND_BACKEND, .name = "be", .version = "1.2"};
    static const bc_plugin_desc rep = {BC_PLUGIN_DESC_HEADER, .kind = BC_KIND_REPORTER, .name = "rep"};
    bc_plugin pb = {.path = "/p/benchctl-be.so", .desc = &be}, pr = {.path = "/p/benchctl-rep.so", .desc = &rep};
    const bc_plugin *list[] = {&pb, &pr, &pb};
    bc_run_meta meta;
    bc_error err = {0};
    assert_int_equal(bc_run_meta_init(&meta, list, 3, &err), BC_OK);
    assert_int_equal(meta.n_plugins, 2);
    assert_string_equal(meta.plugins[0].kind, "backend");
    assert_string_equal(meta.plugins[0].name, "be");
    assert_string_equal(meta.plugins[0].version, "1.2");
    assert_string_equal(meta.plugins[0].path, "/p/benchctl-be.so");
    assert_string_equal(meta.plugins[1].kind, "reporter");
    assert_string_equal(meta.plugins[1].version, "");
    /* 2026-11-29T21:33:34Z */
    const char *t = meta.start_time_utc;
    assert_int_equal(strlen(t), 20);
    for (int i = 0; i < 20; i++) {
        if (i == 4 || i == 7) assert_int_equal(t[i], '-');
        else if (i == 10) assert_int_equal(t[i], 'T');
        else if (i == 13 || i == 16) assert_int_equal(t[i], ':');
        else if (i == 19) assert_int_equal(t[i], 'Z');
        else assert_true(isdigit((unsigned char)t[i]));
    }
    assert_true(strlen(meta.cpu_model) > 0);
    assert_true(strlen(meta.hostname) > 0);

    bc_run_report run = {0};
    bc_run_meta_fill(&meta, "bench.cfg", "abc123", &run);
    assert_int_equal(run.struct_size, sizeof run);
    assert_int_equal(run.schema_version, BC_REPORT_SCHEMA_VERSION);
    assert_string_equal(run.benchctl_version, BENCHCTL_VERSION);
    assert_string_equal(run.git_commit, BENCHCTL_GIT_COMMIT);
    assert_string_equal(run.config_path, "bench.cfg");
    assert_string_equal(run.config_sha256, "abc123");
    assert_ptr_equal(run.start_time_utc, meta.start_time_utc);
    assert_int_equal(run.n_plugins, 2);
    bc_run_meta_free(&meta);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_meta)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
