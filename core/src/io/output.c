/* output.c: atomic, optionally gzip'ed output files (see output.h).
 *
 * Life of a file output:
 *   open    mkdir -p the parent folder, create "<path>.tmp.<pid>" with
 *           O_EXCL (two open outputs to one path are refused, not mixed);
 *           wrap it in a FILE (plain) or a gzFile on a dup of the fd (.gz).
 *   write   buffered; the first failure is kept and reported again at commit.
 *   commit  flush (gzclose finishes the gzip trailer), fsync the file,
 *           rename onto path, fsync the folder. On any failure the temporary
 *           file is removed and path is left as it was.
 *   abort   close and remove the temporary file; path is untouched.
 * "-" is standard output: writes go straight to stdout, commit flushes it,
 * nothing is atomic or compressed.
 *
 * What an existing path may be (output_target, used by open, commit and
 * check alike):
 *   missing          created
 *   a regular file   replaced (temporary file + rename)
 *   a symbolic link  followed when it ends at an existing regular file: the
 *                    temporary file is made in the target's folder and
 *                    renamed onto the target, so the link stays a link; a
 *                    dangling link or one to anything else is refused
 *   anything else    refused, never replaced: a folder, a device such as
 *                    /dev/null, a FIFO, a socket
 * Claims: between bc_output_claims_begin and _end (one run's validation),
 * bc_output_check remembers each path it accepted, resolved (realpath of
 * the path, or of its nearest existing folder plus the rest), with the
 * owner named by bc_output_claims_owner, and refuses a second check of the
 * same resolved path, naming both owners.
 *
 * Ownership: bc_output_open allocates the handle; commit or abort frees it.
 */
#define _XOPEN_SOURCE 700

#include "output.h"
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

struct bc_output {
    char *path;     /* the path asked for, owned (error messages) */
    char *target;   /* the file replaced at commit: path, or a symlink's target; owned */
    char *tmp_path; /* temporary path next to it, owned; NULL for stdout */
    int is_stdout;
    int fd;         /* the temporary file's descriptor, -1 for stdout */
    FILE *fp;       /* plain file (owns fd's buffering) or stdout; NULL for gz */
    gzFile gz;      /* gzip stream on dup(fd), NULL when not gz */
    bc_status failed;  /* first write error, BC_OK if none */
    char failed_msg[400];
};

static int ends_with(const char *s, const char *suffix) {
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Creates every missing folder above path (like mkdir -p on its dirname). */
static bc_status make_parent_dirs(const char *path, bc_error *err) {
    char *dir = dup_string(path);
    if (!dir) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) { /* no folder part, or the root */
        free(dir);
        return BC_OK;
    }
    *slash = '\0';
    /* Walk each prefix "a", "a/b", ... and create it when missing. */
    for (char *p = dir + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            struct stat sb;
            /* stat first: mkdir on an existing folder we may not write
             * into can fail with EACCES rather than EEXIST. */
            if (stat(dir, &sb) != 0 && mkdir(dir, 0777) != 0 && errno != EEXIST) {
                bc_status st = bc_error_set(err, BC_ERR_IO, "%s: cannot create folder %s: %s", path, dir,
                                            strerror(errno));
                free(dir);
                return st;
            }
            *p = saved;
            if (saved == '\0') break;
        }
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        bc_status st = bc_error_set(err, BC_ERR_IO, "%s: %s is not a folder", path, dir);
        free(dir);
        return st;
    }
    free(dir);
    return BC_OK;
}

/* fsyncs the folder holding path, so the rename itself is durable. Best
 * effort: some file systems refuse fsync on a folder. */
