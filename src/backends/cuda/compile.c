/*
 * The CUDA backend's compiler and runner: a subgraph becomes a list of
 * steps (cuDNN convolutions, cuBLASLt matrix products, kernels of seam's
 * own), its values get offsets in one device arena planned by lifetime,
 * weights are uploaded once, and the launches, with the boundary copies
 * through pinned host buffers, are captured once into a CUDA graph that
 * each run replays. Nothing is allocated at run time.
 *
 * Order of compile: read the nodes (cu_parse, values), lower them to steps
 * (with fusions: Conv [+ BatchNormalization] [+ Add] [+ Relu], Gemm/MatMul
 * [+ bias Add] [+ Relu | tanh Gelu], BatchNormalization [+ Relu]), plan
 * the arena, allocate, choose the algorithms (cudnnFindConvolutionForward-
 * AlgorithmEx on the real buffers, cuBLASLt's heuristic), run every step
 * once (a warm-up that also checks each), then capture the graph.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "cuda_internal.h"

#define ALIGN 256
#define LT_WORKSPACE (32u << 20)
#define CONV_WORKSPACE_MAX ((size_t)512 << 20)

typedef struct cval {
    char *name;
    seam_dtype dtype;
    int32_t rank;
    int64_t dims[SC_MAX_RANK];
    size_t nbytes;
    int root;           /* the value whose memory it is (views alias) */
    bool is_const;      /* in the weights allocation */
    const void *host;   /* a model constant's data (during compile) */
    bool uploaded;
    size_t woff;        /* offset in the weights */
    int def, last;      /* steps (roots): -1 for boundary inputs */
    size_t off;         /* arena offset (roots) */
    bool placed;
    bool ready;         /* computed by an earlier step, an input or a constant */
    bool is_input;      /* a boundary input: never a constant */
    int readers, reader; /* nodes reading it, and the last of them */
    int out_k;          /* boundary output index, or -1 */
} cval;

typedef struct cnode {
    int32_t index;
    char *name;
    char op[40];
    cu_params p;
    int n_in;
    int *in;            /* value ids, -1 absent */
    int out;
    bool done;
} cnode;

typedef enum step_kind {
    S_UNARY, S_BINARY, S_AFFINE, S_CONV, S_GEMM, S_POOL, S_REDUCE, S_SOFTMAX, S_LN, S_STRIDED, S_CONCAT, S_GATHER
} step_kind;

typedef struct step {
    step_kind kind;
    char what[240];     /* node 12 'conv1' (Conv+BatchNormalization+Relu) */
    int *in, n_in;      /* values read (for lifetimes) */
    int x0, x1;         /* the node's first two inputs (-1 absent) */
    int out;
    sc_unary_op uop;
    float a, b;
    sc_binary_op bop;
    sc_bcast bc;
    int64_t n;
    int scale, shift, z, relu; /* affine / conv epilogue (value ids or -1) */
    int64_t outer, ch, inner;
    /* conv */
    cudnnTensorDescriptor_t xd, yd, bd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnActivationDescriptor_t ad;
    cudnnConvolutionFwdAlgo_t algo;
    cudnnMathType_t math;
    size_t ws;
    bool fused;
    int w, bias;
    /* gemm */
    cublasLtMatmulDesc_t md;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t lalgo;
    cublasLtEpilogue_t epi;
    float alpha;
    int op_a, op_b;     /* the values Lt reads as A (ONNX's B) and B (ONNX's A) */
    int64_t m, nn, k, batch;
    /* pools, rows, reductions, copies */
    sc_pool_desc pd;
    int64_t rows, cols;
    int log;
    float eps;
    int gamma, beta;
    sc_reduce_op rop;
    sc_reduce_desc rd;
    sc_strided sd;
    int idx64;
    int64_t g_outer, g_nidx, g_axis, g_inner;
    char info[200];     /* the kernel chosen, for the log */
} step;

typedef struct prog {
    char name[200];
    cval *v;
    int nv, cap_v;
    int *ht;
    int ht_cap;
    cnode *nodes;
    int n_nodes;
    step *steps;
    int n_steps, cap_steps;
    int *in_vals, n_in, *out_vals, n_out;
    unsigned char *wh; /* the weights, staged on the host */
    size_t wbytes, wcap;
    void *weights, *arena, *ws, *pin_in, *pin_out;
    size_t arena_bytes, ws_bytes, pin_in_bytes, pin_out_bytes;
    size_t *in_off, *out_off;
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasLtHandle_t lt;
    cudaGraph_t graph;
    cudaGraphExec_t gexec;
    bool tf32, use_graph, sync_steps;
    char *log;
    size_t log_len, log_cap;
} prog;

/* ---- errors and the log ------------------------------------------------- */

static void logf_(prog *P, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = strlen(line);
    if (P->log_len + len + 2 > P->log_cap) {
        size_t cap = (P->log_cap ? P->log_cap * 2 : 4096) + len;
        char *l = realloc(P->log, cap);
        if (!l) return;
        P->log = l, P->log_cap = cap;
    }
    memcpy(P->log + P->log_len, line, len);
    P->log_len += len;
    P->log[P->log_len++] = '\n';
    P->log[P->log_len] = 0;
}

