/*
 * dnnl: ONNX ops onto oneDNN's algorithms and windows (see map.h).
 */
#include <string.h>

#include "map.h"
#include "ops/activation.h"
#include "ops/attr.h"

bool dx_const_scalar(const seam_subgraph_view *sg, const seam_value_info *v, float *out) {
    seam_tensor_view c;
    if (!v->name || !seam_subgraph_constant(sg, v->name, &c) || c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != 4)
        return false;
    memcpy(out, c.data, 4);
    return true;
}

/* The oneDNN eltwise of an activation (parameters from act_of_node, with
 * ONNX's defaults) or of a unary math op. */
bool dx_eltwise_of(const seam_node_view *n, const seam_subgraph_view *sg, dnnl_alg_kind_t *alg, float *alpha, float *beta) {
    act_params a;
    *alpha = 0, *beta = 0;
    if (!act_of_node(dx_ir(n), &a)) a.kind = ACT_NONE;
    switch (a.kind) {
    case ACT_RELU: *alg = dnnl_eltwise_relu; return true;
    case ACT_LEAKY_RELU: *alg = dnnl_eltwise_relu, *alpha = a.alpha; return true;
    case ACT_SIGMOID: *alg = dnnl_eltwise_logistic; return true;
    case ACT_TANH: *alg = dnnl_eltwise_tanh; return true;
    case ACT_ELU: *alg = dnnl_eltwise_elu, *alpha = a.alpha; return true;
    case ACT_SOFTPLUS: *alg = dnnl_eltwise_soft_relu; return true;
    case ACT_HARD_SWISH: *alg = dnnl_eltwise_hardswish; return true;
    case ACT_HARD_SIGMOID: /* max(0, min(1, a*x + b)): linear here, then a clip (see clips_after) */
        *alg = dnnl_eltwise_linear, *alpha = a.alpha, *beta = a.beta;
        return true;
    case ACT_CLIP: /* bounds from the attributes (before opset 11) or constant inputs 1 and 2 */
        *alg = dnnl_eltwise_clip_v2, *alpha = a.lo, *beta = a.hi;
        if (n->n_inputs > 1 && n->inputs[1].name && !dx_const_scalar(sg, &n->inputs[1], alpha)) return false;
        if (n->n_inputs > 2 && n->inputs[2].name && !dx_const_scalar(sg, &n->inputs[2], beta)) return false;
        return true;
    default: break;
    }
    if (is_op(n, "PRelu")) { /* one constant slope: a leaky relu (oneDNN's prelu is its reference kernel there) */
        if (n->n_inputs < 2 || !dx_const_scalar(sg, &n->inputs[1], alpha) || n->inputs[1].rank > n->inputs[0].rank)
            return false;
        *alg = dnnl_eltwise_relu;
    } else if (is_op(n, "Exp")) *alg = dnnl_eltwise_exp;
    else if (is_op(n, "Log")) *alg = dnnl_eltwise_log;
    else if (is_op(n, "Sqrt")) *alg = dnnl_eltwise_sqrt;
    else if (is_op(n, "Abs")) *alg = dnnl_eltwise_abs;
    else if (is_op(n, "Pow")) { /* alpha * x^beta, with a constant exponent */
        if (n->n_inputs < 2 || !dx_const_scalar(sg, &n->inputs[1], beta)) return false;
        *alg = dnnl_eltwise_pow, *alpha = 1.0f;
        /* eltwise_pow goes through exp and log (slow); a square is exact and light
         * (x^3: eltwise.c's compile_pow; not sqrt for 0.5: pow(-inf, 0.5) is +inf) */
        if (*beta == 2.0f) *alg = dnnl_eltwise_square, *alpha = 0, *beta = 0;
    } else {
        return false;
    }
    return true;
}

/* oneDNN 2.6 has no hard sigmoid: eltwise_of gives its linear part, and a
 * clip to [0, 1] follows as a post-op. */
bool dx_clips_after(const seam_node_view *n) { return is_op(n, "HardSigmoid"); }

dnnl_alg_kind_t dx_binary_alg(const seam_node_view *n) {
    static const dnnl_alg_kind_t algs[] = {dnnl_binary_add, dnnl_binary_sub, dnnl_binary_mul, dnnl_binary_div, dnnl_binary_max, dnnl_binary_min};
    for (size_t k = 0; k < sizeof(algs) / sizeof(algs[0]); k++)
        if (is_op(n, binary_ops[k])) return algs[k];
    return dnnl_alg_kind_undef;
}