static void sync_parent_dir(const char *path) {
    char *dir = dup_string(path);
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    const char *d = ".";
    if (slash == dir) {
        d = "/";
    } else if (slash) {
        *slash = '\0';
        d = dir;
    }
    int fd = open(d, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

static void free_output(bc_output *out) {
    free(out->path);
    free(out->target);
    free(out->tmp_path);
    free(out);
}

/* The rule in the header: *target (owned) := the file an output on path
 * creates or replaces, or an error when path names something that is not
 * to be replaced. */
static bc_status output_target(const char *path, char **target, bc_error *err) {
    *target = NULL;
    struct stat lsb, sb;
    if (lstat(path, &lsb) != 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            return bc_error_set(err, BC_ERR_IO, "%s: cannot create the file: %s", path, strerror(errno));
        *target = dup_string(path); /* missing: created (ENOTDIR is reported by the folder checks) */
    } else if (S_ISLNK(lsb.st_mode)) {
        if (stat(path, &sb) != 0)
            return bc_error_set(err, BC_ERR_IO,
                                "%s: is a symbolic link to a missing file (%s); an output follows a link only to an "
                                "existing regular file",
                                path, strerror(errno));
        if (!S_ISREG(sb.st_mode))
            return bc_error_set(err, BC_ERR_IO,
                                "%s: is a symbolic link to %s, not to a regular file; benchctl will not replace it",
                                path, bc_file_kind(sb.st_mode));
        *target = realpath(path, NULL);
        if (!*target) return bc_error_set(err, BC_ERR_IO, "%s: cannot resolve the link: %s", path, strerror(errno));
        return BC_OK;
    } else if (S_ISDIR(lsb.st_mode)) {
        return bc_error_set(err, BC_ERR_IO, "%s: is a folder, not a file", path);
    } else if (!S_ISREG(lsb.st_mode)) {
        return bc_error_set(err, BC_ERR_IO,
                            "%s: is %s, not a regular file; benchctl writes an output by replacing the file whole "
                            "and will not replace it (use \"-\" for standard output)",
                            path, bc_file_kind(lsb.st_mode));
    } else {
        *target = dup_string(path);
    }
    if (!*target) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    return BC_OK;
}

/* path with every existing part resolved: realpath(path), or else the
 * resolved folder above it plus the last name. NULL when out of memory or
 * nothing resolves. */
static char *resolve_path(const char *path) {
    char *r = realpath(path, NULL);
    if (r) return r;
    const char *slash = strrchr(path, '/');
    char *dir;
    const char *base;
    if (!slash) {
        dir = dup_string(".");
        base = path;
    } else if (slash == path) {
        dir = dup_string("/");
        base = path + 1;
    } else {
        dir = strndup(path, (size_t)(slash - path));
        base = slash + 1;
    }
    if (!dir) return NULL;
    char *rd = strcmp(dir, path) == 0 ? NULL : resolve_path(dir);
    free(dir);
    if (!rd) return NULL;
    /* the part that does not exist yet holds no links: "." and ".." are
     * plain names to drop or go up by */
    if (base[0] == '\0' || strcmp(base, ".") == 0) return rd;
    if (strcmp(base, "..") == 0) {
        char *up = strrchr(rd, '/');
        if (up && up != rd) *up = '\0';
        else if (up) up[1] = '\0';
        return rd;
    }
    size_t n = strlen(rd) + strlen(base) + 2;
    char *joined = malloc(n);
    if (joined) snprintf(joined, n, "%s%s%s", rd, strcmp(rd, "/") == 0 ? "" : "/", base);
    free(rd);
    return joined;
}

typedef struct output_claim {
    char *resolved; /* owned */
    char *owner;    /* owned, "" when none was named */
} output_claim;

static struct {
    int active;
    output_claim *v;
    size_t n, cap;
    char *owner; /* the owner named for the next checks, owned */
} g_claims;

void bc_output_claims_begin(void) {
    bc_output_claims_end();
    g_claims.active = 1;
}

void bc_output_claims_owner(const char *who) {
    free(g_claims.owner);
    g_claims.owner = who ? dup_string(who) : NULL;
}

void bc_output_claims_end(void) {
    for (size_t i = 0; i < g_claims.n; i++) {
        free(g_claims.v[i].resolved);
        free(g_claims.v[i].owner);
    }
    free(g_claims.v);
    free(g_claims.owner);
    memset(&g_claims, 0, sizeof g_claims);
}

/* Records target (for path) as claimed, or refuses it when an earlier
 * check claimed the same file. */
static bc_status claim(const char *path, const char *target, bc_error *err) {
    if (!g_claims.active) return BC_OK;
    char *resolved = resolve_path(target);
    if (!resolved) return bc_error_set(err, BC_ERR_IO, "%s: cannot resolve the path: %s", path, strerror(errno));
    for (size_t i = 0; i < g_claims.n; i++)
        if (strcmp(g_claims.v[i].resolved, resolved) == 0) {
            bc_status st = bc_error_set(
                err, BC_ERR_SETTING, "%s: %s is already the output of %s; two outputs on one file would overwrite "
                                     "each other (give each its own path)",
                path, resolved, g_claims.v[i].owner[0] ? g_claims.v[i].owner : "an earlier setting");
            free(resolved);
            return st;
        }
    if (g_claims.n == g_claims.cap) {
        size_t cap = g_claims.cap ? g_claims.cap * 2 : 8;
        output_claim *nv = realloc(g_claims.v, cap * sizeof *nv);
        if (!nv) {
            free(resolved);
            return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
        }
        g_claims.v = nv;
        g_claims.cap = cap;
    }
    char *owner = dup_string(g_claims.owner ? g_claims.owner : "");
    if (!owner) {
        free(resolved);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    }
    g_claims.v[g_claims.n++] = (output_claim){.resolved = resolved, .owner = owner};
    return BC_OK;
}

bc_output *bc_output_open(const char *path, bc_error *err) {
    if (!path || !*path) {
        bc_error_set(err, BC_ERR_INVALID, "output path is empty");
        return NULL;
    }
    bc_output *out = calloc(1, sizeof *out);
    if (!out) {
        bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    out->fd = -1;
    out->failed = BC_OK;
    out->path = dup_string(path);
    if (!out->path) goto nomem;

    if (strcmp(path, "-") == 0) {
        out->is_stdout = 1;
        out->fp = bc_output_results();
        return out;
    }

    if (output_target(path, &out->target, err) != BC_OK) goto fail;
    if (make_parent_dirs(out->target, err) != BC_OK) goto fail;

    size_t n = strlen(out->target) + 32;
    out->tmp_path = malloc(n);
    if (!out->tmp_path) goto nomem;
    snprintf(out->tmp_path, n, "%s.tmp.%ld", out->target, (long)getpid());

    out->fd = open(out->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (out->fd < 0) {
        if (errno == EEXIST)
            bc_error_set(err, BC_ERR_IO, "%s: temporary file %s already exists (is this path opened twice?)",
                         path, out->tmp_path);
        else
            bc_error_set(err, BC_ERR_IO, "%s: cannot create the file: %s (temporary file %s)", path, strerror(errno),
                         out->tmp_path);
        goto fail;
    }

    if (ends_with(path, ".gz")) {
        /* gzclose closes its descriptor; give it a duplicate so commit can
         * still fsync the original after the gzip trailer is written. */
        int gfd = dup(out->fd);
        if (gfd < 0) {
            bc_error_set(err, BC_ERR_IO, "%s: dup: %s", path, strerror(errno));
            goto fail_unlink;
        }
        out->gz = gzdopen(gfd, "wb");
        if (!out->gz) {
            close(gfd);
            bc_error_set(err, BC_ERR_NOMEM, "%s: cannot start gzip stream", path);
            goto fail_unlink;
        }
    } else {
        out->fp = fdopen(out->fd, "wb");
        if (!out->fp) {
            bc_error_set(err, BC_ERR_IO, "%s: fdopen: %s", path, strerror(errno));
            goto fail_unlink;
        }
    }
    return out;

fail_unlink:
    close(out->fd);
    unlink(out->tmp_path);
    goto fail;
nomem:
    bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
fail:
    free_output(out);
    return NULL;
}

/* Proves that open can create target (path as the user wrote it): the
 * folders after its first start characters (an existing, writable folder
 * and its slash) are made, a temporary file is created in the last one, and both are
 * removed again, so what the user sees is as it was. access() alone says
 * yes to root for /proc or a read-only mount; only trying tells. */
static bc_status prove_creatable(const char *path, const char *target, size_t start, bc_error *err) {
    char *p = dup_string(target);
    if (!p) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    char *last = strrchr(p, '/');
    size_t file_at = last ? (size_t)(last - p) : 0; /* the folder part of target ends here */
    size_t made[64], n_made = 0;                    /* ends of the folders this check made */
    bc_status st = BC_OK;
    for (size_t i = start; last && i <= file_at && st == BC_OK; i++) {
        if (p[i] != '/' && i != file_at) continue;
        char saved = p[i];
        p[i] = '\0';
        if (mkdir(p, 0700) != 0) {
            if (errno != EEXIST) st = bc_error_set(err, BC_ERR_IO, "%s: cannot create folder %s: %s", path, p, strerror(errno));
        } else if (n_made < sizeof made / sizeof made[0]) {
            made[n_made++] = i;
        } else {
            rmdir(p);
            st = bc_error_set(err, BC_ERR_IO, "%s: more than %zu folders to create", path, sizeof made / sizeof made[0]);
        }
        p[i] = saved;
    }
    if (st == BC_OK) {
        if (last) p[file_at] = '\0';
        const char *folder = last ? (file_at ? p : "/") : ".";
        size_t cap = strlen(folder) + 32;
        char *probe = malloc(cap);
        if (probe) snprintf(probe, cap, "%s/.benchctl-check.XXXXXX", folder);
        int fd = probe ? mkstemp(probe) : -1;
        if (!probe) st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
        else if (fd < 0)
            st = bc_error_set(err, BC_ERR_IO, "%s: cannot create the file: folder %s: %s", path, folder,
                              strerror(errno));
        else {
            close(fd);
            unlink(probe);
        }
        free(probe);
        if (last) p[file_at] = '/';
    }
    while (n_made > 0) { /* the deepest first */
        p[made[--n_made]] = '\0';
        rmdir(p);
    }
    free(p);
    return st;
}

/* ------------------------------------------- standard output for results */

/* While plugins run (bc_output_divert_stdout), the results' own copy of
 * the original standard output; NULL otherwise. */
static FILE *g_results;
static int g_results_fd = -1;

FILE *bc_output_results(void) { return g_results ? g_results : stdout; }

bc_status bc_output_divert_stdout(bc_error *err) {
    if (g_results) return BC_OK;
    fflush(stdout);
    int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return bc_error_set(err, BC_ERR_IO, "cannot keep standard output for the results: %s", strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return bc_error_set(err, BC_ERR_NOMEM, "cannot keep standard output for the results: out of memory");
    }
    if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        fclose(f);
        return bc_error_set(err, BC_ERR_IO, "cannot point standard output at standard error: %s", strerror(errno));
    }
    g_results = f, g_results_fd = fd;
    return BC_OK;
}

void bc_output_restore_stdout(void) {
    if (!g_results) return;
    fflush(stdout); /* what plugins printed goes where fd 1 points now: standard error */
    fflush(g_results);
    dup2(g_results_fd, STDOUT_FILENO);
    fclose(g_results); /* closes g_results_fd */
    g_results = NULL, g_results_fd = -1;
}

bc_status bc_output_check(const char *path, bc_error *err) {
    if (!path || !*path) return bc_error_set(err, BC_ERR_INVALID, "output path is empty");
    if (strcmp(path, "-") == 0) return BC_OK;
    char *target = NULL;
    bc_status tst = output_target(path, &target, err);
    if (tst != BC_OK) return tst;
    struct stat sb;
    char *dir = dup_string(target); /* the folder part is cut off below; target stays whole */
    if (!dir) {
        free(target);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    }
    /* the nearest folder above path that exists: open creates the rest */
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    bc_status st = BC_OK;
    for (;;) {
        if (stat(dir, &sb) == 0) {
            if (!S_ISDIR(sb.st_mode))
                st = bc_error_set(err, BC_ERR_IO, "%s: cannot create the file: %s is not a folder", path, dir);
            else if (access(dir, W_OK | X_OK) != 0)
                st = bc_error_set(err, BC_ERR_IO, "%s: cannot create the file: folder %s: %s", path, dir,
                                  strerror(errno));
            else /* "." for a relative target without it: nothing of target exists yet */
                st = prove_creatable(path, target,
                                     strcmp(dir, ".") == 0 && strncmp(target, "./", 2) != 0 ? 0 : strlen(dir) + 1, err);
            break;
        }
        if (errno != ENOENT) {
            st = bc_error_set(err, BC_ERR_IO, "%s: cannot create the file: %s: %s", path, dir, strerror(errno));
            break;
        }
        slash = strrchr(dir, '/');
        if (!slash) strcpy(dir, ".");
        else if (slash == dir) dir[1] = '\0';
        else *slash = '\0';
    }
    free(dir);
    if (st != BC_OK) {
        free(target);
        return st;
    }
    st = claim(path, target, err);
    free(target);
    return st;
}

/* Remembers the first failure so commit reports it; returns it too. */
static bc_status note_failure(bc_output *out, bc_error *err, bc_status code, const char *what) {
    if (out->failed == BC_OK) {
        out->failed = code;
        snprintf(out->failed_msg, sizeof out->failed_msg, "%s", what);
    }
    return bc_error_set(err, code, "%s: %s", out->path, what);
}

bc_status bc_output_write(bc_output *out, const void *data, size_t len, bc_error *err) {
    if (!out) return bc_error_set(err, BC_ERR_INVALID, "bc_output_write: no output");
    if (out->failed != BC_OK) return bc_error_set(err, out->failed, "%s: %s", out->path, out->failed_msg);
    if (len == 0) return BC_OK;
    if (out->gz) {
        const unsigned char *p = data;
        while (len > 0) { /* gzwrite takes an unsigned int length */
            unsigned chunk = len > (1u << 30) ? (1u << 30) : (unsigned)len;
            int wrote = gzwrite(out->gz, p, chunk);
            if (wrote <= 0) {
                int zerr = 0;
                const char *msg = gzerror(out->gz, &zerr);
                char what[300];
                snprintf(what, sizeof what, "gzip write failed: %s",
                         zerr == Z_ERRNO ? strerror(errno) : (msg ? msg : "unknown"));
                return note_failure(out, err, BC_ERR_IO, what);
            }
            p += wrote;
            len -= (size_t)wrote;
        }
        return BC_OK;
    }
    if (fwrite(data, 1, len, out->fp) != len) {
        char what[300];
        snprintf(what, sizeof what, "write failed: %s", strerror(errno));
        return note_failure(out, err, BC_ERR_IO, what);
    }
    return BC_OK;
}

bc_status bc_output_vprintf(bc_output *out, bc_error *err, const char *fmt, va_list ap) {
    if (!out) return bc_error_set(err, BC_ERR_INVALID, "bc_output_vprintf: no output");
    char small[1024];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) return note_failure(out, err, BC_ERR_INVALID, "bad format string");
    if ((size_t)n < sizeof small) return bc_output_write(out, small, (size_t)n, err);
    char *big = malloc((size_t)n + 1);
    if (!big) return note_failure(out, err, BC_ERR_NOMEM, "out of memory formatting output");
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    bc_status st = bc_output_write(out, big, (size_t)n, err);
    free(big);
    return st;
}

bc_status bc_output_commit(bc_output *out, bc_error *err) {
    if (!out) return bc_error_set(err, BC_ERR_INVALID, "bc_output_commit: no output");
    if (out->is_stdout) {
        bc_status st = out->failed;
        if (st != BC_OK) {
            bc_error_set(err, st, "%s: %s", out->path, out->failed_msg);
        } else if (fflush(out->fp) != 0) {
            st = bc_error_set(err, BC_ERR_IO, "standard output: %s", strerror(errno));
        }
        free_output(out);
        return st;
    }

    bc_status st = out->failed;
    char what[400];
    snprintf(what, sizeof what, "%s", out->failed_msg);
    if (out->gz) {
        int zrc = gzclose(out->gz); /* writes the trailer, closes the dup */
        out->gz = NULL;
        if (st == BC_OK && zrc != Z_OK) {
            st = BC_ERR_IO;
            snprintf(what, sizeof what, "gzip close failed (zlib code %d)", zrc);
        }
    } else if (out->fp) {
        if (st == BC_OK && fflush(out->fp) != 0) {
            st = BC_ERR_IO;
            snprintf(what, sizeof what, "flush failed: %s", strerror(errno));
        }
    }
    if (st == BC_OK && fsync(out->fd) != 0) {
        st = BC_ERR_IO;
        snprintf(what, sizeof what, "fsync failed: %s", strerror(errno));
    }
    if (out->fp) {
        if (fclose(out->fp) != 0 && st == BC_OK) { /* also closes fd */
            st = BC_ERR_IO;
            snprintf(what, sizeof what, "close failed: %s", strerror(errno));
        }
        out->fp = NULL;
    } else if (close(out->fd) != 0 && st == BC_OK) {
        st = BC_ERR_IO;
        snprintf(what, sizeof what, "close failed: %s", strerror(errno));
    }
    out->fd = -1;
    struct stat sb;
    if (st == BC_OK && lstat(out->target, &sb) == 0 && !S_ISREG(sb.st_mode)) { /* changed since open */
        st = BC_ERR_IO;
        snprintf(what, sizeof what, "%s became %s while the output was written; it is not replaced", out->target,
                 S_ISLNK(sb.st_mode) ? "a symbolic link" : bc_file_kind(sb.st_mode));
    }
    if (st == BC_OK && rename(out->tmp_path, out->target) != 0) {
        st = BC_ERR_IO;
        snprintf(what, sizeof what, "cannot rename %s into place: %s", out->tmp_path, strerror(errno));
    }
    if (st != BC_OK) {
        unlink(out->tmp_path);
        bc_error_set(err, st, "%s: %s", out->path, what);
    } else {
        sync_parent_dir(out->target);
    }
    free_output(out);
    return st;
}

void bc_output_abort(bc_output *out) {
    if (!out) return;
    if (out->is_stdout) {
        fflush(out->fp);
        free_output(out);
        return;
    }
    if (out->gz) gzclose(out->gz);
    if (out->fp) {
        fclose(out->fp);
    } else if (out->fd >= 0) {
        close(out->fd);
    }
    unlink(out->tmp_path);
    free_output(out);
}
