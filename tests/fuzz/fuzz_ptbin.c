/* fuzz_ptbin.c: fuzz target for the pytorch_model.bin opener (eng_pt_parse in
 * engine/ckpt/ptbin.c, over ptzip.c and ptpickle.c): a zip archive holding a
 * torch state-dict pickle and its storages. Whatever the input, the reader
 * must return (no crash, no read outside the buffer or an inflated entry, no
 * leak, nothing executed) and every error must name the file; when it
 * accepts, this target touches each tensor's first and last byte and checks
 * the table is sorted with unique names.
 *
 * Built like fuzz_safetensors (tests/fuzz/CMakeLists.txt): a libFuzzer binary
 * with BENCHCTL_FUZZ=ON and clang, and always fuzz_ptbin_replay over the
 * committed corpus (tests/fuzz/corpus/ptbin, seeds from make_corpus.py).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    eng_ck_file f;
    bc_error err = {0};
    uint8_t *buf = malloc(size ? size : 1); /* exact bounds for ASan */
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    if (eng_pt_parse(&f, "fuzz-input", buf, size, &err) == BC_OK) {
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < f.n_tensors; i++) {
            const eng_ck_tensor *t = &f.tensors[i];
            const uint8_t *p = t->data;
            if (t->nbytes) sink ^= p[0] ^ p[t->nbytes - 1];
            if (t->nbytes != t->numel * eng_ck_dtype_size(t->dtype)) abort();
            if (i && strcmp(f.tensors[i - 1].name, t->name) >= 0) abort();
        }
        (void)sink;
        eng_ck_file_close(&f);
    } else if (err.message[0] == '\0' || strstr(err.message, "fuzz-input") == NULL) {
        abort(); /* every error names the file */
    }
    free(buf);
    return 0;
}
