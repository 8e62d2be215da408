/* ckpt_export.h: for the refit tests, a host set of float32 tensors
 * (ckpt_host.h, eng_weights_export) written as a checkpoint directory:
 * dir/model.safetensors of the set's tensors and dir/config.json copied
 * from config, so a fresh engine loads the same weights through the files.
 * Each helper fails the running cmocka test when it cannot write.
 */
#ifndef BC_TEST_CKPT_EXPORT_H
#define BC_TEST_CKPT_EXPORT_H

#include "ckpt_set.h"

void write_checkpoint(const char *dir, const eng_ck_set *set, const char *config);
/* Removes what write_checkpoint wrote, and dir. */
void remove_checkpoint(const char *dir);

#endif
