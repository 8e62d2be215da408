/* ptbin.h: a strict, non-executing reader for PyTorch pytorch_model.bin
 * checkpoints (torch.save's zip serialization), single or sharded
 * (pytorch_model.bin.index.json), memory-mapped.
 *
 * File layout: a zip archive (entries STORED or DEFLATE; ZIP64 understood)
 * holding <prefix>/data.pkl, a protocol-2 pickle of the state dict, and
 * <prefix>/data/<key>, the raw little-endian bytes of each storage.
 *
 * The pickle is untrusted input and is never executed: the reader interprets
 * only the opcodes torch emits for a state dict, and the only GLOBALs it
 * accepts are collections.OrderedDict, torch._utils._rebuild_tensor_v2 and
 * torch.{Float,Half,BFloat16}Storage. Every other GLOBAL or opcode is refused
 * with an error naming the file. Sizes, offsets, memo indices, the stack depth
 * and the number of objects are bounded; each tensor must be contiguous and
 * lie inside its storage.
 *
 * The result is the same tensor view the safetensors reader gives
 * (opt_st_tensor): data points into the mapping (or into an inflated copy for
 * a DEFLATE entry), maybe unaligned.
 */
#ifndef OPT_PTBIN_H
#define OPT_PTBIN_H

#include <stddef.h>
#include <stdint.h>

#include "safetensors.h"

#define OPT_PT_MAX_OBJECTS (1u << 22) /* pickle objects one file may build */
#define OPT_PT_MAX_MEMO (1u << 22)    /* largest memo index accepted */
#define OPT_PT_MAX_INFLATE ((uint64_t)UINT32_MAX) /* bytes of one DEFLATE entry (one zlib call) */

/* One pytorch_model.bin. Owns its mapping, the tensor table (sorted by name),
 * the names and any inflated entries. */
typedef struct opt_pt_file {
    char *path;
    void *map;
    size_t map_bytes;
    opt_st_tensor *tensors;
    size_t n_tensors;
    char *names;     /* all tensor names, NUL-separated */
    void **inflated; /* [n_inflated] buffers of DEFLATE entries */
    size_t n_inflated;
} opt_pt_file;

/* Parses bytes[0, len) (a whole file) into f; tensor data points into bytes
 * (which must outlive f) or into f's inflated buffers. path is for messages.
 * On failure f is left empty (safe to close). The fuzz replay entry point. */
bc_status opt_pt_parse(opt_pt_file *f, const char *path, const void *bytes, size_t len, bc_error *err);
bc_status opt_pt_open(opt_pt_file *f, const char *path, bc_error *err);
void opt_pt_close(opt_pt_file *f);

/* A checkpoint's tensors: pytorch_model.bin, or the shards named by
 * pytorch_model.bin.index.json's weight_map (plain file names; every tensor
 * in the file the map names; no tensor in two shards). */
typedef struct opt_pt_set {
    opt_pt_file *files;
    size_t n_files;
    const opt_st_tensor **by_name; /* every tensor, sorted by name */
    size_t n_tensors;
    char *source;
} opt_pt_set;

bc_status opt_pt_set_open_dir(opt_pt_set *s, const char *dir, bc_error *err);
void opt_pt_set_close(opt_pt_set *s);

#endif
