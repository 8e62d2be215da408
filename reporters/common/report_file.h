/* report_file.h: what the reporters that write files share: the growable
 * text buffer (bc_text, lib/text/textbuf.h, also the JSON writer's), the check of an output path
 * that their check_settings makes (so a bad path is reported before the
 * first case, not after the last), and writing the finished text through
 * the host's atomic output.
 * Part of benchctl_reporter_common (compiled into each plugin; not the ABI).
 */
#ifndef BENCHCTL_REPORTERS_REPORT_FILE_H
#define BENCHCTL_REPORTERS_REPORT_FILE_H

#include <stddef.h>

#include "benchctl/plugin.h"
#include "textbuf.h"

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
