/* test_rowlat.c: per-row latencies from a known schedule
 * (core/src/run/rowlat.c): time to first token, end-to-end latency and
 * time per output token of every row, at p50 (interpolated), p90 and p99
 * (nearest rank), worked out by hand; continuous batching (rows joining
 * later) keeps ttft only; a schedule that does not hold gives nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <math.h>

#include "rowlat.h"

/* 4 rows from one prefill (token 0 at 10 ms, prompts expanded in 2 ms),
 * decode steps of 1, 2, 3, 4 ms; rows done after 0, 1, 3, 4 steps:
 *   ttft  12 12 12 12
 *   e2e   12 13 18 22   (12 + 0, 1, 1+2+3, 1+2+3+4)
 *   tpot  -  1  2  2.5  (6 / 3, 10 / 4; the row done at token 0 has none) */
static void test_static_batch(void **state) {
    (void)state;
    const double first[4] = {10, 10, 10, 10}, steps[4] = {1, 2, 3, 4};
    const int32_t done[4] = {0, 1, 3, 4};
    bc_row_latency l;
    bc_error err = {0};
    assert_int_equal(bc_row_latency_compute(4, first, done, 4, steps, 2.0, &l, &err), BC_OK);
    for (int i = 0; i < BC_ROWLAT_N_PCT; i++) assert_double_equal(l.ttft_ms[i], 12.0, 1e-12);
    assert_double_equal(l.e2e_ms[BC_ROWLAT_P50], 15.5, 1e-12); /* (13 + 18) / 2 */
    assert_double_equal(l.e2e_ms[BC_ROWLAT_P90], 22.0, 1e-12); /* rank ceil(3.6) = 4 */
    assert_double_equal(l.e2e_ms[BC_ROWLAT_P99], 22.0, 1e-12);
    assert_double_equal(l.tpot_ms[BC_ROWLAT_P50], 2.0, 1e-12);
    assert_double_equal(l.tpot_ms[BC_ROWLAT_P90], 2.5, 1e-12); /* rank ceil(2.7) = 3 */
    assert_double_equal(l.tpot_ms[BC_ROWLAT_P99], 2.5, 1e-12);
}

/* 10 rows, steps of 1 ms, row i done after i + 1 steps: e2e 6 .. 15, where
 * p90 (rank 9) and p99 (rank 10) differ. */
static void test_ranks(void **state) {
    (void)state;
    double first[10], steps[10];
    int32_t done[10];
    for (int i = 0; i < 10; i++) first[i] = 5.0, steps[i] = 1.0, done[i] = 10 - i; /* any row order */
    bc_row_latency l;
    assert_int_equal(bc_row_latency_compute(10, first, done, 10, steps, 0.0, &l, NULL), BC_OK);
    assert_double_equal(l.e2e_ms[BC_ROWLAT_P50], 10.5, 1e-12);
    assert_double_equal(l.e2e_ms[BC_ROWLAT_P90], 14.0, 1e-12);
    assert_double_equal(l.e2e_ms[BC_ROWLAT_P99], 15.0, 1e-12);
    for (int i = 0; i < BC_ROWLAT_N_PCT; i++) assert_double_equal(l.tpot_ms[i], 1.0, 1e-12);
}

/* Continuous batching: rows 2 and 3 joined later (token 0 at 30 and 31
 * ms); the steps between do not hold their prefills, so e2e and tpot are
 * unknown, ttft is each row's own: 10 10 30 31 (+1 expand). */
static void test_continuous(void **state) {
    (void)state;
    const double first[4] = {10, 10, 30, 31}, steps[3] = {5, 5, 5};
    const int32_t done[4] = {1, 2, 3, 3};
    bc_row_latency l;
    assert_int_equal(bc_row_latency_compute(4, first, done, 3, steps, 1.0, &l, NULL), BC_OK);
    assert_double_equal(l.ttft_ms[BC_ROWLAT_P50], 21.0, 1e-12); /* (11 + 31) / 2 */
    assert_double_equal(l.ttft_ms[BC_ROWLAT_P90], 32.0, 1e-12);
    for (int i = 0; i < BC_ROWLAT_N_PCT; i++) {
        assert_nan(l.e2e_ms[i]);
        assert_nan(l.tpot_ms[i]);
    }
}

/* No schedule, a done step past the steps run, a NaN time: nothing. */
static void test_bad_schedule(void **state) {
    (void)state;
    const double first[2] = {1, 1}, steps[2] = {1, 1}, nan_first[2] = {1, NAN};
    const int32_t done[2] = {1, 3}, ok_done[2] = {1, 2};
    bc_row_latency l;
    assert_int_equal(bc_row_latency_compute(2, first, done, 2, steps, 0.0, &l, NULL), BC_OK);
    assert_nan(l.ttft_ms[BC_ROWLAT_P50]);
    assert_nan(l.e2e_ms[BC_ROWLAT_P50]);
    assert_int_equal(bc_row_latency_compute(2, nan_first, ok_done, 2, steps, 0.0, &l, NULL), BC_OK);
    assert_nan(l.ttft_ms[BC_ROWLAT_P50]);
    assert_int_equal(bc_row_latency_compute(-1, NULL, NULL, 0, NULL, 0.0, &l, NULL), BC_OK);
    assert_nan(l.tpot_ms[BC_ROWLAT_P99]);
    assert_int_equal(bc_row_latency_compute(2, first, ok_done, 2, NULL, 0.0, &l, NULL), BC_OK); /* steps missing */
    assert_nan(l.e2e_ms[BC_ROWLAT_P50]);
    assert_int_equal(bc_row_latency_compute(2, first, ok_done, 2, steps, NAN, &l, NULL), BC_OK); /* no expand time */
    assert_nan(l.ttft_ms[BC_ROWLAT_P50]);
}

/* The slowest row (the slowest_row fields): of test_static_batch's schedule, row 3
 * (token 0 at 10 ms, then 1 + 2 + 3 + 4 ms: its last token at 20 ms, 5
 * tokens); none when rows joined later or without a schedule. */
static void test_slowest(void **state) {
    (void)state;
    double first[4] = {10, 10, 10, 10}, steps[4] = {1, 2, 3, 4};
    int32_t done[4] = {0, 4, 3, 1};
    bc_generation_stats g = {.struct_size = sizeof g};
    g.schedule_rows = 4, g.row_first_token_ms = first, g.row_done_step = done;
    g.decode_step_ms = steps, g.n_decode_steps = 4;
    int64_t row, tokens;
    double ms;
    bc_row_slowest(&g, &row, &ms, &tokens);
    assert_int_equal(row, 1);
    assert_double_equal(ms, 20.0, 1e-12);
    assert_int_equal(tokens, 5);
    first[2] = 30; /* a row that joined later: the steps are not every row's */
    bc_row_slowest(&g, &row, &ms, &tokens);
    assert_int_equal(row, -1);
    assert_nan(ms);
    assert_int_equal(tokens, -1);
    first[2] = 10, done[0] = 5; /* a done step past the steps run */
    bc_row_slowest(&g, &row, &ms, &tokens);
    assert_int_equal(row, -1);
    g.schedule_rows = -1;
    bc_row_slowest(&g, &row, &ms, &tokens);
    assert_int_equal(row, -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_batch),
        cmocka_unit_test(test_slowest),
        cmocka_unit_test(test_ranks),
        cmocka_unit_test(test_continuous),
        cmocka_unit_test(test_bad_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
