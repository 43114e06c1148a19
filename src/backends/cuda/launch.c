/* The CUDA backend's algorithms (cuDNN's measured choice, cuBLASLt's
 * heuristic) and launches. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

const char *algo_name(cudnnConvolutionFwdAlgo_t a) {
    static const char *const names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
                                        "winograd", "winograd_nonfused"};
    return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

static const char *bwd_algo_name(cudnnConvolutionBwdDataAlgo_t a) {
    static const char *const names[] = {"algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused"};
    return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

/* ---- launches --------------------------------------------------------------- */

static bool conv_epilogue(prog *P, step *s, bool relu, char *err, size_t es) {
    const cval *y = &P->v[s->out];
    int64_t c = y->dims[1], outer = y->dims[0], inner = c && outer ? vnumel(y) / (c * outer) : 0;
    if (s->bias < 0 && s->z < 0 && !relu) return true;
    return CUDA(sc_channel_affine(dptr(P, s->out), NULL, s->bias >= 0 ? dptr(P, s->bias) : NULL, dptr(P, s->z),
                                  dptr(P, s->out), outer, c, inner, relu, P->stream), s->what);
}

bool launch(prog *P, step *s, char *err, size_t es) {
    cudaStream_t st = P->stream;
    void *y = dptr(P, s->out);
    switch (s->kind) {
    case S_UNARY: return CUDA(sc_unary(s->uop, dptr(P, s->x0), y, s->n, s->a, s->b, st), s->what);
    case S_BINARY: return CUDA(sc_binary(s->bop, dptr(P, s->x0), dptr(P, s->x1), y, &s->bc, s->n, st), s->what);
    case S_AFFINE:
        return CUDA(sc_channel_affine(dptr(P, s->x0), dptr(P, s->scale), dptr(P, s->shift), NULL, y, s->outer, s->ch,
                                      s->inner, s->relu, st), s->what);
    case S_CONV: {
        float one = 1.f, zero = 0.f, a2 = s->z >= 0 ? 1.f : 0.f;
        void *ws = s->ws ? P->ws : NULL;
        if (s->fused)
            return DNN(cudnnConvolutionBiasActivationForward(P->dnn, &one, s->xd, dptr(P, s->x0), s->wd, dptr(P, s->w), s->cd,
                                                             s->algo, ws, s->ws, &a2, s->yd, s->z >= 0 ? dptr(P, s->z) : y,
                                                             s->bd, dptr(P, s->bias), s->ad, s->yd, y), s->what);
        return DNN(cudnnConvolutionForward(P->dnn, &one, s->xd, dptr(P, s->x0), s->wd, dptr(P, s->w), s->cd, s->algo, ws,
                                           s->ws, &zero, s->yd, y), s->what) &&
               conv_epilogue(P, s, s->relu, err, es);
    }
    case S_DECONV: {
        float one = 1.f, zero = 0.f;
        return DNN(cudnnConvolutionBackwardData(P->dnn, &one, s->wd, dptr(P, s->w), s->xd, dptr(P, s->x0), s->cd, s->balgo,
                                                s->ws ? P->ws : NULL, s->ws, &zero, s->yd, y), s->what) &&
               conv_epilogue(P, s, false, err, es);
    }
    case S_RESIZE: return CUDA(sc_resize(dptr(P, s->x0), y, &s->rz, s->n, st), s->what);
    case S_RNN: {
        const int *v = s->rv;
        for (int64_t t = 0; t < s->rnn.seq; t++)
            if (!CUDA(sc_rnn_step(&s->rnn, t, dptr(P, v[0]), dptr(P, v[1]), dptr(P, v[2]), dptr(P, v[3]), dptr(P, v[4]),
                                  dptr(P, v[5]), y, dptr(P, v[6]), dptr(P, v[7]), dptr(P, v[8]), st), s->what))
                return false;
        return true;
    }
    case S_GEMM: {
        float zero = 0.f;
        return LT(cublasLtMatmul(P->lt, s->md, &s->alpha, dptr(P, s->op_a), s->la, dptr(P, s->op_b), s->lb, &zero, y, s->ld, y,
                                 s->ld, &s->lalgo, P->ws, LT_WORKSPACE, st), s->what);
    }
    case S_POOL: return CUDA(sc_pool2d(dptr(P, s->x0), y, &s->pd, st), s->what);
    case S_REDUCE: return CUDA(sc_reduce(s->rop, dptr(P, s->x0), y, &s->rd, st), s->what);
    case S_SOFTMAX: return CUDA(sc_softmax(dptr(P, s->x0), y, s->rows, s->cols, s->log, st), s->what);
    case S_LN:
        return CUDA(sc_layernorm(dptr(P, s->x0), dptr(P, s->gamma), dptr(P, s->beta), y, s->rows, s->cols, s->eps, st),
                    s->what);
    case S_STRIDED: return CUDA(sc_strided_copy(dptr(P, s->x0), y, &s->sd, s->n, st), s->what);
    case S_CAST: return CUDA(sc_cast(dptr(P, s->x0), s->from, y, s->to, s->n, st), s->what);
    case S_MASK: return CUDA(sc_mask(s->mop, s->elem, dptr(P, s->x0), dptr(P, s->x1), y, &s->bc, s->n, st), s->what);
    case S_WHERE:
        return CUDA(sc_where(dptr(P, s->x0), dptr(P, s->x1), dptr(P, s->x2), y, s->elem, &s->bc, s->n, st), s->what);
    case S_PAD: return CUDA(sc_pad_copy(dptr(P, s->x0), y, &s->pad, s->n, st), s->what);
    case S_CONCAT: {
        int64_t off = 0;
        for (int k = 0; k < s->n_in; k++) {
            const cval *x = &P->v[s->in[k]];
            int64_t inner = s->outer ? vnumel(x) / s->outer : 0;
            if (inner > 0 && s->outer > 0 &&
                !CUDA(cudaMemcpy2DAsync((float *)y + off, (size_t)s->inner * 4, dptr(P, s->in[k]), (size_t)inner * 4,
                                        (size_t)inner * 4, (size_t)s->outer, cudaMemcpyDeviceToDevice, st), s->what))
                return false;
            off += inner;
        }
        return true;
    }
    case S_GATHER:
        return CUDA(sc_gather(dptr(P, s->op_a), dptr(P, s->op_b), s->idx64, y, s->g_outer, s->g_nidx, s->g_axis, s->g_inner, st),
                    s->what);
    }
    return FAIL("subgraph '%s': %s: unknown step", P->name, s->what);
}

