/* Kernels of seam's own for the CUDA backend (kernels.cu, compiled by nvcc
 * at build time), callable from C. Every launcher takes the stream it
 * launches on and returns the launch's status (cudaGetLastError), so a bad
 * configuration is seen at the step that made it. float32 unless said
 * (Gather's indices, the mask ops, Where and Cast take int32/int64; bool is
 * one byte, 0 or 1). */
#ifndef SEAM_CUDA_KERNELS_H
#define SEAM_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SC_MAX_RANK 8

typedef enum sc_unary_op {
    SC_RELU, SC_SIGMOID, SC_TANH, SC_LEAKY_RELU, SC_CLIP, SC_ERF, SC_GELU, SC_GELU_TANH, SC_EXP, SC_LOG, SC_SQRT,
    SC_ABS, SC_NEG, SC_RECIPROCAL, SC_ELU, SC_HARD_SIGMOID, SC_HARD_SWISH, SC_SOFTPLUS, SC_FLOOR, SC_CEIL, SC_COPY,
    SC_SIN, SC_COS, SC_SILU_UNUSED
} sc_unary_op;

typedef enum sc_binary_op { SC_ADD, SC_SUB, SC_MUL, SC_DIV, SC_POW, SC_MAX, SC_MIN, SC_PRELU } sc_binary_op;

/* y[i] = op(x[i]) for n elements; a and b are the op's parameters
 * (LeakyRelu/Elu alpha; Clip min, max; HardSigmoid alpha, beta). */
cudaError_t sc_unary(sc_unary_op op, const float *x, float *y, int64_t n, float a, float b, cudaStream_t s);

/* y = a op b with numpy broadcasting: the output's dims and each operand's
 * element strides per output dim (0 where it broadcasts). */
typedef struct sc_bcast {
    int32_t rank;
    int64_t dims[SC_MAX_RANK];
    int64_t sa[SC_MAX_RANK], sb[SC_MAX_RANK], sc[SC_MAX_RANK]; /* sc: Where's third operand */
} sc_bcast;
cudaError_t sc_binary(sc_binary_op op, const float *a, const float *b, float *y, const sc_bcast *bc, int64_t n,
                      cudaStream_t s);

/* Mask ops (bool is one byte, 0 or 1), with numpy broadcasting as
 * sc_binary: comparisons of float32/int32/int64 a and b (elem: 4 float32,
 * 5 int32, 8 int64) into bool y; And/Or/Xor of bools; Not (b unused);
 * Where: y = c ? a : b of 4- or 8-byte elements (sa strides c, sb a, sc b). */
typedef enum sc_mask_op { SC_EQUAL, SC_LESS, SC_GREATER, SC_LESS_EQUAL, SC_GREATER_EQUAL, SC_AND, SC_OR, SC_XOR, SC_NOT } sc_mask_op;
cudaError_t sc_mask(sc_mask_op op, int elem, const void *a, const void *b, uint8_t *y, const sc_bcast *bc, int64_t n,
                    cudaStream_t s);
cudaError_t sc_where(const uint8_t *c, const void *a, const void *b, void *y, int elem_bytes, const sc_bcast *bc,
                     int64_t n, cudaStream_t s);

/* Per channel c of [outer, C, inner]: y = x*scale[c] + shift[c] (+ z) (then
 * max(0, .) when relu). scale may be NULL (1), shift NULL (0), z NULL. */
cudaError_t sc_channel_affine(const float *x, const float *scale, const float *shift, const float *z, float *y,
                              int64_t outer, int64_t channels, int64_t inner, int relu, cudaStream_t s);

/* 2-D pooling over [N*C, H, W] (1-D pools: H = 1). max: 1 MaxPool, 0
 * AveragePool (count_include_pad as ONNX says; pad_h1/pad_w1 are the end
 * pads, the window never reaches past them). */
typedef struct sc_pool_desc {
    int64_t nc, h, w, oh, ow;
    int32_t kh, kw, sh, sw, ph, pw, ph1, pw1, dh, dw;
    int32_t max, count_include_pad;
} sc_pool_desc;
cudaError_t sc_pool2d(const float *x, float *y, const sc_pool_desc *d, cudaStream_t s);

/* Row-wise ops over [rows, cols]: softmax (log: LogSoftmax), layer
 * normalization (gamma/beta of cols elements; beta may be NULL). */
cudaError_t sc_softmax(const float *x, float *y, int64_t rows, int64_t cols, int log, cudaStream_t s);
cudaError_t sc_layernorm(const float *x, const float *gamma, const float *beta, float *y, int64_t rows, int64_t cols,
                         float eps, cudaStream_t s);

