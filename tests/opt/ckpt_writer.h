/* ckpt_writer.h: small checkpoint files for the reader tests
 * (test_ptbin.c, test_ckpt_set.c): a zip writer, torch's protocol-2 pickle
 * of a one-tensor state dict, and one-tensor shards in each format. Each
 * helper fails the running cmocka test when it cannot write.
 */
#ifndef BC_TEST_CKPT_WRITER_H
#define BC_TEST_CKPT_WRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct buf { /* a growing byte buffer; the caller frees p */
    unsigned char *p;
    size_t n, cap;
} buf;

typedef struct zentry { /* one zip entry to write */
    const char *name;
    const void *data;
    size_t n;
} zentry;

/* A zip of the n entries; compress_it != 0 compresses them (raw DEFLATE);
 * zip64 != 0 keeps sizes and offsets in ZIP64 extra fields and ends with
 * ZIP64 end records, as large torch files do. */
buf make_zip_ex(const zentry *e, int n, int compress_it, int zip64);
buf make_zip(const zentry *e, int n, int compress_it);

/* Writes into p (>= 512 bytes) the state dict {"w": tensor of 2 F32 at
 * element `off` of the 4-element storage "0"}, as torch spells it; with mod
 * and name, the tensor's rebuild GLOBAL is "mod name" instead. Returns the
 * length. */
size_t make_pickle(unsigned char *p, int off, const char *mod, const char *name);

/* The storage "0" the pickle above refers to. */
extern const float STORAGE[4];

/* dir/name := p[0, n). */
void write_file(const char *dir, const char *name, const void *p, size_t n);

/* dir/file := a one-tensor pytorch_model.bin / .safetensors file whose
 * tensor, called tensor (one character), is 2 F32 values. */
void write_pt_shard(const char *dir, const char *file, char tensor);
void write_st_shard(const char *dir, const char *file, char tensor);

/* Makes a fresh folder /tmp/<stem>_XXXXXX into dir[cap]: 0, or -1. */
int make_temp_dir(char *dir, size_t cap, const char *stem);
/* Removes every file in dir, then dir (no subfolders expected). */
void remove_flat_dir(const char *dir);

#endif