/* The boundary copies and every step, on the stream (captured or not). */
bool enqueue(prog *P, char *err, size_t es) {
    for (int k = 0; k < P->n_in; k++) {
        const cval *v = &P->v[P->in_vals[k]];
        if (v->nbytes && !CUDA(cudaMemcpyAsync(dptr(P, P->in_vals[k]), (char *)P->pin_in + P->in_off[k], v->nbytes,
                                               cudaMemcpyHostToDevice, P->stream), v->name))
            return false;
    }
    if (P->sync_steps && !CUDA(cudaStreamSynchronize(P->stream), "the input copies")) return false;
    for (int i = 0; i < P->n_steps; i++) {
        if (!launch(P, &P->steps[i], err, es)) return false;
        if (P->sync_steps && !CUDA(cudaStreamSynchronize(P->stream), P->steps[i].what)) return false;
    }
    for (int k = 0; k < P->n_out; k++) {
        const cval *v = &P->v[P->out_vals[k]];
        if (v->nbytes && !CUDA(cudaMemcpyAsync((char *)P->pin_out + P->out_off[k], dptr(P, P->out_vals[k]), v->nbytes,
                                               cudaMemcpyDeviceToHost, P->stream), v->name))
            return false;
    }
    if (P->sync_steps && !CUDA(cudaStreamSynchronize(P->stream), "the output copies")) return false;
    return true;
}

/* ---- algorithms ------------------------------------------------------------- */

/* FFT and non-fused Winograd transform the data in float32 and lose more
 * than the convolution's own rounding: on inception_v3 (an H200, cuDNN
 * 9.19) picks of FFT_TILING put the output 5.0e-3 of its scale from the CPU
 * kernels' (below 1e-4 otherwise). They are measured only with
 * conv_algos=all, or tf32=on, where precision is traded already. */