/* The axes a Reduce* node reduces (attribute, or constant input 1 from
 * ReduceSum-13 and the others' opset 18), as a mask; all when none. */
bool dx_reduce_axes(builder *b, int32_t rank, bool *mask) {
    const seam_node_view *n = b->n;
    int64_t ax[MAXR];
    int32_t na = 0;
    const int64_t *v;
    if (seam_node_attr_ints(b->n, "axes", &v, &na)) {
        if (na > MAXR) return false;
        memcpy(ax, v, 8 * (size_t)na);
    } else if (n->n_inputs > 1 && n->inputs[1].name) {
        na = dx_const_ints(b, &n->inputs[1], ax, MAXR);
        if (na < 0) return false;
    }
    for (int32_t d = 0; d < rank; d++) mask[d] = na == 0;
    for (int32_t k = 0; k < na; k++) {
        int64_t a = ax[k] < 0 ? ax[k] + rank : ax[k];
        if (a < 0 || a >= rank) return false;
        mask[a] = true;
    }
    return true;
}

bool dx_window_geom(const seam_node_view *n, const int64_t *kernel, bool ceil_mode, conv_geom *g, char *why,
                    size_t why_size) {
    int32_t nsp = n->inputs[0].rank - 2;
    if (nsp < 1 || nsp > 3 || n->outputs[0].rank != n->inputs[0].rank)
        return dx_refuse(why, why_size, "%s of rank %d: dnnl does 1-D, 2-D and 3-D", n->op_type, n->inputs[0].rank);
    if (!conv_geom_init(dx_ir(n), nsp, n->inputs[0].dims + 2, kernel, ceil_mode, g, why, why_size)) return false;
    for (int32_t d = 0; d < nsp; d++) /* (unknown sizes: compile decides) */
        if (g->out[d] >= 0 && n->outputs[0].dims[2 + d] >= 0 && g->out[d] != n->outputs[0].dims[2 + d])
            return dx_refuse(why, why_size, "its window does not give its output's shape");
    return true;
}

bool dx_window(builder *b, int32_t nsp, const int64_t *kernel, bool ceil_mode, dnnl_dims_t strides, dnnl_dims_t dilates,
               dnnl_dims_t pad_lo, dnnl_dims_t pad_hi) {
    conv_geom g;
    char why[160];
    if (!dx_window_geom(b->n, kernel, ceil_mode, &g, why, sizeof(why)) || g.n != nsp) return dx_fail(b, why), false;
    for (int32_t d = 0; d < nsp; d++) {
        /* the pad after is the one that ends the last window where the
         * output says (it covers ceil_mode) */
        strides[d] = g.stride[d], dilates[d] = g.dil[d] - 1;
        pad_lo[d] = g.pad_lo[d], pad_hi[d] = conv_geom_pad_end(&g, d);
    }
    return true;
}

/* An integer parameter input (bounds, axes, pads) computed at run time,
 * by nodes outside the subgraph: the Subgraph runner specializes the
 * subgraph for its values, and compile() reads them as constants
 * (runtime/subgraph.c). dnnl computes no int64, and int32 only by a Cast
 * (mask.c), which could be in the same subgraph: an int32 a Cast makes is
 * not taken as a parameter. */
bool dx_run_time_param(const seam_node_view *n, int32_t k) {
    if (n->inputs[k].dtype == SEAM_DTYPE_INT64) return true;
    const char *by = n->input_producers ? n->input_producers[k] : NULL;
    return n->inputs[k].dtype == SEAM_DTYPE_INT32 && !(by && !strcmp(by, "Cast"));
}

/* Slice (from opset 10) and the reductions: their parameter inputs are
 * read at compile time. */
bool dx_supports_param_inputs(const seam_node_view *n, char *why, size_t wn) {
    if (n->opset >= 10)
        for (int32_t k = 1; k < n->n_inputs; k++)
            if (!dx_const_input(n, k) && !dx_run_time_param(n, k))
                return dx_refuse(why, wn, "%s with a computed input %d is not supported", n->op_type, k);
    return true;
}
