/*
 * dnnl, layer 3 (see program.h for the order): how ONNX ops map onto
 * oneDNN's (map.c): the op lists, the eltwise and binary algorithm of a
 * node, the axes a reduction reduces, the window of a Conv or a pool, and
 * which integer inputs are parameters read at compile time. Fusion and
 * the op families ask these; they make no steps.
 */
#ifndef SEAM_DNNL_MAP_H
#define SEAM_DNNL_MAP_H

#include "builder.h"
#include "ops/conv_geom.h"

/* The op families, shared by supports(), the fusion and the compilers
 * (each file that reads one has its own copy: a few pointers). */
static const char *const eltwise_ops[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Clip", "Exp", "Log",
                                          "Sqrt", "Abs", "HardSigmoid", "Softplus", "HardSwish", "Pow",
                                          "PRelu" /* (with one constant slope only: dx_eltwise_of) */};
static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
static const char *const view_ops[] = {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
static const char *const reduce_ops[] = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"};

/* A float32 constant of one element (a Pow exponent, a Clip bound). */
bool dx_const_scalar(const seam_subgraph_view *sg, const seam_value_info *v, float *out);
/* The oneDNN eltwise of an activation (parameters from act_of_node, with
 * ONNX's defaults) or of a unary math op; false when n is neither (or a
 * Clip's bounds are not constants). */
bool dx_eltwise_of(const seam_node_view *n, const seam_subgraph_view *sg, dnnl_alg_kind_t *alg, float *alpha, float *beta);
/* Whether n's eltwise is followed by a clip to [0, 1] (HardSigmoid). */
bool dx_clips_after(const seam_node_view *n);
/* The oneDNN binary of Add, Sub, Mul, Div, Max, Min; undef for others. */
dnnl_alg_kind_t dx_binary_alg(const seam_node_view *n);
/* The axes a Reduce* node (b->n) reduces, as a mask over rank dims; false
 * when they are not constants within the rank. */
bool dx_reduce_axes(builder *b, int32_t rank, bool *mask);
/* The window of Conv or a pool for the known input (conv_geom,
 * ops/conv_geom.h), checked against the known output and oneDNN's 1 to 3
 * spatial axes; false with the reason in why. Support checks and compile
 * both ask it, so a node supports() accepts compiles. */
bool dx_window_geom(const seam_node_view *n, const int64_t *kernel, bool ceil_mode, conv_geom *g, char *why,
                    size_t why_size);
/* The window of Conv or a pool (conv_geom, ops/conv_geom.h) for the known
 * input and output sizes, as oneDNN takes it: strides, dilations (minus
 * one), pads before and after. False, with b->err set, when the
 * attributes are invalid or do not give the known output. */
bool dx_window(builder *b, int32_t nsp, const int64_t *kernel, bool ceil_mode, dnnl_dims_t strides, dnnl_dims_t dilates,
               dnnl_dims_t pad_lo, dnnl_dims_t pad_hi);
/* Whether input k of n is an integer parameter (bounds, axes, pads)
 * computed at run time, which compile() reads as a constant. */
bool dx_run_time_param(const seam_node_view *n, int32_t k);
/* Slice (from opset 10) and the reductions: their parameter inputs are
 * read at compile time (a row's support check). */
bool dx_supports_param_inputs(const seam_node_view *n, char *why, size_t wn);

#endif
