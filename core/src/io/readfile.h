/* readfile.h: the core's one way to open and read a file it was told to
 * read (bench.cfg, report files for compare and resume).
 *
 * Every input is checked with stat BEFORE it is opened: only a regular file
 * is accepted (a FIFO, a device such as /dev/zero, a socket or a folder is
 * refused without being opened, so nothing can hang or stream forever), and
 * its size must be at most the caller's stated maximum. The open itself uses
 * O_NONBLOCK and is checked again with fstat (same file, still regular), so
 * a path swapped for a FIFO between the two calls cannot hang either.
 * Errors name the file, what it is for, and the limit.
 *
 * Plugins never link the core; the native engine has its own copy of this rule
 * in engine/base/fileio.c.
 */
#ifndef BENCHCTL_READFILE_H
#define BENCHCTL_READFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "benchctl/plugin.h"

/* Opens path for reading after the checks above; returns the descriptor
 * (O_CLOEXEC, blocking again) or -1 with err set (BC_ERR_NOT_FOUND when the
 * path does not exist, BC_ERR_IO otherwise, BC_ERR_FORMAT when too large).
 * what says what the file is for ("bench.cfg", "report"); max_bytes is the
 * largest size accepted; *size (may be NULL) gets the size stat saw. */
int bc_open_regular(const char *path, const char *what, uint64_t max_bytes, uint64_t *size, bc_error *err);

/* Reads the whole of path into a NUL-terminated buffer the caller frees,
 * with the same checks; a file that grows past max_bytes while it is read
 * is refused too. */
bc_status bc_read_regular(const char *path, const char *what, uint64_t max_bytes, char **out, size_t *out_len,
                          bc_error *err);

/* What a file that is not a regular one is, for error lines: "a folder",
 * "a FIFO (named pipe)", "a character device", ... */
const char *bc_file_kind(mode_t mode);

#endif
