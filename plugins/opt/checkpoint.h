/* checkpoint.h: what a Hugging Face OPT checkpoint directory's config.json
 * says, read without touching the weights, so a plan can size a checkpoint's
 * model before it loads. The loader itself is opt_weights_load_checkpoint
 * (model.h); both are implemented in checkpoint.c (docs/checkpoints.md).
 */
#ifndef OPT_CHECKPOINT_H
#define OPT_CHECKPOINT_H

#include "model.h"

/* Reads dir/config.json into hp (the shape, token ids and name = the
 * directory's last component). Errors name the file and the key:
 * BC_ERR_IO (unreadable), BC_ERR_FORMAT (bad JSON, a missing or out-of-range
 * key), BC_ERR_UNSUPPORTED (not OPT, not relu, no biases, ...). */
bc_status opt_hparams_from_checkpoint(const char *dir, opt_hparams *hp, bc_error *err);

#endif
