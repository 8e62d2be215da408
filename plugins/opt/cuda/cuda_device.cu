/* cuda_device.cu: the device side of cuda_forward.h that is not the model:
 * opening a device (and the one-line "no CUDA device" error), the accounted
 * allocator (cudaMalloc behind cuda_mem.h), copies, and the event pool that
 * times prefill and decode on the stream. cudart is linked statically, so
 * this loads on a machine without libcuda.so and fails cleanly there.
 */
#include <cuda_runtime.h>
#include <cublasLt.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

int opt_cuda_device_count(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

static int dev_alloc(void *ctx, void **p, size_t bytes, char *msg, size_t msg_len) {
    (void)ctx;
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaSuccess) return 0;
    (void)cudaGetLastError();
    snprintf(msg, msg_len, "%s", cudaGetErrorString(e));
    *p = NULL;
    return 1;
}

static void dev_free(void *ctx, void *p) {
    (void)ctx;
    cudaFree(p);
}

bc_status opt_cuda_device_open(opt_cuda_device **out, int index, bc_error *err) {
    *out = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return bc_error_set(err, BC_ERR_DEVICE, "no CUDA device: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    }
    if (n == 0) return bc_error_set(err, BC_ERR_DEVICE, "no CUDA device: the driver reports none");
    if (index < 0 || index >= n)
        return bc_error_set(err, BC_ERR_DEVICE, "no CUDA device: device_index %d, but %d device(s) visible", index, n);
    cudaDeviceProp prop;
    CU_CHECK(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
    if (prop.major < 8)
        return bc_error_set(err, BC_ERR_DEVICE,
                            "no CUDA device: device %d (%s) is sm_%d%d; this build has code for sm_80 and newer", index,
                            prop.name, prop.major, prop.minor);
    CU_CHECK(cudaSetDevice(index), "cudaSetDevice");
    opt_cuda_device *d = (opt_cuda_device *)calloc(1, sizeof *d);
    if (!d) return bc_error_set(err, BC_ERR_NOMEM, "CUDA device: no host memory");
    d->index = index;
    snprintf(d->name, sizeof d->name, "%s (sm_%d%d, %.1f GiB)", prop.name, prop.major, prop.minor,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(d);
        return bc_error_set(err, BC_ERR_DEVICE, "CUDA cudaStreamCreate: %s", cudaGetErrorString(e));
    }
    cublasStatus_t s = cublasLtCreate(&d->lt);
    if (s != CUBLAS_STATUS_SUCCESS) {
        cudaStreamDestroy(d->stream);
        free(d);
        return bc_error_set(err, BC_ERR_DEVICE, "cuBLASLt: cublasLtCreate: %s", cublasLtGetStatusString(s));
    }
    opt_cuda_alloc_iface io = {NULL, dev_alloc, dev_free};
    opt_cuda_mem_init(&d->mem, &io);
    *out = d;
    return BC_OK;
}

void opt_cuda_device_close(opt_cuda_device *d) {
    if (!d) return;
    cudaSetDevice(d->index);
    cudaStreamSynchronize(d->stream);
    for (int i = 0; i < d->n_events; i++) cudaEventDestroy(d->events[i]);
    free(d->events);
    cublasLtDestroy(d->lt);
    cudaStreamDestroy(d->stream);
    free(d);
}

void opt_cuda_driver_version(char *buf, size_t len) {
    int drv = 0, rt = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = 0;
    (void)cudaGetLastError();
    snprintf(buf, len, "CUDA driver %d.%d, runtime %d.%d", drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
}

const char *opt_cuda_device_name(const opt_cuda_device *d) { return d->name; }
opt_cuda_mem *opt_cuda_device_mem(opt_cuda_device *d) { return &d->mem; }

bc_status opt_cuda_mem_get_info(opt_cuda_device *d, size_t *free_bytes, size_t *total_bytes, bc_error *err) {
    cudaSetDevice(d->index);
    CU_CHECK(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
    return BC_OK;
}

bc_status opt_cuda_sync(opt_cuda_device *d, bc_error *err) {
    CU_CHECK(cudaStreamSynchronize(d->stream), "stream synchronize");
    CU_CHECK(cudaGetLastError(), "kernel");
    return BC_OK;
}

bc_status opt_cuda_alloc(opt_cuda_device *d, opt_cuda_mem_kind kind, size_t bytes, void **d_p, const char *what,
                         bc_error *err) {
    return opt_cuda_mem_alloc(&d->mem, kind, bytes, d_p, what, err);
}

void opt_cuda_free(opt_cuda_device *d, opt_cuda_mem_kind kind, void *d_p, size_t bytes) {
    opt_cuda_mem_free(&d->mem, kind, d_p, bytes);
}

bc_status opt_cuda_upload(opt_cuda_device *d, void *d_dst, const void *src, size_t bytes, bc_error *err) {
    CU_CHECK(cudaMemcpyAsync(d_dst, src, bytes, cudaMemcpyHostToDevice, d->stream), "copy to device");
    /* src may be reused by the caller at once: pageable copies are staged, but
     * wait so that holds for pinned memory too */
    CU_CHECK(cudaStreamSynchronize(d->stream), "copy to device");
    return BC_OK;
}

bc_status opt_cuda_download(opt_cuda_device *d, void *dst, const void *d_src, size_t bytes, bc_error *err) {
    CU_CHECK(cudaMemcpyAsync(dst, d_src, bytes, cudaMemcpyDeviceToHost, d->stream), "copy to host");
    CU_CHECK(cudaStreamSynchronize(d->stream), "copy to host");
    return BC_OK;
}

bc_status opt_cuda_copy(opt_cuda_device *d, void *d_dst, const void *d_src, size_t bytes, bc_error *err) {
    CU_CHECK(cudaMemcpyAsync(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice, d->stream), "copy on device");
    return BC_OK;
}

void opt_cuda_marks_reset(opt_cuda_device *d) { d->n_marks = 0; }

int opt_cuda_mark(opt_cuda_device *d) {
    if (d->n_marks >= OPT_CUDA_MARKS) return -1;
    if (d->n_marks == d->n_events) {
        if (!d->events) {
            d->events = (cudaEvent_t *)calloc(OPT_CUDA_MARKS, sizeof *d->events);
            if (!d->events) return -1;
        }
        if (cudaEventCreate(&d->events[d->n_events]) != cudaSuccess) return -1;
        d->n_events++;
    }
    cudaEventRecord(d->events[d->n_marks], d->stream);
    return d->n_marks++;
}

double opt_cuda_marks_ms(opt_cuda_device *d, int from, int to) {
    if (from < 0 || to < 0 || from >= d->n_marks || to >= d->n_marks) return 0.0;
    float ms = 0.0f;
    cudaEventSynchronize(d->events[to]);
    if (cudaEventElapsedTime(&ms, d->events[from], d->events[to]) != cudaSuccess) return 0.0;
    return (double)ms;
}