static bool fwd_exact(const prog *P, cudnnConvolutionFwdAlgo_t a) {
    return P->all_algos || (a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
                            a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED);
}
static bool bwd_exact(const prog *P, cudnnConvolutionBwdDataAlgo_t a) {
    return P->all_algos || (a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
                            a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED);
}

bool choose_conv(prog *P, step *s, char *err, size_t es) {
    size_t free_b = 0, total_b = 0;
    if (!CUDA(cudaMemGetInfo(&free_b, &total_b), s->what)) return false;
    size_t limit = free_b / 4 < CONV_WORKSPACE_MAX ? free_b / 4 : CONV_WORKSPACE_MAX;
    void *ws = NULL;
    if (cudaMalloc(&ws, limit) != cudaSuccess) {
        (void)cudaGetLastError();
        ws = NULL, limit = 0;
    }
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int got = 0;
    cudnnStatus_t fs = cudnnFindConvolutionForwardAlgorithmEx(P->dnn, s->xd, dptr(P, s->x0), s->wd, dptr(P, s->w), s->cd, s->yd,
                                                              dptr(P, s->out), 8, &got, perf, ws, limit);
    if (ws) cudaFree(ws);
    int pick = -1;
    for (int i = 0; fs == CUDNN_STATUS_SUCCESS && i < got && pick < 0; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit &&
            (P->tf32 || (perf[i].mathType != CUDNN_TENSOR_OP_MATH && perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) &&
            fwd_exact(P, perf[i].algo))
            pick = i;
    const char *how = "measured by cudnnFindConvolutionForwardAlgorithmEx";
    if (pick < 0) { /* the heuristic instead */
        if (!DNN(cudnnGetConvolutionForwardAlgorithm_v7(P->dnn, s->xd, s->wd, s->cd, s->yd, 8, &got, perf), s->what)) return false;
        for (int i = 0; i < got && pick < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS &&
                (P->tf32 || (perf[i].mathType != CUDNN_TENSOR_OP_MATH && perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) &&
            fwd_exact(P, perf[i].algo))
                pick = i;
        if (pick < 0) return FAIL("subgraph '%s': %s: cuDNN offers no forward algorithm for this convolution", P->name, s->what);
        how = fs == CUDNN_STATUS_SUCCESS ? "heuristic (no measured algorithm fit)" : "heuristic (the measurement failed)";
        size_t need = 0;
        if (!DNN(cudnnGetConvolutionForwardWorkspaceSize(P->dnn, s->xd, s->wd, s->cd, s->yd, perf[pick].algo, &need), s->what))
            return false;
        perf[pick].memory = need;
    }
    s->algo = perf[pick].algo;
    s->math = perf[pick].mathType;
    s->ws = perf[pick].memory;
    if (!DNN(cudnnSetConvolutionMathType(s->cd, s->math), s->what)) return false;
    snprintf(s->info, sizeof(s->info), "cuDNN %s (algo %d, %s, %s math, workspace %zu B)%s", algo_name(s->algo), (int)s->algo, how,
             s->math == CUDNN_FMA_MATH ? "FMA" : s->math == CUDNN_DEFAULT_MATH ? "default" : "tensor-op", s->ws,
             s->fused ? ", bias+relu fused (cudnnConvolutionBiasActivationForward)" : s->bias >= 0 || s->z >= 0 ? ", + epilogue kernel" : "");
    return true;
}

/* ConvTranspose's backward-data algorithm, as choose_conv picks the forward's:
 * measured on the real buffers (the output is written), else the heuristic. */
bool choose_deconv(prog *P, step *s, char *err, size_t es) {
    size_t free_b = 0, total_b = 0;
    if (!CUDA(cudaMemGetInfo(&free_b, &total_b), s->what)) return false;
    size_t limit = free_b / 4 < CONV_WORKSPACE_MAX ? free_b / 4 : CONV_WORKSPACE_MAX;
    void *ws = NULL;
    if (cudaMalloc(&ws, limit) != cudaSuccess) {
        (void)cudaGetLastError();
        ws = NULL, limit = 0;
    }
    cudnnConvolutionBwdDataAlgoPerf_t perf[8];
    int got = 0;
    cudnnStatus_t fs = cudnnFindConvolutionBackwardDataAlgorithmEx(P->dnn, s->wd, dptr(P, s->w), s->xd, dptr(P, s->x0), s->cd, s->yd,
                                                                   dptr(P, s->out), 8, &got, perf, ws, limit);
    if (ws) cudaFree(ws);
    int pick = -1;
    for (int i = 0; fs == CUDNN_STATUS_SUCCESS && i < got && pick < 0; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit &&
            (P->tf32 || (perf[i].mathType != CUDNN_TENSOR_OP_MATH && perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) &&
            bwd_exact(P, perf[i].algo))
            pick = i;
    const char *how = "measured by cudnnFindConvolutionBackwardDataAlgorithmEx";
    if (pick < 0) { /* the heuristic instead */
        if (!DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(P->dnn, s->wd, s->xd, s->cd, s->yd, 8, &got, perf), s->what)) return false;
        for (int i = 0; i < got && pick < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS &&
                (P->tf32 || (perf[i].mathType != CUDNN_TENSOR_OP_MATH && perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) &&
            bwd_exact(P, perf[i].algo))
                pick = i;
        if (pick < 0) return FAIL("subgraph '%s': %s: cuDNN offers no backward-data algorithm for this ConvTranspose", P->name, s->what);
        how = fs == CUDNN_STATUS_SUCCESS ? "heuristic (no measured algorithm fit)" : "heuristic (the measurement failed)";
        size_t need = 0;
        if (!DNN(cudnnGetConvolutionBackwardDataWorkspaceSize(P->dnn, s->wd, s->xd, s->cd, s->yd, perf[pick].algo, &need), s->what))
            return false;
        perf[pick].memory = need;
    }
    s->balgo = perf[pick].algo;
    s->math = perf[pick].mathType;
    s->ws = perf[pick].memory;
    if (!DNN(cudnnSetConvolutionMathType(s->cd, s->math), s->what)) return false;
    snprintf(s->info, sizeof(s->info), "cuDNN backward data %s (algo %d, %s, %s math, workspace %zu B)%s", bwd_algo_name(s->balgo),
             (int)s->balgo, how, s->math == CUDNN_FMA_MATH ? "FMA" : s->math == CUDNN_DEFAULT_MATH ? "default" : "tensor-op", s->ws,
             s->bias >= 0 ? ", + bias epilogue kernel" : "");
    return true;
}

bool choose_gemm(prog *P, step *s, char *err, size_t es) {
    if (s->bias >= 0) {
        void *b = dptr(P, s->bias);
        if (!LT(cublasLtMatmulDescSetAttribute(s->md, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof(b)), s->what)) return false;
    }
    cublasLtMatmulPreference_t pref = NULL;
    uint64_t wsz = LT_WORKSPACE;
    cublasLtMatmulHeuristicResult_t res;
    int got = 0;
    memset(&res, 0, sizeof(res));
    bool ok = LT(cublasLtMatmulPreferenceCreate(&pref), s->what) &&
              LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof(wsz)), s->what) &&
              LT(cublasLtMatmulAlgoGetHeuristic(P->lt, s->md, s->la, s->lb, s->ld, s->ld, pref, 1, &res, &got), s->what);
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (!ok) return false;
    if (got < 1 || res.state != CUBLAS_STATUS_SUCCESS)
        return FAIL("subgraph '%s': %s: cuBLASLt has no algorithm for %lldx%lldx%lld (batch %lld)", P->name, s->what,
                    (long long)s->m, (long long)s->nn, (long long)s->k, (long long)s->batch);
    s->lalgo = res.algo;
    int id = -1, tile = -1;
    cublasLtMatmulAlgoConfigGetAttribute(&s->lalgo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), NULL);
    cublasLtMatmulAlgoConfigGetAttribute(&s->lalgo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), NULL);
    snprintf(s->info, sizeof(s->info), "cuBLASLt algo %d tile %d (heuristic), M %lld N %lld K %lld batch %lld, %s, epilogue %d", id,
             tile, (long long)s->m, (long long)s->nn, (long long)s->k, (long long)s->batch,
             P->tf32 ? "TF32" : "fp32 (CUBLAS_COMPUTE_32F)", (int)s->epi);
    return true;
}
