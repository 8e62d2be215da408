/* readfile.c: bounded reads of regular files (see readfile.h). */
#define _POSIX_C_SOURCE 200809L
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *bc_file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

int bc_open_regular(const char *path, const char *what, uint64_t max_bytes, uint64_t *size, bc_error *err) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        bc_error_set(err, e == ENOENT ? BC_ERR_NOT_FOUND : BC_ERR_IO, "%s: cannot read: %s", path, strerror(e));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        bc_error_set(err, BC_ERR_IO, "%s: cannot read: %s%sthe %s is %s, not a regular file", path,
                     S_ISDIR(sb.st_mode) ? strerror(EISDIR) : "", S_ISDIR(sb.st_mode) ? "; " : "", what,
                     bc_file_kind(sb.st_mode));
        return -1;
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        bc_error_set(err, BC_ERR_FORMAT, "%s: the %s is %lld bytes, over the limit of %llu bytes", path, what,
                     (long long)sb.st_size, (unsigned long long)max_bytes);
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        bc_error_set(err, e == ENOENT ? BC_ERR_NOT_FOUND : BC_ERR_IO, "%s: cannot open the %s: %s", path, what,
                     strerror(e));
        return -1;
    }
    struct stat fsb;
    if (fstat(fd, &fsb) != 0 || !S_ISREG(fsb.st_mode) || fsb.st_dev != sb.st_dev || fsb.st_ino != sb.st_ino) {
        close(fd);
        bc_error_set(err, BC_ERR_IO, "%s: the %s changed while it was opened (no longer the same regular file)",
                     path, what);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (size) *size = (uint64_t)fsb.st_size;
    return fd;
}

bc_status bc_read_regular(const char *path, const char *what, uint64_t max_bytes, char **out, size_t *out_len,
                          bc_error *err) {
    *out = NULL;
    if (out_len) *out_len = 0;
    uint64_t size = 0;
    int fd = bc_open_regular(path, what, max_bytes, &size, err);
    if (fd < 0) return err && err->code ? err->code : BC_ERR_IO;
    /* room for the size stat saw, one byte more to notice growth, and a NUL */
    size_t cap = (size_t)size + 2, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory reading the %s (%llu bytes)", path, what,
                            (unsigned long long)size);
    }
    bc_status st = BC_OK;
    for (;;) {
        if (len + 1 >= cap) { /* the file grew since stat */
            if ((uint64_t)len >= max_bytes) {
                st = bc_error_set(err, BC_ERR_FORMAT, "%s: the %s grew past the limit of %llu bytes while it was read",
                                  path, what, (unsigned long long)max_bytes);
                break;
            }
            size_t ncap = cap * 2 > (size_t)max_bytes + 2 ? (size_t)max_bytes + 2 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory reading the %s", path, what);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t got = read(fd, buf + len, cap - 1 - len);
        if (got < 0) {
            if (errno == EINTR) continue;
            st = bc_error_set(err, BC_ERR_IO, "%s: cannot read the %s: %s", path, what, strerror(errno));
            break;
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    close(fd);
    if (st == BC_OK && (uint64_t)len > max_bytes)
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: the %s grew past the limit of %llu bytes while it was read", path,
                          what, (unsigned long long)max_bytes);
    if (st != BC_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *out = buf;
    if (out_len) *out_len = len;
    return BC_OK;
}