static bool cuda_ok(cudaError_t e, const char *call, const prog *P, const char *what, char *err, size_t es) {
    if (e == cudaSuccess) return true;
    snprintf(err, es, "subgraph '%s': %s%s%s: %s (%s)", P->name, what ? what : "", what ? ": " : "", call,
             cudaGetErrorString(e), cudaGetErrorName(e));
    (void)cudaGetLastError();
    return false;
}
static bool dnn_ok(cudnnStatus_t e, const char *call, const prog *P, const char *what, char *err, size_t es) {
    if (e == CUDNN_STATUS_SUCCESS) return true;
    snprintf(err, es, "subgraph '%s': %s%s%s: cuDNN %s", P->name, what ? what : "", what ? ": " : "", call,
             cudnnGetErrorString(e));
    return false;
}
static bool lt_ok(cublasStatus_t e, const char *call, const prog *P, const char *what, char *err, size_t es) {
    if (e == CUBLAS_STATUS_SUCCESS) return true;
    snprintf(err, es, "subgraph '%s': %s%s%s: cuBLASLt %s (%s)", P->name, what ? what : "", what ? ": " : "", call,
             cublasLtGetStatusName(e), cublasLtGetStatusString(e));
    return false;
}
#define CUDA(call, what) cuda_ok((call), #call, P, (what), err, es)
#define DNN(call, what) dnn_ok((call), #call, P, (what), err, es)
#define LT(call, what) lt_ok((call), #call, P, (what), err, es)
#define FAIL(...) (snprintf(err, es, __VA_ARGS__), false)

/* ---- values ------------------------------------------------------------------ */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int find_value(const prog *P, const char *name) {
    if (!P->ht_cap) return -1;
    for (uint64_t i = hash_str(name) & (uint64_t)(P->ht_cap - 1);; i = (i + 1) & (uint64_t)(P->ht_cap - 1)) {
        int id = P->ht[i];
        if (id < 0) return -1;
        if (!strcmp(P->v[id].name, name)) return id;
    }
}

static bool rehash(prog *P, int cap) {
    int *ht = malloc((size_t)cap * sizeof(int));
    if (!ht) return false;
    for (int i = 0; i < cap; i++) ht[i] = -1;
    for (int id = 0; id < P->nv; id++) {
        uint64_t i = hash_str(P->v[id].name) & (uint64_t)(cap - 1);
        while (ht[i] >= 0) i = (i + 1) & (uint64_t)(cap - 1);
        ht[i] = id;
    }
    free(P->ht);
    P->ht = ht, P->ht_cap = cap;
    return true;
}

/* The value of that name, made from info if new; -1 when out of memory. */
static int value_of(prog *P, const char *name, seam_dtype dtype, int32_t rank, const int64_t *dims) {
    int id = find_value(P, name);
    if (id >= 0) return id;
    if (P->nv == P->cap_v) {
        int cap = P->cap_v ? 2 * P->cap_v : 64;
        cval *v = realloc(P->v, (size_t)cap * sizeof(cval));
        if (!v) return -1;
        P->v = v, P->cap_v = cap;
    }
    if (2 * (P->nv + 1) > P->ht_cap && !rehash(P, P->ht_cap ? 2 * P->ht_cap : 256)) return -1;
    cval *v = &P->v[P->nv];
    memset(v, 0, sizeof(*v));
    if (!(v->name = strdup(name))) return -1;
    v->dtype = dtype;
    v->rank = rank < 0 ? 0 : rank;
    size_t e = 1;
    for (int32_t d = 0; d < v->rank; d++) v->dims[d] = dims[d], e *= (size_t)dims[d];
    v->nbytes = e * cu_dtype_size(dtype);
    v->root = P->nv;
    v->def = v->last = -2;
    v->out_k = -1;
    id = P->nv++;
    uint64_t i = hash_str(name) & (uint64_t)(P->ht_cap - 1);
    while (P->ht[i] >= 0) i = (i + 1) & (uint64_t)(P->ht_cap - 1);
    P->ht[i] = id;
    return id;
}

static int64_t vnumel(const cval *v) {
    int64_t e = 1;
    for (int32_t d = 0; d < v->rank; d++) e *= v->dims[d];
    return e;
}

/* Copies a constant's bytes into the weights (once). */
static bool upload(prog *P, int id, char *err, size_t es) {
    cval *v = &P->v[P->v[id].root];
    if (!v->is_const || v->uploaded) return true;
    size_t off = (P->wbytes + ALIGN - 1) / ALIGN * ALIGN;
    if (off + v->nbytes > P->wcap) {
        size_t cap = (off + v->nbytes) * 2 + (1u << 20);
        unsigned char *w = realloc(P->wh, cap);
        if (!w) return FAIL("subgraph '%s': out of host memory staging the weights", P->name);
        P->wh = w, P->wcap = cap;
    }
    if (v->nbytes) memcpy(P->wh + off, v->host, v->nbytes);
    v->woff = off;
    v->uploaded = true;
    P->wbytes = off + v->nbytes;
    return true;
}

/* A constant of the backend's own (folded weights): a new value. */
static int new_const(prog *P, const char *name, int32_t rank, const int64_t *dims, const float *data, char *err, size_t es) {
    int id = value_of(P, name, SEAM_DTYPE_FLOAT32, rank, dims);
    if (id < 0) {
        snprintf(err, es, "subgraph '%s': out of memory", P->name);
        return -1;
    }
    P->v[id].is_const = P->v[id].ready = true;
    P->v[id].host = data;
    P->v[id].uploaded = false;
    return upload(P, id, err, es) ? id : -1;
}

static void *dptr(const prog *P, int id) {
    if (id < 0) return NULL;
    const cval *r = &P->v[P->v[id].root];
    return r->is_const ? (char *)P->weights + r->woff : (char *)P->arena + r->off;
}

/* ---- steps ------------------------------------------------------------------ */

static step *new_step(prog *P, step_kind kind, const cnode *n, const char *ops, int out, char *err, size_t es) {
    if (P->n_steps == P->cap_steps) {
        int cap = P->cap_steps ? 2 * P->cap_steps : 32;
        step *s = realloc(P->steps, (size_t)cap * sizeof(step));
        if (!s) {
            snprintf(err, es, "subgraph '%s': out of memory", P->name);
            return NULL;
        }
        P->steps = s, P->cap_steps = cap;
    }
    step *s = &P->steps[P->n_steps++];
    memset(s, 0, sizeof(*s));
    s->kind = kind;
    s->out = out;
    s->scale = s->shift = s->z = s->w = s->bias = s->gamma = s->beta = s->op_a = s->op_b = -1;
    snprintf(s->what, sizeof(s->what), "node %d '%s' (%s)", n->index, n->name, ops ? ops : n->op);
    s->x0 = n->n_in > 0 ? n->in[0] : -1;
    s->x1 = n->n_in > 1 ? n->in[1] : -1;
    P->v[P->v[out].root].ready = true;
    return s;
}

