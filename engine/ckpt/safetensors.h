/* safetensors.h: the opener for Hugging Face .safetensors files, one of the
 * formats the checkpoint file set reads (ckpt_set.h; model.safetensors or
 * the shards of model.safetensors.index.json).
 *
 * File layout (https://github.com/huggingface/safetensors):
 *   [8 bytes]  N, the JSON header's length, little-endian u64
 *   [N bytes]  JSON object: "name": {"dtype": "F32", "shape": [..],
 *              "data_offsets": [begin, end]}, plus an optional
 *              "__metadata__": {string: string}
 *   [rest]     the data section; offsets are relative to its start
 *
 * The header is untrusted input. eng_st_parse refuses, with a message that
 * names the file and (where there is one) the tensor: a file shorter than 8
 * bytes, N > ENG_ST_MAX_HEADER_BYTES or beyond the end of the file, bad JSON
 * or duplicate keys, a root that is not an object, an unknown dtype, a shape
 * that is not a list of non-negative integers (at most ENG_CK_MAX_DIMS), data
 * offsets that are not [begin <= end] inside the data section, a byte count
 * that is not numel * element size, tensors that overlap or leave holes in the
 * data section, and a __metadata__ that is not an object of strings.
 */
#ifndef ENG_SAFETENSORS_H
#define ENG_SAFETENSORS_H

#include "ckpt_set.h"

#define ENG_ST_MAX_HEADER_BYTES ((uint64_t)100 * 1000 * 1000) /* 100 MB */

/* The opener (eng_ck_parse_fn): parses a whole .safetensors file into f.
 * This is the fuzz target's entry point. */
bc_status eng_st_parse(eng_ck_file *f, const char *path, const void *bytes, size_t len, bc_error *err);

#endif
