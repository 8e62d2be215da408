/* test_eta.c: the runner's cost model for the time left (core/src/run/eta.c):
 * a case's size in token slots, the per-iteration fit, the fallbacks, and
 * the iterations an adaptive case is expected to run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <math.h>

#include "eta.h"

static bc_case make_case(uint32_t batch, uint32_t samples, uint32_t prompt, uint32_t response) {
    return (bc_case){.struct_size = sizeof(bc_case), .batch_size = batch, .samples_per_prompt = samples,
                     .prompt_length = prompt, .response_length = response};
}

/* units = effective batch x (prompt + response); a prompts file (prompt 0)
 * counts the widest prompt seen so far. */
static void test_units(void **state) {
    (void)state;
    bc_eta e = {0};
    bc_case c = make_case(4, 2, 128, 32);
    assert_double_equal(bc_eta_units(&e, &c), 8.0 * 160.0, 0);
    bc_case file = make_case(2, 1, 0, 16);
    assert_double_equal(bc_eta_units(&e, &file), 2.0 * 16.0, 0);
    bc_eta_add(&e, 100.0, 1, 0, 5.0, 37); /* a failed case still tells the width */
    assert_double_equal(bc_eta_units(&e, &file), 2.0 * (37.0 + 16.0), 0);
    assert_int_equal(e.n, 0);
    assert_nan(bc_eta_iteration_ms(&e, 10.0));
}

/* Cases that cost 2 ms + 0.5 ms per unit, run largest first: the fit
 * predicts the small ones exactly, where the mean of the finished ones
 * would overestimate them. */
static void test_linear_fit(void **state) {
    (void)state;
    bc_eta e = {0};
    const double units[] = {400.0, 200.0, 100.0};
    double mean = 0.0;
    for (int i = 0; i < 3; i++) {
        double per = 2.0 + 0.5 * units[i];
        bc_eta_add(&e, units[i], 1, 4, per * 5, -1); /* 1 warmup + 4 measured */
        mean += per * 5 / 3.0;
    }
    assert_double_equal(bc_eta_iteration_ms(&e, 10.0), 7.0, 1e-9);
    assert_double_equal(bc_eta_iteration_ms(&e, 400.0), 202.0, 1e-9);
    assert_true(mean / 5 > 7.0 * 10); /* the mean of the finished cases: over ten times too much */
}

/* One point, or all of one size: cost proportional to units. A negative
 * slope (noise) falls back the same way. */
static void test_degenerate_fits(void **state) {
    (void)state;
    bc_eta one = {0};
    bc_eta_add_point(&one, 200.0, 10.0);
    assert_double_equal(bc_eta_iteration_ms(&one, 50.0), 2.5, 1e-12);
    bc_eta same = {0};
    bc_eta_add_point(&same, 80.0, 4.0);
    bc_eta_add_point(&same, 80.0, 6.0);
    assert_double_equal(bc_eta_iteration_ms(&same, 40.0), 2.5, 1e-12);
    bc_eta down = {0};
    bc_eta_add_point(&down, 100.0, 5.0);
    bc_eta_add_point(&down, 50.0, 9.0);
    assert_double_equal(bc_eta_iteration_ms(&down, 75.0), 7.0 * 75.0 / 75.0, 1e-12);
    /* points that cannot count: no units, a time that is not a time */
    bc_eta_add_point(&down, 0.0, 1.0);
    bc_eta_add_point(&down, 10.0, NAN);
    assert_int_equal(down.n, 2);
}

/* The iterations a case is expected to measure. */
static void test_expected_iterations(void **state) {
    (void)state;
    bc_eta e = {0};
    assert_int_equal(bc_eta_expected_iterations(&e, 6, 50, 6), 6);    /* none finished: the fallback */
    bc_eta_add(&e, 10.0, 0, 8, 8.0, -1);
    bc_eta_add(&e, 10.0, 0, 13, 13.0, -1);
    assert_int_equal(bc_eta_expected_iterations(&e, 6, 50, 6), 11);   /* 10.5 rounded */
    assert_int_equal(bc_eta_expected_iterations(&e, 12, 50, 6), 12);  /* within [lo, hi] */
    assert_int_equal(bc_eta_expected_iterations(&e, 1, 9, 6), 9);
    /* to the target: a CI twice the target needs four times the iterations */
    assert_int_equal(bc_eta_iterations_to_target(6, 0.04, 0.02, 6, 50, 7), 24);
    assert_int_equal(bc_eta_iterations_to_target(6, 0.01, 0.02, 6, 50, 7), 6);
    assert_int_equal(bc_eta_iterations_to_target(6, 0.5, 0.02, 6, 50, 7), 50);
    assert_int_equal(bc_eta_iterations_to_target(3, NAN, 0.02, 6, 50, 7), 7);
}

/* A case's modelled ms: per iteration ms times warmup + measured, capped at
 * max_seconds plus one iteration; NAN before any point. */
static void test_case_ms(void **state) {
    (void)state;
    bc_eta e = {0};
    assert_nan(bc_eta_case_ms(&e, 100, 1, 5, NAN));
    bc_eta_add_point(&e, 100, 10.0); /* one point: 0.1 ms a unit */
    assert_double_equal(bc_eta_case_ms(&e, 200, 1, 5, NAN), 20.0 * 6, 1e-9);
    assert_double_equal(bc_eta_case_ms(&e, 200, 1, 5, 0.05), 50.0 + 20.0, 1e-9); /* 50 ms cap + one */
    assert_double_equal(bc_eta_case_ms(&e, 200, 1, 5, 10.0), 120.0, 1e-9);       /* under the cap */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_linear_fit),
        cmocka_unit_test(test_degenerate_fits),
        cmocka_unit_test(test_expected_iterations),
        cmocka_unit_test(test_case_ms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
