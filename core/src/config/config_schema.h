/* config_schema.h: what the schema's files share (config.c the groups and
 * bc_config_load, config_plugins.c the plugin lists). Errors are
 * "<where>: <setting>: <what is allowed> (got <value>)" (config.c). Internal
 * to the core. */
#ifndef BENCHCTL_CONFIG_SCHEMA_H
#define BENCHCTL_CONFIG_SCHEMA_H

#include <libconfig.h>
#include <stddef.h>

#include "config.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The forms a plugin entry takes, for messages. */
#define SPEC_FORMS "a plugin name or a group { name = \"...\"; settings = { ... }; }"

/* Refuses members of group (at path) that are not in allowed[n], with a
 * suggestion. */
bc_status bc_cfg_check_keys(const bc_config *cfg, const config_setting_t *group, const char *path,
                            const char *const *allowed, size_t n, bc_error *err);

/* config_plugins.c */

/* Fills spec from s at path: a plugin name, or a group { name; settings; }. */
bc_status bc_cfg_parse_spec(const bc_config *cfg, const config_setting_t *s, const char *path, bc_plugin_spec *spec,
                            bc_error *err);

/* The backends list: the outermost axis of the matrix. Its first entry goes
 * to cfg->backend, the others to cfg->more_backends; each label (default: the
 * plugin's name) must be distinct, since the reports name a case's backend
 * by it. */
bc_status bc_cfg_parse_backends(bc_config *cfg, const config_setting_t *list, bc_error *err);

/* A list of plugin specs at top-level key. Absent: default_name (one entry)
 * or, when default_name is NULL, an error. unique: refuse repeated names. */
bc_status bc_cfg_parse_spec_list(bc_config *cfg, const config_setting_t *root, const char *key,
                                 const char *default_name, int unique, bc_plugin_spec **out, size_t *n_out,
                                 bc_error *err);

/* plugin_path: a directory name or a list of them (cfg->plugin_paths). */
bc_status bc_cfg_parse_plugin_path(bc_config *cfg, const config_setting_t *root, bc_error *err);

#endif
