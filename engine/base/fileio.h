/* fileio.h: the engine's one way to open the files it is told to read
 * (config.json, the sharded index files, every weights file, the prompts
 * file) and its one way to map a weights file. Plugins never link the core, so this is the engine's own copy of
 * the rule core/src/io/readfile.c applies to bench.cfg and reports:
 *
 *   - stat BEFORE open: only a regular file is accepted; a FIFO, a device
 *     (/dev/zero), a socket or a folder is refused without being opened, so
 *     nothing hangs in open or streams without end;
 *   - a stated maximum size, checked before open and again while reading;
 *   - the open uses O_NONBLOCK and fstat must agree (same file, regular),
 *     so a path swapped for a FIFO in between cannot hang either;
 *   - errors name the file, what it is for, and the limit.
 *
 * The limits (docs/checkpoints.md, "Limits on the files read"):
 */
#ifndef ENG_FILEIO_H
#define ENG_FILEIO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

#define ENG_CONFIG_JSON_MAX_BYTES ((uint64_t)1 << 20)   /* config.json: 1 MiB */
#define ENG_INDEX_JSON_MAX_BYTES ((uint64_t)100 * 1000 * 1000) /* *.index.json: 100 MB */
#define ENG_PROMPTS_MAX_BYTES ((uint64_t)1 << 30)       /* prompts_file: 1 GiB */
#define ENG_WEIGHTS_MAX_BYTES ((uint64_t)1 << 42)       /* one weights file: 4 TiB */

/* Opens path for reading after the checks above: the descriptor (O_CLOEXEC,
 * blocking again) or -1 with err set (BC_ERR_NOT_FOUND when it does not
 * exist, BC_ERR_FORMAT when over max_bytes, BC_ERR_IO otherwise). what names
 * the file's role in errors ("config.json", "prompts_file"); *size (may be
 * NULL) gets its size. */
int eng_open_regular(const char *path, const char *what, uint64_t max_bytes, uint64_t *size, bc_error *err);

/* Reads the whole of path into a NUL-terminated buffer the caller frees,
 * under the same checks; growth past max_bytes while reading is refused. */
bc_status eng_read_regular(const char *path, const char *what, uint64_t max_bytes, char **out, size_t *out_len,
                           bc_error *err);

/* eng_read_regular, then parses the text as JSON (duplicate keys
 * refused). *out is a new reference. */
bc_status eng_load_json(const char *path, const char *what, uint64_t max_bytes, json_t **out, bc_error *err);

/* Maps path read-only (MAP_PRIVATE) under the same checks; *map is NULL and
 * *len 0 for an empty file. The caller owns the mapping and munmaps it. A
 * missing file is BC_ERR_IO here: the caller was told the file exists (an
 * index names it, or it was looked for). */
bc_status eng_map_regular(const char *path, const char *what, uint64_t max_bytes, void **map, size_t *len,
                          bc_error *err);

#endif