/* Records that s reads value id (constants are uploaded instead). */
static bool reads(prog *P, step *s, int id, char *err, size_t es) {
    if (id < 0) return true;
    if (P->v[P->v[id].root].is_const) return upload(P, id, err, es);
    int *in = realloc(s->in, (size_t)(s->n_in + 1) * sizeof(int));
    if (!in) return FAIL("subgraph '%s': out of memory", P->name);
    s->in = in;
    s->in[s->n_in++] = id;
    return true;
}

/* The node that alone reads value id, if it is not a boundary output and
 * that node is of op type op: its index, else -1. */
static int sole_reader(const prog *P, int id, const char *op) {
    const cval *v = &P->v[id];
    if (v->readers != 1 || v->out_k >= 0 || v->reader < 0) return -1;
    const cnode *n = &P->nodes[v->reader];
    return !n->done && !strcmp(n->op, op) ? v->reader : -1;
}

static void strides_of(const cval *v, int64_t *st) {
    int64_t s = 1;
    for (int32_t d = v->rank - 1; d >= 0; d--) st[d] = s, s *= v->dims[d];
}

/* BatchNormalization's per-channel scale and shift (host, malloc'd). */
static bool bn_factors(prog *P, const cnode *bn, float **scale, float **shift, int64_t *c_out, char *err, size_t es) {
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

static const char *algo_name(cudnnConvolutionFwdAlgo_t a) {
    static const char *const names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
                                        "winograd", "winograd_nonfused"};
    return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

static bool to_int(int64_t v, int *out) {
    if (v < 0 || v > 0x7fffffff) return false;
    *out = (int)v;
    return true;
}

/* Conv [+ BatchNormalization] [+ Add] [+ Relu]. */
static bool lower_conv(prog *P, cnode *n, char *err, size_t es) {
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
    const cval xv = P->v[n->in[0]], wv = P->v[n->in[1]], yv = P->v[cur]; /* copies: new_const may move P->v */
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
    int out = value_of(P, P->v[cur].name, SEAM_DTYPE_FLOAT32, y->rank, y->dims);
    step *s = new_step(P, S_CONV, n, ops, out, err, es);
    if (!s) return false;
    s->w = wid, s->bias = bid, s->z = z, s->relu = relu >= 0;
    if (!reads(P, s, n->in[0], err, es) || !reads(P, s, z, err, es)) return false;
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
        if (!to_int(p->pads[src], &pads[d]) || !to_int(p->strides[src], &str[d]) || !to_int(p->dil[src], &dil[d]))
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

/* Gemm / MatMul [+ bias Add] [+ Relu | tanh Gelu] through cuBLASLt. */
static bool lower_matmul(prog *P, cnode *n, char *err, size_t es) {
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

static bool lower_node(prog *P, cnode *n, char *err, size_t es) {
    const cu_params *p = &n->p;
    const cval xv = P->v[n->in[0]], yv = P->v[n->out]; /* copies: new_const may move P->v */
    const cval *x = &xv, *y = &yv;
    int out = n->out;
    step *s;
    switch (p->kind) {
    case K_VIEW:
        P->v[out].root = x->root;
        if (P->v[x->root].is_const) return upload(P, n->in[0], err, es);
        return true;
    case K_CONV:
        return lower_conv(P, n, err, es);
    case K_GEMM:
    case K_MATMUL:
        return lower_matmul(P, n, err, es);
    case K_UNARY:
        if (!(s = new_step(P, S_UNARY, n, NULL, out, err, es))) return false;
        s->uop = p->uop, s->a = p->a, s->b = p->b, s->n = vnumel(y);
        snprintf(s->info, sizeof(s->info), "seam unary kernel");
        return reads(P, s, n->in[0], err, es);
    case K_BINARY: {
        if (!(s = new_step(P, S_BINARY, n, NULL, out, err, es))) return false;
        s->bop = p->bop, s->n = vnumel(y);
        s->bc.rank = y->rank;
        for (int k = 0; k < 2; k++) {
            const cval *o = &P->v[n->in[k]];
            int64_t st[SC_MAX_RANK];
            strides_of(o, st);
            for (int32_t d = 0; d < y->rank; d++) {
                int32_t od = d - (y->rank - o->rank);
                int64_t sd = od < 0 || o->dims[od] == 1 ? 0 : st[od];
                if (od >= 0 && o->dims[od] != 1 && o->dims[od] != y->dims[d])
                    return FAIL("subgraph '%s': %s: input %d does not broadcast to the output", P->name, s->what, k);
                if (k == 0) s->bc.sa[d] = sd;
                else s->bc.sb[d] = sd;
                s->bc.dims[d] = y->dims[d];
            }
        }
        if (y->rank == 0) s->bc.rank = 1, s->bc.dims[0] = 1, s->bc.sa[0] = s->bc.sb[0] = 0;
        snprintf(s->info, sizeof(s->info), "seam broadcast kernel");
        return reads(P, s, n->in[0], err, es) && reads(P, s, n->in[1], err, es);
    }
    case K_BN: {
        int cur = out, relu;
        char ops[80] = "BatchNormalization";
        if ((relu = sole_reader(P, cur, "Relu")) >= 0) {
            P->nodes[relu].done = true;
            cur = P->nodes[relu].out;
            strcat(ops, "+Relu");
        }
        float *scale = NULL, *shift = NULL;
        int64_t c = 0;
        char nm[512];
        bool ok = bn_factors(P, n, &scale, &shift, &c, err, es);
        int sid = -1, tid = -1;
        if (ok) {
            snprintf(nm, sizeof(nm), "%s:cuda_scale", n->name);
            ok = (sid = new_const(P, nm, 1, &c, scale, err, es)) >= 0;
        }
        if (ok) {
            snprintf(nm, sizeof(nm), "%s:cuda_shift", n->name);
            ok = (tid = new_const(P, nm, 1, &c, shift, err, es)) >= 0;
        }
        free(scale);
        free(shift);
        if (!ok || !(s = new_step(P, S_AFFINE, n, ops, cur, err, es))) return false;
        s->scale = sid, s->shift = tid, s->relu = relu >= 0;
        s->ch = c;
        s->outer = x->dims[0];
        s->inner = c && s->outer ? vnumel(x) / (c * s->outer) : 0;
        snprintf(s->info, sizeof(s->info), "seam channel affine kernel");
        return reads(P, s, n->in[0], err, es);
    }
    case K_POOL: {
        if (!(s = new_step(P, S_POOL, n, NULL, out, err, es))) return false;
        sc_pool_desc *d = &s->pd;
        d->nc = x->dims[0] * x->dims[1];
        d->h = x->rank == 4 ? x->dims[2] : 1, d->w = x->dims[x->rank - 1];
        d->oh = y->rank == 4 ? y->dims[2] : 1, d->ow = y->dims[y->rank - 1];
        d->kh = (int32_t)p->k[0], d->kw = (int32_t)p->k[1], d->sh = (int32_t)p->s[0], d->sw = (int32_t)p->s[1];
        d->ph = (int32_t)p->p0[0], d->pw = (int32_t)p->p0[1], d->ph1 = (int32_t)p->p1[0], d->pw1 = (int32_t)p->p1[1];
        d->dh = (int32_t)p->d[0], d->dw = (int32_t)p->d[1], d->max = p->pool_max, d->count_include_pad = p->include_pad;
        snprintf(s->info, sizeof(s->info), "seam pool kernel");
        return reads(P, s, n->in[0], err, es);
    }
    case K_GPOOL: {
        if (!(s = new_step(P, S_REDUCE, n, NULL, out, err, es))) return false;
        int64_t rows = x->dims[0] * x->dims[1], cols = rows ? vnumel(x) / rows : 0;
        s->rop = p->rop;
        s->rd = (sc_reduce_desc){.orank = 1, .rrank = 1, .n_out = rows, .n_red = cols};
        s->rd.odims[0] = rows, s->rd.ostride[0] = cols, s->rd.rdims[0] = cols > 0 ? cols : 1, s->rd.rstride[0] = 1;
        snprintf(s->info, sizeof(s->info), "seam row reduction kernel");
        return reads(P, s, n->in[0], err, es);
    }
    case K_REDUCE: {
        if (!(s = new_step(P, S_REDUCE, n, NULL, out, err, es))) return false;
        int64_t st[SC_MAX_RANK];
        strides_of(x, st);
        sc_reduce_desc *d = &s->rd;
        d->n_out = d->n_red = 1;
        for (int32_t k = 0; k < x->rank; k++) {
            if (p->axes_mask >> k & 1) d->rdims[d->rrank] = x->dims[k], d->rstride[d->rrank++] = st[k], d->n_red *= x->dims[k];
            else d->odims[d->orank] = x->dims[k], d->ostride[d->orank++] = st[k], d->n_out *= x->dims[k];
        }
        if (!d->orank) d->orank = 1, d->odims[0] = 1, d->ostride[0] = 0;
        if (!d->rrank) d->rrank = 1, d->rdims[0] = 1, d->rstride[0] = 0;
        s->rop = p->rop;
        snprintf(s->info, sizeof(s->info), "seam reduction kernel (%lld outputs of %lld)", (long long)d->n_out, (long long)d->n_red);
        return reads(P, s, n->in[0], err, es);
    }
    case K_SOFTMAX:
    case K_LN: {
        if (!(s = new_step(P, p->kind == K_LN ? S_LN : S_SOFTMAX, n, NULL, out, err, es))) return false;
        s->rows = 1;
        for (int32_t d = 0; d < p->axis && d < x->rank; d++) s->rows *= x->dims[d];
        s->cols = s->rows ? vnumel(x) / s->rows : 0;
        s->log = p->log, s->eps = p->eps;
        if (p->kind == K_LN) {
            s->gamma = n->in[1];
            s->beta = n->n_in > 2 ? n->in[2] : -1;
            if (!reads(P, s, s->gamma, err, es) || !reads(P, s, s->beta, err, es)) return false;
        }
        snprintf(s->info, sizeof(s->info), "seam warp-per-row kernel (%lld rows of %lld)", (long long)s->rows, (long long)s->cols);
        return reads(P, s, n->in[0], err, es);
    }
    case K_TRANSPOSE: {
        if (!(s = new_step(P, S_STRIDED, n, NULL, out, err, es))) return false;
        int64_t st[SC_MAX_RANK];
        strides_of(x, st);
        s->sd.rank = y->rank;
        for (int32_t d = 0; d < y->rank; d++) s->sd.dims[d] = y->dims[d], s->sd.istride[d] = st[p->perm[d]];
        if (!y->rank) s->sd.rank = 1, s->sd.dims[0] = 1, s->sd.istride[0] = 0;
        s->n = vnumel(y);
        snprintf(s->info, sizeof(s->info), "seam strided copy kernel");
        return reads(P, s, n->in[0], err, es);
    }
    case K_CONCAT: {
        if (!(s = new_step(P, S_CONCAT, n, NULL, out, err, es))) return false;
        s->outer = 1;
        for (int64_t d = 0; d < p->axis; d++) s->outer *= y->dims[d];
        s->inner = s->outer ? vnumel(y) / s->outer : 0;
        s->g_axis = p->axis;
        snprintf(s->info, sizeof(s->info), "cudaMemcpy2DAsync per input (%d)", n->n_in);
        /* every input, in order, constants too: the launch walks s->in */
        for (int k = 0; k < n->n_in; k++) {
            if (!upload(P, n->in[k], err, es)) return false;
            int *in = realloc(s->in, (size_t)(s->n_in + 1) * sizeof(int));
            if (!in) return FAIL("subgraph '%s': out of memory", P->name);
            s->in = in;
            s->in[s->n_in++] = n->in[k];
        }
        return true;
    }
    case K_GATHER: {
        if (!(s = new_step(P, S_GATHER, n, NULL, out, err, es))) return false;
        const cval *ix = &P->v[n->in[1]];
        s->idx64 = ix->dtype == SEAM_DTYPE_INT64;
        s->g_outer = 1;
        for (int64_t d = 0; d < p->axis; d++) s->g_outer *= x->dims[d];
        s->g_axis = x->dims[p->axis];
        s->g_inner = 1;
        for (int32_t d = (int32_t)p->axis + 1; d < x->rank; d++) s->g_inner *= x->dims[d];
        s->g_nidx = vnumel(ix);
        s->op_a = n->in[0], s->op_b = n->in[1];
        snprintf(s->info, sizeof(s->info), "seam gather kernel (an index out of range gives 0; the CPU fails the run)");
        return reads(P, s, n->in[0], err, es) && reads(P, s, n->in[1], err, es);
    }
    }
    return FAIL("subgraph '%s': node %d '%s': %s has no lowering", P->name, n->index, n->name, n->op);
}

/* ---- memory ---------------------------------------------------------------- */

typedef struct span {
    size_t off, size;
} span;
static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Lifetimes of the roots, then first-fit offsets in definition order. */
static bool plan_arena(prog *P, char *err, size_t es) {
    for (int i = 0; i < P->nv; i++) P->v[i].def = P->v[i].last = -2;
    for (int k = 0; k < P->n_in; k++) {
        cval *r = &P->v[P->v[P->in_vals[k]].root];
        r->def = -1;
        if (r->last < -1) r->last = -1;
    }
    for (int i = 0; i < P->n_steps; i++) {
        const step *s = &P->steps[i];
        for (int k = 0; k < s->n_in; k++) {
            cval *r = &P->v[P->v[s->in[k]].root];
            if (r->last < i) r->last = i;
        }
        cval *o = &P->v[P->v[s->out].root];
        if (o->def == -2) o->def = i;
        if (o->last < i) o->last = i;
    }
    for (int k = 0; k < P->n_out; k++) {
        cval *r = &P->v[P->v[P->out_vals[k]].root];
        if (!r->is_const && r->def == -2) /* neither computed nor a boundary input */
            return FAIL("subgraph '%s': output '%s' is computed by no node", P->name, P->v[P->out_vals[k]].name);
        r->last = P->n_steps;
    }
    span *busy = malloc((size_t)(P->nv + 1) * sizeof(span));
    int *order = malloc((size_t)(P->nv + 1) * sizeof(int));
    if (!busy || !order) {
        free(busy), free(order);
        return FAIL("subgraph '%s': out of memory", P->name);
    }
    int n_order = 0;
    for (int d = -1; d < P->n_steps; d++) /* definition order */
        for (int i = 0; i < P->nv; i++)
            if (P->v[i].root == i && !P->v[i].is_const && P->v[i].def == d) order[n_order++] = i;
    P->arena_bytes = 0;
    for (int oi = 0; oi < n_order; oi++) {
        cval *r = &P->v[order[oi]];
        size_t size = (r->nbytes + ALIGN - 1) / ALIGN * ALIGN;
        if (!size) size = ALIGN;
        int nb = 0;
        for (int j = 0; j < oi; j++) {
            const cval *q = &P->v[order[j]];
            if (q->def <= r->last && r->def <= q->last)
                busy[nb++] = (span){q->off, q->nbytes ? (q->nbytes + ALIGN - 1) / ALIGN * ALIGN : ALIGN};
        }
        qsort(busy, (size_t)nb, sizeof(span), cmp_span);
        size_t off = 0;
        for (int j = 0; j < nb; j++) {
            if (busy[j].off >= off + size) break;
            if (busy[j].off + busy[j].size > off) off = busy[j].off + busy[j].size;
        }
        r->off = off;
        r->placed = true;
        if (off + size > P->arena_bytes) P->arena_bytes = off + size;
    }
    free(busy);
    free(order);
    return true;
}

/* ---- launches --------------------------------------------------------------- */

static bool conv_epilogue(prog *P, step *s, bool relu, char *err, size_t es) {
    const cval *y = &P->v[s->out];
    int64_t c = y->dims[1], outer = y->dims[0], inner = c && outer ? vnumel(y) / (c * outer) : 0;
    if (s->bias < 0 && s->z < 0 && !relu) return true;
    return CUDA(sc_channel_affine(dptr(P, s->out), NULL, s->bias >= 0 ? dptr(P, s->bias) : NULL, dptr(P, s->z),
                                  dptr(P, s->out), outer, c, inner, relu, P->stream), s->what);
}

static bool launch(prog *P, step *s, char *err, size_t es) {
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
static bool enqueue(prog *P, char *err, size_t es) {
    for (int k = 0; k < P->n_in; k++) {
        const cval *v = &P->v[P->in_vals[k]];
        if (v->nbytes && !CUDA(cudaMemcpyAsync(dptr(P, P->in_vals[k]), (char *)P->pin_in + P->in_off[k], v->nbytes,
                                               cudaMemcpyHostToDevice, P->stream), v->name))
            return false;
    }
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
    return true;
}

/* ---- algorithms ------------------------------------------------------------- */

static bool choose_conv(prog *P, step *s, char *err, size_t es) {
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
            (P->tf32 || (perf[i].mathType != CUDNN_TENSOR_OP_MATH && perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)))
            pick = i;
    const char *how = "measured by cudnnFindConvolutionForwardAlgorithmEx";
    if (pick < 0) { /* the heuristic instead */
        if (!DNN(cudnnGetConvolutionForwardAlgorithm_v7(P->dnn, s->xd, s->wd, s->cd, s->yd, 8, &got, perf), s->what)) return false;
        for (int i = 0; i < got && pick < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS &&
                (P->tf32 || (perf[i].mathType != CUDNN_TENSOR_OP_MATH && perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)))
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

static bool choose_gemm(prog *P, step *s, char *err, size_t es) {
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

/* ---- compile, run, release --------------------------------------------------- */

void cu_release_compiled(void *ctx, void *compiled) {
    (void)ctx;
    prog *P = compiled;
    if (!P) return;
    if (P->stream) cudaStreamSynchronize(P->stream);
    if (P->gexec) cudaGraphExecDestroy(P->gexec);
    if (P->graph) cudaGraphDestroy(P->graph);
    for (int i = 0; i < P->n_steps; i++) {
        step *s = &P->steps[i];
        if (s->xd) cudnnDestroyTensorDescriptor(s->xd);
        if (s->yd) cudnnDestroyTensorDescriptor(s->yd);
        if (s->bd) cudnnDestroyTensorDescriptor(s->bd);
        if (s->wd) cudnnDestroyFilterDescriptor(s->wd);
        if (s->cd) cudnnDestroyConvolutionDescriptor(s->cd);
        if (s->ad) cudnnDestroyActivationDescriptor(s->ad);
        if (s->md) cublasLtMatmulDescDestroy(s->md);
        if (s->la) cublasLtMatrixLayoutDestroy(s->la);
        if (s->lb) cublasLtMatrixLayoutDestroy(s->lb);
        if (s->ld) cublasLtMatrixLayoutDestroy(s->ld);
        free(s->in);
    }
    if (P->dnn) cudnnDestroy(P->dnn);
    if (P->lt) cublasLtDestroy(P->lt);
    if (P->stream) cudaStreamDestroy(P->stream);
    if (P->weights) cudaFree(P->weights);
    if (P->arena) cudaFree(P->arena);
    if (P->ws) cudaFree(P->ws);
    if (P->pin_in) cudaFreeHost(P->pin_in);
    if (P->pin_out) cudaFreeHost(P->pin_out);
    (void)cudaGetLastError();
    for (int i = 0; i < P->nv; i++) free(P->v[i].name);
    for (int i = 0; i < P->n_nodes; i++) free(P->nodes[i].name), free(P->nodes[i].in);
    free(P->v), free(P->ht), free(P->nodes), free(P->steps), free(P->in_vals), free(P->out_vals), free(P->in_off),
        free(P->out_off), free(P->wh), free(P->log), free(P);
}

const char *cu_compile_log(void *ctx, void *compiled) {
    (void)ctx;
    const prog *P = compiled;
    return P && P->log ? P->log : "";
}

static bool read_nodes(prog *P, const seam_subgraph_view *sg, char *err, size_t es) {
    if (!(P->nodes = calloc((size_t)sg->n_nodes + 1, sizeof(cnode)))) return FAIL("subgraph '%s': out of memory", P->name);
    for (int32_t k = 0; k < sg->n_inputs; k++) {
        const seam_value_info *vi = &sg->inputs[k];
        if (!cu_dtype_size(vi->dtype)) return FAIL("subgraph '%s': input '%s' is of a type cuda does not hold", P->name, vi->name);
        if ((P->in_vals[k] = value_of(P, vi->name, vi->dtype, vi->rank, vi->dims)) < 0) return FAIL("subgraph '%s': out of memory", P->name);
        P->v[P->in_vals[k]].is_input = P->v[P->in_vals[k]].ready = true;
    }
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view storage;
        const seam_node_view *nv = seam_subgraph_node(sg, i, &storage);
        cnode *n = &P->nodes[i];
        char why[400] = "";
        if (!nv) return FAIL("subgraph '%s': node %d of the subgraph cannot be read", P->name, i);
        n->index = nv->index;
        if (!(n->name = strdup(nv->name ? nv->name : ""))) return FAIL("subgraph '%s': out of memory", P->name);
        snprintf(n->op, sizeof(n->op), "%s", nv->op_type);
        P->n_nodes = i + 1;
        if (!cu_parse(nv, sg, &n->p, why, sizeof(why)))
            return FAIL("subgraph '%s': node %d '%s' (%s): %s", P->name, nv->index, n->name, n->op, why);
        n->n_in = nv->n_inputs;
        if (!(n->in = malloc((size_t)nv->n_inputs * sizeof(int) + 1))) return FAIL("subgraph '%s': out of memory", P->name);
        for (int32_t k = 0; k < nv->n_inputs; k++) {
            const seam_value_info *vi = &nv->inputs[k];
            n->in[k] = -1;
            if (!vi->name || !vi->name[0]) continue;
            int id = value_of(P, vi->name, vi->dtype, vi->rank, vi->dims);
            if (id < 0) return FAIL("subgraph '%s': out of memory", P->name);
            seam_tensor_view c;
            if (!P->v[id].host && !P->v[id].is_input && seam_subgraph_constant(sg, vi->name, &c)) {
                if (c.nbytes != P->v[id].nbytes && cu_dtype_size(c.dtype))
                    return FAIL("subgraph '%s': node %d '%s': constant '%s' has %zu bytes, its shape says %zu", P->name,
                                nv->index, n->name, vi->name, c.nbytes, P->v[id].nbytes);
                P->v[id].is_const = P->v[id].ready = true;
                P->v[id].host = c.data;
            }
            n->in[k] = id;
            P->v[id].readers++;
            P->v[id].reader = i;
        }
        const seam_value_info *yo = &nv->outputs[0];
        if ((n->out = value_of(P, yo->name, yo->dtype, yo->rank, yo->dims)) < 0) return FAIL("subgraph '%s': out of memory", P->name);
    }
    for (int32_t k = 0; k < sg->n_outputs; k++) {
        const seam_value_info *vi = &sg->outputs[k];
        int id = find_value(P, vi->name);
        if (id < 0) return FAIL("subgraph '%s': output '%s' is computed by no node", P->name, vi->name);
        if (!cu_dtype_size(vi->dtype)) return FAIL("subgraph '%s': output '%s' is of a type cuda does not hold", P->name, vi->name);
        P->out_vals[k] = id;
        P->v[id].out_k = k;
    }
    return true;
}

void *cu_compile(void *ctx, const seam_subgraph_view *sg, const char *const *options, int32_t n_options, char *err, size_t es) {
    (void)ctx;
    const cu_device *dev = cu_device_get();
    if (!dev->ok) {
        snprintf(err, es, "subgraph '%s': no CUDA device (%s)", sg->name ? sg->name : "", dev->reason);
        return NULL;
    }
    prog *P = calloc(1, sizeof(*P));
    if (!P) {
        snprintf(err, es, "out of memory");
        return NULL;
    }
    snprintf(P->name, sizeof(P->name), "%s", sg->name ? sg->name : "");
    P->use_graph = true;
    const char *e = getenv("SEAM_CUDA_SYNC"); /* a sync after each step: an asynchronous error names its node */
    P->sync_steps = e && e[0] == '1';
    for (int32_t k = 0; k < n_options; k++) {
        const char *o = options[k];
        if (!strcmp(o, "tf32=on")) P->tf32 = true;
        else if (!strcmp(o, "tf32=off")) P->tf32 = false;
        else if (!strcmp(o, "graph=off")) P->use_graph = false;
        else if (!strcmp(o, "graph=on")) P->use_graph = true;
        else if (!strncmp(o, "tf32=", 5) || !strncmp(o, "graph=", 6)) {
            snprintf(err, es, "subgraph '%s': target option '%s': cuda takes tf32=on|off and graph=on|off", P->name, o);
            cu_release_compiled(NULL, P);
            return NULL;
        }
    }
    if (P->sync_steps) P->use_graph = false;
    err[0] = 0;
    bool ok = (P->in_vals = calloc((size_t)sg->n_inputs + 1, sizeof(int))) && (P->out_vals = calloc((size_t)sg->n_outputs + 1, sizeof(int))) &&
              (P->in_off = calloc((size_t)sg->n_inputs + 1, sizeof(size_t))) &&
              (P->out_off = calloc((size_t)sg->n_outputs + 1, sizeof(size_t)));
    if (!ok) snprintf(err, es, "subgraph '%s': out of memory", P->name);
    P->n_in = sg->n_inputs, P->n_out = sg->n_outputs;
    ok = ok && read_nodes(P, sg, err, es);
    ok = ok && CUDA(cudaSetDevice(0), NULL) && CUDA(cudaStreamCreateWithFlags(&P->stream, cudaStreamNonBlocking), NULL) &&
         DNN(cudnnCreate(&P->dnn), NULL) && DNN(cudnnSetStream(P->dnn, P->stream), NULL) && LT(cublasLtCreate(&P->lt), NULL);
    for (int i = 0; ok && i < P->n_nodes; i++)
        if (!P->nodes[i].done) {
            P->nodes[i].done = true;
            ok = lower_node(P, &P->nodes[i], err, es);
        }
    ok = ok && plan_arena(P, err, es);
    /* boundary staging, pinned */
    for (int k = 0; ok && k < P->n_in; k++) {
        P->in_off[k] = P->pin_in_bytes;
        P->pin_in_bytes += (P->v[P->in_vals[k]].nbytes + ALIGN - 1) / ALIGN * ALIGN;
    }
    for (int k = 0; ok && k < P->n_out; k++) {
        P->out_off[k] = P->pin_out_bytes;
        P->pin_out_bytes += (P->v[P->out_vals[k]].nbytes + ALIGN - 1) / ALIGN * ALIGN;
    }
    ok = ok && CUDA(cudaMalloc(&P->weights, P->wbytes ? P->wbytes : ALIGN), "the weights") &&
         CUDA(cudaMalloc(&P->arena, P->arena_bytes ? P->arena_bytes : ALIGN), "the arena") &&
         CUDA(cudaHostAlloc(&P->pin_in, P->pin_in_bytes ? P->pin_in_bytes : ALIGN, cudaHostAllocDefault), "pinned input staging") &&
         CUDA(cudaHostAlloc(&P->pin_out, P->pin_out_bytes ? P->pin_out_bytes : ALIGN, cudaHostAllocDefault), "pinned output staging") &&
         (!P->wbytes || CUDA(cudaMemcpy(P->weights, P->wh, P->wbytes, cudaMemcpyHostToDevice), "uploading the weights")) &&
         CUDA(cudaMemset(P->arena, 0, P->arena_bytes ? P->arena_bytes : ALIGN), "the arena");
    if (ok) memset(P->pin_in, 0, P->pin_in_bytes ? P->pin_in_bytes : ALIGN);
    size_t ws = 0;
    for (int i = 0; ok && i < P->n_steps; i++) {
        step *s = &P->steps[i];
        if (s->kind == S_CONV) ok = choose_conv(P, s, err, es), ws = s->ws > ws ? s->ws : ws;
        if (s->kind == S_GEMM) ok = choose_gemm(P, s, err, es), ws = LT_WORKSPACE > ws ? LT_WORKSPACE : ws;
    }
    P->ws_bytes = ws;
    ok = ok && (!ws || CUDA(cudaMalloc(&P->ws, ws), "the workspace"));
    /* the warm-up: every step once, checked; a fused convolution cuDNN
     * refuses runs as a forward and an epilogue */
    for (int i = 0; ok && i < P->n_steps; i++) {
        step *s = &P->steps[i];
        ok = launch(P, s, err, es);
        if (!ok && s->kind == S_CONV && s->fused) {
            char why[300];
            snprintf(why, sizeof(why), "%s", err);
            s->fused = false;
            err[0] = 0;
            ok = launch(P, s, err, es);
            if (ok) {
                size_t len = strlen(s->info);
                snprintf(s->info + len, sizeof(s->info) - len, "; fused forward refused (%.60s), forward + epilogue", why);
            }
        }
        ok = ok && CUDA(cudaStreamSynchronize(P->stream), s->what);
    }
    /* the graph */
    char graph_note[300] = "";
    if (ok && P->use_graph) {
        char gerr[400] = "";
        cudaError_t ce = cudaStreamBeginCapture(P->stream, cudaStreamCaptureModeThreadLocal);
        bool cap = ce == cudaSuccess;
        bool enq = cap && enqueue(P, gerr, sizeof(gerr));
        if (cap) {
            cudaError_t ee = cudaStreamEndCapture(P->stream, &P->graph);
            if (enq && ee != cudaSuccess) snprintf(gerr, sizeof(gerr), "cudaStreamEndCapture: %s", cudaGetErrorString(ee));
            enq = enq && ee == cudaSuccess;
        } else {
            snprintf(gerr, sizeof(gerr), "cudaStreamBeginCapture: %s", cudaGetErrorString(ce));
        }
        if (enq) {
            cudaError_t ie = cudaGraphInstantiate(&P->gexec, P->graph, 0);
            if (ie != cudaSuccess) snprintf(gerr, sizeof(gerr), "cudaGraphInstantiate: %s", cudaGetErrorString(ie)), enq = false;
        }
        if (!enq) {
            (void)cudaGetLastError();
            if (P->graph) cudaGraphDestroy(P->graph);
            P->graph = NULL;
            P->gexec = NULL;
            P->use_graph = false;
            snprintf(graph_note, sizeof(graph_note), "%.280s", gerr);
        }
    }
    if (!ok) {
        if (!err[0]) snprintf(err, es, "subgraph '%s': out of memory", P->name);
        cu_release_compiled(NULL, P);
        return NULL;
    }
    logf_(P, "device 0: %s (sm_%d%d), cuDNN %zu, cuBLASLt %d; %s; %d nodes in %d steps; arena %.2f MB, weights %.2f MB, "
             "workspace %.2f MB; launches %s",
          dev->name, dev->cc_major, dev->cc_minor, dev->cudnn_version, dev->cublas_version,
          P->tf32 ? "TF32 on (tf32=on)" : "TF32 off", P->n_nodes, P->n_steps, P->arena_bytes / 1048576.0, P->wbytes / 1048576.0,
          P->ws_bytes / 1048576.0, P->use_graph ? "captured in one CUDA graph, replayed each run" : "issued one by one each run");
    if (graph_note[0]) logf_(P, "slow: no CUDA graph: %s (fix: report it; launches are issued one by one)", graph_note);
    for (int k = 0; k < P->n_in; k++)
        logf_(P, "input '%s': %zu bytes host to device (pinned staging)", P->v[P->in_vals[k]].name, P->v[P->in_vals[k]].nbytes);
    for (int i = 0; i < P->n_steps; i++) logf_(P, "%s: %s", P->steps[i].what, P->steps[i].info);
    for (int k = 0; k < P->n_out; k++)
        logf_(P, "output '%s': %zu bytes device to host (pinned staging)", P->v[P->out_vals[k]].name, P->v[P->out_vals[k]].nbytes);
    return P;
}

seam_status cu_run(void *ctx, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs, seam_buffer *outputs,
                   int32_t n_outputs, char *err, size_t es) {
    (void)ctx;
    prog *P = compiled;
    if (n_inputs != P->n_in || n_outputs != P->n_out) {
        snprintf(err, es, "subgraph '%s': %d inputs and %d outputs given, %d and %d compiled", P->name, n_inputs, n_outputs, P->n_in,
                 P->n_out);
        return SEAM_STATUS_INVALID_ARGUMENT;
    }
    for (int k = 0; k < n_inputs; k++) {
        const cval *v = &P->v[P->in_vals[k]];
        if (inputs[k].nbytes != v->nbytes) {
            snprintf(err, es, "subgraph '%s': input '%s' has %zu bytes, %zu compiled", P->name, v->name, inputs[k].nbytes, v->nbytes);
            return SEAM_STATUS_INVALID_ARGUMENT;
        }
        if (v->nbytes) memcpy((char *)P->pin_in + P->in_off[k], inputs[k].data, v->nbytes);
    }
    for (int k = 0; k < n_outputs; k++)
        if (outputs[k].nbytes != P->v[P->out_vals[k]].nbytes) {
            snprintf(err, es, "subgraph '%s': output '%s' has %zu bytes, %zu compiled", P->name, P->v[P->out_vals[k]].name,
                     outputs[k].nbytes, P->v[P->out_vals[k]].nbytes);
            return SEAM_STATUS_INVALID_ARGUMENT;
        }
    cudaError_t e = cudaSetDevice(0);
    bool ok = e == cudaSuccess;
    if (!ok) cuda_ok(e, "cudaSetDevice", P, NULL, err, es);
    if (ok && P->use_graph) ok = cuda_ok(cudaGraphLaunch(P->gexec, P->stream), "cudaGraphLaunch", P, NULL, err, es);
    else if (ok) ok = enqueue(P, err, es);
    if (ok && (e = cudaStreamSynchronize(P->stream)) != cudaSuccess) {
        snprintf(err, es, "subgraph '%s': the run failed on the device: %s (%s)%s", P->name, cudaGetErrorString(e), cudaGetErrorName(e),
                 P->use_graph || !P->sync_steps ? "; SEAM_CUDA_SYNC=1 runs the steps one by one and names the node" : "");
        (void)cudaGetLastError();
        ok = false;
    }
    if (!ok) {
        cudaStreamSynchronize(P->stream);
        (void)cudaGetLastError();
        return strstr(err, "out of memory") || strstr(err, "MemoryAllocation") || strstr(err, "ALLOC_FAILED")
                   ? SEAM_STATUS_OUT_OF_MEMORY : SEAM_STATUS_RUN_FAILED;
    }
    for (int k = 0; k < n_outputs; k++)
        if (outputs[k].nbytes) memcpy(outputs[k].data, (char *)P->pin_out + P->out_off[k], outputs[k].nbytes);
    return SEAM_STATUS_OK;
}
