/* poisoned_adapter.h: a copy of a PEFT adapter directory (adapter_config.json
 * and adapter_model.safetensors, F32 tensors) in a new temporary directory,
 * with one element of one tensor replaced by given float bits (a NaN, an
 * Inf), and, when alpha_json is not NULL, "lora_alpha" replaced by that
 * JSON text. For the LoRA loader's value checks (tests/opt, tests/llama). */
#ifndef BC_POISONED_ADAPTER_H
#define BC_POISONED_ADAPTER_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* path's bytes (*n of them), malloc'd; NULL when unreadable. */
static char *bc_read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) free(b), b = NULL;
    fclose(f);
    if (b) b[len] = '\0', *n = (size_t)len;
    return b;
}

static int bc_write_all(const char *path, const char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(b, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* dir (>= 64 bytes) := the poisoned copy of src; 0 on failure. */
static int bc_poisoned_adapter(const char *src, const char *tensor, size_t element, uint32_t bits,
                               const char *alpha_json, char *dir) {
    char in[4096], out[4096];
    size_t n = 0;
    strcpy(dir, "/tmp/bc_lora_bad.XXXXXX");
    if (!mkdtemp(dir)) return 0;
    snprintf(in, sizeof in, "%s/adapter_config.json", src);
    snprintf(out, sizeof out, "%s/adapter_config.json", dir);
    char *cfg = bc_read_all(in, &n);
    if (!cfg) return 0;
    if (alpha_json) { /* "lora_alpha": 8 -> "lora_alpha": ALPHA */
        char *at = strstr(cfg, "\"lora_alpha\":"), *end = at ? strpbrk(at + 13, ",}") : NULL;
        if (!end) return free(cfg), 0;
        char *patched = malloc(n + strlen(alpha_json) + 32);
        int k = snprintf(patched, n + strlen(alpha_json) + 32, "%.*s\"lora_alpha\": %s%s", (int)(at - cfg), cfg,
                         alpha_json, end);
        free(cfg);
        cfg = patched, n = (size_t)k;
    }
    int ok = bc_write_all(out, cfg, n);
    free(cfg);
    snprintf(in, sizeof in, "%s/adapter_model.safetensors", src);
    snprintf(out, sizeof out, "%s/adapter_model.safetensors", dir);
    char *b = bc_read_all(in, &n);
    if (!b || n < 8) return free(b), 0;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | (uint8_t)b[i];
    json_error_t je;
    json_t *h = hlen <= n - 8 ? json_loadb(b + 8, (size_t)hlen, 0, &je) : NULL;
    json_t *t = json_object_get(h, tensor);
    json_t *offsets = json_object_get(t, "data_offsets");
    const char *dtype = json_string_value(json_object_get(t, "dtype"));
    size_t at = (size_t)json_integer_value(json_array_get(offsets, 0)) + 4 * element;
    size_t stop = (size_t)json_integer_value(json_array_get(offsets, 1));
    if (tensor && (!dtype || strcmp(dtype, "F32") != 0 || at + 4 > stop || 8 + hlen + stop > n)) ok = 0;
    else if (tensor) memcpy(b + 8 + hlen + at, &bits, 4); /* little-endian host, as the file */
    json_decref(h);
    ok = ok && bc_write_all(out, b, n);
    free(b);
    return ok;
}

/* Removes what bc_poisoned_adapter made. */
static void bc_poisoned_adapter_remove(const char *dir) {
    char p[4096];
    snprintf(p, sizeof p, "%s/adapter_config.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
    unlink(p);
    rmdir(dir);
}

#endif
