/* test_cuda_device.c: opening a CUDA device. Without a GPU or a driver (CI)
 * it must fail with BC_ERR_DEVICE and one line starting "no CUDA device: ";
 * a device index that does not exist fails the same way on any machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "cuda_forward.h"

static void open_device(void **state) {
    (void)state;
    bc_error err = {0};
    opt_cuda_device *d = (opt_cuda_device *)&err;
    const int n = opt_cuda_device_count();
    bc_status st = opt_cuda_device_open(&d, 0, &err);
    if (n == 0) {
        print_message("no GPU here: %s\n", err.message);
        assert_int_equal(st, BC_ERR_DEVICE);
        assert_null(d);
        assert_int_equal(strncmp(err.message, "no CUDA device: ", 16), 0);
        assert_null(strchr(err.message, '\n'));
        assert_true(strlen(err.message) > 16); /* says why */
    } else {
        assert_int_equal(st, BC_OK);
        assert_non_null(d);
        assert_int_equal(opt_cuda_device_mem(d)->current, 0);
        opt_cuda_device_close(d);
    }
}

static void index_out_of_range(void **state) {
    (void)state;
    bc_error err = {0};
    opt_cuda_device *d = NULL;
    assert_int_equal(opt_cuda_device_open(&d, 999, &err), BC_ERR_DEVICE);
    assert_null(d);
    assert_int_equal(strncmp(err.message, "no CUDA device: ", 16), 0);
    assert_null(strchr(err.message, '\n'));
    assert_int_equal(opt_cuda_device_open(&d, -1, &err), BC_ERR_DEVICE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_device),
        cmocka_unit_test(index_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
