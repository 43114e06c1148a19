/*
 * dnnl: one compile function per op, and compile_node, which finds them in
 * a table by op name after the steps every node goes through (the layout
 * its input needs, the patterns tried first).
 */
#include <math.h>
#include <string.h>

#include "dnnl_internal.h"

bool dx_eltwise_of(const seam_node_view *n, const seam_subgraph_view *sg, dnnl_alg_kind_t *alg, float *alpha, float *beta) {
    float f;
    *alpha = 0, *beta = 0;
    if (is_op(n, "Relu")) *alg = dnnl_eltwise_relu;
    else if (is_op(n, "LeakyRelu")) *alg = dnnl_eltwise_relu, *alpha = seam_node_attr_float(n, "alpha", &f) ? f : 0.01f;
    else if (is_op(n, "Sigmoid")) *alg = dnnl_eltwise_logistic;
    else if (is_op(n, "Tanh")) *alg = dnnl_eltwise_tanh;
    else if (is_op(n, "Elu")) *alg = dnnl_eltwise_elu, *alpha = seam_node_attr_float(n, "alpha", &f) ? f : 1.0f;
    else if (is_op(n, "Exp")) *alg = dnnl_eltwise_exp;
    else if (is_op(n, "Log")) *alg = dnnl_eltwise_log;
    else if (is_op(n, "Sqrt")) *alg = dnnl_eltwise_sqrt;
    else if (is_op(n, "Abs")) *alg = dnnl_eltwise_abs;
    else if (is_op(n, "Softplus")) *alg = dnnl_eltwise_soft_relu;
    else if (is_op(n, "HardSwish")) *alg = dnnl_eltwise_hardswish;
    else if (is_op(n, "Pow")) { /* alpha * x^beta, with a constant exponent */
        seam_tensor_view c;
        if (n->n_inputs < 2 || !n->inputs[1].name || !seam_subgraph_constant(sg, n->inputs[1].name, &c) ||
            c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != 4)
            return false;
        *alg = dnnl_eltwise_pow, *alpha = 1.0f;
        memcpy(beta, c.data, 4);
    }
    else if (is_op(n, "HardSigmoid")) { /* max(0, min(1, a*x + b)): linear here, then a clip (see clips_after) */
        *alg = dnnl_eltwise_linear;
        *alpha = seam_node_attr_float(n, "alpha", &f) ? f : 0.2f;
        *beta = seam_node_attr_float(n, "beta", &f) ? f : 0.5f;
    } else if (is_op(n, "Clip")) {
        *alg = dnnl_eltwise_clip_v2;
        *alpha = -INFINITY, *beta = INFINITY;
        seam_tensor_view c;
        if (n->n_inputs > 1 && n->inputs[1].name) {
            if (!seam_subgraph_constant(sg, n->inputs[1].name, &c) || c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != 4) return false;
            memcpy(alpha, c.data, 4);
        }
        if (n->n_inputs > 2 && n->inputs[2].name) {
            if (!seam_subgraph_constant(sg, n->inputs[2].name, &c) || c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != 4) return false;
            memcpy(beta, c.data, 4);
        }
        if (seam_node_attr_float(n, "min", &f)) *alpha = f;
        if (seam_node_attr_float(n, "max", &f)) *beta = f;
    } else {
        return false;
    }
    return true;
}

/* oneDNN 2.6 has no hard sigmoid: eltwise_of gives its linear part, and a
 * clip to [0, 1] follows as a post-op. */
bool dx_clips_after(const seam_node_view *n) { return is_op(n, "HardSigmoid"); }

/* A primitive attribute with that clip as its post-op (NULL on failure). */
static dnnl_primitive_attr_t clip01_attr(void) {
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po;
    if (dnnl_post_ops_create(&po) != dnnl_success) return NULL;
    bool ok = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, 0.0f, 1.0f) == dnnl_success &&
              dnnl_primitive_attr_create(&attr) == dnnl_success && dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    dnnl_post_ops_destroy(po);
    if (!ok && attr) dnnl_primitive_attr_destroy(attr), attr = NULL;
    return attr;
}

/* Spatial pads for Conv/pools: explicit, or from auto_pad and the known
 * output size. */
