/* cuda_internal.h: what the .cu files of plugins/opt/cuda share (the device
 * struct and the error macro); C++/CUDA only, not part of the API. */
#ifndef OPT_CUDA_INTERNAL_H
#define OPT_CUDA_INTERNAL_H

#include <cuda_runtime.h>
#include <cublasLt.h>

extern "C" {
#include "cuda_forward.h"
#include "cuda_graphs.h"
#include "cuda_plan.h"
}

struct opt_cuda_device {
    int index;
    char name[320];
    cudaStream_t stream;       /* every kernel and copy of this device */
    cublasLtHandle_t lt;
    opt_cuda_mem mem;          /* accounting of every device allocation */
    cudaEvent_t *events;       /* [OPT_CUDA_MARKS] pool, created on first use */
    int n_events, n_marks;
};

/* Returns BC_ERR_DEVICE from the enclosing function (which has bc_error *err). */
#define CU_CHECK(call, what)                                                                          \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess) {                                                                      \
            (void)cudaGetLastError();                                                                 \
            return bc_error_set(err, BC_ERR_DEVICE, "CUDA %s: %s", (what), cudaGetErrorString(e_));    \
        }                                                                                             \
    } while (0)

#endif
