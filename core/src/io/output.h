/* output.h: atomic, optionally gzip'ed output files, offered to plugins as
 * host services (bc_host.output_*).
 *
 * bc_output_open(path) creates "<path>.tmp.<pid>" next to path; writes go
 * there (through zlib when path ends in ".gz"); bc_output_commit flushes,
 * fsyncs and renames it onto path, so readers never see a half-written file.
 * bc_output_abort removes the temporary file. "-" is standard output.
 * Each open is ended by exactly one commit or abort, which frees the handle.
 */
#ifndef BENCHCTL_OUTPUT_H
#define BENCHCTL_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

#include "benchctl/plugin.h"

/* Standard output carries results only (docs/reliability.md): while
 * plugins run, bc_output_divert_stdout keeps a copy of the original
 * standard output for the results ("-" outputs, bc_output_results) and
 * points file descriptor 1 at standard error, so whatever a plugin prints
 * with printf (or a child it forks, run.isolation included) lands on
 * standard error; bc_output_restore_stdout puts fd 1 back after flushing
 * what plugins left in stdout's buffer (to standard error). Not nested;
 * both are no-ops when there is nothing to do. */
bc_status bc_output_divert_stdout(bc_error *err);
void bc_output_restore_stdout(void);

/* Where results go: the kept standard output while diverted, else stdout. */
FILE *bc_output_results(void);

bc_output *bc_output_open(const char *path, bc_error *err);
bc_status bc_output_write(bc_output *out, const void *data, size_t len, bc_error *err);
bc_status bc_output_vprintf(bc_output *out, bc_error *err, const char *fmt, va_list ap);
bc_status bc_output_commit(bc_output *out, bc_error *err);
void bc_output_abort(bc_output *out);

/* An existing path is replaced only when it is a regular file; a symbolic
 * link is followed when it ends at a regular file (the target is replaced,
 * the link kept); anything else (a folder, a device, a FIFO, a socket, a
 * dangling link) is refused and left as it is. output.c has the table. */

/* Whether bc_output_open(path) can create its file: the rule above holds
 * and the nearest existing folder above the file is writable (open creates
 * the missing ones). Creates nothing. "-" always can. While claims are
 * active, a path that resolves to a file an earlier check accepted is
 * refused, naming that check's owner. */
bc_status bc_output_check(const char *path, bc_error *err);

/* Claims: one run's outputs must not share a file. begin starts an empty
 * set (ending any earlier one); owner names who the next bc_output_check
 * calls are for ("bench.cfg:28: reporters.[1]: reporter 'json'"); end
 * forgets them all. Without begin, bc_output_check remembers nothing. */
void bc_output_claims_begin(void);
void bc_output_claims_owner(const char *who);
void bc_output_claims_end(void);

#endif