void dx_pads_of(const seam_node_view *n, int32_t nsp, const int64_t *in, const int64_t *out, const int64_t *kern,
                const int64_t *str, const int64_t *dil, dnnl_dims_t pl, dnnl_dims_t pr) {
    const int64_t *pads;
    int32_t np = 0;
    const char *ap = "NOTSET";
    seam_node_attr_string(n, "auto_pad", &ap);
    if (!seam_node_attr_ints(n, "pads", &pads, &np)) np = 0;
    for (int32_t d = 0; d < nsp; d++) {
        int64_t eff = (kern[d] - 1) * dil[d] + 1;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t total = (out[d] - 1) * str[d] + eff - in[d];
            if (total < 0) total = 0;
            pl[d] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
        } else {
            pl[d] = np == 2 * nsp && strcmp(ap, "VALID") ? pads[d] : 0;
        }
        /* the right pad that gives the known output (covers ceil_mode) */
        pr[d] = (out[d] - 1) * str[d] + eff - in[d] - pl[d];
        if (pr[d] < 0) pr[d] = 0;
    }
}

void dx_spatial_attrs(const seam_node_view *n, int32_t nsp, int64_t *str, int64_t *dil) {
    const int64_t *v;
    int32_t c;
    for (int32_t d = 0; d < nsp; d++) str[d] = 1, dil[d] = 1;
    if (seam_node_attr_ints(n, "strides", &v, &c) && c == nsp)
        for (int32_t d = 0; d < nsp; d++) str[d] = v[d];
    if (seam_node_attr_ints(n, "dilations", &v, &c) && c == nsp)
        for (int32_t d = 0; d < nsp; d++) dil[d] = v[d];
}

