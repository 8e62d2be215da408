/* fuzz_lora.c: fuzz target for the LoRA adapter loader (engine/weights/lora.c,
 * eng_lora_load_peft, with the safetensors reader under it) on the OPT
 * family and the shape of the golden preln checkpoint (tests/opt/golden/
 * preln: C 64, F 128, 2 layers). The input is "CONFIG\x00TENSORS": up to the
 * first NUL byte, adapter_config.json; the rest, adapter_model.safetensors
 * (without a NUL, the whole input is the config and the tensors are the
 * golden adapter's, tests/opt/golden/preln_lora). Both are written to a
 * private temp folder, which is then loaded. Whatever the input, the loader
 * must return; on failure with a one-line error naming the folder's file
 * and nothing held (the adapter zeroed); on success with a rank in
 * [1, 65536], a finite positive scale and every A and B value finite (no
 * NaN or Inf reaches a fused weight).
 * Built as fuzz_lora (libFuzzer, BENCHCTL_FUZZ=ON) and always as
 * fuzz_lora_replay over tests/fuzz/corpus/lora. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "lora.h"
#include "opt_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[64], g_cfg[128], g_st[128];
static opt_hparams g_hp;
static char *g_golden; /* the golden adapter_model.safetensors */
static size_t g_golden_len;

static void cleanup(void) {
    unlink(g_cfg);
    unlink(g_st);
    rmdir(g_dir);
}

static void setup(void) {
    if (g_dir[0]) return;
    snprintf(g_dir, sizeof g_dir, "%s/fuzz_lora.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("fuzz_lora: mkdtemp");
        abort();
    }
    snprintf(g_cfg, sizeof g_cfg, "%s/adapter_config.json", g_dir);
    snprintf(g_st, sizeof g_st, "%s/adapter_model.safetensors", g_dir);
    atexit(cleanup);
    bc_error err;
    if (opt_hparams_from_checkpoint(BENCHCTL_OPT_PRELN, &g_hp, &err) != BC_OK) {
        fprintf(stderr, "fuzz_lora: %s\n", err.message);
        abort();
    }
    FILE *f = fopen(BENCHCTL_OPT_PRELN "_lora/adapter_model.safetensors", "rb");
    if (!f) abort();
    fseek(f, 0, SEEK_END);
    g_golden_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    g_golden = malloc(g_golden_len);
    if (!g_golden || fread(g_golden, 1, g_golden_len, f) != g_golden_len) abort();
    fclose(f);
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    const uint8_t *nul = memchr(data, '\0', size);
    size_t clen = nul ? (size_t)(nul - data) : size;
    write_file(g_cfg, data, clen);
    if (nul) write_file(g_st, nul + 1, size - clen - 1);
    else write_file(g_st, g_golden, g_golden_len);
    eng_lora lo;
    bc_error err;
    err.message[0] = '\0';
    if (eng_lora_load_peft(&lo, &opt_family, g_dir, &g_hp.s, &err) == BC_OK) {
        if (lo.rank < 1 || lo.rank > 65536 || !isfinite(lo.scale) || !(lo.scale > 0)) abort();
        for (size_t i = 0; i < lo.n_floats; i++)
            if (!isfinite(lo.arena[i])) abort();
        eng_lora_free(&lo);
    } else {
        if (!err.message[0] || strchr(err.message, '\n') || !strstr(err.message, g_dir)) {
            fprintf(stderr, "fuzz_lora: the error \"%s\" is not one line naming the file\n", err.message);
            abort();
        }
        if (lo.arena || lo.pairs) abort();
    }
    return 0;
}
