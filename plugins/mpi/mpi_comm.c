/* mpi_comm.c: the "mpi" comm plugin: joins the ranks of a distributed run
 * through MPI (Open MPI from Debian; docs/scale.md). The one file of benchctl
 * that includes mpi.h; the core loads it only when the process was launched
 * by mpirun (or bench.cfg names it), so a single-process run needs no MPI.
 *
 * Every hook is a thin call of one MPI collective on MPI_COMM_WORLD. Errors
 * keep MPI's default handler (MPI_ERRORS_ARE_FATAL): a rank that dies takes
 * the job down, as the issue asks; the return codes are still checked.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>

#include "benchctl/plugin.h"

typedef struct mpi_comm {
    const bc_host *host;
    int initialized_here; /* 1: MPI_Init was ours, so MPI_Finalize is too */
} mpi_comm;

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

static bc_status comm_open(const bc_host *host, const bc_settings *settings, void **out, bc_comm_info *info,
                           bc_error *err) {
    (void)settings;
    mpi_comm *m = calloc(1, sizeof *m); /* owned by the instance; freed by comm_close */
    if (!m) return bc_error_set(err, BC_ERR_NOMEM, "mpi: out of memory");
    m->host = host;
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
    if (m->initialized_here && !finalized) MPI_Finalize();
    free(m);
}

static bc_status comm_barrier(void *instance, bc_error *err) {
    (void)instance;
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? BC_OK : mpi_fail(err, "mpi: MPI_Barrier", rc);
}

static bc_status comm_broadcast(void *instance, void *buf, size_t n_bytes, bc_error *err) {
    (void)instance;
    if (n_bytes > INT_MAX) return bc_error_set(err, BC_ERR_INVALID, "mpi: broadcast of %zu bytes (at most %d)", n_bytes, INT_MAX);
    int rc = MPI_Bcast(buf, (int)n_bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? BC_OK : mpi_fail(err, "mpi: MPI_Bcast", rc);
}

static bc_status comm_allgather(void *instance, const void *send, size_t n_bytes, void *recv, bc_error *err) {
    (void)instance;
    if (n_bytes > INT_MAX) return bc_error_set(err, BC_ERR_INVALID, "mpi: allgather of %zu bytes (at most %d)", n_bytes, INT_MAX);
    int rc = MPI_Allgather(send, (int)n_bytes, MPI_BYTE, recv, (int)n_bytes, MPI_BYTE, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? BC_OK : mpi_fail(err, "mpi: MPI_Allgather", rc);
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
    .setting_size = sizeof(bc_setting_desc),
    .ops = &ops,
};

BC_PLUGIN_DEFINE(desc)
