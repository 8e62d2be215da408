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

#include "benchctl/plugin.h"

bc_output *bc_output_open(const char *path, bc_error *err);
bc_status bc_output_write(bc_output *out, const void *data, size_t len, bc_error *err);
bc_status bc_output_vprintf(bc_output *out, bc_error *err, const char *fmt, va_list ap);
bc_status bc_output_commit(bc_output *out, bc_error *err);
void bc_output_abort(bc_output *out);

/* Whether bc_output_open(path) can create its file: path is not a folder and
 * the nearest existing folder above it is writable (open creates the
 * missing ones). Creates nothing. "-" always can. */
bc_status bc_output_check(const char *path, bc_error *err);

#endif
