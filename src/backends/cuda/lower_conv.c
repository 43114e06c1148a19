/* The CUDA backend's lowering of convolutions (cuDNN) and matrix products
 * (cuBLASLt), with their fusions. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

/* BatchNormalization's per-channel scale and shift (host, malloc'd). */
bool bn_factors(prog *P, const cnode *bn, float **scale, float **shift, int64_t *c_out, char *err, size_t es) {
    const cval *g = &P->v[bn->in[1]], *b = &P->v[bn->in[2]], *m = &P->v[bn->in[3]], *var = &P->v[bn->in[4]];
    int64_t c = vnumel(g);
    if (!g->host || !b->host || !m->host || !var->host)
        return FAIL("subgraph '%s': node %d '%s': BatchNormalization's statistics are not constants", P->name, bn->index, bn->name);
    *scale = malloc((size_t)c * sizeof(float) + 1);
    *shift = malloc((size_t)c * sizeof(float) + 1);
    if (!*scale || !*shift) return FAIL("subgraph '%s': out of memory", P->name);
    for (int64_t i = 0; i < c; i++) {
        float s = ((const float *)g->host)[i] / sqrtf(((const float *)var->host)[i] + bn->p.eps);
        (*scale)[i] = s;
        (*shift)[i] = ((const float *)b->host)[i] - ((const float *)m->host)[i] * s;
    }
    *c_out = c;
    return true;
}

bool to_int(int64_t v, int *out) {
    if (v < 0 || v > 0x7fffffff) return false;
    *out = (int)v;
    return true;
}

/* Conv [+ BatchNormalization] [+ Add] [+ Relu]. */
/* A Conv's unequal pads: a Pad step by the difference (zeros on the side
 * with more), then cuDNN's convolution with the smaller pads on both sides
 * (into sym). The value the convolution reads (the input itself when the
 * pads are equal), or -1 with err set. */
static int pad_unequal(prog *P, const cnode *n, const cval *x, int64_t *sym, char *err, size_t es) {
    const cu_params *p = &n->p;
    bool uneven = false;
    for (int i = 0; i < p->nsp; i++) {
        sym[i] = p->pads[i] < p->pads_end[i] ? p->pads[i] : p->pads_end[i];
        uneven |= p->pads[i] != p->pads_end[i];
    }
    if (!uneven) return n->in[0];
    int64_t pd[SC_MAX_RANK];
    char nm[512];
    memcpy(pd, x->dims, sizeof(pd));
    for (int i = 0; i < p->nsp; i++) pd[2 + i] += p->pads[i] + p->pads_end[i] - 2 * sym[i];
    snprintf(nm, sizeof(nm), "%s:cuda_padded", n->name);
    int xin = value_of(P, nm, SEAM_DTYPE_FLOAT32, x->rank, pd);
    if (xin < 0) return snprintf(err, es, "subgraph '%s': out of memory", P->name), -1;
    step *ps = new_step(P, S_PAD, n, "Pad (Conv's unequal pads)", xin, err, es);
    if (!ps) return -1;
    ps->pad.rank = x->rank, ps->pad.mode = SC_PAD_CONSTANT, ps->pad.value = 0.0f;
    for (int32_t d = 0; d < x->rank; d++) ps->pad.odims[d] = pd[d], ps->pad.idims[d] = x->dims[d], ps->pad.p0[d] = 0;
    for (int i = 0; i < p->nsp; i++) ps->pad.p0[2 + i] = p->pads[i] - sym[i];
    ps->n = vnumel(&P->v[xin]);
    snprintf(ps->info, sizeof(ps->info), "seam pad kernel (cuDNN pads both sides alike)");
    return reads(P, ps, n->in[0], err, es) ? xin : -1;
}

