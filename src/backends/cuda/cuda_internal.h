/* The CUDA backend plug-in's shared declarations (backend.c: the device,
 * support and costs; compile.c: lowering, memory, launches, runs). */
#ifndef SEAM_CUDA_INTERNAL_H
#define SEAM_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "seam_backend.h"

/* The process's device, probed once (cu_device). ok false: reason says
 * why there is none ("cudaGetDeviceCount: no CUDA-capable device is
 * detected"), and the backend offers no nodes. */
typedef struct cu_device {
    bool ok;
    char reason[256];
    char name[256];
    int cc_major, cc_minor;
    size_t total_mem;
    size_t cudnn_version;
    int cublas_version;
} cu_device;
const cu_device *cu_device_get(void);

/* What a node is to the backend, parsed once from its view. */
typedef enum cu_kind {
    K_UNARY, K_BINARY, K_CONV, K_GEMM, K_MATMUL, K_BN, K_POOL, K_GPOOL, K_SOFTMAX, K_LN, K_REDUCE, K_TRANSPOSE,
    K_CONCAT, K_VIEW, K_GATHER, K_SLICE, K_PAD, K_EXPAND, K_CAST, K_MASK, K_WHERE, K_DECONV, K_RESIZE, K_RNN
} cu_kind;

typedef struct cu_params {
    cu_kind kind;
    /* supports() on a node with symbolic dims: the checks that need dims
     * wait for compile, which sees the shapes of one run (the runtime
     * specializes a subgraph per shape signature) */
    bool dyn;
    sc_unary_op uop;
    sc_binary_op bop;
    float a, b;                 /* unary parameters; Clip bounds; LeakyRelu alpha */
    int clip_min_input, clip_max_input; /* Clip's bounds as inputs (index, or -1) */
    /* Conv, ConvTranspose (its pads symmetric, output_padding in opad) */
    int64_t group;
    int32_t nsp;                /* spatial dims */
    int64_t pads[3], strides[3], dil[3], opad[3];
    int64_t pads_end[3];        /* Conv: the end pads (unequal ones: a Pad step first) */
    /* Gemm */
    int64_t trans_a, trans_b;
    float alpha, beta;
    /* pools */
    int32_t pool_max, include_pad;
    int64_t k[2], s[2], p0[2], p1[2], d[2];
    /* softmax, layer norm, concat, gather: the axis (normalized) */
    int64_t axis;
    int32_t log;
    float eps;
    /* reductions: the reduced axes as a bit mask; transpose: perm */
    sc_reduce_op rop;
    uint32_t axes_mask;
    int64_t perm[SC_MAX_RANK];
    /* Slice (read at compile): per input dim, the first index and the step
     * (0 and 1 where it is not sliced); the output's dims are the counts */
    int64_t sl_start[SC_MAX_RANK], sl_step[SC_MAX_RANK];
    /* Pad (read at compile): begin and end pads per dim, mode, constant */
    int64_t pad0[SC_MAX_RANK], pad1[SC_MAX_RANK];
    int32_t pad_mode;
    float pad_value;
    /* comparisons, Not/And/Or/Xor */
    sc_mask_op mop;
    /* Resize: the modes; the spatial dims' scales (read at compile) */
    int32_t rz_linear, rz_coord, rz_nearest;
    double rz_scale[3];
    /* LSTM, GRU: which, the directions, one direction backwards */
    int32_t rnn_gru, rnn_dirs, rnn_reverse;
} cu_params;

/* Parses a node: true if the backend runs it (p filled), false with the
 * reason in why. sg: the subgraph when compiling (constant operands are
 * read from it), NULL when asked by supports(). */
bool cu_parse(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size);

/* The compiled-subgraph entry points (compile.c). */
void *cu_compile(void *ctx, const seam_subgraph_view *sg, const char *const *options, int32_t n_options, char *err,
                 size_t err_size);
seam_status cu_run(void *ctx, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs, seam_buffer *outputs,
                   int32_t n_outputs, char *err, size_t err_size);
void cu_release_compiled(void *ctx, void *compiled);
const char *cu_compile_log(void *ctx, void *compiled);

size_t cu_dtype_size(seam_dtype t);

#endif
