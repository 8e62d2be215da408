/* ptbin.h: the opener for PyTorch pytorch_model.bin checkpoints
 * (torch.save's zip serialization), one of the formats the checkpoint file
 * set reads (ckpt_set.h; pytorch_model.bin or the shards of
 * pytorch_model.bin.index.json). Strict and non-executing.
 *
 * File layout: a zip archive (ptzip.h) holding <prefix>/data.pkl, a pickle
 * of the state dict (ptpickle.h: read, never executed), optionally
 * <prefix>/byteorder ("little"), and <prefix>/data/<key>, the raw
 * little-endian bytes of each storage. Each tensor must be contiguous and
 * lie inside its storage, whose entry must hold exactly numel * element
 * size bytes; tensors may share a storage. Tensor data points into the
 * mapping (or into an inflated copy of a DEFLATE entry the file owns).
 */
#ifndef ENG_PTBIN_H
#define ENG_PTBIN_H

#include "ckpt_set.h"

/* The opener (eng_ck_parse_fn): parses a whole pytorch_model.bin into f.
 * The fuzz target's entry point. */
bc_status eng_pt_parse(eng_ck_file *f, const char *path, const void *bytes, size_t len, bc_error *err);

#endif
