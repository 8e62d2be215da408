/* checkpoint.h: a Hugging Face OPT checkpoint directory without loading its
 * weights: what its config.json says (checkpoint.c; so a plan can size the
 * model before it loads) and a full check of its tensors (the engine's, over
 * OPT's tensor table). The loader itself is opt_weights_load_checkpoint
 * (opt_model.h; docs/checkpoints.md).
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
static inline bc_status opt_checkpoint_validate(const char *dir, bc_error *err) {
    return eng_weights_validate(&opt_family, dir, err);
}

#endif