dnnl_alg_kind_t dx_binary_alg(const seam_node_view *n) {
    static const dnnl_alg_kind_t algs[] = {dnnl_binary_add, dnnl_binary_sub, dnnl_binary_mul, dnnl_binary_div, dnnl_binary_max, dnnl_binary_min};
    for (size_t k = 0; k < sizeof(algs) / sizeof(algs[0]); k++)
        if (is_op(n, binary_ops[k])) return algs[k];
    return dnnl_alg_kind_undef;
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
        dnnl_primitive_attr_t clip = dx_clips_after(n) ? clip01_attr() : NULL;
        bool ok = (!dx_clips_after(n) || clip) && dx_eltwise_of(n, b->sg, &alg, &alpha, &beta) &&
                  dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &src, alpha, beta) == dnnl_success &&
                  dnnl_primitive_desc_create(&pd, &ed, clip ? clip : dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success;
        if (clip) dnnl_primitive_attr_destroy(clip);
        if (!ok) return 0;
        kinds[0] = DNNL_ARG_SRC, slots[0] = sin, n_args = 2;
    } else {
        dnnl_alg_kind_t alg = dx_binary_alg(n);
        int32_t s1 = dx_input_slot(b, &n->inputs[1]);
        if (s1 < 0 || p->slots[s1].rank != p->slots[sin].rank) return 0;
        for (int32_t d = 0; d < p->slots[sin].rank; d++)
            if (p->slots[s1].dims[d] != p->slots[sin].dims[d]) return 0; /* broadcasts go plain */
        s1 = dx_in_layout(b, s1, &src);
        if (s1 < 0) return -1;
        dnnl_binary_desc_t bd;
        if (dnnl_binary_desc_init(&bd, alg, &src, &src, &src) != dnnl_success ||
            dnnl_primitive_desc_create(&pd, &bd, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
            return 0;
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
    if (ok && final_slot >= 0) ok = dx_add_reorder(b, sd, final_slot);
    return ok ? 1 : -1;
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
            if (perm[d] < 0 || perm[d] >= r || seen[perm[d]]) return dx_fail(b, "perm is not a permutation of the axes"), false;
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
    if (dnnl_memory_desc_init_by_strides(&vmd, rr, dims, dnnl_f32, strides) != dnnl_success) return dx_fail(b, "bad transpose"), false;
    int32_t v = dx_view_slot(p, sin, &shape, &vmd);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    /* no copy until a reader needs one: a MatMul reads the strided view
     * as it is, and a permutation that moves only 1-sized dims is plain */
    int32_t sd = dx_slot_of(p, n->outputs[0].name);
    if (sd >= 0) return dx_add_reorder(b, v, sd); /* a boundary output */
    p->slots[v].name = n->outputs[0].name;
    p->slots[v].lazy = p->slots[v].has_md;
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
    dx_plain_strides(&p->slots[sin], st);
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
    if (dnnl_memory_desc_init_by_strides(&vmd, r, dims, dnnl_f32, strides) != dnnl_success) return dx_fail(b, "bad slice"), false;
    int32_t v = dx_view_slot(p, sin, &shape, &vmd);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    p->slots[v].offset = offset * (int64_t)sizeof(float);
    /* like a Transpose: no copy until a reader needs a dense layout */
    int32_t sd = dx_slot_of(p, n->outputs[0].name);
    if (sd >= 0) return dx_add_reorder(b, v, sd); /* a boundary output */
    p->slots[v].name = n->outputs[0].name;
    p->slots[v].lazy = p->slots[v].has_md;
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
    if (dnnl_reduction_desc_init(&rd, alg, &src, &dst, 0.0f, 0.0f) != dnnl_success) return dx_fail(b, "oneDNN refuses this reduction"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, dv};
    return dx_add_step(b, &rd, NULL, 2, kinds, slots);
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
        if (t >= 0 && dx_slot_numel(&p->slots[t]) != c) return dx_fail(b, "scale and bias must have one value per normalized element"), false;
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
static bool compile_view(builder *b) {
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
    bool strided = in >= 0 && p->slots[in].lazy && p->slots[in].scale == 1.0f && dx_reshape_view(&p->slots[in], &shape, &smd);
    if (in >= 0 && !strided) in = dx_as_plain(b, in);
    if (in < 0) return dx_fail(b, "its input is not available"), false;
    int32_t v = dx_view_slot(p, in, &shape, strided ? &smd : NULL);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    int32_t s = dx_slot_of(p, n->outputs[0].name);
    if (s >= 0) return dx_add_reorder(b, v, s); /* a boundary output: a copy */
    p->slots[v].name = n->outputs[0].name;
    p->slots[v].lazy = p->slots[v].has_md;
    return true;
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

/* Pools work in the layout their input has. */
static bool compile_pool(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src;
    dx_md_of(&p->slots[sin], &src);
    int32_t nsp = n->inputs[0].rank - 2;
    bool global = n->op_type[0] == 'G';
    int64_t str[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, in[3] = {0}, out[3] = {0}, kern[3] = {0};
    dx_spatial_attrs(n, nsp, str, dil);
    const int64_t *ks;
    int32_t nk = 0;
    if (!global && (!seam_node_attr_ints(n, "kernel_shape", &ks, &nk) || nk != nsp)) return dx_fail(b, "bad kernel_shape"), false;
    for (int32_t d = 0; d < nsp; d++) {
        in[d] = n->inputs[0].dims[2 + d], out[d] = n->outputs[0].dims[2 + d];
        kern[d] = global ? in[d] : ks[d];
        if (global) str[d] = 1, dil[d] = 1;
    }
    dnnl_dims_t pl, pr, strides, kernel, dilation;
    if (global) for (int32_t d = 0; d < nsp; d++) pl[d] = pr[d] = 0;
    else dx_pads_of(n, nsp, in, out, kern, str, dil, pl, pr);
    for (int32_t d = 0; d < nsp; d++) strides[d] = str[d], kernel[d] = kern[d], dilation[d] = dil[d] - 1;
    int64_t cip = 0;
    seam_node_attr_int(n, "count_include_pad", &cip);
    dnnl_alg_kind_t alg = strstr(n->op_type, "Max") ? dnnl_pooling_max : cip ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
    dnnl_memory_desc_t any_dst;
    dnnl_memory_desc_init_by_tag(&any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_pooling_v2_desc_t pld;
    dnnl_primitive_desc_t pd;
    if (dnnl_pooling_v2_forward_desc_init(&pld, dnnl_forward_inference, alg, &src, &any_dst, strides, kernel, dilation, pl, pr) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &pld, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this pooling"), false;
    return dx_layout_step(b, pd, sin, &n->outputs[0]);
}

/* Batch norm, with constant statistics, in the layout its input has. */
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
    dnnl_batch_normalization_desc_t bd;
    if (dnnl_batch_normalization_forward_desc_init(&bd, dnnl_forward_inference, &src, eps,
                                                   dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this batch normalization"), false;
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, &bd, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this batch normalization"), false;
    int32_t extra_kinds[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE}, extra[4] = {sc, sh, mn, vr};
    return dx_layout_step_with(b, pd, sin, &n->outputs[0], 4, extra_kinds, extra);
}

static bool compile_eltwise(builder *b, bool *fused, int32_t sin, int32_t sd) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    dnnl_memory_desc_t src, dst;
    dx_md_of(&p->slots[sin], &src);
    dx_md_of(&p->slots[sd], &dst);
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (!dx_eltwise_of(n, b->sg, &alg, &alpha, &beta)) return dx_fail(b, "not expressible as one oneDNN eltwise (e.g. Clip with a non-constant bound)"), false;
    dnnl_eltwise_desc_t ed;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &src, alpha, beta) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this eltwise"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
    dnnl_primitive_attr_t clip = dx_clips_after(n) ? clip01_attr() : NULL;
    if (dx_clips_after(n) && !clip) return dx_fail(b, "out of memory"), false;
    bool ok = dx_add_step(b, &ed, clip, 2, kinds, slots);
    if (clip) dnnl_primitive_attr_destroy(clip);
    return ok;
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
    if (dnnl_binary_desc_init(&bd, alg, &src, &m1, &dst) != dnnl_success) return dx_fail(b, "oneDNN refuses this broadcast"), false;
    int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {sin, s1, sd};
    return dx_add_step(b, &bd, NULL, 3, kinds, slots);
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
    dnnl_softmax_v2_desc_t sd2;
    if (dnnl_softmax_v2_forward_desc_init(&sd2, dnnl_forward_inference, is_op(n, "Softmax") ? dnnl_softmax_accurate : dnnl_softmax_log,
                                          &src, &dst, (int)axis) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this softmax"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
    return dx_add_step(b, &sd2, NULL, 2, kinds, slots);
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

/* Where compile_node hands a node to its op's function; the stages come in
 * this order, and each readies input 0 (sin) for the next:
 *   STAGE_ANY_LAYOUT: sin as it is, plain or in a convolution's blocked
 *                     layout (oneDNN picks dst's layout from it)
 *   STAGE_PLAIN:      sin plain (a lazy strided view stays one for MatMul
 *                     and Transpose, which read it as it is)
 *   STAGE_PLAIN_OUT:  sin plain, and a new plain slot sd made for the
 *                     output first (-1 at the other stages)
 * ConvTranspose reads input 0 again itself (and makes it plain). */
typedef enum { STAGE_ANY_LAYOUT, STAGE_PLAIN, STAGE_PLAIN_OUT } op_stage;

typedef struct op_compiler {
    const char *op;
    op_stage stage;
    bool (*compile)(builder *b, bool *fused, int32_t sin, int32_t sd);
} op_compiler;

static const op_compiler compilers[] = {
    {"Conv", STAGE_ANY_LAYOUT, dx_compile_conv},
    {"ConvTranspose", STAGE_ANY_LAYOUT, dx_compile_convtranspose},
    {"MaxPool", STAGE_ANY_LAYOUT, compile_pool},
    {"AveragePool", STAGE_ANY_LAYOUT, compile_pool},
    {"GlobalAveragePool", STAGE_ANY_LAYOUT, compile_pool},
    {"GlobalMaxPool", STAGE_ANY_LAYOUT, compile_pool},
    {"BatchNormalization", STAGE_ANY_LAYOUT, compile_batchnorm},

    {"MatMul", STAGE_PLAIN, dx_compile_matmul},
    {"Gemm", STAGE_PLAIN, dx_compile_matmul},
    {"Transpose", STAGE_PLAIN, compile_transpose},
    {"Slice", STAGE_PLAIN, compile_slice},
    {"ReduceMean", STAGE_PLAIN, compile_reduce},
    {"ReduceSum", STAGE_PLAIN, compile_reduce},
    {"ReduceMax", STAGE_PLAIN, compile_reduce},
    {"ReduceMin", STAGE_PLAIN, compile_reduce},
    {"LayerNormalization", STAGE_PLAIN, compile_layernorm},

    /* (the names of eltwise_ops and binary_ops) */
    {"Relu", STAGE_PLAIN_OUT, compile_eltwise},
    {"LeakyRelu", STAGE_PLAIN_OUT, compile_eltwise},
    {"Sigmoid", STAGE_PLAIN_OUT, compile_eltwise},
    {"Tanh", STAGE_PLAIN_OUT, compile_eltwise},
    {"Elu", STAGE_PLAIN_OUT, compile_eltwise},
    {"Clip", STAGE_PLAIN_OUT, compile_eltwise},
    {"Exp", STAGE_PLAIN_OUT, compile_eltwise},
    {"Log", STAGE_PLAIN_OUT, compile_eltwise},
    {"Sqrt", STAGE_PLAIN_OUT, compile_eltwise},
    {"Abs", STAGE_PLAIN_OUT, compile_eltwise},
    {"HardSigmoid", STAGE_PLAIN_OUT, compile_eltwise},
    {"Softplus", STAGE_PLAIN_OUT, compile_eltwise},
    {"HardSwish", STAGE_PLAIN_OUT, compile_eltwise},
    {"Pow", STAGE_PLAIN_OUT, compile_eltwise},
    {"Add", STAGE_PLAIN_OUT, compile_binary},
    {"Sub", STAGE_PLAIN_OUT, compile_binary},
    {"Mul", STAGE_PLAIN_OUT, compile_binary},
    {"Div", STAGE_PLAIN_OUT, compile_binary},
    {"Max", STAGE_PLAIN_OUT, compile_binary},
    {"Min", STAGE_PLAIN_OUT, compile_binary},
    {"Softmax", STAGE_PLAIN_OUT, compile_softmax},
    {"LogSoftmax", STAGE_PLAIN_OUT, compile_softmax},
    {"Sum", STAGE_PLAIN_OUT, compile_sum},
    {"PRelu", STAGE_PLAIN_OUT, compile_prelu},
    {"LRN", STAGE_PLAIN_OUT, compile_lrn},
    {"Resize", STAGE_PLAIN_OUT, compile_resize},
    {"Concat", STAGE_PLAIN_OUT, compile_concat},
};

static const op_compiler *compiler_of(const seam_node_view *n) {
    for (size_t k = 0; k < sizeof(compilers) / sizeof(compilers[0]); k++)
        if (is_op(n, compilers[k].op)) return &compilers[k];
    return NULL;
}

/* Whether compile_node knows the op: the table, the views, and Erf (inside
 * the GELU pattern). supports() asks this, so the two cannot disagree. */
bool dx_op_known(const seam_node_view *n) { return compiler_of(n) || IN_LIST(n, view_ops) || is_op(n, "Erf"); }

bool dx_compile_node(builder *b, int32_t i, bool *fused) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    if (fused[i]) return true;
    if (IN_LIST(n, view_ops)) return compile_view(b);
    int32_t sin = dx_input_slot(b, &n->inputs[0]);
    if (sin < 0) return dx_fail(b, "input 0 is neither made earlier nor a constant"), false;
    /* (pattern matchers look at other nodes, which invalidates n: fetch
     * it again after each) */
    if ((is_op(n, "Div") || is_op(n, "Mul")) && b->fuse && !p->slots[sin].lazy && dx_compile_gelu_pattern(b, fused, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if ((is_op(n, "Div") || is_op(n, "Mul")) && dx_defer_scale(b, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (p->slots[sin].lazy && !is_op(n, "MatMul") && !is_op(n, "Transpose")) sin = dx_as_plain(b, sin);
    if (sin < 0) return dx_fail(b, "could not copy input 0 to a dense layout"), false;
    const op_compiler *c = compiler_of(n);
    if (c && c->stage == STAGE_ANY_LAYOUT) return c->compile(b, fused, sin, -1);
    if (is_op(n, "Erf")) return dx_fail(b, "Erf outside the GELU pattern x * 0.5 * (1 + Erf(x / sqrt(2)))"), false;
    /* An activation or a same-shape binary on a convolution's blocked output
     * stays in that layout (the residual Add of a ResNet, the Relu after
     * it): no reorder to plain and back. */
    if (p->slots[sin].has_md && (IN_LIST(n, eltwise_ops) || IN_LIST(n, binary_ops))) {
        int32_t r = blocked_step(b, n, sin);
        if (r < 0) return false;
        if (r > 0) return true;
    }
    if (is_op(n, "Concat") && n->n_inputs <= MAX_ARGS - 2 && p->slots[sin].has_md && !p->slots[sin].lazy) {
        int32_t r = blocked_concat(b, sin);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n; /* (fetched again there) */
    }
    /* every other op works in the plain layout: a convolution's blocked
     * output is reordered back first (once per value) */
    if (!p->slots[sin].lazy) sin = dx_as_plain(b, sin);
    if (sin < 0) return dx_fail(b, "could not reorder input 0 to the plain layout"), false;
    /* the decomposed layer norm is tried on its first ReduceMean, before
     * the plain reduction */
    if (is_op(n, "ReduceMean") && dx_compile_layernorm_pattern(b, fused, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (c && c->stage == STAGE_PLAIN) return c->compile(b, fused, sin, -1);
    int32_t sd = dx_output_slot(b, &n->outputs[0]);
    if (sd < 0) return dx_fail(b, "out of memory"), false;
    if (c) return c->compile(b, fused, sin, sd);
    return dx_fail(b, "not implemented by the dnnl backend"), false;
}
