/* report_file.h: what the reporters that write one file at close (json, csv,
 * console) share: a growable text buffer (also the JSON writer's, jsonw.h),
 * a check at open that the output
 * path can be written (so a bad path is reported before the run, not after
 * it), and writing the finished text through the host's atomic output.
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

/* Checks at open that path can be written: creates its temporary file (and
 * any missing parent folders) and removes it again. "-" (stdout) always
 * passes. Errors are the host's ("<path>: cannot create ...: <reason>"). */
bc_status bc_report_check_path(const bc_host *host, const char *path, bc_error *err);

/* Writes len bytes of buf to path through the host's atomic output
 * (temporary file then rename; ".gz" = gzip; "-" = stdout). */
bc_status bc_report_write_file(const bc_host *host, const char *path, const char *buf, size_t len, bc_error *err);

#endif
