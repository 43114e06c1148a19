/*
 * dnnl: per op a support check and a compile function, side by side, the
 * table of them (dx_ops, at the end), and compile_node, which finds a
 * node's row after the steps every node goes through (the layout its input
 * needs, the patterns tried first).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dnnl_internal.h"
#include "mask.h"
#include "shuf_shuffle.h"
#include "ops/activation.h"
#include "ops/attr.h"
#include "ops/conv_geom.h"

/* A float32 constant of one element (a Pow exponent, a Clip bound). */
static bool const_scalar(const seam_subgraph_view *sg, const seam_value_info *v, float *out) {
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
        if (n->n_inputs > 1 && n->inputs[1].name && !const_scalar(sg, &n->inputs[1], alpha)) return false;
        if (n->n_inputs > 2 && n->inputs[2].name && !const_scalar(sg, &n->inputs[2], beta)) return false;
        return true;
    default: break;
    }
    if (is_op(n, "Exp")) *alg = dnnl_eltwise_exp;
    else if (is_op(n, "Log")) *alg = dnnl_eltwise_log;
    else if (is_op(n, "Sqrt")) *alg = dnnl_eltwise_sqrt;
    else if (is_op(n, "Abs")) *alg = dnnl_eltwise_abs;
    else if (is_op(n, "Pow")) { /* alpha * x^beta, with a constant exponent */
        if (n->n_inputs < 2 || !const_scalar(sg, &n->inputs[1], beta)) return false;
        *alg = dnnl_eltwise_pow, *alpha = 1.0f;
    } else {
        return false;
    }
    return true;
}

/* oneDNN 2.6 has no hard sigmoid: eltwise_of gives its linear part, and a
 * clip to [0, 1] follows as a post-op. */
bool dx_clips_after(const seam_node_view *n) { return is_op(n, "HardSigmoid"); }

/* That clip, in place on slot s: an eltwise of its own (oneDNN has only
 * its reference kernel for an eltwise with an eltwise post-op). */
