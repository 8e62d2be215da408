/* fuzz_safetensors.c: fuzz target for the safetensors opener (eng_st_parse
 * in engine/ckpt/safetensors.c, filling a ckpt_file.h table). The input is a whole file:
 * 8-byte header length, JSON header, data. Whatever the input, the parser
 * must return (no crash, no read outside the buffer, no leak); when it
 * accepts, every tensor it reports must lie inside the buffer, which this
 * target checks by touching each tensor's first and last byte and by looking
 * every name up again.
 *
 * Built two ways (tests/fuzz/CMakeLists.txt):
 *   - with BENCHCTL_FUZZ=ON and clang: a libFuzzer binary, fuzz_safetensors;
 *   - always: fuzz_safetensors_replay, which runs this entry point on every
 *     file of the committed corpus (tests/fuzz/corpus/safetensors) as a ctest.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    eng_ck_file f;
    bc_error err = {0};
    /* A private copy, so ASan sees the exact bounds of the input. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    if (eng_st_parse(&f, "fuzz-input", buf, size, &err) == BC_OK) {
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < f.n_tensors; i++) {
            const eng_ck_tensor *t = &f.tensors[i];
            const uint8_t *p = t->data;
            if (p < buf || p + t->nbytes > buf + size) abort(); /* outside the input */
            if (t->nbytes) sink ^= p[0] ^ p[t->nbytes - 1];
            if (eng_ck_file_find(&f, t->name) != t) abort();       /* table not sorted or names not unique */
            if (t->nbytes != t->numel * eng_ck_dtype_size(t->dtype)) abort();
        }
        (void)sink;
    } else if (err.message[0] == '\0' || strstr(err.message, "fuzz-input") == NULL) {
        abort(); /* every error names the file */
    }
    eng_ck_file_close(&f);
    free(buf);
    return 0;
}
