/* fileio.c: bounded reads of regular files for the engine (fileio.h). */
#define _POSIX_C_SOURCE 200809L
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

int eng_open_regular(const char *path, const char *what, uint64_t max_bytes, uint64_t *size, bc_error *err) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        bc_error_set(err, e == ENOENT ? BC_ERR_NOT_FOUND : BC_ERR_IO, "%s %s: cannot open: %s", what, path,
                     strerror(e));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        bc_error_set(err, BC_ERR_IO, "%s %s: must be a regular file; this is %s", what, path, file_kind(sb.st_mode));
        return -1;
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        bc_error_set(err, BC_ERR_FORMAT, "%s %s: %lld bytes is over the limit of %llu bytes", what, path,
                     (long long)sb.st_size, (unsigned long long)max_bytes);
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        bc_error_set(err, e == ENOENT ? BC_ERR_NOT_FOUND : BC_ERR_IO, "%s %s: cannot open: %s", what, path,
                     strerror(e));
        return -1;
    }
    struct stat fsb;
    if (fstat(fd, &fsb) != 0 || !S_ISREG(fsb.st_mode) || fsb.st_dev != sb.st_dev || fsb.st_ino != sb.st_ino) {
        close(fd);
        bc_error_set(err, BC_ERR_IO, "%s %s: changed while it was opened (no longer the same regular file)", what,
                     path);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (size) *size = (uint64_t)fsb.st_size;
    return fd;
}

bc_status eng_read_regular(const char *path, const char *what, uint64_t max_bytes, char **out, size_t *out_len,
                           bc_error *err) {
    *out = NULL;
    if (out_len) *out_len = 0;
    uint64_t size = 0;
    int fd = eng_open_regular(path, what, max_bytes, &size, err);
    if (fd < 0) return err && err->code ? err->code : BC_ERR_IO;
    size_t cap = (size_t)size + 2, len = 0; /* one byte more to notice growth, and a NUL */
    char *buf = malloc(cap);
    bc_status st = buf ? BC_OK : bc_error_set(err, BC_ERR_NOMEM, "%s %s: out of memory", what, path);
    while (st == BC_OK) {
        if (len + 1 >= cap) {
            if ((uint64_t)len >= max_bytes) {
                st = bc_error_set(err, BC_ERR_FORMAT, "%s %s: grew past the limit of %llu bytes while it was read",
                                  what, path, (unsigned long long)max_bytes);
                break;
            }
            size_t ncap = cap * 2 > (size_t)max_bytes + 2 ? (size_t)max_bytes + 2 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                st = bc_error_set(err, BC_ERR_NOMEM, "%s %s: out of memory", what, path);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t got = read(fd, buf + len, cap - 1 - len);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            st = bc_error_set(err, BC_ERR_IO, "%s %s: read error: %s", what, path, strerror(errno));
            break;
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    close(fd);
    if (st == BC_OK && (uint64_t)len > max_bytes)
        st = bc_error_set(err, BC_ERR_FORMAT, "%s %s: grew past the limit of %llu bytes while it was read", what, path,
                          (unsigned long long)max_bytes);
    if (st != BC_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *out = buf;
    if (out_len) *out_len = len;
    return BC_OK;
}

bc_status eng_load_json(const char *path, const char *what, uint64_t max_bytes, json_t **out, bc_error *err) {
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    bc_status st = eng_read_regular(path, what, max_bytes, &text, &len, err);
    if (st != BC_OK) return st;
    json_error_t je;
    *out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!*out) {
        for (char *c = je.text; *c; c++) /* jansson quotes the file's text: keep the message one line */
            if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
        return bc_error_set(err, BC_ERR_FORMAT, "%s: not valid JSON (line %d, column %d: %s)", path, je.line,
                            je.column, je.text);
    }
    return BC_OK;
}

bc_status eng_map_regular(const char *path, const char *what, uint64_t max_bytes, void **map, size_t *len,
                          bc_error *err) {
    *map = NULL;
    *len = 0;
    uint64_t size = 0; /* stat before open: a FIFO is refused, not waited on */
    int fd = eng_open_regular(path, what, max_bytes, &size, err);
    if (fd < 0) {
        if (err && err->code == BC_ERR_NOT_FOUND) err->code = BC_ERR_IO;
        return BC_ERR_IO;
    }
    size_t n = (size_t)size;
    if (n > 0) {
        void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            return bc_error_set(err, BC_ERR_IO, "%s %s: cannot mmap %zu bytes: %s", what, path, n, strerror(e));
        }
        *map = m;
        *len = n;
    }
    close(fd);
    return BC_OK;
}
