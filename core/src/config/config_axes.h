/* config_axes.h: matrix.backend_settings read into cfg->setting_axes
 * (config_axes.c), for config.c's schema walk. Internal to the core;
 * bc_config_axis_value (config.h) reads an axis back.
 */
#ifndef BENCHCTL_CONFIG_AXES_H
#define BENCHCTL_CONFIG_AXES_H

#include <libconfig.h>

#include "benchctl/plugin.h"
#include "config.h"

/* matrix.backend_settings under matrix (absent: no axes): a group of
 * NAME = a value or a list of distinct values, each one axis. Fills
 * cfg->setting_axes (cfg owns it; bc_config_free frees it); the first error
 * names the setting and where it came from. */
bc_status bc_cfg_parse_setting_axes(bc_config *cfg, const config_setting_t *matrix, bc_error *err);

#endif
