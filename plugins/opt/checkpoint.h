/* checkpoint.h: a Hugging Face OPT checkpoint directory without loading its
 * weights: what its config.json says (so a plan can size the model before it
 * loads), whether the files are there at all, and a full check of its
 * tensors. The loader itself is opt_weights_load_checkpoint (model.h); all
 * are implemented in checkpoint.c (docs/checkpoints.md).
 */
#ifndef OPT_CHECKPOINT_H
#define OPT_CHECKPOINT_H

#include "opt_model.h"

/* Reads dir/config.json into hp (the shape, token ids and name = the
 * directory's last component). Errors name the file and the key:
 * BC_ERR_IO (unreadable), BC_ERR_FORMAT (bad JSON, a missing or out-of-range
 * key), BC_ERR_UNSUPPORTED (not OPT, not relu, no biases, ...). */
bc_status opt_hparams_from_checkpoint(const char *dir, opt_hparams *hp, bc_error *err);


/* Everything opt_weights_load_checkpoint checks (config.json, every tensor's
 * name, dtype and shape, a tied lm_head, no unexpected tensor), without
 * allocating or converting the weights. */
bc_status opt_checkpoint_validate(const char *dir, bc_error *err);

#endif