bool lower_conv(prog *P, cnode *n, char *err, size_t es) {
    const cu_params *p = &n->p;
    int cur = n->out, bn = -1, add = -1, relu = -1, z = -1;
    char ops[160];
    snprintf(ops, sizeof(ops), "Conv");
    if ((bn = sole_reader(P, cur, "BatchNormalization")) >= 0 && P->nodes[bn].in[0] == cur) {
        P->nodes[bn].done = true;
        cur = P->nodes[bn].out;
        strcat(ops, "+BatchNormalization");
    } else {
        bn = -1;
    }
    if ((add = sole_reader(P, cur, "Add")) >= 0) {
        cnode *a = &P->nodes[add];
        int other = a->in[0] == cur ? a->in[1] : a->in[0];
        const cval *o = &P->v[other], *c = &P->v[cur];
        bool same = other >= 0 && (a->in[0] == cur) != (a->in[1] == cur) && !P->v[o->root].is_const && P->v[o->root].ready &&
                    o->rank == c->rank && !memcmp(o->dims, c->dims, (size_t)c->rank * sizeof(int64_t));
        if (same) {
            a->done = true;
            z = other;
            cur = a->out;
            strcat(ops, "+Add");
        } else {
            add = -1;
        }
    }
    if ((relu = sole_reader(P, cur, "Relu")) >= 0) {
        P->nodes[relu].done = true;
        cur = P->nodes[relu].out;
        strcat(ops, "+Relu");
    }
    cval xv = P->v[n->in[0]];
    const cval wv = P->v[n->in[1]], yv = P->v[cur]; /* copies: new_const may move P->v */
    const cval *x = &xv, *w = &wv, *y = &yv;
    if (!w->host) return FAIL("subgraph '%s': node %d '%s': Conv's weights are not a constant", P->name, n->index, n->name);
    int64_t k_out = w->dims[0], wn = vnumel(w), per = k_out ? wn / k_out : 0;
    float *wf = NULL, *bf = calloc((size_t)k_out + 1, sizeof(float));
    if (!bf) return FAIL("subgraph '%s': out of memory", P->name);
    if (n->n_in > 2 && n->in[2] >= 0) {
        const cval *b = &P->v[n->in[2]];
        if (!b->host || vnumel(b) != k_out) {
            free(bf);
            return FAIL("subgraph '%s': node %d '%s': Conv's bias is not a constant of %lld values", P->name, n->index,
                        n->name, (long long)k_out);
        }
        memcpy(bf, b->host, (size_t)k_out * sizeof(float));
    }
    bool has_bias = n->n_in > 2 && n->in[2] >= 0;
    int wid;
    char nm[512];
    if (bn >= 0) {
        float *scale = NULL, *shift = NULL;
        int64_t c = 0;
        bool ok = bn_factors(P, &P->nodes[bn], &scale, &shift, &c, err, es) && c == k_out;
        if (ok && !(wf = malloc((size_t)wn * sizeof(float) + 1))) ok = false;
        if (ok) {
            for (int64_t o = 0; o < k_out; o++) {
                for (int64_t i = 0; i < per; i++) wf[o * per + i] = ((const float *)w->host)[o * per + i] * scale[o];
                bf[o] = bf[o] * scale[o] + shift[o];
            }
            has_bias = true;
        } else if (!err[0]) {
            snprintf(err, es, "subgraph '%s': node %d '%s': folding BatchNormalization failed", P->name, n->index, n->name);
        }
        free(scale);
        free(shift);
        if (!ok) {
            free(wf), free(bf);
            return false;
        }
        snprintf(nm, sizeof(nm), "%s:cuda_folded_w", n->name);
        wid = new_const(P, nm, w->rank, w->dims, wf, err, es);
    } else {
        wid = n->in[1];
        if (!upload(P, wid, err, es)) wid = -1;
    }
    int bid = -1;
    if (wid >= 0 && (has_bias || relu >= 0)) { /* the fused forward wants a bias: zeros when there is none */
        snprintf(nm, sizeof(nm), "%s:cuda_bias", n->name);
        bid = new_const(P, nm, 1, &k_out, bf, err, es);
    }
    free(wf);
    free(bf);
    if (wid < 0 || ((has_bias || relu >= 0) && bid < 0)) return false;
    int64_t sym[3];
    int xin = pad_unequal(P, n, x, sym, err, es);
    if (xin < 0) return false;
    xv = P->v[xin];
    int out = value_of(P, P->v[cur].name, SEAM_DTYPE_FLOAT32, y->rank, y->dims);
    step *s = new_step(P, S_CONV, n, ops, out, err, es);
    if (!s) return false;
    s->w = wid, s->bias = bid, s->z = z, s->relu = relu >= 0;
    s->x0 = xin;
    if (!reads(P, s, xin, err, es) || !reads(P, s, z, err, es)) return false;
    /* descriptors: a 1-D convolution is a 2-D one of height 1 */
    int nd = x->rank == 3 ? 4 : x->rank, xdims[5], wdims[5], ydims[5], xst[5], yst[5], pads[3], str[3], dil[3];
    int off = x->rank == 3 ? 1 : 0;
    for (int d = 0, i = 0; d < nd; d++) {
        bool one = off && d == 2;
        if (one) {
            xdims[d] = wdims[d] = ydims[d] = 1;
            continue;
        }
        if (!to_int(x->dims[i], &xdims[d]) || !to_int(w->dims[i], &wdims[d]) || !to_int(y->dims[i], &ydims[d]))
            return FAIL("subgraph '%s': %s: a dim over 2^31 (cuDNN takes int)", P->name, s->what);
        i++;
    }
    for (int d = 0; d < nd - 2; d++) {
        int src = d - off;
        if (src < 0) {
            pads[d] = 0, str[d] = 1, dil[d] = 1;
            continue;
        }
        if (!to_int(sym[src], &pads[d]) || !to_int(p->strides[src], &str[d]) || !to_int(p->dil[src], &dil[d]))
            return FAIL("subgraph '%s': %s: pads, strides or dilations over 2^31", P->name, s->what);
    }
    xst[nd - 1] = yst[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--) xst[d] = xst[d + 1] * xdims[d + 1], yst[d] = yst[d + 1] * ydims[d + 1];
    if (!DNN(cudnnCreateTensorDescriptor(&s->xd), s->what) || !DNN(cudnnCreateTensorDescriptor(&s->yd), s->what) ||
        !DNN(cudnnCreateTensorDescriptor(&s->bd), s->what) || !DNN(cudnnCreateFilterDescriptor(&s->wd), s->what) ||
        !DNN(cudnnCreateConvolutionDescriptor(&s->cd), s->what) || !DNN(cudnnCreateActivationDescriptor(&s->ad), s->what))
        return false;
    int bdims[5] = {1, ydims[1], 1, 1, 1}, bst[5] = {ydims[1], 1, 1, 1, 1};
    int odims[5];
    if (!DNN(cudnnSetTensorNdDescriptor(s->xd, CUDNN_DATA_FLOAT, nd, xdims, xst), s->what) ||
        !DNN(cudnnSetTensorNdDescriptor(s->yd, CUDNN_DATA_FLOAT, nd, ydims, yst), s->what) ||
        !DNN(cudnnSetTensorNdDescriptor(s->bd, CUDNN_DATA_FLOAT, nd, bdims, bst), s->what) ||
        !DNN(cudnnSetFilterNdDescriptor(s->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, nd, wdims), s->what) ||
        !DNN(cudnnSetConvolutionNdDescriptor(s->cd, nd - 2, pads, str, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), s->what) ||
        !DNN(cudnnSetConvolutionGroupCount(s->cd, (int)p->group), s->what) ||
        !DNN(cudnnSetConvolutionMathType(s->cd, P->tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH), s->what) ||
        !DNN(cudnnSetActivationDescriptor(s->ad, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0), s->what) ||
        !DNN(cudnnGetConvolutionNdForwardOutputDim(s->cd, s->xd, s->wd, nd, odims), s->what))
        return false;
    for (int d = 0; d < nd; d++)
        if (odims[d] != ydims[d])
            return FAIL("subgraph '%s': %s: cuDNN's output dim %d is %d, the model's %d", P->name, s->what, d, odims[d], ydims[d]);
    s->fused = s->relu; /* cudnnConvolutionBiasActivationForward; without Relu, the forward and an epilogue */
    return true;
}

