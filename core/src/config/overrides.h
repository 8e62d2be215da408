/* overrides.h: command-line changes to the bench.cfg tree, applied before the
 * schema is checked (config.c calls them in bc_config_load):
 *   --reporter a,b       replaces the reporters list with { name = "a"; }, ...
 *   --set key.path=value sets one setting, creating the groups on the way.
 * Each records its key and label in cfg (override_keys/labels), so errors
 * about the settings it made say "--set KEY" instead of a file line.
 */
#ifndef BENCHCTL_OVERRIDES_H
#define BENCHCTL_OVERRIDES_H

#include <libconfig.h>

#include "config.h"

/* names: "json,csv". */
bc_status bc_overrides_apply_reporters(bc_config *cfg, config_t *c, const char *names, bc_error *err);

/* text: "a.b.c=value", value as libconfig reads it (3, 0.5, "text", true,
 * [1, 2]; a bare word is a string). "[N]" steps into an existing list
 * element, except as the last step. A single value given for a setting that
 * is a list in the tree becomes a one-element list (--set precisions=fp16). */
bc_status bc_overrides_apply_set(bc_config *cfg, config_t *c, const char *text, bc_error *err);

#endif
