/* mpi_comm.c: the "mpi" comm plugin: joins the ranks of a distributed run
 * through MPI (Open MPI from Debian; docs/scale.md). The one file of benchctl
 * that includes mpi.h; the core loads it only when the process was launched
 * by mpirun (or bench.cfg names it), so a single-process run needs no MPI.
 *
 * Every collective has a deadline, the setting timeout_s (bench.cfg's
 * distributed.timeout_s: the host keeps the settings values until close and
 * sets that one once the config is known, so it is read at every call).
 * So that a rank that stops (SIGSTOP, a hung driver) is named rather than
 * waited for, the collectives are built from point-to-point messages
 * through rank 0, on a duplicate of MPI_COMM_WORLD:
 *   allgather  every rank sends its part to rank 0; rank 0 answers each
 *              with a header (all arrived, or the first rank that did not
 *              within timeout_s) and then, when all arrived, the whole
 *              array. A rank waits up to twice timeout_s for rank 0's
 *              header (rank 0 waits timeout_s itself before it answers).
 *   barrier    an allgather of one byte.
 *   broadcast  rank 0 sends the header and the data to every rank.
 * A missed deadline returns BC_ERR_IO naming the rank and its host, on
 * every rank that is still running; the host then fails the case and ends
 * the job (distributed.c). Errors keep MPI's default handler
 * (MPI_ERRORS_ARE_FATAL): a rank that dies takes the job down at once.
 * Waiting polls (MPI_Testall) with short sleeps, so a waiting rank leaves
 * the cores to the ranks still working.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchctl/plugin.h"

/* The deadline when bench.cfg gives none (docs/scale.md). */
#define MPI_DEFAULT_TIMEOUT_S 1800.0
#define MPI_HOST_MAX 64

enum { TAG_UP = 7101, TAG_HEADER = 7102, TAG_DOWN = 7103 };

typedef struct mpi_comm {
    const bc_host *host;
    const bc_settings *settings; /* the host's, live until close: timeout_s is read at every call */
    int initialized_here;        /* 1: MPI_Init was ours, so MPI_Finalize is too */
    MPI_Comm comm;               /* a duplicate of MPI_COMM_WORLD, for the messages below */
    int rank, size;
    char (*hosts)[MPI_HOST_MAX]; /* size: each rank's host, for the errors */
} mpi_comm;

/* What rank 0 answers before the data: -1 every rank arrived, else the
 * first rank that did not within the deadline. */
typedef struct wire_header {
    int32_t missing;
    int32_t pad_;
} wire_header;

static const bc_setting_desc settings_table[] = {
    {.name = "timeout_s", .type = BC_SETTING_FLOAT, .default_float = MPI_DEFAULT_TIMEOUT_S, .has_range = 1,
     .min = 0.01, .max = 1e7,
     .help = "seconds a rank waits in a collective for the others before the run fails, naming the rank"},
};

