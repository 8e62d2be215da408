/* test_hostload.c: the load average and CPU steal readers (core/src/run/hostload.c):
 * /proc texts as kernels write them, kernels without the steal column, the
 * share between two readings, and the live /proc where there is one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <math.h>
#include <unistd.h>

#include "hostload.h"

static void test_parse_loadavg(void **state) {
    (void)state;
    assert_double_equal(bc_hostload_parse_loadavg("1.69 1.63 1.10 4/111 25370\n"), 1.69, 1e-12);
    assert_double_equal(bc_hostload_parse_loadavg("0.00 0.01 0.05 1/80 3\n"), 0.0, 0);
    assert_nan(bc_hostload_parse_loadavg(""));
    assert_nan(bc_hostload_parse_loadavg("load"));
    assert_nan(bc_hostload_parse_loadavg(NULL));
}

static void test_parse_stat(void **state) {
    (void)state;
    uint64_t steal, total;
    /* user nice system idle iowait irq softirq steal guest guest_nice: guests are already in user/nice */
    assert_int_equal(bc_hostload_parse_stat("cpu  100 2 30 800 10 0 8 50 40 0\ncpu0 1 2 3\n", &steal, &total), 1);
    assert_int_equal(steal, 50);
    assert_int_equal(total, 100 + 2 + 30 + 800 + 10 + 0 + 8 + 50);
    /* a kernel without the steal column (before 2.6.11): unknown */
    assert_int_equal(bc_hostload_parse_stat("cpu  100 2 30 800 10 0 8\n", &steal, &total), 0);
    assert_int_equal(bc_hostload_parse_stat("intr 1 2 3\n", &steal, &total), 0);
    assert_int_equal(bc_hostload_parse_stat(NULL, &steal, &total), 0);
}

static void test_steal_share(void **state) {
    (void)state;
    bc_hostload a = {.load_avg_1m = 1.0, .steal = 50, .total = 1000, .has_stat = 1};
    bc_hostload b = {.load_avg_1m = 1.0, .steal = 80, .total = 1400, .has_stat = 1};
    assert_double_equal(bc_hostload_steal_share(&a, &b), 30.0 / 400.0, 1e-12);
    assert_nan(bc_hostload_steal_share(&a, &a)); /* no jiffy elapsed */
    bc_hostload none = {.load_avg_1m = NAN};
    assert_nan(bc_hostload_steal_share(&none, &b));
    assert_nan(bc_hostload_steal_share(&b, &a)); /* counters going backwards */
}

/* The live /proc: numbers where the kernel has them. */
static void test_read_live(void **state) {
    (void)state;
    bc_hostload h;
    bc_hostload_read(&h);
    if (access("/proc/loadavg", R_OK) == 0) assert_true(isfinite(h.load_avg_1m) && h.load_avg_1m >= 0);
    else assert_nan(h.load_avg_1m);
    if (access("/proc/stat", R_OK) == 0) {
        assert_int_equal(h.has_stat, 1);
        assert_true(h.total > 0 && h.steal <= h.total);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_loadavg),
        cmocka_unit_test(test_parse_stat),
        cmocka_unit_test(test_steal_share),
        cmocka_unit_test(test_read_live),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
