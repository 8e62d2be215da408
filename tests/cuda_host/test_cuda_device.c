/* test_cuda_device.c: opening a CUDA device. Without a GPU or a driver (CI)
 * it must fail with BC_ERR_DEVICE and one line starting "no CUDA device: ";
 * a device index that does not exist fails the same way on any machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "cuda_backend.h"
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

/* The plugin's path: opening the device (the plugin's prepare) and a case
 * on device "cuda" without a GPU fail with the same line, hold nothing, and
 * everything can still be freed. */
static void backend_case_without_device(void **state) {
    (void)state;
    if (opt_cuda_device_count() > 0) skip();
    bc_error err = {0};
    opt_hparams hp;
    assert_int_equal(opt_hparams_preset("125m", &hp, &err), BC_OK);
    opt_rollout_params p;
    memset(&p, 0, sizeof p);
    p.batch_size = 1;
    p.samples_per_prompt = 1;
    p.prompt_length = 4;
    p.response_length = 2;
    p.sampling.top_p = 1.0;
    opt_rollout ro;
    assert_int_equal(opt_rollout_init(&ro, &hp, &p, &err), BC_OK);
    opt_weights w;
    memset(&w, 0, sizeof w); /* never touched: the device open fails first */
    w.hp = hp;
    opt_cuda_backend b;
    opt_cuda_backend_init(&b, 0, 1);
    assert_int_equal(opt_cuda_backend_open(&b, &err), BC_ERR_DEVICE);
    assert_int_equal(strncmp(err.message, "no CUDA device: ", 16), 0);
    assert_int_equal(opt_cuda_backend_total_bytes(&b), -1);
    for (int i = 0; i < 2; i++) { /* every case fails the same way */
        assert_int_equal(opt_cuda_backend_begin_case(&b, &w, &ro, &err), BC_ERR_DEVICE);
        assert_int_equal(strncmp(err.message, "no CUDA device: ", 16), 0);
    }
    bc_memory_stats ms;
    memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    assert_int_equal(opt_cuda_backend_read_memory(&b, &ms, &err), BC_OK);
    assert_int_equal(ms.device_peak_bytes, -1);
    bc_backend_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    char dev[32];
    opt_cuda_backend_describe(&b, &info, dev, sizeof dev);
    assert_string_equal(info.device, "cuda:0");
    assert_int_equal(strncmp(info.device_name, "no CUDA device: ", 16), 0);
    opt_cuda_backend_end_case(&b);
    opt_cuda_backend_free(&b);
    opt_rollout_free(&ro, NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_device),
        cmocka_unit_test(index_out_of_range),
        cmocka_unit_test(backend_case_without_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
