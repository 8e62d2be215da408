/* test_selection.c: --cases and --only (core/src/config/selection.c) on a real
 * matrix (bc_matrix_build): what each selects, in what order, with which
 * indexes, and every error naming the option. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrix.h"
#include "selection.h"

static const bc_precision_ops bf16_ops = {.struct_size = sizeof(bc_precision_ops), .dtype = "bfloat16"};
static const bc_precision_ops fp32_ops = {.struct_size = sizeof(bc_precision_ops), .dtype = "float32"};
static const bc_sampling greedy = {.struct_size = sizeof(bc_sampling), .top_p = 1.0};

/* 2 precisions x 2 policies x batch {1, 4} x samples {1, 2} x prompt 16 x
 * response {8, 32}: 32 cases, index = position. */
static size_t build(bc_case **cases) {
    static const char *const precisions[] = {"bf16", "fp32"};
    static const bc_precision_ops *const pops[] = {&bf16_ops, &fp32_ops};
    static const char *const policies[] = {"retain", "release"};
    static const uint32_t batches[] = {1, 4}, samples[] = {1, 2}, prompts[] = {16}, responses[] = {8, 32};
    bc_matrix_axes a = {.precisions = precisions, .precision_ops = pops, .n_precisions = 2,
                        .cache_policies = policies, .n_cache_policies = 2, .batch_sizes = batches,
                        .n_batch_sizes = 2, .samples_per_prompt = samples, .n_samples_per_prompt = 2,
                        .prompt_lengths = prompts, .n_prompt_lengths = 1, .response_lengths = responses,
                        .n_response_lengths = 2, .sampling = &greedy};
    size_t n = 0;
    bc_error err = {0};
    assert_int_equal(bc_matrix_build(&a, cases, &n, &err), BC_OK);
    assert_int_equal(n, 32);
    return n;
}

/* Applies the options; on success writes the kept indexes ("3 5 6 7"). */
static bc_status select_cases(const char *cases_opt, const char *only_opt, char *kept, size_t size, bc_error *err) {
    bc_case *cases;
    size_t n = build(&cases);
    *err = (bc_error){0};
    bc_status st = bc_selection_apply(cases, &n, cases_opt, only_opt, err);
    kept[0] = '\0';
    size_t used = 0;
    for (size_t k = 0; st == BC_OK && k < n; k++)
        used += (size_t)snprintf(kept + used, size - used, "%s%u", k ? " " : "", cases[k].index);
    if (st != BC_OK) assert_int_equal(n, 32); /* an error leaves the cases alone */
    free(cases);
    return st;
}

static void expect_kept(const char *cases_opt, const char *only_opt, const char *want) {
    char kept[256];
    bc_error err;
    bc_status st = select_cases(cases_opt, only_opt, kept, sizeof kept, &err);
    if (st != BC_OK) fail_msg("--cases %s --only %s: %s", cases_opt, only_opt, err.message);
    assert_string_equal(kept, want);
}

static void expect_error(const char *cases_opt, const char *only_opt, const char *want) {
    char kept[256];
    bc_error err;
    assert_int_equal(select_cases(cases_opt, only_opt, kept, sizeof kept, &err), BC_ERR_INVALID);
    if (!strstr(err.message, want)) fail_msg("\n  got:  %s\n  want: ...%s...", err.message, want);
}

/* Indexes and ranges; a set, kept in requested order with matrix indexes. */
static void test_cases(void **state) {
    (void)state;
    expect_kept("3,5-7", NULL, "3 5 6 7");
    expect_kept("7,3", NULL, "3 7");
    expect_kept(" 1-3 , 2 ,31", NULL, "1 2 3 31");
    expect_kept("0-31", NULL, "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31");
    expect_kept(NULL, NULL, "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31");
}

static void test_cases_errors(void **state) {
    (void)state;
    expect_error("3,32", NULL, "--cases 3,32: case 32 does not exist: the matrix has 32 cases, 0-31");
    expect_error("30-40", NULL, "--cases 30-40: case 40 does not exist");
    expect_error("7-5", NULL, "--cases 7-5: the range 7-5 runs backwards (write 5-7)");
    expect_error("x", NULL, "--cases x: 'x' is not a case index or a range N-M");
    expect_error("1,,2", NULL, "--cases 1,,2: '' is not a case index");
    expect_error("-3", NULL, "--cases -3: '-3' is not a case index");
    expect_error("3-", NULL, "--cases 3-: '3-' is not a case index");
    expect_error("", NULL, "--cases: no case index given");
    expect_error("99999999999999999999999", NULL, "is not a case index");
}

/* Conditions on different axes all hold; a repeated axis allows any of its
 * values; a precision by its name or its dtype. */
static void test_only(void **state) {
    (void)state;
    expect_kept(NULL, "precision=fp32,cache_policy=release,batch_size=4", "28 29 30 31");
    expect_kept(NULL, "precision=float32,cache_policy=release,batch_size=4", "28 29 30 31");
    expect_kept(NULL, "batch_size=1,samples_per_prompt=1,response_length=32,cache_policy=retain", "1 17");
    expect_kept(NULL, "batch_size=4,samples_per_prompt=2,response_length=8,precision=bf16,precision=fp32",
                "6 14 22 30");
    expect_kept(NULL, "prompt_length=16,response_length=8,response_length=32,batch_size=4,samples_per_prompt=2,"
                      "cache_policy=retain",
                "6 7 22 23");
    /* with --cases: both must hold */
    expect_kept("0-15,30", "batch_size=4,samples_per_prompt=2", "6 7 14 15 30");
}

static void test_only_errors(void **state) {
    (void)state;
    expect_error(NULL, "batchsize=4", "--only batchsize=4: no axis 'batchsize' (did you mean 'batch_size'?)");
    expect_error(NULL, "colour=red", "--only colour=red: no axis 'colour'");
    expect_error(NULL, "batch_size=3", "--only batch_size=3: no case has batch_size 3 (the matrix has 1, 4)");
    expect_error(NULL, "precision=int8", "no case has precision int8 (the matrix has bf16, fp32)");
    expect_error(NULL, "batch_size=four", "--only batch_size=four: batch_size must be a whole number (got 'four')");
    expect_error(NULL, "precision", "--only precision: 'precision' is not axis=value");
    expect_error(NULL, "=bf16", "--only =bf16: '=bf16' is not axis=value");
    expect_error(NULL, "precision=", "--only precision=: 'precision=' is not axis=value");
    expect_error(NULL, "", "--only: no condition given");
    expect_error("0-3", "batch_size=4", "--cases 0-3 --only batch_size=4: no case is selected by both");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_cases_errors),
        cmocka_unit_test(test_only),
        cmocka_unit_test(test_only_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
