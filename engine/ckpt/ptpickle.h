/* ptpickle.h: a non-executing reader of the pickle torch.save writes for a
 * state dict (<archive>/data.pkl), on untrusted bytes in memory. It
 * interprets only the opcodes torch emits for a state dict into plain data,
 * and the only GLOBALs it accepts are collections.OrderedDict,
 * torch._utils._rebuild_tensor_v2 and torch.{Float,Half,BFloat16}Storage;
 * every other GLOBAL or opcode is refused. Sizes, memo indices, the stack
 * depth and the number of objects are bounded. Used by the pytorch opener
 * (ptbin.c), which finds each storage in the zip; knows nothing of zip.
 */
#ifndef ENG_PTPICKLE_H
#define ENG_PTPICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt_file.h"

#define ENG_PICKLE_MAX_OBJECTS (1u << 22) /* pickle objects one file may build */
#define ENG_PICKLE_MAX_MEMO (1u << 22)    /* largest memo index accepted */
#define ENG_PICKLE_MAX_NAME 4096          /* bytes of one tensor name */

/* One state dict entry: a tensor view of a storage. Strings point into the
 * pickle bytes (not NUL-terminated). */
typedef struct eng_pickle_tensor {
    const char *name;
    size_t name_len;          /* <= ENG_PICKLE_MAX_NAME, no NUL inside */
    eng_ck_dtype dtype;       /* the storage's: F32, F16 or BF16 */
    const char *storage_key;  /* the storage's entry is <archive>/data/<key> */
    size_t storage_key_len;
    uint64_t storage_numel;   /* elements the storage holds */
    uint64_t offset;          /* the tensor's first element in the storage */
    int ndim;                 /* <= ENG_CK_MAX_DIMS */
    int64_t shape[ENG_CK_MAX_DIMS], stride[ENG_CK_MAX_DIMS]; /* >= 0 */
} eng_pickle_tensor;

/* Reads the state dict pickled in bytes[0, len): *out (the caller frees it)
 * gets its *n entries in pickle order. Errors name path and "data.pkl":
 * BC_ERR_FORMAT, BC_ERR_UNSUPPORTED for a refused opcode or GLOBAL,
 * BC_ERR_NOMEM. */
bc_status eng_pickle_read_state_dict(const char *path, const unsigned char *bytes, size_t len,
                                     eng_pickle_tensor **out, size_t *n, bc_error *err);

#endif