static double timeout_s(const mpi_comm *m) {
    if (!m->settings || m->settings->count < 1) return MPI_DEFAULT_TIMEOUT_S;
    double t = bc_setting_at(m->settings, 0)->f;
    return t > 0 ? t : MPI_DEFAULT_TIMEOUT_S;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* libmpi was loaded with this plugin, RTLD_LOCAL: Open MPI's own components
 * (dlopen'ed by MPI_Init) need its symbols global, so load it again with
 * RTLD_GLOBAL (RTLD_NOLOAD: the library already in memory, nothing new). */
static void make_libmpi_global(void) {
    Dl_info info;
    if (dladdr((void *)&MPI_Init, &info) && info.dli_fname) {
        void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
        (void)h; /* stays loaded with the plugin; the reference is dropped with the process */
    }
}

static bc_status mpi_fail(bc_error *err, const char *what, int rc) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return bc_error_set(err, BC_ERR_IO, "%s failed: %s", what, text);
}

/* Waits for the n requests until deadline (seconds, now_s's clock): 1 when
 * all completed, 0 at the deadline, -1 with *rc on an MPI error. *first_open
 * gets the first request still open at the deadline. */
static int wait_until(int n, MPI_Request *reqs, double deadline, int *first_open, int *rc) {
    for (unsigned spins = 0;; spins++) {
        int done = 0;
        *rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (*rc != MPI_SUCCESS) return -1;
        if (done) return 1;
        if (now_s() >= deadline) {
            for (int i = 0; i < n; i++) {
                int one = 0;
                if (reqs[i] != MPI_REQUEST_NULL && MPI_Test(&reqs[i], &one, MPI_STATUS_IGNORE) == MPI_SUCCESS && !one) {
                    *first_open = i;
                    return 0;
                }
            }
            return 1;
        }
        if (spins > 200) { /* a short wait stays a spin; a long one sleeps between polls */
            struct timespec ts = {0, spins > 2000 ? 1000000 : 100000};
            nanosleep(&ts, NULL);
        }
    }
}

static const char *host_of(const mpi_comm *m, int r) {
    return m->hosts && r >= 0 && r < m->size && m->hosts[r][0] ? m->hosts[r] : "?";
}

static bc_status missed(const mpi_comm *m, bc_error *err, const char *what, int r, double t) {
    return bc_error_set(err, BC_ERR_IO,
                        "mpi: rank %d (%s) did not reach the %s within %g s (distributed.timeout_s): stopped or hung",
                        r, host_of(m, r), what, t);
}

/* Rank 0: every rank's n bytes into recv (rank order, recv may be NULL
 * when n is 0 ... never: callers pass a buffer); answers each with the
 * header and, when all arrived, recv. */
static bc_status root_gather(mpi_comm *m, const char *what, const void *send, size_t n, void *recv, bc_error *err) {
    int w = m->size, rc = MPI_SUCCESS, open_at = -1;
    double t = timeout_s(m);
    memcpy(recv, send, n);
    MPI_Request *reqs = malloc((size_t)(2 * w) * sizeof *reqs);
    if (!reqs) return bc_error_set(err, BC_ERR_NOMEM, "mpi: out of memory for %d ranks", w);
    for (int r = 1; r < w; r++) {
        reqs[r - 1] = MPI_REQUEST_NULL;
        if ((rc = MPI_Irecv((char *)recv + (size_t)r * n, (int)n, MPI_BYTE, r, TAG_UP, m->comm, &reqs[r - 1])) !=
            MPI_SUCCESS) {
            free(reqs);
            return mpi_fail(err, "mpi: MPI_Irecv", rc);
        }
    }
    int got = wait_until(w - 1, reqs, now_s() + t, &open_at, &rc);
    if (got < 0) {
        free(reqs);
        return mpi_fail(err, "mpi: MPI_Testall", rc);
    }
    static wire_header ok = {.missing = -1}, bad;
    bad.missing = got ? -1 : open_at + 1;
    const wire_header *h = got ? &ok : &bad;
    int n_sends = 0;
    for (int r = 1; r < w; r++) { /* every rank that waits hears the outcome */
        if (!got && r == bad.missing) continue;
        MPI_Isend(h, (int)sizeof *h, MPI_BYTE, r, TAG_HEADER, m->comm, &reqs[n_sends++]);
        if (got) MPI_Isend(recv, (int)((size_t)w * n), MPI_BYTE, r, TAG_DOWN, m->comm, &reqs[n_sends++]);
    }
    if (!got) { /* the others were told; the job ends, so the sends are not waited for */
        free(reqs);
        return missed(m, err, what, bad.missing, t);
    }
    int sent = wait_until(n_sends, reqs, now_s() + t, &open_at, &rc);
    free(reqs);
    if (sent < 0) return mpi_fail(err, "mpi: MPI_Testall", rc);
    if (!sent) return missed(m, err, what, 1 + open_at / 2, t); /* two sends per rank, from rank 1 */
    return BC_OK;
}

/* Any other rank: its n bytes to rank 0 (n_up 0: nothing), then the header
 * and, when all arrived, n_down bytes into recv. */
static bc_status leaf_exchange(mpi_comm *m, const char *what, const void *send, size_t n_up, void *recv, size_t n_down,
                               bc_error *err) {
    int rc = MPI_SUCCESS, open_at = -1;
    double t = timeout_s(m);
    wire_header h = {.missing = -2};
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (n_up && (rc = MPI_Isend(send, (int)n_up, MPI_BYTE, 0, TAG_UP, m->comm, &reqs[0])) != MPI_SUCCESS)
        return mpi_fail(err, "mpi: MPI_Isend", rc);
    if ((rc = MPI_Irecv(&h, (int)sizeof h, MPI_BYTE, 0, TAG_HEADER, m->comm, &reqs[1])) != MPI_SUCCESS)
        return mpi_fail(err, "mpi: MPI_Irecv", rc);
    int got = wait_until(2, reqs, now_s() + 2 * t, &open_at, &rc);
    if (got < 0) return mpi_fail(err, "mpi: MPI_Testall", rc);
    if (!got) return missed(m, err, what, 0, t);
    if (h.missing >= 0) return missed(m, err, what, h.missing, t);
    MPI_Request down = MPI_REQUEST_NULL;
    if ((rc = MPI_Irecv(recv, (int)n_down, MPI_BYTE, 0, TAG_DOWN, m->comm, &down)) != MPI_SUCCESS)
        return mpi_fail(err, "mpi: MPI_Irecv", rc);
    got = wait_until(1, &down, now_s() + t, &open_at, &rc);
    if (got < 0) return mpi_fail(err, "mpi: MPI_Testall", rc);
    return got ? BC_OK : missed(m, err, what, 0, t);
}

static bc_status gather(mpi_comm *m, const char *what, const void *send, size_t n, void *recv, bc_error *err) {
    if ((size_t)m->size * n > INT_MAX)
        return bc_error_set(err, BC_ERR_INVALID, "mpi: %s of %zu bytes from %d ranks (at most %d in all)", what, n,
                            m->size, INT_MAX);
    if (m->size == 1) {
        memcpy(recv, send, n);
        return BC_OK;
    }
    return m->rank == 0 ? root_gather(m, what, send, n, recv, err)
                        : leaf_exchange(m, what, send, n, recv, (size_t)m->size * n, err);
}

static bc_status comm_open(const bc_host *host, const bc_settings *settings, void **out, bc_comm_info *info,
                           bc_error *err) {
    mpi_comm *m = calloc(1, sizeof *m); /* owned by the instance; freed by comm_close */
    if (!m) return bc_error_set(err, BC_ERR_NOMEM, "mpi: out of memory");
    m->host = host;
    m->settings = settings;
    m->comm = MPI_COMM_NULL;
    int done = 0;
    MPI_Initialized(&done);
    if (!done) {
        make_libmpi_global();
        int rc = MPI_Init(NULL, NULL);
        if (rc != MPI_SUCCESS) {
            free(m);
            return mpi_fail(err, "mpi: MPI_Init", rc);
        }
        m->initialized_here = 1;
    }
    int rank = 0, size = 1, local = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
    }
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
    m->rank = rank, m->size = size;
    m->hosts = calloc((size_t)size, sizeof *m->hosts);
    char me[MPI_HOST_MAX] = "";
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    if (rc == MPI_SUCCESS && MPI_Get_processor_name(name, &len) == MPI_SUCCESS) snprintf(me, sizeof me, "%s", name);
    if (rc != MPI_SUCCESS || !m->hosts ||
        (rc = MPI_Allgather(me, MPI_HOST_MAX, MPI_BYTE, m->hosts, MPI_HOST_MAX, MPI_BYTE, m->comm)) != MPI_SUCCESS) {
        bc_status st = rc != MPI_SUCCESS ? mpi_fail(err, "mpi: joining the ranks", rc)
                                         : bc_error_set(err, BC_ERR_NOMEM, "mpi: out of memory");
        if (m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
        free(m->hosts);
        if (m->initialized_here) MPI_Finalize();
        free(m);
        return st;
    }
    for (int r = 0; r < size; r++) m->hosts[r][MPI_HOST_MAX - 1] = '\0';
    BC_SET(info, bc_comm_info, rank, rank);
    BC_SET(info, bc_comm_info, world_size, size);
    BC_SET(info, bc_comm_info, local_rank, local);
    *out = m;
    return BC_OK;
}

static void comm_close(void *instance) {
    mpi_comm *m = instance;
    if (!m) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
    if (m->initialized_here && !finalized) MPI_Finalize();
    free(m->hosts);
    free(m);
}

static bc_status comm_barrier(void *instance, bc_error *err) {
    mpi_comm *m = instance;
    unsigned char one = 1, *all = malloc((size_t)m->size);
    if (!all) return bc_error_set(err, BC_ERR_NOMEM, "mpi: out of memory");
    bc_status st = gather(m, "barrier", &one, 1, all, err);
    free(all);
    return st;
}

static bc_status comm_broadcast(void *instance, void *buf, size_t n_bytes, bc_error *err) {
    mpi_comm *m = instance;
    if (n_bytes > INT_MAX) return bc_error_set(err, BC_ERR_INVALID, "mpi: broadcast of %zu bytes (at most %d)", n_bytes, INT_MAX);
    if (m->size == 1) return BC_OK;
    if (m->rank != 0) return leaf_exchange(m, "broadcast", NULL, 0, buf, n_bytes, err);
    int w = m->size, rc = MPI_SUCCESS, open_at = -1;
    MPI_Request *reqs = malloc((size_t)(2 * (w - 1)) * sizeof *reqs);
    if (!reqs) return bc_error_set(err, BC_ERR_NOMEM, "mpi: out of memory for %d ranks", w);
    static const wire_header ok = {.missing = -1};
    for (int r = 1; r < w; r++) {
        MPI_Isend(&ok, (int)sizeof ok, MPI_BYTE, r, TAG_HEADER, m->comm, &reqs[2 * (r - 1)]);
        MPI_Isend(buf, (int)n_bytes, MPI_BYTE, r, TAG_DOWN, m->comm, &reqs[2 * (r - 1) + 1]);
    }
    double t = timeout_s(m);
    int sent = wait_until(2 * (w - 1), reqs, now_s() + t, &open_at, &rc);
    free(reqs);
    if (sent < 0) return mpi_fail(err, "mpi: MPI_Testall", rc);
    return sent ? BC_OK : missed(m, err, "broadcast", 1 + open_at / 2, t);
}

static bc_status comm_allgather(void *instance, const void *send, size_t n_bytes, void *recv, bc_error *err) {
    return gather(instance, "allgather", send, n_bytes, recv, err);
}

static void comm_abort(void *instance, int status) {
    (void)instance;
    MPI_Abort(MPI_COMM_WORLD, status);
}

static const bc_comm_ops ops = {
    .struct_size = sizeof(bc_comm_ops),
    .open = comm_open,
    .close = comm_close,
    .barrier = comm_barrier,
    .broadcast = comm_broadcast,
    .allgather = comm_allgather,
    .abort = comm_abort,
};

static const bc_plugin_desc desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_COMM,
    .name = "mpi",
    .version = "0.1.0",
    .description = "joins the ranks of a run launched by mpirun (Open MPI)",
    BC_SETTINGS_TABLE(settings_table),
    .ops = &ops,
};

BC_PLUGIN_DEFINE(desc)
