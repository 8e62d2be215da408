/* cuda_gemm.cu: the OPT forward's GEMMs through cuBLASLt (see
 * cuda_internal.h): one plan (descriptors + the heuristic's algorithm) per
 * shape, epilogue and output type, cached in the model; bias (+ ReLU) as
 * cuBLASLt's epilogue, or bias_act_kernel where it has none. fp32 runs use
 * no TF32 (CUBLAS_COMPUTE_32F).
 */
#include <cuda_runtime.h>
#include <cublasLt.h>

#include <string.h>

#include "cuda_internal.h"
#include "cuda_kernels.h"

static void plan_destroy(lt_plan *p) {
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->c) cublasLtMatrixLayoutDestroy(p->c);
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof *p);
}

/* Descriptors and the heuristic's first algorithm for y^T[N, M] = op(W) x^T
 * with cuBLASLt epilogue lt_epi (0 none, 1 bias, 2 bias + ReLU). Returns the
 * cuBLASLt status; *found = 0 when no algorithm fits. */
static cublasStatus_t plan_make(opt_cuda_model *m, lt_plan *p, int M, int K, int N, int lt_epi, const float *bias,
                                int y_dt, int *found) {
    *found = 0;
    memset(p, 0, sizeof *p);
    const cudaDataType_t yt = y_dt ? cuda_type(m->dt) : CUDA_R_32F;
    const cudaDataType_t ab = cuda_type(m->dt);
    cublasStatus_t s;
#define LTP(call)                                    \
    do {                                             \
        if ((s = (call)) != CUBLAS_STATUS_SUCCESS) { \
            plan_destroy(p);                         \
            return s;                                \
        }                                            \
    } while (0)
    LTP(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LTP(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LTP(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtEpilogue_t e = lt_epi == 2 ? CUBLASLT_EPILOGUE_RELU_BIAS : lt_epi == 1 ? CUBLASLT_EPILOGUE_BIAS
                                                                                   : CUBLASLT_EPILOGUE_DEFAULT;
    LTP(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
    if (lt_epi) {
        cudaDataType_t bt = CUDA_R_32F;
        LTP(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        LTP(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    LTP(cublasLtMatrixLayoutCreate(&p->a, ab, K, N, K));
    LTP(cublasLtMatrixLayoutCreate(&p->b, ab, K, M, K));
    LTP(cublasLtMatrixLayoutCreate(&p->c, yt, N, M, N));
    cublasLtMatmulPreference_t pref;
    LTP(cublasLtMatmulPreferenceCreate(&pref));
    size_t wsb = OPT_CUDA_LT_WORKSPACE;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
    /* alignment the heuristic may assume: weights sit on 64-byte boundaries of the arena
     * (model.c); activations and logits on 256 (cuda_plan.h), but callers may pass others */
    uint32_t al_a = 64, al_other = 16;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_other, sizeof al_other);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_other, sizeof al_other);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_other, sizeof al_other);
    cublasLtMatmulHeuristicResult_t res;
    int nres = 0;
    s = cublasLtMatmulAlgoGetHeuristic(m->dev->lt, p->op, p->a, p->b, p->c, p->c, pref, 1, &res, &nres);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED) s = CUBLAS_STATUS_SUCCESS, nres = 0;
    if (s != CUBLAS_STATUS_SUCCESS || nres == 0) {
        plan_destroy(p);
        return s;
    }
#undef LTP
    p->algo = res.algo;
    p->M = M, p->N = N, p->K = K, p->lt_epi = lt_epi, p->y_dt = y_dt;
    *found = 1;
    return CUBLAS_STATUS_SUCCESS;
}

/* y[M, N] = x[M, K] (dt) W[N, K]^T (dt) (+ bias[N] fp32) (ReLU when relu),
 * y in fp32, or in the run's dtype when y_dt (rounded from the fp32 result).
 * Column-major view for cuBLASLt: y^T[N, M] = op(W)[N, K] x^T[K, M].
 * The bias (+ ReLU) is cuBLASLt's epilogue. For an fp32 y, where cuBLASLt has
 * no algorithm with that epilogue, a plain GEMM and bias_act_kernel (same
 * fp32 math). For a dtype y with no algorithm (or a call cuBLASLt refuses):
 * *done = 0 and nothing runs (the caller takes the fp32 route); done may be
 * NULL for fp32. */
bc_status opt_cuda_gemm_ex(opt_cuda_model *m, void *y, const void *x, const void *W, const float *bias, int M, int K,
                           int N, int relu, int y_dt, int *done, bc_error *err) {
    const int epi = bias ? (relu ? 2 : 1) : 0;
    if (done) *done = 0;
    /* the kernels queued since the last check: their launch errors are ours
     * to report, before a cuBLASLt call can take them (host side, no sync) */
    const cudaError_t le = cudaGetLastError();
    if (le != cudaSuccess)
        return bc_error_set(err, BC_ERR_DEVICE, "CUDA kernel launch before the GEMM M %d, K %d, N %d: %s", M, K, N,
                            cudaGetErrorString(le));
    lt_plan *p = NULL;
    for (int i = 0; i < m->n_plans && !p; i++) {
        lt_plan *c = &m->plans[i];
        if (c->M == M && c->N == N && c->K == K && c->epi == epi && c->y_dt == y_dt) p = c;
    }
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    if (!p) {
        if (m->n_plans == LT_PLANS) opt_cuda_gemm_plans_clear(m);
        p = &m->plans[m->n_plans];
        int found = 0;
        s = plan_make(m, p, M, K, N, epi, bias, y_dt, &found);
        if (y_dt && s != CUBLAS_STATUS_SUCCESS) s = CUBLAS_STATUS_SUCCESS, found = 0; /* any refusal: the fp32 route */
        if (s == CUBLAS_STATUS_SUCCESS && !found && epi && !y_dt) s = plan_make(m, p, M, K, N, 0, NULL, 0, &found);
        if (s != CUBLAS_STATUS_SUCCESS || (!found && !y_dt))
            return bc_error_set(err, BC_ERR_DEVICE, "cuBLASLt has no algorithm for M %d, K %d, N %d in %s: %s", M, K,
                                N, eng_dtype_name(m->dt), cublasLtGetStatusString(s));
        if (!found) { /* remember the miss for a dtype output */
            memset(p, 0, sizeof *p);
            p->M = M, p->N = N, p->K = K, p->y_dt = y_dt, p->none = 1;
        }
        p->epi = epi;
        m->n_plans++;
    } else if (p->lt_epi) {
        s = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    }
    if (p->none) return BC_OK; /* *done stays 0 */
    const float alpha = 1.0f, beta = 0.0f;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmul(m->dev->lt, p->op, &alpha, W, p->a, x, p->b, &beta, y, p->c, y, p->c, &p->algo,
                           m->d_ws + m->wl.lt, OPT_CUDA_LT_WORKSPACE, m->dev->stream);
    if (s != CUBLAS_STATUS_SUCCESS && y_dt) {
        /* a dtype output with an fp32 bias is outside cuBLASLt's documented
         * bias types (bias type = D's type): a refusal at run time is a miss
         * like the heuristic's, remembered; the caller takes the fp32 route */
        plan_destroy(p);
        p->M = M, p->N = N, p->K = K, p->epi = epi, p->y_dt = y_dt, p->none = 1;
        return BC_OK;
    }
    if (s != CUBLAS_STATUS_SUCCESS)
        return bc_error_set(err, BC_ERR_DEVICE, "cuBLASLt matmul (M %d, K %d, N %d, %s): %s", M, K, N,
                            eng_dtype_name(m->dt), cublasLtGetStatusString(s));
    if (p->epi && !p->lt_epi) {
        opt_cuda_launch_bias_act(m->dev->stream, (float *)y, bias, M, N, p->epi == 2);
        m->n_epilogue_fallbacks++;
    }
    if (done) *done = 1;
    return BC_OK;
}

bc_status opt_cuda_gemm(opt_cuda_model *m, float *y, const void *x, const void *W, const float *bias, int M, int K,
                        int N, int relu, bc_error *err) {
    return opt_cuda_gemm_ex(m, y, x, W, bias, M, K, N, relu, 0, NULL, err);
}

void opt_cuda_gemm_plans_clear(opt_cuda_model *m) {
    for (int i = 0; i < m->n_plans; i++) plan_destroy(&m->plans[i]);
    m->n_plans = 0;
}

int64_t opt_cuda_epilogue_fallbacks(const opt_cuda_model *m) { return m->n_epilogue_fallbacks; }

