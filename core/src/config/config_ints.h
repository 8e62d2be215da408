/* config_ints.h: integer literals libconfig would narrow (config_ints.c).
 * Internal to the core. */
#ifndef BENCHCTL_CONFIG_INTS_H
#define BENCHCTL_CONFIG_INTS_H

#include <stddef.h>

#include "benchctl/plugin.h"

/* Scans text, the len bytes of the config file at path as it was read (and
 * the files it @includes, relative to its folder, as libconfig reads them),
 * for an integer literal that libconfig 1.5 would silently narrow: without
 * L, outside [-2^31, 2^31 - 1] (hexadecimal: above 0x7fffffff); with L,
 * outside 64 bits. The first one is an error "file:line: setting: LITERAL
 * does not fit in 32 bits: ...". Run after libconfig has accepted the text. */
bc_status bc_cfg_check_int_literals_text(const char *path, const char *text, size_t len, bc_error *err);

/* The same for a --set value; label ("--set KEY") starts the message. */
bc_status bc_cfg_check_int_literals_value(const char *label, const char *value, bc_error *err);

#endif