static bool clip01_step(builder *b, int32_t s) {
    dnnl_memory_desc_t md;
    dx_md_of(&b->p->slots[s], &md);
    dnnl_eltwise_desc_t ed;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_clip_v2, &md, 0.0f, 1.0f) != dnnl_success)
        return dx_fail(b, "oneDNN refuses a clip"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {s, s};
    return dx_add_step(b, &ed, NULL, 2, kinds, slots);
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

dnnl_alg_kind_t dx_binary_alg(const seam_node_view *n) {
    static const dnnl_alg_kind_t algs[] = {dnnl_binary_add, dnnl_binary_sub, dnnl_binary_mul, dnnl_binary_div, dnnl_binary_max, dnnl_binary_min};
    for (size_t k = 0; k < sizeof(algs) / sizeof(algs[0]); k++)
        if (is_op(n, binary_ops[k])) return algs[k];
    return dnnl_alg_kind_undef;
}

/* A layout of s's dims with the dims marked `inner` innermost (in their
 * order), the others outside them in theirs: where oneDNN's softmax and
 * reduction have fast kernels for an axis that is not the last. */
static bool inner_md(const slot *s, const bool *inner, dnnl_memory_desc_t *md) {
    int32_t order[MAXR], n = 0, r = s->rank;
    for (int32_t d = 0; d < r; d++)
        if (!inner[d]) order[n++] = d;
    for (int32_t d = 0; d < r; d++)
        if (inner[d]) order[n++] = d;
    return dx_dense_md_in_order(s, order, md);
}

/* One eltwise or binary step in input 0's (blocked) layout. Returns 1
 * when made, 0 when the op does not fit (the caller then goes plain), -1 on
 * an error. */
static int32_t blocked_step(builder *b, const seam_node_view *n, int32_t sin) {
    program *p = b->p;
    dnnl_memory_desc_t src = p->slots[sin].md;
    dnnl_primitive_desc_t pd = NULL;
    int32_t kinds[3], slots[3], n_args;
    if (IN_LIST(n, eltwise_ops)) {
        dnnl_alg_kind_t alg;
        float alpha, beta;
        dnnl_eltwise_desc_t ed;
        bool ok = dx_eltwise_of(n, b->sg, &alg, &alpha, &beta) &&
                  dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &src, alpha, beta) == dnnl_success &&
                  dnnl_primitive_desc_create(&pd, &ed, dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success;
        if (ok && dx_is_slow_ref(pd)) dnnl_primitive_desc_destroy(pd), ok = false; /* plain has a fast kernel */
        if (!ok) return 0;
        kinds[0] = DNNL_ARG_SRC, slots[0] = sin, n_args = 2;
    } else {
        dnnl_alg_kind_t alg = dx_binary_alg(n);
        int32_t s1 = dx_input_slot(b, &n->inputs[1]);
        if (s1 >= 0 && p->slots[s1].rank != p->slots[sin].rank) {
            /* an operand of lower rank (convnext's layer scale [C, 1, 1]
             * against [N, C, H, W]) is a view with leading 1-sized dims */
            int32_t *lo = p->slots[s1].rank < p->slots[sin].rank ? &s1 : &sin, hi = lo == &s1 ? sin : s1;
            if (p->slots[*lo].has_md || p->slots[hi].rank > MAXR) return 0;
            slot shape = p->slots[*lo];
            int32_t pad = p->slots[hi].rank - shape.rank;
            for (int32_t d = shape.rank - 1; d >= 0; d--) shape.dims[d + pad] = shape.dims[d];
            for (int32_t d = 0; d < pad; d++) shape.dims[d] = 1;
            shape.rank += pad;
            *lo = dx_view_slot(p, *lo, &shape, NULL);
            if (*lo < 0) return dx_fail(b, "out of memory"), -1;
        }
        if (s1 < 0 || p->slots[s1].rank != p->slots[sin].rank) return 0;
        /* a commutative op with the broadcast operand first (torch's
         * scale * x): oneDNN broadcasts src1 only, so the operands swap */
        bool swap = false;
        for (int32_t d = 0; d < p->slots[sin].rank && commutative(n); d++)
            swap |= p->slots[sin].dims[d] == 1 && p->slots[s1].dims[d] > 1;
        if (swap) {
            if (!p->slots[s1].has_md || p->slots[s1].lazy) return 0;
            int32_t tmp = sin;
            sin = s1, s1 = tmp;
            src = p->slots[sin].md;
        }
        bool bcast = false;
        for (int32_t d = 0; d < p->slots[sin].rank; d++) {
            if (p->slots[s1].dims[d] == p->slots[sin].dims[d]) continue;
            if (p->slots[s1].dims[d] != 1) return 0;
            bcast = true;
        }
        /* a broadcast operand (squeeze-excite's [N,C,1,1] scale) stays in
         * its plain layout next to the blocked input, when oneDNN has a
         * fast kernel for that; else the step goes plain */
        dnnl_memory_desc_t src1 = src;
        if (bcast) {
            dnnl_dims_t dims, strides;
            int64_t acc = 1;
            for (int32_t d = p->slots[s1].rank - 1; d >= 0; d--)
                dims[d] = p->slots[s1].dims[d], strides[d] = acc, acc *= p->slots[s1].dims[d];
            if (dnnl_memory_desc_init_by_strides(&src1, p->slots[s1].rank, dims, dnnl_f32, strides) != dnnl_success)
                return 0;
        }
        dnnl_binary_desc_t bd;
        if (dnnl_binary_desc_init(&bd, alg, &src, &src1, &src) != dnnl_success ||
            dnnl_primitive_desc_create(&pd, &bd, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
            return 0;
        if (dx_is_slow_ref(pd)) {
            /* a broadcast on a channel-blocked input (aBcd8b) has only the
             * reference kernel: channels-last is one reorder away and where
             * the next 1x1 convolution reads, not two through plain */
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
            bool inner[MAXR] = {false};
            dnnl_memory_desc_t cl;
            if (!bcast || p->slots[sin].rank < 3) return 0;
            inner[1] = true;
            if (!inner_md(&p->slots[sin], inner, &cl) || dnnl_binary_desc_init(&bd, alg, &cl, &src1, &cl) != dnnl_success ||
                dnnl_primitive_desc_create(&pd, &bd, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
                return 0;
            if (dx_is_slow_ref(pd)) return dnnl_primitive_desc_destroy(pd), 0; /* plain has a fast kernel */
            sin = dx_in_layout(b, sin, &cl);
            if (sin < 0) return dnnl_primitive_desc_destroy(pd), -1;
            src = cl;
        }
        s1 = dx_in_layout(b, s1, &src1);
        if (s1 < 0) return dnnl_primitive_desc_destroy(pd), -1;
        kinds[0] = DNNL_ARG_SRC_0, slots[0] = sin, kinds[1] = DNNL_ARG_SRC_1, slots[1] = s1, n_args = 3;
    }
    int32_t final_slot = -1;
    int32_t sd = dx_result_slot(b, &n->outputs[0], &src, &final_slot);
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "out of memory"), -1;
    }
    kinds[n_args - 1] = DNNL_ARG_DST, slots[n_args - 1] = sd;
    bool ok = dx_add_prim(b, pd, n_args, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (ok && dx_clips_after(n)) ok = clip01_step(b, sd);
    if (ok && final_slot >= 0) ok = dx_add_reorder(b, sd, final_slot);
    return ok ? 1 : -1;
}

/* A strided view v as value `name`: copied into place when the value
 * leaves the subgraph, else published as is (copied only when a reader
 * needs it dense). */
static bool publish_view(builder *b, int32_t v, const char *name) {
    program *p = b->p;
    int32_t sd = dx_slot_of(p, name);
    if (sd >= 0) return dx_add_reorder(b, v, sd); /* a boundary output */
    p->slots[v].name = name;
    /* a dense channels-last view of rank 4 or more (NHWC transposed to
     * NCHW, as convnext writes around its layer norms) is what a
     * convolution writes: no copy for its readers. Not of rank 3: there
     * it is also attention's K^T of [B*H, S, D], which a MatMul reads as
     * a lazy view, as it is, without a copy to plain. */
    p->slots[v].lazy = p->slots[v].has_md && !(p->slots[v].rank >= 4 && dx_is_channels_last(&p->slots[v]));
    return true;
}

/* Transpose: a reorder from a view of the input with permuted strides. */
static bool compile_transpose(builder *b, bool *fused, int32_t sin, int32_t out0) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[sin].rank;
    int64_t perm[MAXR], st[MAXR];
    const int64_t *pv;
    int32_t np = 0;
    if (seam_node_attr_ints(n, "perm", &pv, &np)) {
        if (np != r) return dx_fail(b, "perm does not match the input's rank"), false;
        bool seen[MAXR] = {false};
        for (int32_t d = 0; d < r; d++) {
            perm[d] = pv[d] < 0 ? pv[d] + r : pv[d];
            if (perm[d] < 0 || perm[d] >= r || seen[perm[d]])
                return dx_fail(b, "perm is not a permutation of the axes"), false;
            seen[perm[d]] = true;
        }
    } else {
        for (int32_t d = 0; d < r; d++) perm[d] = r - 1 - d;
    }
    dx_dense_strides(&p->slots[sin], st);
    slot shape;
    dx_shape_of(&shape, &n->outputs[0]);
    dnnl_dims_t dims, strides;
    for (int32_t d = 0; d < r; d++) dims[d] = p->slots[sin].dims[perm[d]], strides[d] = st[perm[d]];
    dnnl_memory_desc_t vmd;
    int32_t rr = r ? r : 1;
    if (!r) dims[0] = 1, strides[0] = 1;
    if (dnnl_memory_desc_init_by_strides(&vmd, rr, dims, dnnl_f32, strides) != dnnl_success)
        return dx_fail(b, "bad transpose"), false;
    int32_t v = dx_view_slot(p, sin, &shape, &vmd);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    /* no copy until a reader needs one: a MatMul reads the strided view
     * as it is, and a permutation that moves only 1-sized dims is plain */
    return publish_view(b, v, n->outputs[0].name);
}

/* An integer parameter input (bounds, axes, pads) computed at run time,
 * by nodes outside the subgraph: the Subgraph runner specializes the
 * subgraph for its values, and compile() reads them as constants
 * (runtime/subgraph.c). dnnl computes no int64, and int32 only by a Cast
 * (mask.c), which could be in the same subgraph: an int32 a Cast makes is
 * not taken as a parameter. */
static bool run_time_param(const seam_node_view *n, int32_t k) {
    if (n->inputs[k].dtype == SEAM_DTYPE_INT64) return true;
    const char *by = n->input_producers ? n->input_producers[k] : NULL;
    return n->inputs[k].dtype == SEAM_DTYPE_INT32 && !(by && !strcmp(by, "Cast"));
}

/* Slice (from opset 10) and the reductions: their parameter inputs are
 * read at compile time. */
static bool supports_param_inputs(const seam_node_view *n, char *why, size_t wn) {
    if (n->opset >= 10)
        for (int32_t k = 1; k < n->n_inputs; k++)
            if (!dx_const_input(n, k) && !run_time_param(n, k))
                return dx_refuse(why, wn, "%s with a computed input %d is not supported", n->op_type, k);
    return true;
}

/* Slice with constant bounds and positive steps: a reorder from a strided
 * view of the input, which starts at the first element taken. */
static bool compile_slice(builder *b, bool *fused, int32_t sin, int32_t out0) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[sin].rank;
    int64_t starts[MAXR], ends[MAXR], axes[MAXR], steps[MAXR];
    int32_t ns, ne, na = -1, nst = -1;
    if (n->opset >= 10) {
        ns = n->n_inputs > 1 ? dx_const_ints(b, &n->inputs[1], starts, MAXR) : -1;
        ne = n->n_inputs > 2 ? dx_const_ints(b, &n->inputs[2], ends, MAXR) : -1;
        if (n->n_inputs > 3 && n->inputs[3].name) na = dx_const_ints(b, &n->inputs[3], axes, MAXR);
        if (n->n_inputs > 4 && n->inputs[4].name) nst = dx_const_ints(b, &n->inputs[4], steps, MAXR);
        if ((n->n_inputs > 3 && n->inputs[3].name && na < 0) || (n->n_inputs > 4 && n->inputs[4].name && nst < 0))
            return dx_fail(b, "axes and steps must be constants"), false;
    } else {
        const int64_t *v;
        int32_t c;
        ns = seam_node_attr_ints(n, "starts", &v, &c) && c <= MAXR ? (memcpy(starts, v, 8 * (size_t)c), c) : -1;
        ne = seam_node_attr_ints(n, "ends", &v, &c) && c <= MAXR ? (memcpy(ends, v, 8 * (size_t)c), c) : -1;
        if (seam_node_attr_ints(n, "axes", &v, &c) && c <= MAXR) memcpy(axes, v, 8 * (size_t)c), na = c;
    }
    if (ns < 0 || ne != ns) return dx_fail(b, "starts and ends must be constants of one length"), false;
    if (na < 0) {
        na = ns;
        for (int32_t k = 0; k < ns; k++) axes[k] = k;
    }
    if (nst < 0) {
        nst = ns;
        for (int32_t k = 0; k < ns; k++) steps[k] = 1;
    }
    if (na != ns || nst != ns) return dx_fail(b, "starts, ends, axes and steps differ in length"), false;
    int64_t first[MAXR] = {0}, stride_of[MAXR], st[MAXR];
    for (int32_t d = 0; d < r; d++) stride_of[d] = 1;
    for (int32_t k = 0; k < ns; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
        if (a < 0 || a >= r) return dx_fail(b, "an axis is out of range"), false;
        if (steps[k] <= 0) return dx_fail(b, "Slice with a step below 1 is not supported by dnnl"), false;
        int64_t dim = p->slots[sin].dims[a], f = starts[k] < 0 ? starts[k] + dim : starts[k];
        first[a] = f < 0 ? 0 : f > dim ? dim : f;
        stride_of[a] = steps[k];
    }
    dx_dense_strides(&p->slots[sin], st);
    slot shape;
    dx_shape_of(&shape, &n->outputs[0]);
    if (shape.rank != r) return dx_fail(b, "the inferred output rank differs from the input's"), false;
    dnnl_dims_t dims, strides;
    int64_t offset = 0;
    for (int32_t d = 0; d < r; d++) {
        dims[d] = shape.dims[d], strides[d] = st[d] * stride_of[d];
        int64_t room = p->slots[sin].dims[d] - first[d]; /* elements from the first one taken */
        if (dims[d] > 0 && (room <= 0 || (dims[d] > 1 && stride_of[d] > (room - 1) / (dims[d] - 1))))
            return dx_fail(b, "the inferred output shape does not fit the input"), false;
        offset += first[d] * st[d];
    }
    dnnl_memory_desc_t vmd;
    if (dnnl_memory_desc_init_by_strides(&vmd, r, dims, dnnl_f32, strides) != dnnl_success)
        return dx_fail(b, "bad slice"), false;
    int32_t v = dx_view_slot(p, sin, &shape, &vmd);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    p->slots[v].offset = offset * (int64_t)sizeof(float);
    /* like a Transpose: no copy until a reader needs a dense layout */
    return publish_view(b, v, n->outputs[0].name);
}

/* Gather with one constant index (torch's h_n[-1], x[:, 0]): a strided
 * view of the input at that index, without the axis (a scalar index) or
 * with it 1 long (a 1-element index). No copy until a reader needs one. */
static bool supports_gather(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_inputs < 2 || !n->inputs[1].name || !dx_const_input(n, 1) || dx_value_numel(&n->inputs[1]) != 1 ||
        n->inputs[1].rank > 1)
        return dx_refuse(why, wn, "Gather is supported only with one constant index (dnnl has no gather)");
    return true;
}

static bool compile_gather(builder *b, bool *fused, int32_t sin, int32_t out0) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[sin].rank;
    int64_t axis = node_attr_int(dx_ir(n), "axis", 0), idx;
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return dx_fail(b, "axis out of range"), false;
    if (dx_const_ints(b, &n->inputs[1], &idx, 1) != 1)
        return dx_fail(b, "the index must be one int32 or int64 constant"), false;
    int64_t dim = p->slots[sin].dims[axis];
    if (idx < 0) idx += dim;
    if (idx < 0 || idx >= dim) return dx_fail(b, "the index is out of range"), false;
    int64_t st[MAXR];
    dx_dense_strides(&p->slots[sin], st);
    slot shape;
    dx_shape_of(&shape, &n->outputs[0]);
    bool keep = n->inputs[1].rank == 1;
    if (shape.rank != (keep ? r : r - 1)) return dx_fail(b, "the inferred output rank does not fit"), false;
    dnnl_dims_t dims, strides;
    for (int32_t d = 0, o = 0; d < r; d++) {
        if (d == axis && !keep) continue;
        dims[o] = d == axis ? 1 : p->slots[sin].dims[d], strides[o] = st[d];
        if (dims[o] != shape.dims[o]) return dx_fail(b, "the inferred output shape does not fit"), false;
        o++;
    }
    int32_t rr = shape.rank ? shape.rank : 1;
    if (!shape.rank) dims[0] = 1, strides[0] = 1;
    dnnl_memory_desc_t vmd;
    if (dnnl_memory_desc_init_by_strides(&vmd, rr, dims, dnnl_f32, strides) != dnnl_success)
        return dx_fail(b, "bad gather"), false;
    int32_t v = dx_view_slot(p, sin, &shape, &vmd);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    p->slots[v].offset = idx * st[axis] * (int64_t)sizeof(float);
    return publish_view(b, v, n->outputs[0].name);
}

/* Split: each output a strided view of the input (its part along the
 * axis, the sizes the outputs' inferred shapes give), copied only when a
 * reader needs it dense. */
static bool compile_split(builder *b, bool *fused, int32_t sin, int32_t out0) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[sin].rank;
    int64_t axis = node_attr_int(dx_ir(n), "axis", 0), st[MAXR], at = 0;
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return dx_fail(b, "axis out of range"), false;
    dx_dense_strides(&p->slots[sin], st);
    for (int32_t k = 0; k < n->n_outputs; k++) {
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
        const seam_value_info *o = &n->outputs[k];
        if (o->rank != r) return dx_fail(b, "an output's rank differs from the input's"), false;
        dnnl_dims_t dims, strides;
        for (int32_t d = 0; d < r; d++) {
            dims[d] = o->dims[d], strides[d] = st[d];
            if (d != axis && dims[d] != p->slots[sin].dims[d])
                return dx_fail(b, "an output's shape does not fit"), false;
        }
        if (at + dims[axis] > p->slots[sin].dims[axis])
            return dx_fail(b, "the outputs are longer than the input"), false;
        if (!o->name) {
            at += dims[axis];
            continue;
        }
        slot shape;
        dx_shape_of(&shape, o);
        dnnl_memory_desc_t vmd;
        if (dnnl_memory_desc_init_by_strides(&vmd, r, dims, dnnl_f32, strides) != dnnl_success)
            return dx_fail(b, "bad split"), false;
        int32_t v = dx_view_slot(p, sin, &shape, &vmd);
        if (v < 0) return dx_fail(b, "out of memory"), false;
        p->slots[v].offset = at * st[axis] * (int64_t)sizeof(float);
        at += dims[axis];
        if (!publish_view(b, v, o->name)) return false;
    }
    if (at != p->slots[sin].dims[axis]) return dx_fail(b, "the outputs do not cover the input"), false;
    return true;
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

