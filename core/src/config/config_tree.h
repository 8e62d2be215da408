/* config_tree.h: helpers over the parsed libconfig tree (config_tree.c),
 * shared by the modules that read bench.cfg (config.c: the schema;
 * config_axes.c: matrix.backend_settings; config_file.c: the text;
 * overrides.c: --set and --reporter; settings.c: plugin settings). Internal
 * to the core.
 *
 * Error locations: bc_cfg_fail writes "<where>: <path>: <message>", where
 * <where> is "file:line" for a setting read from the file and "--set KEY" or
 * "--reporter" for one the command line made (cfg's override records).
 */
#ifndef BENCHCTL_CONFIG_TREE_H
#define BENCHCTL_CONFIG_TREE_H

#include <libconfig.h>
#include <stddef.h>

#include "benchctl/plugin.h"
#include "config.h"

char *bc_cfg_strdup(const char *s);
char *bc_cfg_asprintf(const char *fmt, ...) BC_PRINTF(1, 2);
bc_status bc_cfg_nomem(bc_error *err);

/* "a.b" + "c" -> "a.b.c"; "" + "c" -> "c"; "a" + 2 -> "a.[2]". */
void bc_cfg_path_join(char *buf, size_t n, const char *parent, const char *child);
void bc_cfg_path_index(char *buf, size_t n, const char *parent, size_t i);

/* Where s came from: "file:line", "--set KEY", "--reporter", or the file. */
void bc_cfg_locate(const bc_config *cfg, const config_setting_t *s, const char *path, char *buf, size_t n);

/* Sets err to "<where>: <path>: <message>" and returns code. */
bc_status bc_cfg_fail(const bc_config *cfg, bc_error *err, bc_status code, const config_setting_t *s, const char *path,
                      const char *fmt, ...) BC_PRINTF(6, 7);

/* A short description of a value for "(got ...)". */
void bc_cfg_describe(const config_setting_t *s, char *buf, size_t n);

int bc_cfg_is_int(const config_setting_t *s);
int bc_cfg_is_number(const config_setting_t *s);
int bc_cfg_is_list(const config_setting_t *s);
double bc_cfg_number(const config_setting_t *s);

/* parent's member name (its message path is path), or *out = NULL when there
 * is none; a member that is not a group is a BC_ERR_SETTING. */
bc_status bc_cfg_get_group(const bc_config *cfg, const config_setting_t *parent, const char *name, const char *path,
                           config_setting_t **out, bc_error *err);

/* The setting at a message path like "reporters.[1].name", or NULL. */
const config_setting_t *bc_cfg_find(const config_setting_t *root, const char *path);

#endif
