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
    eng_rollout_params p;
    memset(&p, 0, sizeof p);
    p.batch_size = 1;
    p.samples_per_prompt = 1;
    p.prompt_length = 4;
    p.response_length = 2;
    p.sampling.top_p = 1.0;
    eng_rollout ro;
    assert_int_equal(eng_rollout_init(&ro, &hp.s, &p, &err), BC_OK);
    opt_weights w;
    memset(&w, 0, sizeof w); /* never touched: the device open fails first */
    w.hp = hp;
    const eng_device_ops *d = opt_device_cuda;
    const eng_device_config cfg = {.threads = 1, .isa = -1, .index = 0, .graphs = 1};
    void *ctx = NULL;
    assert_int_equal(d->create(&cfg, &ctx, &err), BC_OK);
    assert_int_equal(d->open(ctx, &err), BC_ERR_DEVICE);
    assert_int_equal(strncmp(err.message, "no CUDA device: ", 16), 0);
    char where[200];
    assert_int_equal(d->capacity(ctx, 0, where, sizeof where), -1);
    for (int i = 0; i < 2; i++) { /* every case fails the same way */
        assert_int_equal(d->begin_case(ctx, &w.base, &ro, &err), BC_ERR_DEVICE);
        assert_int_equal(strncmp(err.message, "no CUDA device: ", 16), 0);
    }
    eng_device_memory ms;
    assert_int_equal(d->read_memory(ctx, &ro, &ms, &err), BC_OK);
    assert_int_equal(ms.device_peak, -1);
    assert_int_equal(ms.weights, -1);
    eng_device_info info;
    d->describe(ctx, &info);
    assert_string_equal(info.device, "cuda:0");
    assert_int_equal(strncmp(info.device_name, "no CUDA device: ", 16), 0);
    d->end_case(ctx, &ro);
    d->destroy(ctx);
    eng_rollout_free(&ro);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_device),
        cmocka_unit_test(index_out_of_range),
        cmocka_unit_test(backend_case_without_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