static bool supports_reduce(const seam_node_view *n, char *why, size_t wn) {
    if (!supports_param_inputs(n, why, wn)) return false;
    if (node_attr_int(dx_ir(n), "noop_with_empty_axes", 0))
        return dx_refuse(why, wn, "%s with noop_with_empty_axes=1 is not supported", n->op_type);
    return true;
}

/* ReduceMean/Sum/Max/Min: oneDNN's reduction into the kept-dims shape,
 * which is a view of the output when keepdims=0. */
static bool compile_reduce(builder *b, bool *fused, int32_t sin, int32_t out0) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[sin].rank;
    bool mask[MAXR];
    if (!dx_reduce_axes(b, r, mask)) return dx_fail(b, "axes must be constants within the input's rank"), false;
    slot kept = p->slots[sin];
    kept.has_md = false;
    for (int32_t d = 0; d < r; d++)
        if (mask[d]) kept.dims[d] = 1;
    int32_t sd = dx_output_slot(b, &n->outputs[0]);
    if (sd < 0) return dx_fail(b, "out of memory"), false;
    int32_t dv = dx_view_slot(p, sd, &kept, NULL);
    if (dv < 0) return dx_fail(b, "out of memory"), false;
    dnnl_memory_desc_t src, dst;
    dx_md_of(&p->slots[sin], &src);
    dx_md_of(&p->slots[dv], &dst);
    dnnl_alg_kind_t alg = is_op(n, "ReduceMean") ? dnnl_reduction_mean : is_op(n, "ReduceSum") ? dnnl_reduction_sum
                          : is_op(n, "ReduceMax") ? dnnl_reduction_max : dnnl_reduction_min;
    dnnl_reduction_desc_t rd;
    dnnl_primitive_desc_t pd;
    if (dnnl_reduction_desc_init(&rd, alg, &src, &dst, 0.0f, 0.0f) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &rd, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this reduction"), false;
    /* oneDNN's fast reduction wants the reduced axes last: otherwise the
     * input is reordered to a layout where they are innermost, seen as
     * [kept, reduced] (plain), reduced into the output seen as [kept, 1]
     * (the kept axes keep their order: the same bytes) */
    dnnl_memory_desc_t isrc, src2, dst2;
    dnnl_primitive_desc_t ipd = NULL;
    slot s2, d2;
    dx_shape_of(&s2, &n->outputs[0]);
    s2.rank = 2, s2.dims[0] = 1, s2.dims[1] = 1;
    for (int32_t d = 0; d < r; d++) s2.dims[mask[d] ? 1 : 0] *= p->slots[sin].dims[d];
    d2 = s2, d2.dims[1] = 1;
    if (dx_is_slow_ref(pd) && inner_md(&p->slots[sin], mask, &isrc) && dx_md_of(&s2, &src2) && dx_md_of(&d2, &dst2) &&
        dnnl_reduction_desc_init(&rd, alg, &src2, &dst2, 0.0f, 0.0f) == dnnl_success &&
        dnnl_primitive_desc_create(&ipd, &rd, dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success &&
        dx_is_slow_ref(ipd))
        dnnl_primitive_desc_destroy(ipd), ipd = NULL;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, dv};
    if (ipd) {
        dnnl_primitive_desc_destroy(pd);
        pd = ipd;
        int32_t t = dx_in_layout(b, sin, &isrc);
        slots[0] = t >= 0 ? dx_view_slot(p, t, &s2, NULL) : -1;
        slots[1] = dx_view_slot(p, sd, &d2, NULL);
        if (slots[0] < 0 || slots[1] < 0) return dnnl_primitive_desc_destroy(pd), dx_fail(b, "out of memory"), false;
    }
    bool ok = dx_add_prim(b, pd, 2, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* A ReduceMean or ReduceMax over exactly the spatial axes of a rank-4 or
 * rank-5 input (a classifier's head, a squeeze-excitation gate): a global
 * pooling, which reads the input in the layout it has (a convolution's
 * blocked output: no reorder to plain, no reduction kernel). Returns 1
 * when made, 0 when the node is not such a reduction (the caller goes
 * plain), -1 on an error. */
static int32_t reduce_as_pool(builder *b, int32_t sin) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    bool mean = is_op(n, "ReduceMean");
    if (!mean && !is_op(n, "ReduceMax")) return 0;
    const slot *in = &p->slots[sin];
    int32_t r = in->rank;
    bool mask[MAXR];
    if ((r != 4 && r != 5) || in->lazy || in->pad_pending || !dx_reduce_axes(b, r, mask) || mask[0] || mask[1])
        return 0;
    for (int32_t d = 2; d < r; d++)
        if (!mask[d]) return 0;
    const seam_value_info *ov = &n->outputs[0];
    bool keep = ov->rank == r;
    if (ov->rank != (keep ? r : 2) || ov->dims[0] != in->dims[0] || ov->dims[1] != in->dims[1])
        return dx_fail(b, "its output's shape is not its input's with the reduced axes removed"), -1;
    for (int32_t d = 2; keep && d < r; d++)
        if (ov->dims[d] != 1) return dx_fail(b, "its output's shape is not its input's with the reduced axes 1"), -1;
    dnnl_memory_desc_t src, any_dst;
    dx_md_of(in, &src);
    dnnl_dims_t kernel, strides, dilation, pl, pr, odims;
    odims[0] = in->dims[0], odims[1] = in->dims[1];
    for (int32_t d = 0; d < r - 2; d++)
        kernel[d] = in->dims[2 + d], strides[d] = 1, dilation[d] = 0, pl[d] = pr[d] = 0, odims[2 + d] = 1;
    dnnl_memory_desc_init_by_tag(&any_dst, r, odims, dnnl_f32, dnnl_format_tag_any);
    dnnl_pooling_v2_desc_t pld;
    dnnl_primitive_desc_t pd;
    if (dnnl_pooling_v2_forward_desc_init(&pld, dnnl_forward_inference,
                                          mean ? dnnl_pooling_avg_exclude_padding : dnnl_pooling_max, &src, &any_dst,
                                          strides, kernel, dilation, pl, pr) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &pld, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return 0; /* (the reduction then) */
    if (dx_is_slow_ref(pd)) return dnnl_primitive_desc_destroy(pd), 0;
    if (keep) return dx_layout_step(b, pd, sin, ov) ? 1 : -1;
    /* keepdims=0: the pool writes [N, C, 1, ...] in its layout, then the
     * output [N, C] is that (a view, when the layout is plain) or a copy of
     * its N * C values */
    const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int32_t sd = dx_output_slot(b, ov);
    slot kept = p->slots[sd >= 0 ? sd : sin];
    kept.has_md = false, kept.rank = r;
    memcpy(kept.dims, odims, sizeof(kept.dims));
    int32_t dv = sd >= 0 ? dx_view_slot(p, sd, &kept, NULL) : -1;
    dnnl_memory_desc_t plain;
    bool direct = dv >= 0 && dx_md_of(&p->slots[dv], &plain) && dnnl_memory_desc_equal(&plain, dmd);
    int32_t t = direct || dv < 0 ? dv : dx_temp_slot(b, &kept, dmd);
    if (t < 0) return dnnl_primitive_desc_destroy(pd), dx_fail(b, "out of memory"), -1;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, t};
    bool ok = dx_add_prim(b, pd, 2, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (ok && !direct) ok = dx_add_reorder(b, t, dv);
    return ok ? 1 : -1;
}

/* Layer normalization over the last axis, with optional scale and shift
 * (constant vectors): the LayerNormalization op, or the decomposed form
 * exporters write (see compile_layernorm_pattern). */
bool dx_layernorm_step(builder *b, int32_t sin, const char *scale, const char *shift, float eps,
                       const seam_value_info *out) {
    program *p = b->p;
    int32_t sc = scale ? dx_named_slot(b, scale) : -1, sh = shift ? dx_named_slot(b, shift) : -1;
    if ((scale && sc < 0) || (shift && sh < 0)) return dx_fail(b, "scale and bias must be float32 constants"), false;
    int64_t c = p->slots[sin].dims[p->slots[sin].rank - 1];
    for (int32_t k = 0; k < 2; k++) {
        int32_t t = k ? sh : sc;
        if (t >= 0 && dx_slot_numel(&p->slots[t]) != c)
            return dx_fail(b, "scale and bias must have one value per normalized element"), false;
        if (t >= 0) { /* as a [C] vector, whatever rank the file gives */
            slot v = p->slots[t];
            v.rank = 1, v.dims[0] = c, v.has_md = false;
            if (k) sh = dx_view_slot(p, sh, &v, NULL);
            else sc = dx_view_slot(p, sc, &v, NULL);
            if ((k ? sh : sc) < 0) return dx_fail(b, "out of memory"), false;
        }
    }
    dnnl_memory_desc_t src;
    dx_md_of(&p->slots[sin], &src);
    unsigned flags = (sc >= 0 ? dnnl_use_scale : 0) | (sh >= 0 ? dnnl_use_shift : 0);
    dnnl_layer_normalization_desc_t ld;
    if (dnnl_layer_normalization_forward_desc_init(&ld, dnnl_forward_inference, &src, NULL, eps, flags) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this layer normalization"), false;
    int32_t sd = dx_output_slot(b, out);
    if (sd < 0) return dx_fail(b, "out of memory"), false;
    int32_t kinds[4] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[4] = {sin, sd};
    int32_t na = 2;
    if (sc >= 0) kinds[na] = DNNL_ARG_SCALE, slots[na++] = sc;
    if (sh >= 0) kinds[na] = DNNL_ARG_SHIFT, slots[na++] = sh;
    return dx_add_step(b, &ld, NULL, na, kinds, slots);
}

static bool supports_layernorm(const seam_node_view *n, char *why, size_t wn) {
    int64_t axis = node_attr_int(dx_ir(n), "axis", -1);
    if (axis != -1 && axis != n->inputs[0].rank - 1)
        return dx_refuse(why, wn, "LayerNormalization over more than the last axis is not supported");
    for (int32_t k = 1; k < 3 && k < n->n_inputs; k++)
        if (n->inputs[k].name && (!dx_const_input(n, k) || n->inputs[k].rank != 1))
            return dx_refuse(why, wn,
                             "LayerNormalization with a scale or bias that is not a constant vector is not supported");
    for (int32_t k = 1; k < n->n_outputs; k++)
        if (n->outputs[k].name)
            return dx_refuse(why, wn, "LayerNormalization with Mean or InvStdDev outputs is not supported");
    return true;
}

static bool compile_layernorm(builder *b, bool *fused, int32_t sin, int32_t out0) {
    const seam_node_view *n = b->n;
    float eps = 1e-5f;
    seam_node_attr_float(n, "epsilon", &eps);
    const char *scale = n->n_inputs > 1 ? n->inputs[1].name : NULL, *shift = n->n_inputs > 2 ? n->inputs[2].name : NULL;
    seam_value_info out = n->outputs[0];
    int64_t dims[MAXR];
    for (int32_t d = 0; d < out.rank; d++) dims[d] = out.dims[d];
    out.dims = dims;
    return dx_layernorm_step(b, sin, scale, shift, eps, &out);
}

/* Reshape-like ops: same bytes, new shape: an alias slot. */
static bool compile_view(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t in = dx_input_slot(b, &n->inputs[0]);
    slot shape;
    memset(&shape, 0, sizeof(shape));
    shape.rank = n->outputs[0].rank;
    for (int32_t d = 0; d < shape.rank; d++) shape.dims[d] = n->outputs[0].dims[d];
    /* a strided view (a Slice, a Transpose) stays one when the new shape
     * only splits or merges dims its strides allow */
    dnnl_memory_desc_t smd;
    bool strided = in >= 0 && (p->slots[in].lazy || dx_is_strided(&p->slots[in])) && p->slots[in].scale == 1.0f &&
                   dx_reshape_view(&p->slots[in], &shape, &smd);
    if (in >= 0 && !strided) in = dx_as_plain(b, in);
    if (in < 0) return dx_fail(b, "its input is not available"), false;
    int32_t v = dx_view_slot(p, in, &shape, strided ? &smd : NULL);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    return publish_view(b, v, n->outputs[0].name);
}

/* a Concat of inputs in oneDNN's layouts (the branches of an inception
 * block, a densenet's features) stays in them: dst takes the layout
 * oneDNN picks from its inputs. Returns 1 when made, 0 when oneDNN has no
 * such concat (the caller then goes plain), -1 on an error. */
static int32_t blocked_concat(builder *b, int32_t sin) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src;
    dx_md_of(&p->slots[sin], &src);
    int64_t axis = 0;
    seam_node_attr_int(n, "axis", &axis);
    if (axis < 0) axis += n->inputs[0].rank;
    int32_t cnt = n->n_inputs, kinds[MAX_ARGS], slots[MAX_ARGS];
    dnnl_memory_desc_t mds[MAX_ARGS], any_dst;
    bool ok = true;
    for (int32_t k = 0; ok && k < cnt; k++) {
        int32_t s2 = dx_input_slot(b, &n->inputs[k]);
        if (s2 >= 0 && p->slots[s2].lazy) s2 = dx_as_plain(b, s2);
        ok = s2 >= 0;
        if (ok) dx_md_of(&p->slots[s2], &mds[k]), kinds[k] = DNNL_ARG_MULTIPLE_SRC + k, slots[k] = s2;
    }
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    dnnl_primitive_desc_t pd;
    if (ok && dnnl_memory_desc_init_by_tag(&any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
        dnnl_concat_primitive_desc_create(&pd, &any_dst, cnt, (int)axis, mds, dx_ctx.user_scratch, dx_ctx.engine) == dnnl_success) {
        const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
        int32_t final_slot = -1;
        int32_t sd = dx_result_slot(b, &n->outputs[0], dmd, &final_slot);
        if (sd < 0) {
            dnnl_primitive_desc_destroy(pd);
            return dx_fail(b, "out of memory"), -1;
        }
        kinds[cnt] = DNNL_ARG_DST, slots[cnt] = sd;
        ok = dx_add_prim(b, pd, cnt + 1, kinds, slots);
        dnnl_primitive_desc_destroy(pd);
        if (ok && final_slot >= 0) ok = dx_add_reorder(b, sd, final_slot);
        return ok ? 1 : -1;
    }
    if (!ok) return dx_fail(b, "an input is not available"), -1;
    return 0; /* else the plain concat */
}

/* MaxPool and AveragePool: no Indices output. */
static bool supports_pool(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_outputs > 1 && n->outputs[1].name)
        return dx_refuse(why, wn, "MaxPool with an Indices output is not supported");
    const int64_t *ks;
    conv_geom g;
    if (node_attr_ints(dx_ir(n), "kernel_shape", &ks) != n->inputs[0].rank - 2)
        return dx_refuse(why, wn, "bad kernel_shape");
    return dx_window_geom(n, ks, node_attr_int(dx_ir(n), "ceil_mode", 0) != 0, &g, why, wn);
}

/* Pools work in the layout their input has. A global pool's window is the
 * whole input. */
static bool compile_pool(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src;
    dx_md_of(&p->slots[sin], &src);
    int32_t nsp = n->inputs[0].rank - 2;
    bool global = n->op_type[0] == 'G';
    if (global) { /* channels-last: seam's kernel (host.c) */
        int32_t r = dx_compile_global_pool(b, sin);
        if (r) return r > 0;
        n = b->n;
    }
    dnnl_dims_t pl, pr, strides, kernel, dilation;
    if (global) {
        for (int32_t d = 0; d < nsp; d++)
            kernel[d] = n->inputs[0].dims[2 + d], strides[d] = 1, dilation[d] = 0, pl[d] = pr[d] = 0;
    } else {
        const int64_t *ks;
        if (nsp < 1 || node_attr_ints(dx_ir(n), "kernel_shape", &ks) != nsp)
            return dx_fail(b, "bad kernel_shape"), false;
        if (!dx_window(b, nsp, ks, node_attr_int(dx_ir(n), "ceil_mode", 0) != 0, strides, dilation, pl, pr))
            return false;
        for (int32_t d = 0; d < nsp; d++) kernel[d] = ks[d];
    }
    dnnl_alg_kind_t alg = strstr(n->op_type, "Max") ? dnnl_pooling_max
                          : node_attr_int(dx_ir(n), "count_include_pad", 0) ? dnnl_pooling_avg_include_padding
                                                                           : dnnl_pooling_avg_exclude_padding;
    if (p->slots[sin].pad_pending) { /* a zero Pad before it (see compile_pad): its zeros count */
        if (global || alg == dnnl_pooling_max) return dx_fail(b, "a Pad left to a pool that cannot take it"), false;
        alg = dnnl_pooling_avg_include_padding;
        for (int32_t d = 0; d < nsp; d++) pl[d] += p->slots[sin].pad_lo[d], pr[d] += p->slots[sin].pad_hi[d];
    }
    dnnl_memory_desc_t any_dst;
    dnnl_memory_desc_init_by_tag(&any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_pooling_v2_desc_t pld;
    dnnl_primitive_desc_t pd;
    if (dnnl_pooling_v2_forward_desc_init(&pld, dnnl_forward_inference, alg, &src, &any_dst, strides, kernel, dilation, pl, pr) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &pld, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this pooling"), false;
    return dx_layout_step(b, pd, sin, &n->outputs[0]);
}

static bool supports_batchnorm(const seam_node_view *n, char *why, size_t wn) {
    if (node_attr_int(dx_ir(n), "training_mode", 0))
        return dx_refuse(why, wn, "BatchNormalization in training mode is not supported");
    return true;
}

/* The Relu that alone reads a BatchNormalization's output, or -1: with
 * fusion on, the batch norm applies it in the same pass (oneDNN's
 * fuse_norm_relu) and writes the Relu's output. */
static int32_t bn_relu_reader(builder *b, const char *out) {
    if (!b->fuse || !out) return -1;
    int32_t r = dx_sole_reader(b, out);
    if (r < 0) return -1;
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, r, &st);
    return is_op(m, "Relu") && m->n_outputs >= 1 && m->outputs[0].name ? r : -1;
}

/* Batch norm, with constant statistics, in the layout its input has; a
 * Relu that alone reads it is fused (bn_relu_reader). */
static bool compile_batchnorm(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src;
    dx_md_of(&p->slots[sin], &src);
    int32_t sc = dx_input_slot(b, &n->inputs[1]), sh = dx_input_slot(b, &n->inputs[2]);
    int32_t mn = dx_input_slot(b, &n->inputs[3]), vr = dx_input_slot(b, &n->inputs[4]);
    if (sc < 0 || sh < 0 || mn < 0 || vr < 0) return dx_fail(b, "scale, B, mean and var must be constants"), false;
    float eps = 1e-5f;
    seam_node_attr_float(n, "epsilon", &eps);
    int32_t relu = bn_relu_reader(b, n->outputs[0].name);
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift | (relu >= 0 ? dnnl_fuse_norm_relu : 0);
    dnnl_batch_normalization_desc_t bd;
    if (dnnl_batch_normalization_forward_desc_init(&bd, dnnl_forward_inference, &src, eps, flags) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this batch normalization"), false;
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, &bd, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this batch normalization"), false;
    int32_t extra_kinds[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE}, extra[4] = {sc, sh, mn, vr};
    if (relu < 0) return dx_layout_step_with(b, pd, sin, &n->outputs[0], 4, extra_kinds, extra);
    /* the batch norm's own output is read by the Relu alone: it is never
     * made; the step writes the Relu's output (same shape, by the Relu's
     * shape inference) */
    int32_t rank = n->outputs[0].rank;
    int64_t bn_dims[MAXR], dims[MAXR];
    for (int32_t d = 0; d < rank && d < MAXR; d++) bn_dims[d] = n->outputs[0].dims[d];
    seam_node_view st; /* (fetching it invalidates n's values: n is fetched again below) */
    const seam_node_view *m = seam_subgraph_node(b->sg, relu, &st);
    seam_value_info out = m->outputs[0];
    bool same = out.rank == rank && rank <= MAXR;
    for (int32_t d = 0; same && d < rank; d++) same = out.dims[d] == bn_dims[d], dims[d] = out.dims[d];
    out.dims = dims;
    const char *relu_name = m->name, *relu_op = m->op_type;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (!same) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "its Relu's output's shape differs from its own (inconsistent shapes in the file)"), false;
    }
    chain c;
    memset(&c, 0, sizeof(c));
    c.n = 1, c.node[0] = relu, c.aux[0] = -1, c.name[0] = relu_name, c.op[0] = relu_op;
    b->chain = &c;
    bool ok = dx_layout_step_with(b, pd, sin, &out, 4, extra_kinds, extra);
    b->chain = NULL;
    if (ok) fused[relu] = true;
    return ok;
}

/* Clip's bounds and Pow's exponent become the eltwise's parameters: they
 * must be constants (compile reads them). */
/* Clip's bounds: constants (an eltwise, fused into a producer's post-ops)
 * or values computed or given at run time (binary max and min, see
 * clip_at_run_time); one float each. */
static bool supports_clip(const seam_node_view *n, char *why, size_t wn) {
    for (int32_t k = 1; k < n->n_inputs && k < 3; k++)
        if (n->inputs[k].name && (n->inputs[k].dtype != SEAM_DTYPE_FLOAT32 || dx_value_numel(&n->inputs[k]) != 1))
            return dx_refuse(why, wn, "Clip with a bound that is not one float32 is not supported");
    return true;
}

/* Clip whose bounds are known only at run time: max with the lower bound,
 * then min with the upper one (in place), each bound a one-element operand
 * broadcast over x. */
static bool clip_at_run_time(builder *b, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t dst;
    dx_md_of(&p->slots[sd], &dst);
    int32_t from = sin, r = p->slots[sd].rank;
    for (int32_t k = 1; k < n->n_inputs && k < 3; k++) {
        if (!n->inputs[k].name) continue;
        int32_t s = dx_input_slot(b, &n->inputs[k]);
        if (s >= 0) s = dx_as_plain(b, s);
        if (s < 0) return dx_fail(b, "a bound is not available"), false;
        slot one;
        memset(&one, 0, sizeof(one));
        one.rank = r ? r : 1;
        for (int32_t d = 0; d < one.rank; d++) one.dims[d] = 1;
        s = dx_view_slot(p, s, &one, NULL);
        if (s < 0) return dx_fail(b, "a bound is not one value"), false;
        dnnl_memory_desc_t src, m1;
        dx_md_of(&p->slots[from], &src);
        dx_md_of(&p->slots[s], &m1);
        dnnl_binary_desc_t bd;
        if (dnnl_binary_desc_init(&bd, k == 1 ? dnnl_binary_max : dnnl_binary_min, &src, &m1, &dst) != dnnl_success)
            return dx_fail(b, "oneDNN refuses this Clip"), false;
        int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {from, s, sd};
        if (!dx_add_step(b, &bd, NULL, 3, kinds, slots)) return false;
        from = sd;
    }
    return from == sd || dx_add_reorder(b, sin, sd); /* no bounds: a copy */
}

static bool supports_pow(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[1].dtype != SEAM_DTYPE_FLOAT32 || !dx_const_input(n, 1) || dx_value_numel(&n->inputs[1]) != 1)
        return dx_refuse(why, wn, "Pow with an exponent that is not one constant float32 is not supported");
    return true;
}

static bool compile_eltwise(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src, dst;
    dx_md_of(&p->slots[sin], &src);
    dx_md_of(&p->slots[sd], &dst);
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (!dx_eltwise_of(n, b->sg, &alg, &alpha, &beta)) {
        if (is_op(n, "Clip")) return clip_at_run_time(b, sin, sd);
        return dx_fail(b, "not expressible as one oneDNN eltwise"), false;
    }
    dnnl_eltwise_desc_t ed;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &src, alpha, beta) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this eltwise"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
    return dx_add_step(b, &ed, NULL, 2, kinds, slots) && (!dx_clips_after(n) || clip01_step(b, sd));
}

static bool supports_binary(const seam_node_view *n, char *why, size_t wn) {
    if (!full_shape(&n->inputs[0], &n->outputs[0]) && !(commutative(n) && full_shape(&n->inputs[1], &n->outputs[0])))
        return dx_refuse(why, wn, "%s broadcasting input 0 is not supported (dnnl broadcasts the second operand)",
                         n->op_type);
    return true;
}

static bool compile_binary(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src, dst;
    dx_md_of(&p->slots[sin], &src);
    dx_md_of(&p->slots[sd], &dst);
    dnnl_alg_kind_t alg;
    alg = dx_binary_alg(n);
    /* oneDNN broadcasts the second operand only: a commutative op whose
     * first operand broadcasts takes its operands the other way round */
    int32_t i1 = 1;
    if (!full_shape(&n->inputs[0], &n->outputs[0])) {
        if (!commutative(n)) return dx_fail(b, "broadcasting input 0 is not supported"), false;
        sin = dx_input_slot(b, &n->inputs[1]);
        if (sin >= 0) sin = dx_as_plain(b, sin);
        if (sin < 0) return dx_fail(b, "input 1 is not available"), false;
        dx_md_of(&p->slots[sin], &src);
        i1 = 0;
    }
    int32_t s1 = dx_input_slot(b, &n->inputs[i1]);
    if (s1 >= 0) s1 = dx_as_plain(b, s1);
    if (s1 < 0) return dx_fail(b, "an input is not available"), false;
    /* right-align the second operand's dims with leading 1s */
    slot v1 = p->slots[s1];
    int32_t r0 = n->outputs[0].rank;
    if (v1.rank < r0) {
        int32_t shift = r0 - v1.rank;
        for (int32_t d = r0 - 1; d >= 0; d--) v1.dims[d] = d >= shift ? p->slots[s1].dims[d - shift] : 1;
        v1.rank = r0;
        int32_t a = dx_view_slot(p, s1, &v1, NULL);
        if (a < 0) return dx_fail(b, "out of memory"), false;
        s1 = a;
    }
    dnnl_memory_desc_t m1;
    dx_md_of(&p->slots[s1], &m1);
    dnnl_binary_desc_t bd;
    if (dnnl_binary_desc_init(&bd, alg, &src, &m1, &dst) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this broadcast"), false;
    int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {sin, s1, sd};
    return dx_add_step(b, &bd, NULL, 3, kinds, slots);
}

static bool supports_softmax(const seam_node_view *n, char *why, size_t wn) {
    if (n->opset < 13) return dx_refuse(why, wn, "%s before opset 13 (2-D coercion) is not supported", n->op_type);
    return true;
}

static bool compile_softmax(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src, dst;
    dx_md_of(&p->slots[sin], &src);
    dx_md_of(&p->slots[sd], &dst);
    int64_t axis = -1;
    seam_node_attr_int(n, "axis", &axis);
    if (n->opset < 13) return dx_fail(b, "Softmax before opset 13 (2-D coercion) is not supported"), false;
    if (axis < 0) axis += n->inputs[0].rank;
    dnnl_alg_kind_t alg = is_op(n, "Softmax") ? dnnl_softmax_accurate : dnnl_softmax_log;
    dnnl_softmax_v2_desc_t sd2;
    dnnl_primitive_desc_t pd;
    if (axis < 0 || axis >= src.ndims ||
        dnnl_softmax_v2_forward_desc_init(&sd2, dnnl_forward_inference, alg, &src, &dst, (int)axis) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &sd2, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this softmax"), false;
    /* oneDNN's fast softmax wants its axis innermost: on another axis, the
     * input is reordered to a layout where it is, and the result back */
    bool inner[MAXR] = {false};
    inner[axis] = true;
    dnnl_memory_desc_t imd;
    dnnl_primitive_desc_t ipd = NULL;
    if (dx_is_slow_ref(pd) && inner_md(&p->slots[sin], inner, &imd) &&
        dnnl_softmax_v2_forward_desc_init(&sd2, dnnl_forward_inference, alg, &imd, &imd, (int)axis) == dnnl_success &&
        dnnl_primitive_desc_create(&ipd, &sd2, dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success &&
        dx_is_slow_ref(ipd))
        dnnl_primitive_desc_destroy(ipd), ipd = NULL;
    if (ipd) {
        dnnl_primitive_desc_destroy(pd);
        slot like = p->slots[sin];
        int32_t t = dx_in_layout(b, sin, &imd), t2 = t >= 0 ? dx_temp_slot(b, &like, &imd) : -1;
        int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {t, t2};
        bool ok = t2 >= 0 && dx_add_prim(b, ipd, 2, kinds, slots) && dx_add_reorder(b, t2, sd);
        dnnl_primitive_desc_destroy(ipd);
        return ok || (dx_fail(b, "out of memory"), false);
    }
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
    bool ok = dx_add_prim(b, pd, 2, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

static bool supports_sum(const seam_node_view *n, char *why, size_t wn) {
    for (int32_t k = 0; k < n->n_inputs; k++)
        if (!n->inputs[k].name || !full_shape(&n->inputs[k], &n->outputs[0]))
            return dx_refuse(why, wn, "Sum with broadcasting is not supported");
    if (n->n_inputs > MAX_ARGS - 2) return dx_refuse(why, wn, "Sum of more than 64 inputs is not supported");
    return true;
}

static bool compile_sum(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src, dst;
    dx_md_of(&p->slots[sin], &src);
    dx_md_of(&p->slots[sd], &dst);
    int32_t cnt = n->n_inputs, kinds[MAX_ARGS], slots[MAX_ARGS];
    dnnl_memory_desc_t mds[MAX_ARGS];
    float scales[MAX_ARGS];
    for (int32_t k = 0; k < cnt; k++) {
        int32_t s2 = dx_input_slot(b, &n->inputs[k]);
        if (s2 >= 0) s2 = dx_as_plain(b, s2);
        if (s2 < 0) return dx_fail(b, "an input is not available"), false;
        dx_md_of(&p->slots[s2], &mds[k]);
        kinds[k] = DNNL_ARG_MULTIPLE_SRC + k, slots[k] = s2, scales[k] = 1.0f;
    }
    kinds[cnt] = DNNL_ARG_DST, slots[cnt] = sd;
    dnnl_primitive_desc_t pd;
    if (dnnl_sum_primitive_desc_create(&pd, &dst, cnt, scales, mds, dx_ctx.user_scratch, dx_ctx.engine) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this sum"), false;
    bool ok = dx_add_prim(b, pd, cnt + 1, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

static bool supports_prelu(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[1].rank > n->inputs[0].rank)
        return dx_refuse(why, wn, "PRelu with a slope of higher rank than X is not supported");
    return true;
}

/* PRelu: the slope broadcast like ONNX's: right-aligned. */
static bool compile_prelu(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src, dst;
    dx_md_of(&p->slots[sin], &src);
    dx_md_of(&p->slots[sd], &dst);
    int32_t s1 = dx_input_slot(b, &n->inputs[1]);
    if (s1 >= 0) s1 = dx_as_plain(b, s1);
    if (s1 < 0) return dx_fail(b, "the slope is not available"), false;
    slot v1 = p->slots[s1];
    int32_t r0 = n->inputs[0].rank, shift = r0 - v1.rank;
    for (int32_t d = r0 - 1; d >= 0; d--) v1.dims[d] = d >= shift ? p->slots[s1].dims[d - shift] : 1;
    v1.rank = r0;
    int32_t a = dx_view_slot(p, s1, &v1, NULL);
    if (a < 0) return dx_fail(b, "out of memory"), false;
    dnnl_memory_desc_t wmd;
    dx_md_of(&p->slots[a], &wmd);
    dnnl_prelu_desc_t pdsc;
    if (dnnl_prelu_forward_desc_init(&pdsc, dnnl_forward_inference, &src, &wmd) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this PRelu"), false;
    int32_t kinds[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, slots[3] = {sin, a, sd};
    return dx_add_step(b, &pdsc, NULL, 3, kinds, slots);
}

static bool supports_lrn(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[0].rank < 3 || n->inputs[0].rank > 5)
        return dx_refuse(why, wn, "LRN of rank %d is not supported", n->inputs[0].rank);
    return true;
}

/* LRN: y = x / (bias + alpha / size * sum of squares)^beta, as oneDNN's. */
static bool compile_lrn(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src, dst;
    dx_md_of(&p->slots[sin], &src);
    dx_md_of(&p->slots[sd], &dst);
    int64_t size = 0;
    float la = 1e-4f, lb = 0.75f, bias = 1.0f;
    if (!seam_node_attr_int(n, "size", &size) || size < 1) return dx_fail(b, "LRN needs size >= 1"), false;
    seam_node_attr_float(n, "alpha", &la);
    seam_node_attr_float(n, "beta", &lb);
    seam_node_attr_float(n, "bias", &bias);
    dnnl_lrn_desc_t ld;
    if (dnnl_lrn_forward_desc_init(&ld, dnnl_forward_inference, dnnl_lrn_across_channels, &src, size, la, lb, bias) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this LRN"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
    return dx_add_step(b, &ld, NULL, 2, kinds, slots);
}

/* Resize: linear (half_pixel) or nearest (asymmetric, floor) over the
 * spatial dims, as oneDNN's resampling computes them. */
static bool supports_resize(const seam_node_view *n, char *why, size_t wn) {
    const ir_node *ir = dx_ir(n);
    const char *mode = node_attr_string(ir, "mode", "nearest");
    const char *ctm = node_attr_string(ir, "coordinate_transformation_mode", "half_pixel");
    const char *nm = node_attr_string(ir, "nearest_mode", "round_prefer_floor");
    if (n->opset < 11) ctm = "asymmetric", nm = "floor";
    if (strcmp(mode, "linear") && strcmp(mode, "nearest"))
        return dx_refuse(why, wn, "Resize mode=%s not supported", mode);
    if (n->inputs[0].rank < 3 || n->inputs[0].rank > 5)
        return dx_refuse(why, wn, "Resize of rank %d is not supported", n->inputs[0].rank);
    if (!dx_dim_may_equal(&n->inputs[0], 0, &n->outputs[0], 0) || !dx_dim_may_equal(&n->inputs[0], 1, &n->outputs[0], 1))
        return dx_refuse(why, wn, "Resize of the batch or channel dimension is not supported");
    if (!strcmp(mode, "linear") && strcmp(ctm, "half_pixel") && strcmp(ctm, "pytorch_half_pixel"))
        return dx_refuse(why, wn, "Resize mode=linear with coordinate_transformation_mode=%s not supported", ctm);
    if (!strcmp(mode, "nearest") && !(!strcmp(ctm, "asymmetric") && !strcmp(nm, "floor")))
        return dx_refuse(why, wn,
                         "Resize mode=nearest with coordinate_transformation_mode=%s and nearest_mode=%s not supported "
                         "(only asymmetric with floor)", ctm, nm);
    for (int32_t d = 2; d < n->inputs[0].rank; d++)
        if (!strcmp(ctm, "pytorch_half_pixel") && n->outputs[0].dims[d] == 1)
            return dx_refuse(why, wn, "Resize pytorch_half_pixel to a size of 1 not supported");
    if (node_attr_int(ir, "antialias", 0)) return dx_refuse(why, wn, "Resize antialias=1 not supported");
    return true;
}

/* Resize: the factors from the static shapes. */
static bool compile_resize(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src, dst;
    dx_md_of(&p->slots[sin], &src);
    dx_md_of(&p->slots[sd], &dst);
    const char *mode = "nearest";
    seam_node_attr_string(n, "mode", &mode);
    float factors[3];
    int32_t nsp = src.ndims - 2;
    for (int32_t d = 0; d < nsp; d++) factors[d] = (float)n->outputs[0].dims[2 + d] / (float)n->inputs[0].dims[2 + d];
    dnnl_resampling_desc_t rd;
    if (dnnl_resampling_forward_desc_init(&rd, dnnl_forward_inference, strcmp(mode, "linear") ? dnnl_resampling_nearest : dnnl_resampling_linear,
                                          factors, &src, &dst) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this resampling"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
    return dx_add_step(b, &rd, NULL, 2, kinds, slots);
}

static bool supports_concat(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_inputs > MAX_ARGS - 2) return dx_refuse(why, wn, "Concat of more than 64 inputs is not supported");
    return true;
}

/* Concat in the plain layout. */
static bool compile_concat(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src, dst;
    dx_md_of(&p->slots[sin], &src);
    dx_md_of(&p->slots[sd], &dst);
    int64_t axis = 0;
    seam_node_attr_int(n, "axis", &axis);
    if (axis < 0) axis += n->inputs[0].rank;
    int32_t cnt = n->n_inputs;
    if (cnt > MAX_ARGS - 2) return dx_fail(b, "Concat of more than 64 inputs is not supported"), false;
    dnnl_memory_desc_t mds[MAX_ARGS];
    int32_t kinds[MAX_ARGS], slots[MAX_ARGS];
    for (int32_t k = 0; k < cnt; k++) {
        int32_t s = dx_input_slot(b, &n->inputs[k]);
        if (s >= 0) s = dx_as_plain(b, s);
        if (s < 0) return dx_fail(b, "an input is not available"), false;
        dx_md_of(&p->slots[s], &mds[k]);
        kinds[k] = DNNL_ARG_MULTIPLE_SRC + k, slots[k] = s;
    }
    kinds[cnt] = DNNL_ARG_DST, slots[cnt] = sd;
    dnnl_primitive_desc_t pd;
    if (dnnl_concat_primitive_desc_create(&pd, &dst, cnt, (int)axis, mds, dx_ctx.user_scratch, dx_ctx.engine) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this concat"), false;
    bool ok = dx_add_prim(b, pd, cnt + 1, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* One eltwise step from slot `from` to slot `to` (the same slot: in place). */
static bool eltwise_step(builder *b, dnnl_alg_kind_t alg, float alpha, float beta, int32_t from, int32_t to) {
    dnnl_memory_desc_t md;
    dx_md_of(&b->p->slots[from], &md);
    dnnl_eltwise_desc_t ed;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &md, alpha, beta) != dnnl_success)
        return dx_fail(b, "oneDNN refuses an eltwise"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {from, to};
    return dx_add_step(b, &ed, NULL, 2, kinds, slots);
}

/* One same-shape binary step: to = s0 op s1 (to may be s0: in place). */
static bool binary_step(builder *b, dnnl_alg_kind_t alg, int32_t s0, int32_t s1, int32_t to) {
    dnnl_memory_desc_t md;
    dx_md_of(&b->p->slots[s0], &md);
    dnnl_binary_desc_t bd;
    if (dnnl_binary_desc_init(&bd, alg, &md, &md, &md) != dnnl_success)
        return dx_fail(b, "oneDNN refuses a binary"), false;
    int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {s0, s1, to};
    return dx_add_step(b, &bd, NULL, 3, kinds, slots);
}

/* Erf inside the GELU pattern is one gelu_erf eltwise (the Div or Mul
 * before it claims the pattern: dx_compile_gelu_pattern). Elsewhere, as
 * oneDNN 2.6 has no erf: Abramowitz and Stegun's 7.1.26 (absolute error
 * below 1.5e-7), in elementwise steps:
 *     a = |x|, t = 1 / (1 + p a), r = 1 - t (a1 + t (a2 + ... + t a5)) exp(-a^2)
 *     erf(x) = r x / max(a, tiny)        (the sign of x; 0 at 0, where r is 0)
 * Seventeen passes over the tensor where one would do: a slow: line says so. */
static bool compile_erf(builder *b, bool *fused, int32_t sin, int32_t sd) {
    static const float p = 0.3275911f, c[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
    program *p_ = b->p;
    dnnl_memory_desc_t md;
    dx_md_of(&p_->slots[sd], &md);
    slot like = p_->slots[sd]; /* (a copy: new slots move the array) */
    like.name = "(erf)";
    int32_t a = dx_temp_slot(b, &like, &md), t = dx_temp_slot(b, &like, &md), q = dx_temp_slot(b, &like, &md);
    if (a < 0 || t < 0 || q < 0) return dx_fail(b, "out of memory"), false;
    bool ok = eltwise_step(b, dnnl_eltwise_abs, 0, 0, sin, a) && eltwise_step(b, dnnl_eltwise_linear, p, 1, a, t) &&
              eltwise_step(b, dnnl_eltwise_pow, 1, -1, t, t) && eltwise_step(b, dnnl_eltwise_linear, c[4], c[3], t, q);
    for (int32_t k = 2; ok && k >= 0; k--) /* Horner: q = q t + c[k] */
        ok = binary_step(b, dnnl_binary_mul, q, t, q) && eltwise_step(b, dnnl_eltwise_linear, 1, c[k], q, q);
    ok = ok && binary_step(b, dnnl_binary_mul, q, t, q) &&                      /* the polynomial */
         eltwise_step(b, dnnl_eltwise_square, 0, 0, a, t) && eltwise_step(b, dnnl_eltwise_exp, 0, 0, t, t) &&
         binary_step(b, dnnl_binary_div, q, t, q) &&                              /* times exp(-a^2) */
         eltwise_step(b, dnnl_eltwise_linear, -1, 1, q, q) &&                     /* r */
         eltwise_step(b, dnnl_eltwise_clip_v2, 1e-30f, 3.4e38f, a, a) && binary_step(b, dnnl_binary_div, sin, a, t) &&
         binary_step(b, dnnl_binary_mul, q, t, sd);
    if (ok)
        dx_log(p_, "slow: node %d '%s' (Erf): oneDNN 2.6 has no erf: outside the GELU pattern x * 0.5 * (1 + Erf(x / sqrt(2))) "
                   "it runs as %d elementwise steps; fix: none needed (|error| < 1.5e-7); for speed, keep it on the CPU "
                   "(--cpu-ops Erf) when its neighbours are there too",
               b->n->index, b->n->name ? b->n->name : "", 17);
    return ok;
}

/* ---- Pad ----
 * Constant mode, with any pads (negative ones crop) and value: a copy of a
 * resident buffer filled with the value, then the input (cropped) copied
 * into its place. A zero Pad of the spatial dims read only by a Conv, or
 * by an AveragePool without pads of its own, is left to that reader: its
 * window takes the pads (oneDNN pads with zeros; the pool then counts the
 * padded cells, as it counts the Pad's zeros), and no step is made. */

typedef struct pad_spec {
    int32_t rank;
    int64_t lo[MAXR], hi[MAXR];
    float value;
} pad_spec;

/* The pads and value of Pad node n (attributes before opset 11, constant
 * inputs from it); false with the reason. */
static bool pad_of(builder *b, const seam_node_view *n, pad_spec *ps, const char **why) {
    int32_t r = n->inputs[0].rank;
    int64_t pads[2 * MAXR], axes[MAXR];
    int32_t np = -1, na = -1;
    ps->rank = r, ps->value = 0;
    if (n->opset < 11) {
        const int64_t *v;
        int32_t c;
        if (seam_node_attr_ints(n, "pads", &v, &c) && c <= 2 * MAXR) memcpy(pads, v, 8 * (size_t)c), np = c;
        seam_node_attr_float(n, "value", &ps->value);
    } else {
        np = n->n_inputs > 1 ? dx_const_ints(b, &n->inputs[1], pads, 2 * MAXR) : -1;
        if (n->n_inputs > 2 && n->inputs[2].name && !const_scalar(b->sg, &n->inputs[2], &ps->value)) {
            *why = "Pad with a constant_value that is not one float32 constant is not supported by dnnl";
            return false;
        }
        if (n->n_inputs > 3 && n->inputs[3].name && (na = dx_const_ints(b, &n->inputs[3], axes, MAXR)) < 0) {
            *why = "Pad's axes must be a constant";
            return false;
        }
    }
    int32_t nax = na >= 0 ? na : r;
    if (np != 2 * nax) {
        *why = "Pad's pads must be a constant with two values per axis";
        return false;
    }
    for (int32_t d = 0; d < r; d++) ps->lo[d] = ps->hi[d] = 0;
    for (int32_t k = 0; k < nax; k++) {
        int64_t a = na >= 0 ? (axes[k] < 0 ? axes[k] + r : axes[k]) : k;
        if (a < 0 || a >= r) {
            *why = "Pad has an axis out of range";
            return false;
        }
        ps->lo[a] = pads[k], ps->hi[a] = pads[nax + k];
    }
    for (int32_t d = 0; d < r; d++)
        if (n->inputs[0].dims[d] + ps->lo[d] + ps->hi[d] != n->outputs[0].dims[d]) {
            *why = "Pad's pads do not give its output's shape";
            return false;
        }
    return true;
}

static bool supports_pad(const seam_node_view *n, char *why, size_t wn) {
    const char *mode = node_attr_string(dx_ir(n), "mode", "constant");
    if (strcmp(mode, "constant")) return dx_refuse(why, wn, "Pad mode=%s is not supported (only constant)", mode);
    if (n->opset >= 11)
        for (int32_t k = 1; k < n->n_inputs; k++)
            if (!dx_const_input(n, k) && !(k == 1 && run_time_param(n, k)))
                return dx_refuse(why, wn, "Pad with a computed input %d is not supported", k);
    if (n->n_inputs > 2 && n->inputs[2].name && n->inputs[2].dtype != SEAM_DTYPE_FLOAT32)
        return dx_refuse(why, wn, "Pad with a constant_value that is not float32 is not supported");
    return true;
}

/* Whether the Pad's sole reader m takes its pads into its window. */
static bool pad_foldable(const pad_spec *ps, const seam_node_view *m, const char *out) {
    int32_t r = ps->rank;
    if (ps->value != 0 || r < 3 || r > 5 || ps->lo[0] || ps->hi[0] || ps->lo[1] || ps->hi[1]) return false;
    for (int32_t d = 2; d < r; d++)
        if (ps->lo[d] < 0 || ps->hi[d] < 0) return false;
    if (!m->n_inputs || !m->inputs[0].name || strcmp(m->inputs[0].name, out)) return false;
    for (int32_t k = 1; k < m->n_inputs; k++)
        if (m->inputs[k].name && !strcmp(m->inputs[k].name, out)) return false;
    if (is_op(m, "Conv")) return true;
    if (!is_op(m, "AveragePool") || node_attr_int(dx_ir(m), "ceil_mode", 0)) return false;
    if (strcmp(node_attr_string(dx_ir(m), "auto_pad", "NOTSET"), "NOTSET")) return false;
    const int64_t *pads;
    int32_t c = node_attr_ints(dx_ir(m), "pads", &pads);
    for (int32_t k = 0; k < c; k++)
        if (pads[k]) return false;
    return true;
}

static bool compile_pad(builder *b, bool *fused, int32_t sin, int32_t out0) {
    program *p = b->p;
    pad_spec ps;
    const char *why = NULL;
    if (!pad_of(b, b->n, &ps, &why)) return dx_fail(b, why), false;
    const char *out = b->n->outputs[0].name;
    int32_t rd = b->fuse ? dx_sole_reader(b, out) : -1;
    seam_node_view st;
    const seam_node_view *m = rd >= 0 ? seam_subgraph_node(b->sg, rd, &st) : NULL;
    bool fold = m && pad_foldable(&ps, m, out);
    const seam_node_view *n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (fold && !p->slots[sin].pad_pending) {
        slot shape = p->slots[sin];
        int32_t v = dx_view_slot(p, sin, &shape, shape.has_md ? &shape.md : NULL);
        if (v < 0) return dx_fail(b, "out of memory"), false;
        p->slots[v].name = out;
        p->slots[v].pad_pending = true;
        for (int32_t d = 2; d < ps.rank; d++) p->slots[v].pad_lo[d - 2] = ps.lo[d], p->slots[v].pad_hi[d - 2] = ps.hi[d];
        dx_log(p, "node %d '%s' (Pad): no step: its pads go to the window of node %d '%s' (%s)", n->index, n->name,
               m->index, m->name, m->op_type);
        return true;
    }
    if (p->slots[sin].pad_pending) return dx_fail(b, "a Pad of a Pad left to its reader"), false; /* (not made) */
    sin = dx_as_plain(b, sin);
    int32_t sd = sin >= 0 ? dx_output_slot(b, &n->outputs[0]) : -1;
    if (sd < 0) return dx_fail(b, "out of memory"), false;
    slot os = p->slots[sd];
    if (!dx_slot_numel(&os)) return true;
    /* the fill: a resident buffer of the output's shape */
    dnnl_memory_desc_t omd;
    dx_md_of(&os, &omd);
    os.name = "(pad value)";
    int32_t f = dx_temp_slot(b, &os, &omd);
    if (f < 0) return dx_fail(b, "out of memory"), false;
    slot *fs = &p->slots[f];
    size_t cnt = (size_t)dx_slot_numel(fs);
    float *fill = malloc(cnt * sizeof(float) + 1);
    if (!fill || dnnl_memory_set_data_handle(fs->mem, fill) != dnnl_success)
        return free(fill), dx_fail(b, "out of memory"), false;
    for (size_t k = 0; k < cnt; k++) fill[k] = ps.value;
    fs->owned = fill, fs->bytes = 0;
    if (!dx_add_reorder(b, f, sd)) return false;
    /* the input's kept part, into its place */
    int64_t ist[MAXR], ost[MAXR], ioff = 0, ooff = 0;
    dx_plain_strides(&p->slots[sin], ist);
    dx_plain_strides(&p->slots[sd], ost);
    slot part;
    memset(&part, 0, sizeof(part));
    part.rank = ps.rank;
    dnnl_dims_t dims, istr, ostr;
    for (int32_t d = 0; d < ps.rank; d++) {
        int64_t crop_lo = ps.lo[d] < 0 ? -ps.lo[d] : 0, crop_hi = ps.hi[d] < 0 ? -ps.hi[d] : 0;
        dims[d] = part.dims[d] = p->slots[sin].dims[d] - crop_lo - crop_hi;
        if (dims[d] <= 0) return true; /* nothing of the input is kept */
        istr[d] = ist[d], ostr[d] = ost[d];
        ioff += crop_lo * ist[d], ooff += (ps.lo[d] > 0 ? ps.lo[d] : 0) * ost[d];
    }
    int32_t r = ps.rank ? ps.rank : 1;
    if (!ps.rank) dims[0] = 1, istr[0] = ostr[0] = 1, part.rank = 0;
    dnnl_memory_desc_t imd, pmd;
    if (dnnl_memory_desc_init_by_strides(&imd, r, dims, dnnl_f32, istr) != dnnl_success ||
        dnnl_memory_desc_init_by_strides(&pmd, r, dims, dnnl_f32, ostr) != dnnl_success)
        return dx_fail(b, "bad pads"), false;
    int32_t iv = dx_view_slot(p, sin, &part, &imd), ov = iv >= 0 ? dx_view_slot(p, sd, &part, &pmd) : -1;
    if (iv < 0 || ov < 0) return dx_fail(b, "its shapes do not fit its input's bytes"), false;
    p->slots[iv].offset = ioff * (int64_t)sizeof(float);
    p->slots[ov].offset = ooff * (int64_t)sizeof(float);
    return dx_add_reorder(b, iv, ov);
}

/* Every op the backend knows: name, stage (see op_stage), support check
 * (beyond supports()'s generic ones), compile function. */
static const dx_op dx_ops[] = {
    /* (the names of view_ops) */
    {"Flatten", STAGE_VIEW, NULL, compile_view},
    {"Reshape", STAGE_VIEW, NULL, compile_view},
    {"Squeeze", STAGE_VIEW, NULL, compile_view},
    {"Unsqueeze", STAGE_VIEW, NULL, compile_view},
    {"Identity", STAGE_VIEW, NULL, compile_view},
    {"Dropout", STAGE_VIEW, NULL, compile_view},

    {"Conv", STAGE_ANY_LAYOUT, dx_supports_conv, dx_compile_conv},
    {"ConvTranspose", STAGE_ANY_LAYOUT, dx_supports_convtranspose, dx_compile_convtranspose},
    {"MaxPool", STAGE_ANY_LAYOUT, supports_pool, compile_pool},
    {"AveragePool", STAGE_ANY_LAYOUT, supports_pool, compile_pool},
    {"GlobalAveragePool", STAGE_ANY_LAYOUT, NULL, compile_pool},
    {"GlobalMaxPool", STAGE_ANY_LAYOUT, NULL, compile_pool},
    {"BatchNormalization", STAGE_ANY_LAYOUT, supports_batchnorm, compile_batchnorm},
    {"Pad", STAGE_ANY_LAYOUT, supports_pad, compile_pad},

    {"MatMul", STAGE_PLAIN, dx_supports_matmul, dx_compile_matmul},
    {"Gemm", STAGE_PLAIN, dx_supports_gemm, dx_compile_matmul},
    {"Transpose", STAGE_PLAIN, NULL, compile_transpose},
    {"Slice", STAGE_PLAIN, supports_param_inputs, compile_slice},
    {"Gather", STAGE_PLAIN, supports_gather, compile_gather},
    {"Split", STAGE_PLAIN, NULL, compile_split},
    {"ReduceMean", STAGE_PLAIN, supports_reduce, compile_reduce},
    {"ReduceSum", STAGE_PLAIN, supports_reduce, compile_reduce},
    {"ReduceMax", STAGE_PLAIN, supports_reduce, compile_reduce},
    {"ReduceMin", STAGE_PLAIN, supports_reduce, compile_reduce},
    {"LayerNormalization", STAGE_PLAIN, supports_layernorm, compile_layernorm},
    {"LSTM", STAGE_PLAIN, dx_supports_rnn, dx_compile_rnn},
    {"GRU", STAGE_PLAIN, dx_supports_rnn, dx_compile_rnn},

    /* (the names of eltwise_ops and binary_ops) */
    {"Relu", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"LeakyRelu", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Sigmoid", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Tanh", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Elu", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Clip", STAGE_PLAIN_OUT, supports_clip, compile_eltwise},
    {"Exp", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Log", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Sqrt", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Abs", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"HardSigmoid", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Softplus", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"HardSwish", STAGE_PLAIN_OUT, NULL, compile_eltwise},
    {"Pow", STAGE_PLAIN_OUT, supports_pow, compile_eltwise},
    {"Add", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Sub", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Mul", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Div", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Max", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Min", STAGE_PLAIN_OUT, supports_binary, compile_binary},
    {"Softmax", STAGE_PLAIN_OUT, supports_softmax, compile_softmax},
    {"LogSoftmax", STAGE_PLAIN_OUT, supports_softmax, compile_softmax},
    {"Sum", STAGE_PLAIN_OUT, supports_sum, compile_sum},
    {"PRelu", STAGE_PLAIN_OUT, supports_prelu, compile_prelu},
    {"LRN", STAGE_PLAIN_OUT, supports_lrn, compile_lrn},
    {"Resize", STAGE_PLAIN_OUT, supports_resize, compile_resize},
    {"Concat", STAGE_PLAIN_OUT, supports_concat, compile_concat},
    {"Erf", STAGE_PLAIN_OUT, NULL, compile_erf}, /* (inside GELU: the pattern claims it first) */

    /* (mask.c: values other than float32 are held in float32, see mask.h) */
    {"Equal", STAGE_PLAIN, dx_supports_compare, dx_compile_compare},
    {"Greater", STAGE_PLAIN, dx_supports_compare, dx_compile_compare},
    {"Less", STAGE_PLAIN, dx_supports_compare, dx_compile_compare},
    {"GreaterOrEqual", STAGE_PLAIN, dx_supports_compare, dx_compile_compare},
    {"LessOrEqual", STAGE_PLAIN, dx_supports_compare, dx_compile_compare},
    {"Where", STAGE_PLAIN, dx_supports_where, dx_compile_where},
    {"Expand", STAGE_PLAIN, dx_supports_expand, dx_compile_expand},
    {"Tile", STAGE_PLAIN, dx_supports_tile, dx_compile_tile},
    {"Cast", STAGE_PLAIN, dx_supports_cast, dx_compile_cast},
};

const dx_op *dx_op_of(const seam_node_view *n) {
    for (size_t k = 0; k < sizeof(dx_ops) / sizeof(dx_ops[0]); k++)
        if (is_op(n, dx_ops[k].op)) return &dx_ops[k];
    return NULL;
}

static bool same_dims(const slot *a, const slot *b) {
    if (a->rank != b->rank) return false;
    for (int32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

bool dx_compile_node(builder *b, int32_t i, bool *fused) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    if (fused[i]) return true;
    const dx_op *c = dx_op_of(n);
    int32_t sin = c && c->stage == STAGE_VIEW && !is_op(n, "Reshape") ? -1 : dx_input_slot(b, &n->inputs[0]);
    /* a channel shuffle (a Concat or a Reshape, then Transpose and
     * Reshape) in its sources' layout: shuf_shuffle.c */
    if (sin >= 0 && (is_op(n, "Concat") || is_op(n, "Reshape")) && dx_compile_shuffle_pattern(b, fused, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (c && c->stage == STAGE_VIEW) return c->compile(b, fused, -1, -1);
    if (sin < 0) return dx_fail(b, "input 0 is neither made earlier nor a constant"), false;
    /* (pattern matchers look at other nodes, which invalidates n: fetch
     * it again after each) */
    /* (GELU is matched with fusion=off too: oneDNN 2.6 has no erf, so the
     * pattern is the only way dnnl runs an Erf, and supports() took it) */
    if ((is_op(n, "Div") || is_op(n, "Mul")) && dx_compile_gelu_pattern(b, fused, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if ((is_op(n, "Div") || is_op(n, "Mul")) && dx_defer_scale(b, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    /* a strided view stays one for the ops that view it again; the ops
     * that take any layout, and Concat, read a dense copy in the view's own
     * dim order (a channels-last value's slice stays channels-last) */
    bool views_it = is_op(n, "Slice") || is_op(n, "Split") || is_op(n, "Gather") || is_op(n, "Transpose");
    if (p->slots[sin].lazy && !is_op(n, "MatMul") && !views_it)
        sin = (c && c->stage == STAGE_ANY_LAYOUT) || is_op(n, "Concat") ? dx_as_dense(b, sin) : dx_as_plain(b, sin);
    if (sin < 0) return dx_fail(b, "could not copy input 0 to a dense layout"), false;
    if (c && c->stage == STAGE_ANY_LAYOUT) return c->compile(b, fused, sin, -1);
    /* An activation or a same-shape binary on a convolution's blocked output
     * stays in that layout (the residual Add of a ResNet, the Relu after
     * it): no reorder to plain and back. */
    int32_t s1 = IN_LIST(n, binary_ops) && commutative(n) && n->n_inputs > 1 ? dx_input_slot(b, &n->inputs[1]) : -1;
    bool blocked_second = s1 >= 0 && p->slots[s1].has_md && !p->slots[s1].lazy; /* scale * x, x blocked */
    if ((p->slots[sin].has_md || blocked_second) && (IN_LIST(n, eltwise_ops) || IN_LIST(n, binary_ops))) {
        int32_t r = blocked_step(b, n, sin);
        if (r < 0) return false;
        if (r > 0) return true;
    }
    /* a Concat written in place by its sources' producers, or copied into
     * place by jit reorders (concat.c); else oneDNN's concat primitive */
    if (is_op(n, "Concat") && !p->slots[sin].lazy) {
        int32_t r = dx_compile_concat_norm(b, fused, sin);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
        r = dx_compile_concat_places(b, sin);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n; /* (fetched again there) */
    }
    if (is_op(n, "Concat") && n->n_inputs <= MAX_ARGS - 2 && p->slots[sin].has_md && !p->slots[sin].lazy) {
        int32_t r = blocked_concat(b, sin);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n; /* (fetched again there) */
    }
    if (is_op(n, "ReduceMean") || is_op(n, "ReduceMax")) {
        int32_t r = reduce_as_pool(b, sin);
        if (r < 0) return false;
        if (r > 0) return true;
    }
    /* every other op works in the plain layout: a convolution's blocked
     * output is reordered back first (once per value) */
    if (!p->slots[sin].lazy && !(views_it && dx_is_strided(&p->slots[sin]))) sin = dx_as_plain(b, sin);
    if (sin < 0) return dx_fail(b, "could not reorder input 0 to the plain layout"), false;
    /* the decomposed layer norm is tried on its first ReduceMean, before
     * the plain reduction */
    if (is_op(n, "ReduceMean") && dx_compile_layernorm_pattern(b, fused, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (c && c->stage == STAGE_PLAIN) return c->compile(b, fused, sin, -1);
    int32_t sd = dx_output_slot(b, &n->outputs[0]);
    if (sd < 0) return dx_fail(b, "out of memory"), false;
    /* the ops whose primitive writes dst in src's shape: a file whose
     * shapes disagree is refused here, not written past dst's bytes */
    if ((IN_LIST(n, eltwise_ops) || is_op(n, "PRelu") || is_op(n, "LRN") || is_op(n, "Erf") || is_op(n, "Softmax") ||
         is_op(n, "LogSoftmax")) && !same_dims(&p->slots[sin], &p->slots[sd]))
        return dx_fail(b, "its output's shape differs from its input's (inconsistent shapes in the file)"), false;
    if (c) return c->compile(b, fused, sin, sd);
    return dx_fail(b, "not implemented by the dnnl backend"), false;
}
