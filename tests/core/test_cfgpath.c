/* test_cfgpath.c: the setting paths that config errors name (core/src/config/config.c,
 * bc_cfg_path_join / bc_cfg_path_index): joined with dots, and a path longer
 * than its buffer cut with "..." at the end rather than shown cut as if whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "config_tree.h"

static void test_join(void **state) {
    (void)state;
    char buf[64];
    bc_cfg_path_join(buf, sizeof buf, "backend.settings", "threads");
    assert_string_equal(buf, "backend.settings.threads");
    bc_cfg_path_join(buf, sizeof buf, "", "matrix");
    assert_string_equal(buf, "matrix");
    bc_cfg_path_join(buf, sizeof buf, NULL, "matrix");
    assert_string_equal(buf, "matrix");
    bc_cfg_path_index(buf, sizeof buf, "reporters", 2);
    assert_string_equal(buf, "reporters.[2]");
}

static void test_too_long_is_marked(void **state) {
    (void)state;
    char buf[12];
    memset(buf, 'x', sizeof buf);
    bc_cfg_path_join(buf, sizeof buf, "backend.settings", "threads");
    assert_int_equal(strlen(buf), sizeof buf - 1);
    assert_string_equal(buf, "backend....");
    /* exactly full: nothing cut, nothing marked */
    char fit[9];
    bc_cfg_path_join(fit, sizeof fit, "run", "warm");
    assert_string_equal(fit, "run.warm");
    /* too small to hold the mark: cut, still terminated */
    char tiny[3];
    bc_cfg_path_join(tiny, sizeof tiny, "run", "warmup");
    assert_string_equal(tiny, "ru");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_too_long_is_marked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
