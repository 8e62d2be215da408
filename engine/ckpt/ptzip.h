/* ptzip.h: a strict reader of the zip archive torch.save writes, on
 * untrusted bytes in memory: the end records (ZIP64 understood), the central
 * directory, and each entry's bytes (STORED in place, DEFLATE inflated
 * through zlib into a buffer the archive owns). Encrypted entries and other
 * methods are refused; every header and extent must lie inside the bytes.
 * Used by the pytorch opener (ptbin.c); knows nothing of torch.
 */
#ifndef ENG_PTZIP_H
#define ENG_PTZIP_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

#define ENG_ZIP_MAX_INFLATE ((uint64_t)UINT32_MAX) /* bytes of one DEFLATE entry (one zlib call) */

typedef struct eng_zip_entry {
    const char *name; /* into the archive bytes, not NUL-terminated */
    size_t name_len;
    int method;       /* 0 STORED, 8 DEFLATE */
    uint64_t csize, usize, local_off;
    const unsigned char *data; /* usize bytes once eng_zip_entry_data succeeded; NULL before */
} eng_zip_entry;

/* An archive over caller bytes, which must outlive it. Owns its entry table
 * and the buffers of inflated entries. */
typedef struct eng_zip {
    const char *path; /* for messages; not owned */
    const unsigned char *bytes;
    size_t len;
    eng_zip_entry *entries; /* [n_entries], sorted by name, names unique */
    size_t n_entries;
    void **inflated;        /* [n_inflated] buffers of DEFLATE entries */
    size_t n_inflated;
} eng_zip;

/* Reads the end records and the central directory of bytes[0, len).
 * BC_ERR_FORMAT (or BC_ERR_UNSUPPORTED for an encrypted entry) naming path;
 * on failure z is still safe to close. */
bc_status eng_zip_open(eng_zip *z, const char *path, const void *bytes, size_t len, bc_error *err);
/* The entry called name[0, name_len), or NULL. */
eng_zip_entry *eng_zip_find(eng_zip *z, const char *name, size_t name_len);
/* Points e->data at the entry's usize uncompressed bytes (inflating a
 * DEFLATE entry into a buffer z owns). */
bc_status eng_zip_entry_data(eng_zip *z, eng_zip_entry *e, bc_error *err);
/* Moves the inflated buffers to the caller (who frees each and the array). */
void eng_zip_take_inflated(eng_zip *z, void ***bufs, size_t *n);
/* Frees the entry table and any inflated buffers still held. */
void eng_zip_close(eng_zip *z);

#endif
