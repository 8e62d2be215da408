/* utf8.h: UTF-8 validation for the writers that must never emit invalid
 * text (reporters/common/jsonw.h, lib/html/htmlw.h). Part of benchctl_text
 * (lib/text; not the ABI).
 */
#ifndef BENCHCTL_LIB_UTF8_H
#define BENCHCTL_LIB_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if s does not start
 * one (overlong forms, surrogates and values above U+10FFFF are invalid).
 * Reads past s[0] only while the bytes are continuation bytes, so a NUL
 * terminator stops it. */
size_t bc_utf8_seq_len(const unsigned char *s);

#endif
