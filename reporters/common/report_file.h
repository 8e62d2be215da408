/* report_file.h: what the reporters that write files share: a growable text
 * buffer (also the JSON writer's, jsonw.h), the check of an output path
 * that their check_settings makes (so a bad path is reported before the
 * first case, not after the last), and writing the finished text through
 * the host's atomic output.
 * Part of benchctl_reporter_common (compiled into each plugin; not the ABI).
 *
 * Ownership: the caller owns the bc_text (usually on its stack) and frees
 * buf with free().
 */
#ifndef BENCHCTL_REPORTERS_REPORT_FILE_H
#define BENCHCTL_REPORTERS_REPORT_FILE_H

#include <stddef.h>

#include "benchctl/plugin.h"

typedef struct bc_text {
    char *buf;       /* NUL-terminated text, owned by the caller */
    size_t len, cap; /* bytes used (without the NUL), bytes allocated */
    int failed;      /* out of memory; sticky: every later put is a no-op */
} bc_text;

void bc_text_put(bc_text *t, const char *s, size_t n);
void bc_text_puts(bc_text *t, const char *s);
void bc_text_printf(bc_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Checks, for a reporter's check_settings, that path can be written when the
 * run ends: an empty path is a BC_ERR_SETTING; otherwise the host's
 * output_check decides ("-" always passes), creating nothing. A host without
 * output_check passes every path (the write at close reports a bad one).
 * who names the reporter in its own messages; the host's message (which
 * names the path; the host adds which reporter) is passed on as it is. */
bc_status bc_report_check_output(const bc_host *host, const char *who, const char *path, bc_error *err);

/* Writes len bytes of buf to path through the host's atomic output
 * (temporary file then rename; ".gz" = gzip; "-" = stdout). */
bc_status bc_report_write_file(const bc_host *host, const char *path, const char *buf, size_t len, bc_error *err);

#endif
