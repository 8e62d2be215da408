/* settings.h: plugin settings, in one place: each setting type's reading
 * from bench.cfg, default, formatting, allowed values and equality, as one
 * table (settings.c), used to resolve a plugin's settings group, to print
 * `benchctl plugins NAME` and to say which values differ from the default.
 */
#ifndef BENCHCTL_SETTINGS_H
#define BENCHCTL_SETTINGS_H

#include <stddef.h>

#include "benchctl/plugin.h"
#include "config.h"

/* "int", "float", "bool", "string", "enum"; "?" for an unknown type. */
const char *bc_setting_type_name(bc_setting_type type);

/* v := d's default. */
void bc_setting_default(const bc_setting_desc *d, bc_setting_value *v);

/* 1 when v is d's default. */
int bc_setting_is_default(const bc_setting_desc *d, const bc_setting_value *v);

/* v as bench.cfg would write it: 3, 0.5, true, "text". */
void bc_setting_format(const bc_setting_desc *d, const bc_setting_value *v, char *buf, size_t n);

/* The allowed values, short: "[1, 64]", "a|b", "true|false", "any". */
void bc_setting_allowed(const bc_setting_desc *d, char *buf, size_t n);

/* The allowed values, as a phrase for errors: "an integer in [1, 64]". */
void bc_setting_expected(const bc_setting_desc *d, char *buf, size_t n);

/* Checks spec's settings group against desc's table and fills
 * values[desc->n_settings] (defaults first; strings point into cfg and live
 * as long as it). Unknown keys get a "did you mean" hint; type and range
 * errors say what is allowed (BC_ERR_SETTING). */
/* 1 when spec's settings group in the config sets name. */
int bc_settings_given(const bc_plugin_spec *spec, const char *name);

bc_status bc_settings_resolve(const bc_config *cfg, const bc_plugin_spec *spec, const bc_plugin_desc *desc,
                              bc_setting_value *values, bc_error *err);

/* As bc_settings_resolve, but keys desc's table lacks are passed over: the
 * first pass for a plugin with more_settings, whose other rows come later. */
bc_status bc_settings_resolve_known(const bc_config *cfg, const bc_plugin_spec *spec, const bc_plugin_desc *desc,
                                    bc_setting_value *values, bc_error *err);

/* Checks the matrix axis over a backend setting (matrix.backend_settings.NAME)
 * against desc's table exactly as bc_settings_resolve checks the setting in
 * a settings group: *row := its row in desc, values[axis->n_values] := each
 * value read (strings point into cfg). A table without the setting is
 * refused naming pname and the setting (BC_ERR_SETTING). */
bc_status bc_settings_resolve_axis(const bc_config *cfg, const bc_setting_axis *axis, const bc_plugin_desc *desc,
                                   const char *pname, uint32_t *row, bc_setting_value *values, bc_error *err);

#endif