/* ConvTranspose [+ bias]: cuDNN's backward data of the convolution whose
 * input is ConvTranspose's output (dx) and whose output is its input (dy).
 * ONNX's weights [C_in, C_out/group, k...] are that convolution's filter
 * (K = C_in, C = C_out/group) as they are; the bias is the epilogue
 * kernel's. */
bool lower_deconv(prog *P, cnode *n, char *err, size_t es) {
    const cu_params *p = &n->p;
    const cval xv = P->v[n->in[0]], wv = P->v[n->in[1]], yv = P->v[n->out]; /* copies, as lower_conv's */
    const cval *x = &xv, *w = &wv, *y = &yv;
    if (!w->host) return FAIL("subgraph '%s': node %d '%s': ConvTranspose's weights are not a constant", P->name, n->index, n->name);
    int bias = n->n_in > 2 ? n->in[2] : -1;
    if (bias >= 0 && (!P->v[bias].host || vnumel(&P->v[bias]) != y->dims[1]))
        return FAIL("subgraph '%s': node %d '%s': ConvTranspose's bias is not a constant of %lld values", P->name, n->index, n->name,
                    (long long)y->dims[1]);
    step *s = new_step(P, S_DECONV, n, NULL, n->out, err, es);
    if (!s) return false;
    s->w = n->in[1], s->bias = bias;
    if (!upload(P, s->w, err, es) || !reads(P, s, bias, err, es) || !reads(P, s, n->in[0], err, es)) return false;
    /* descriptors: a 1-D one is a 2-D one of height 1 */
    int nd = x->rank == 3 ? 4 : x->rank, xdims[5], wdims[5], ydims[5], xst[5], yst[5], pads[3], str[3], dil[3], odims[5];
    int off = x->rank == 3 ? 1 : 0;
    for (int d = 0, i = 0; d < nd; d++) {
        if (off && d == 2) {
            xdims[d] = wdims[d] = ydims[d] = 1;
            continue;
        }
        if (!to_int(x->dims[i], &xdims[d]) || !to_int(w->dims[i], &wdims[d]) || !to_int(y->dims[i], &ydims[d]))
            return FAIL("subgraph '%s': %s: a dim over 2^31 (cuDNN takes int)", P->name, s->what);
        i++;
    }
    for (int d = 0; d < nd - 2; d++) {
        int src = d - off;
        if (src < 0) {
            pads[d] = 0, str[d] = 1, dil[d] = 1;
            continue;
        }
        if (!to_int(p->pads[src], &pads[d]) || !to_int(p->strides[src], &str[d]) || !to_int(p->dil[src], &dil[d]))
            return FAIL("subgraph '%s': %s: pads, strides or dilations over 2^31", P->name, s->what);
    }
    xst[nd - 1] = yst[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--) xst[d] = xst[d + 1] * xdims[d + 1], yst[d] = yst[d + 1] * ydims[d + 1];
    if (!DNN(cudnnCreateTensorDescriptor(&s->xd), s->what) || !DNN(cudnnCreateTensorDescriptor(&s->yd), s->what) ||
        !DNN(cudnnCreateFilterDescriptor(&s->wd), s->what) || !DNN(cudnnCreateConvolutionDescriptor(&s->cd), s->what))
        return false;
    if (!DNN(cudnnSetTensorNdDescriptor(s->xd, CUDNN_DATA_FLOAT, nd, xdims, xst), s->what) ||
        !DNN(cudnnSetTensorNdDescriptor(s->yd, CUDNN_DATA_FLOAT, nd, ydims, yst), s->what) ||
        !DNN(cudnnSetFilterNdDescriptor(s->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, nd, wdims), s->what) ||
        !DNN(cudnnSetConvolutionNdDescriptor(s->cd, nd - 2, pads, str, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), s->what) ||
        !DNN(cudnnSetConvolutionGroupCount(s->cd, (int)p->group), s->what) ||
        !DNN(cudnnSetConvolutionMathType(s->cd, P->tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH), s->what) ||
        !DNN(cudnnGetConvolutionNdForwardOutputDim(s->cd, s->yd, s->wd, nd, odims), s->what))
        return false;
    /* the transposed convolution's forward, of the output's dims, must give the input's */
    for (int d = 0; d < nd; d++)
        if (odims[d] != xdims[d])
            return FAIL("subgraph '%s': %s: the forward convolution of the output's dims gives dim %d = %d, the input has %d", P->name,
                        s->what, d, odims[d], xdims[d]);
    return true;
}

