/* The CUDA backend's compiled subgraph (a prog) and what the compile
 * steps share: values.c (values, constants, the nodes read from the
 * subgraph), lower.c and lower_conv.c (nodes to steps, with fusions),
 * plan.c (the arena), launch.c (the algorithms, the launches), compile.c
 * (compile, run, release). */
#ifndef SEAM_CUDA_PROG_H
#define SEAM_CUDA_PROG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "cuda_internal.h"
#include "rnn.h"

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
    int xout[2];        /* LSTM/GRU: Y_h, Y_c (value ids, -1 absent) */
    bool done;
} cnode;

typedef enum step_kind {
    S_UNARY, S_BINARY, S_AFFINE, S_CONV, S_GEMM, S_POOL, S_REDUCE, S_SOFTMAX, S_LN, S_STRIDED, S_CONCAT, S_GATHER, S_PAD, S_CAST, S_MASK, S_WHERE,
    S_DECONV, S_RESIZE, S_RNN
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
    cudnnConvolutionBwdDataAlgo_t balgo; /* ConvTranspose: cuDNN's backward data */
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
    sc_pad pad;
    sc_resize_desc rz;
    /* LSTM/GRU: the descriptor; X, W, R, B, initial_h, initial_c, the cell
     * state, Y_h, Y_c (value ids, -1 absent); out is Y */
    sc_rnn_desc rnn;
    int rv[9];
    int xout[3], n_xout; /* values the step writes besides out (for lifetimes) */
    sc_num_type from, to; /* Cast */
    sc_mask_op mop;     /* mask ops: the op, the compared type (4 float32, 5 int32, 8 int64) */
    int elem, x2;       /* Where: the element's bytes, its third input */
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
    bool tf32, use_graph, sync_steps, trace;
    bool all_algos;     /* conv_algos=all (or tf32=on): FFT and non-fused Winograd too */
    char *log;
    size_t log_len, log_cap;
} prog;

/* errors and the log; trace: what is done now, on stderr under SEAM_CUDA_SYNC=2 */
void trace(const prog *P, const char *what);
void logf_(prog *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool cuda_ok(cudaError_t e, const char *call, const prog *P, const char *what, char *err, size_t es);
bool dnn_ok(cudnnStatus_t e, const char *call, const prog *P, const char *what, char *err, size_t es);
bool lt_ok(cublasStatus_t e, const char *call, const prog *P, const char *what, char *err, size_t es);
#define CUDA(call, what) cuda_ok((call), #call, P, (what), err, es)
#define DNN(call, what) dnn_ok((call), #call, P, (what), err, es)
#define LT(call, what) lt_ok((call), #call, P, (what), err, es)
#define FAIL(...) (snprintf(err, es, __VA_ARGS__), false)

/* values (values.c) */
int find_value(const prog *P, const char *name);
/* The value of that name, made from info if new; -1 when out of memory. */
int value_of(prog *P, const char *name, seam_dtype dtype, int32_t rank, const int64_t *dims);
int64_t vnumel(const cval *v);
/* Copies a constant's bytes into the weights (once). */
bool upload(prog *P, int id, char *err, size_t es);
/* A constant of the backend's own (folded weights): a new value. */
int new_const(prog *P, const char *name, int32_t rank, const int64_t *dims, const float *data, char *err, size_t es);
/* A value's device address: in the weights or the arena; NULL for -1. */
void *dptr(const prog *P, int id);
/* The subgraph's boundary values and nodes into P (values, constants). */
bool read_nodes(prog *P, const seam_subgraph_view *sg, char *err, size_t es);

/* steps (lower.c, lower_conv.c) */
step *new_step(prog *P, step_kind kind, const cnode *n, const char *ops, int out, char *err, size_t es);
/* Records that s reads value id (constants are uploaded instead). */
bool reads(prog *P, step *s, int id, char *err, size_t es);
/* The node that alone reads value id, if it is not a boundary output and
 * that node is of op type op: its index, else -1. */
int sole_reader(const prog *P, int id, const char *op);
void strides_of(const cval *v, int64_t *st);
/* BatchNormalization's per-channel scale and shift (host, malloc'd). */
bool bn_factors(prog *P, const cnode *bn, float **scale, float **shift, int64_t *c_out, char *err, size_t es);
bool to_int(int64_t v, int *out);
/* Conv [+ BatchNormalization] [+ Add] [+ Relu]. */
bool lower_conv(prog *P, cnode *n, char *err, size_t es);
/* ConvTranspose [+ bias] as cuDNN's backward data and the epilogue kernel. */
bool lower_deconv(prog *P, cnode *n, char *err, size_t es);
/* Gemm / MatMul [+ bias Add] [+ Relu | tanh Gelu] through cuBLASLt. */
bool lower_matmul(prog *P, cnode *n, char *err, size_t es);
bool lower_node(prog *P, cnode *n, char *err, size_t es);

/* memory (plan.c): lifetimes of the roots, then first-fit offsets */
bool plan_arena(prog *P, char *err, size_t es);

/* algorithms and launches (launch.c) */
const char *algo_name(cudnnConvolutionFwdAlgo_t a);
bool choose_conv(prog *P, step *s, char *err, size_t es);
bool choose_deconv(prog *P, step *s, char *err, size_t es);
bool choose_gemm(prog *P, step *s, char *err, size_t es);
bool launch(prog *P, step *s, char *err, size_t es);
/* The boundary copies and every step, on the stream (captured or not). */
bool enqueue(prog *P, char *err, size_t es);

#endif