/* Reductions: output element o (n_out of them) reduces the elements
 * x[base(o) + sum_k j_k * rstride[k]], j_k < rdims[k]; base(o) from o's
 * index over odims with ostride (input strides of the kept dims). */
typedef enum sc_reduce_op { SC_REDUCE_MEAN, SC_REDUCE_SUM, SC_REDUCE_MAX, SC_REDUCE_MIN } sc_reduce_op;
typedef struct sc_reduce_desc {
    int32_t orank, rrank;
    int64_t odims[SC_MAX_RANK], ostride[SC_MAX_RANK];
    int64_t rdims[SC_MAX_RANK], rstride[SC_MAX_RANK];
    int64_t n_out, n_red;
} sc_reduce_desc;
cudaError_t sc_reduce(sc_reduce_op op, const float *x, float *y, const sc_reduce_desc *d, cudaStream_t s);

/* y (dims, row-major) gets x[base + sum_d q_d * istride[d]] for output
 * index (q_d): a transpose when istride is x's strides permuted, a Slice
 * with base at its starts and strides times its steps (negative for
 * negative steps), an Expand with 0 where it broadcasts. */
typedef struct sc_strided {
    int32_t rank;
    int64_t base;
    int64_t dims[SC_MAX_RANK], istride[SC_MAX_RANK];
} sc_strided;
cudaError_t sc_strided_copy(const float *x, float *y, const sc_strided *d, int64_t n, cudaStream_t s);

/* Pad: output dims odims, input dims idims (row-major), begin pads p0
 * (negative: cropped). Along each dim the input index is q - p0[d]; out of
 * range it is the constant value, the nearest edge, reflected about the
 * edges without repeating them (-1 -> 1, periodically as the CPU kernels
 * do, for pads of any size) or wrapped around. Compile refuses edge,
 * reflect and wrap of an empty dim. */
typedef enum sc_pad_mode { SC_PAD_CONSTANT, SC_PAD_EDGE, SC_PAD_REFLECT, SC_PAD_WRAP } sc_pad_mode;
typedef struct sc_pad {
    int32_t rank, mode;
    float value;
    int64_t odims[SC_MAX_RANK], idims[SC_MAX_RANK], p0[SC_MAX_RANK];
} sc_pad;
cudaError_t sc_pad_copy(const float *x, float *y, const sc_pad *d, int64_t n, cudaStream_t s);

/* Cast of n elements between float32, int32, int64 and bool (one byte):
 * float to int truncates toward zero, as C's conversion does; to bool is
 * x != 0, from bool 0 or 1. */
typedef enum sc_num_type { SC_F32, SC_I32, SC_I64, SC_BOOL } sc_num_type;
cudaError_t sc_cast(const void *x, sc_num_type from, void *y, sc_num_type to, int64_t n, cudaStream_t s);

/* Gather: y[o, i, r] = x[o, idx[i], r] for o < outer, i < n_idx, r < inner;
 * negative indices count from the end; an index out of range gives 0 (the
 * compile log says so: the CPU kernels fail the run instead). */
cudaError_t sc_gather(const float *x, const void *idx, int idx64, float *y, int64_t outer, int64_t n_idx,
                      int64_t axis_len, int64_t inner, cudaStream_t s);

/* Resize of the last nsp (1 to 3) dims of [outer..., in...] into
 * [outer..., out...], one thread per output element. The input coordinate
 * of output index o along a dim is computed in double as the CPU kernels
 * (and ONNX's reference) compute it, from that dim's scale; nearest picks
 * one element (nearest_mode), linear weighs the 2^nsp around it (the
 * coordinate clamped to [0, in - 1]). A dim with out == in and scale 1 is
 * the identity. */
typedef enum sc_resize_coord {
    SC_RZ_HALF_PIXEL, SC_RZ_PYTORCH_HALF, SC_RZ_ALIGN, SC_RZ_ASYM, SC_RZ_TF_NN, SC_RZ_HALF_SYM
} sc_resize_coord;
typedef enum sc_resize_nearest { SC_RZ_ROUND_FLOOR, SC_RZ_ROUND_CEIL, SC_RZ_FLOOR, SC_RZ_CEIL } sc_resize_nearest;
typedef struct sc_resize_desc {
    int32_t nsp, linear, coord, nearest;
    int64_t in[3], out[3];
    double scale[3];
} sc_resize_desc;
cudaError_t sc_resize(const float *x, float *y, const sc_resize_desc *d, int64_t n, cudaStream_t s);

/* An empty kernel: launch latency measurements. */
cudaError_t sc_empty(cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