/* Gemm / MatMul [+ bias Add] [+ Relu | tanh Gelu] through cuBLASLt. */
bool lower_matmul(prog *P, cnode *n, char *err, size_t es) {
    const cu_params *p = &n->p;
    const cval *A = &P->v[n->in[0]], *B = &P->v[n->in[1]];
    int cur = n->out, act = -1;
    char ops[120];
    snprintf(ops, sizeof(ops), "%s", n->op);
    int64_t M, N, K, batch = 1;
    bool ta = false, tb = false;
    if (p->kind == K_GEMM) {
        ta = p->trans_a, tb = p->trans_b;
        M = ta ? A->dims[1] : A->dims[0];
        K = ta ? A->dims[0] : A->dims[1];
        N = tb ? B->dims[0] : B->dims[1];
    } else {
        K = A->dims[A->rank - 1];
        M = A->rank >= 2 ? A->dims[A->rank - 2] : 1;
        N = B->rank >= 2 ? B->dims[B->rank - 1] : 1;
        if (B->rank <= 2) M = K ? vnumel(A) / K : 0; /* A's batch folds into rows */
        else
            for (int32_t d = 0; d < B->rank - 2; d++) batch *= B->dims[d];
    }
    float *bias = NULL;
    bool has_bias = false;
    if (p->kind == K_GEMM && n->n_in > 2 && n->in[2] >= 0) {
        const cval *c = &P->v[n->in[2]];
        if (!c->host) return FAIL("subgraph '%s': node %d '%s': Gemm's C is not a constant", P->name, n->index, n->name);
        if (!(bias = malloc((size_t)N * sizeof(float) + 1))) return FAIL("subgraph '%s': out of memory", P->name);
        int64_t e = vnumel(c);
        for (int64_t j = 0; j < N; j++) bias[j] = p->beta * ((const float *)c->host)[e == 1 ? 0 : j];
        has_bias = true;
    }
    int add;
    if (!has_bias && p->kind == K_MATMUL && (add = sole_reader(P, cur, "Add")) >= 0) {
        cnode *a = &P->nodes[add];
        int other = a->in[0] == cur ? a->in[1] : a->in[0];
        const cval *o = other >= 0 ? &P->v[other] : NULL;
        bool row = o && o->host && (a->in[0] == cur) != (a->in[1] == cur) && vnumel(o) == N && o->rank <= P->v[a->out].rank &&
                   o->rank >= 1 && o->dims[o->rank - 1] == N;
        if (row) {
            if (!(bias = malloc((size_t)N * sizeof(float) + 1))) return FAIL("subgraph '%s': out of memory", P->name);
            memcpy(bias, o->host, (size_t)N * sizeof(float));
            has_bias = true;
            a->done = true;
            cur = a->out;
            strcat(ops, "+Add");
        }
    }
    cublasLtEpilogue_t epi = has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if ((act = sole_reader(P, cur, "Relu")) >= 0) {
        epi = has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
        strcat(ops, "+Relu");
    } else if ((act = sole_reader(P, cur, "Gelu")) >= 0 && P->nodes[act].p.uop == SC_GELU_TANH) {
        epi = has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
        strcat(ops, "+Gelu(tanh)");
    } else {
        act = -1; /* erf Gelu: cuBLASLt's GELU is the tanh form */
    }
    if (act >= 0) P->nodes[act].done = true, cur = P->nodes[act].out;
    int bid = -1;
    if (has_bias) {
        char nm[512];
        snprintf(nm, sizeof(nm), "%s:cuda_bias", n->name);
        bid = new_const(P, nm, 1, &N, bias, err, es);
    }
    free(bias);
    if (has_bias && bid < 0) return false;
    const cval *y = &P->v[cur];
    int out = value_of(P, y->name, SEAM_DTYPE_FLOAT32, y->rank, y->dims);
    step *s = new_step(P, S_GEMM, n, ops, out, err, es);
    if (!s) return false;
    s->op_a = n->in[1], s->op_b = n->in[0], s->bias = bid, s->epi = epi;
    s->alpha = p->kind == K_GEMM ? p->alpha : 1.0f;
    s->m = M, s->nn = N, s->k = K, s->batch = batch;
    if (!reads(P, s, n->in[0], err, es) || !reads(P, s, n->in[1], err, es)) return false;
    cublasComputeType_t ct = P->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    /* row-major Y[M,N] = A[M,K] B[K,N] is column-major Y^T = B^T A^T: Lt's A is ONNX's B */
    if (!LT(cublasLtMatmulDescCreate(&s->md, ct, CUDA_R_32F), s->what) ||
        !LT(cublasLtMatmulDescSetAttribute(s->md, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)), s->what) ||
        !LT(cublasLtMatmulDescSetAttribute(s->md, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)), s->what) ||
        !LT(cublasLtMatmulDescSetAttribute(s->md, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), s->what) ||
        !LT(cublasLtMatrixLayoutCreate(&s->la, CUDA_R_32F, (uint64_t)(tb ? K : N), (uint64_t)(tb ? N : K), tb ? K : N), s->what) ||
        !LT(cublasLtMatrixLayoutCreate(&s->lb, CUDA_R_32F, (uint64_t)(ta ? M : K), (uint64_t)(ta ? K : M), ta ? M : K), s->what) ||
        !LT(cublasLtMatrixLayoutCreate(&s->ld, CUDA_R_32F, (uint64_t)N, (uint64_t)M, N), s->what))
        return false;
    if (batch > 1) {
        int32_t bc = (int32_t)batch;
        int64_t sa = K * N, sb = M * K, sd = M * N;
        if (!LT(cublasLtMatrixLayoutSetAttribute(s->la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)), s->what) ||
            !LT(cublasLtMatrixLayoutSetAttribute(s->lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)), s->what) ||
            !LT(cublasLtMatrixLayoutSetAttribute(s->ld, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)), s->what) ||
            !LT(cublasLtMatrixLayoutSetAttribute(s->la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof(sa)), s->what) ||
            !LT(cublasLtMatrixLayoutSetAttribute(s->lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof(sb)), s->what) ||
            !LT(cublasLtMatrixLayoutSetAttribute(s->ld, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sd, sizeof(sd)), s->what))
            return false;
    }
    return true;
}
