/* config_file.h: bench.cfg as text, for config.c's bc_config_load_text
 * (config_file.c): the file and its @includes read under the size limits
 * and handed to libconfig, and the hash of the tree. Internal to the core;
 * bc_config_read_text (config.h) is the public face of the same reading.
 */
#ifndef BENCHCTL_CONFIG_FILE_H
#define BENCHCTL_CONFIG_FILE_H

#include <libconfig.h>
#include <stddef.h>

#include "benchctl/plugin.h"
#include "config.h"

/* Reads path into c; one line on failure (I/O: BC_ERR_IO; a limit or the
 * syntax: BC_ERR_FORMAT, "file:line: ..."). given_text (given_len bytes),
 * when not NULL, is path's text read elsewhere (a distributed run's rank 0,
 * bc_config_read_text) and is used instead of reading path; @include is
 * relative to path's folder either way. */
bc_status bc_cfg_read_file(config_t *c, const char *path, const char *given_text, size_t given_len, bc_error *err);

/* cfg->sha256 := SHA-256 (hex) of c's tree as libconfig writes it; cfg owns it. */
bc_status bc_cfg_hash_tree(bc_config *cfg, const config_t *c, bc_error *err);

#endif
