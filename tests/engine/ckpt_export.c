/* ckpt_export.c: a host set of float32 tensors written as a checkpoint
 * directory (ckpt_export.h), for the refit tests.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ckpt_export.h"
#include "ckpt_host.h"

void write_checkpoint(const char *dir, const eng_ck_set *set, const char *config) {
    char path[600];
    bc_error err = {0};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (eng_ck_host_write_safetensors(set, path, &err) != BC_OK) fail_msg("%s", err.message);
    char buf[1 << 14];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *in = fopen(config, "rb"), *out = fopen(path, "wb");
    assert_non_null(in);
    assert_non_null(out);
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, k, out), k);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

void remove_checkpoint(const char *dir) {
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    remove(dir);
}

