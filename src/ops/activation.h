/*
 * The unary activations' parameters, in one place: which op an activation
 * is, and its attributes with ONNX's defaults. The CPU kernels, the RNN
 * activation lists, the executor's fusion (an activation applied by the
 * producer of its input as it writes, a "post-op") and the dnnl backend
 * all read activations through here.
 *
 *     act_params a;
 *     if (act_of_node(n, &a) && a.kind == ACT_LEAKY_RELU) slope = a.alpha;
 */
#ifndef SEAM_OPS_ACTIVATION_H
#define SEAM_OPS_ACTIVATION_H

#include "ir/ir.h"

typedef enum act_kind {
    ACT_NONE = 0,
    ACT_RELU,             /* y < 0 ? 0 : y (NaN stays NaN) */
    ACT_LEAKY_RELU,       /* y >= 0 ? y : alpha * y */
    ACT_CLIP,             /* min(max(y, lo), hi) */
    ACT_HARD_SIGMOID,     /* max(0, min(1, alpha * y + beta)) */
    ACT_HARD_SWISH,       /* y * max(0, min(1, y / 6 + 0.5)) */
    ACT_SIGMOID,
    ACT_TANH,
    ACT_ELU,              /* alpha */
    ACT_SELU,             /* alpha, gamma */
    ACT_CELU,             /* alpha */
    ACT_THRESHOLDED_RELU, /* alpha */
    ACT_SOFTPLUS,
    ACT_SOFTSIGN,
    ACT_GELU,             /* approximate = "none" */
    ACT_GELU_TANH,        /* approximate = "tanh" */
    ACT_MISH,
    ACT_SHRINK,           /* alpha = lambd, beta = bias */
    ACT_SCALED_TANH,      /* alpha * tanh(beta * y): RNN activation lists only */
    ACT_AFFINE,           /* alpha * y + beta: RNN activation lists only */
    ACT_SILU,             /* y * sigmoid(y): a Sigmoid and the Mul by its input, fused (runtime/fuse.c) */
} act_kind;

/* An activation and its parameters. The first five kinds are the ones a
 * CPU kernel can apply to its output as it writes it (act_is_post_op). */
typedef struct act_params {
    act_kind kind;
    float alpha, beta;
    float lo, hi;         /* Clip's bounds; -inf and +inf when absent */
    float gamma;
} act_params;

/* The activation an op type (or an RNN activation list entry) names, with
 * ONNX's default parameters; kind ACT_NONE if it names none. */
act_params act_by_name(const char *op_type);

/* The activation node n computes (default domain), its attributes read
 * with ONNX's defaults, or false. Clip before opset 11 has min/max
 * attributes; from opset 11 its bounds are inputs 1 and 2, which the
 * caller reads (they may be computed): lo and hi then stay infinite. */
bool act_of_node(const ir_node *n, act_params *out);

/* Relu, LeakyRelu, Clip, HardSigmoid, HardSwish and SiLU: the activations
 * a producer (Conv, Gemm, MatMul, a binary op) may apply as it writes. */
bool act_is_post_op(act_kind kind);

#endif
