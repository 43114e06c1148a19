/*
 * dnnl: windows and normalizations (one op family, see program.h): the
 * pools (a channels-last GlobalAveragePool is a host step, host.c),
 * BatchNormalization (with the Relu that alone reads it), LayerNormalization,
 * InstanceNormalization (a layer normalization of [N * C, S]),
 * LRN, Softmax and LogSoftmax, Resize.
 */
#include <math.h>
#include <string.h>

#include "pool_norm.h"
#include "ops/attr.h"

/* An AveragePool with count_include_pad=1 whose last window (ceil_mode)
 * runs past its end pad: ONNX divides that window by what lies inside
 * the input and the pads, oneDNN's avg_include_padding by the whole kernel
 * (it counts the overhang as padding), which halved such outputs. The
 * sizes must be known (a symbolic shape is checked at its compile). */
static bool include_pad_overhang(const seam_node_view *n, const int64_t *ks) {
    conv_geom g;
    char why[64];
    if (strcmp(n->op_type, "AveragePool") || !node_attr_int(dx_ir(n), "count_include_pad", 0) ||
        !node_attr_int(dx_ir(n), "ceil_mode", 0) || !dx_window_geom(n, ks, true, &g, why, sizeof(why)))
        return false;
    for (int32_t d = 0; d < g.n; d++)
        if (conv_geom_pad_end(&g, d) > g.pad_hi[d]) return true;
    return false;
}

#define OVERHANG_WHY                                                                                   \
    "AveragePool count_include_pad=1 whose last ceil_mode window passes the end pad is not supported " \
    "(oneDNN would divide that window by the whole kernel)"

/* MaxPool and AveragePool: no Indices output. */
static bool supports_pool(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_outputs > 1 && n->outputs[1].name)
        return dx_refuse(why, wn, "MaxPool with an Indices output is not supported");
    const int64_t *ks;
    conv_geom g;
    if (node_attr_ints(dx_ir(n), "kernel_shape", &ks) != n->inputs[0].rank - 2)
        return dx_refuse(why, wn, "bad kernel_shape");
    if (include_pad_overhang(n, ks)) return dx_refuse(why, wn, OVERHANG_WHY);
    return dx_window_geom(n, ks, node_attr_int(dx_ir(n), "ceil_mode", 0) != 0, &g, why, wn);
}

/* Pools work in the layout their input has. A global pool's window is the
 * whole input. */
static bool compile_pool(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t nsp = n->inputs[0].rank - 2;
    bool global = n->op_type[0] == 'G';
    if (global) { /* channels-last: seam's kernel (host.c) */
        int32_t r = dx_compile_global_pool(b, io->sin);
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
        if (include_pad_overhang(n, ks)) return dx_fail(b, OVERHANG_WHY), false;
        if (!dx_window(b, nsp, ks, node_attr_int(dx_ir(n), "ceil_mode", 0) != 0, strides, dilation, pl, pr))
            return false;
        for (int32_t d = 0; d < nsp; d++) kernel[d] = ks[d];
    }
    dnnl_alg_kind_t alg = strstr(n->op_type, "Max") ? dnnl_pooling_max
                          : node_attr_int(dx_ir(n), "count_include_pad", 0) ? dnnl_pooling_avg_include_padding
                                                                           : dnnl_pooling_avg_exclude_padding;
    if (p->slots[io->sin].pad_pending) { /* a zero Pad before it (see compile_pad): its zeros count */
        if (global || alg == dnnl_pooling_max) return dx_fail(b, "a Pad left to a pool that cannot take it"), false;
        alg = dnnl_pooling_avg_include_padding;
        for (int32_t d = 0; d < nsp; d++) pl[d] += p->slots[io->sin].pad_lo[d], pr[d] += p->slots[io->sin].pad_hi[d];
    }
    dnnl_memory_desc_t any_dst;
    dnnl_memory_desc_init_by_tag(&any_dst, io->src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_pooling_v2_desc_t pld;
    dnnl_primitive_desc_t pd;
    if (dnnl_pooling_v2_forward_desc_init(&pld, dnnl_forward_inference, alg, &io->src, &any_dst, strides, kernel, dilation, pl, pr) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &pld, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this pooling"), false;
    /* A plain input (a boundary value from the CPU) gets oneDNN's
     * simple_nchw pooling, a scalar loop: googlenet's 3x3 max pools took
     * 4-13 ms each on an AVX2 EPYC where the jit pooling on channel blocks
     * takes a few tenths. Then the input is reordered to channel blocks
     * (8 a block, 16 with AVX-512), when oneDNN has a jit pooling there. */
    int32_t sin = io->sin;
    if (!strncmp(dx_impl_name(pd), "simple", 6) || dx_is_ref(pd)) {
        static const dnnl_format_tag_t tag8[] = {dnnl_nCw8c, dnnl_nChw8c, dnnl_nCdhw8c};
        static const dnnl_format_tag_t tag16[] = {dnnl_nCw16c, dnnl_nChw16c, dnnl_nCdhw16c};
        dnnl_memory_desc_t bl;
        dnnl_pooling_v2_desc_t pld2;
        dnnl_primitive_desc_t pd2 = NULL;
        if (nsp >= 1 && nsp <= 3 &&
            dnnl_memory_desc_init_by_tag(&bl, io->src.ndims, io->src.dims, dnnl_f32,
                                         (dx_isa_avx512() ? tag16 : tag8)[nsp - 1]) == dnnl_success &&
            dnnl_pooling_v2_forward_desc_init(&pld2, dnnl_forward_inference, alg, &bl, &any_dst, strides, kernel, dilation,
                                              pl, pr) == dnnl_success &&
            dnnl_primitive_desc_create(&pd2, &pld2, dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success &&
            !strncmp(dx_impl_name(pd2), "jit", 3)) {
            int32_t t = dx_in_layout(b, sin, &bl);
            if (t >= 0) {
                dnnl_primitive_desc_destroy(pd);
                pd = pd2, pd2 = NULL, sin = t;
            }
        }
        if (pd2) dnnl_primitive_desc_destroy(pd2);
    }
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
static bool compile_batchnorm(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    int32_t sc = dx_input_slot(b, &n->inputs[1]), sh = dx_input_slot(b, &n->inputs[2]);
    int32_t mn = dx_input_slot(b, &n->inputs[3]), vr = dx_input_slot(b, &n->inputs[4]);
    if (sc < 0 || sh < 0 || mn < 0 || vr < 0) return dx_fail(b, "scale, B, mean and var must be constants"), false;
    float eps = 1e-5f;
    seam_node_attr_float(n, "epsilon", &eps);
    int32_t relu = bn_relu_reader(b, n->outputs[0].name);
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift | (relu >= 0 ? dnnl_fuse_norm_relu : 0);
    dnnl_batch_normalization_desc_t bd;
    if (dnnl_batch_normalization_forward_desc_init(&bd, dnnl_forward_inference, &io->src, eps, flags) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this batch normalization"), false;
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, &bd, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this batch normalization"), false;
    int32_t extra_kinds[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE}, extra[4] = {sc, sh, mn, vr};
    if (relu < 0) return dx_layout_step_with(b, pd, io->sin, &n->outputs[0], 4, extra_kinds, extra);
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
    bool ok = dx_layout_step_with(b, pd, io->sin, &out, 4, extra_kinds, extra);
    b->chain = NULL;
    if (ok) fused[relu] = true;
    return ok;
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

static bool compile_layernorm(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    float eps = 1e-5f;
    seam_node_attr_float(n, "epsilon", &eps);
    const char *scale = n->n_inputs > 1 ? n->inputs[1].name : NULL, *shift = n->n_inputs > 2 ? n->inputs[2].name : NULL;
    seam_value_info out = n->outputs[0];
    int64_t dims[MAXR];
    for (int32_t d = 0; d < out.rank; d++) dims[d] = out.dims[d];
    out.dims = dims;
    return dx_layernorm_step(b, io->sin, scale, shift, eps, &out);
}

/* InstanceNormalization: x [N, C, S...] seen as [N * C, S] is a layer
 * normalization of each row (a mean and a variance per image and
 * channel, over the spatial elements); the scale and bias, one per
 * channel, then apply as two binary steps over [N, C, S], left out when
 * they are ones and zeros (a GroupNorm of one group as exporters write
 * it). */
static bool supports_instnorm(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[0].rank < 3) return dx_refuse(why, wn, "InstanceNormalization of rank %d: needs 3 or more", n->inputs[0].rank);
    if (n->n_inputs < 3 || !dx_const_input(n, 1) || !dx_const_input(n, 2) || n->inputs[1].rank != 1 ||
        n->inputs[2].rank != 1)
        return dx_refuse(why, wn, "InstanceNormalization whose scale or B is not a constant vector is not supported");
    return true;
}

/* Whether constant value v holds only `want` (float32). */
static bool all_equal(builder *b, const char *name, float want) {
    seam_tensor_view t;
    if (!seam_subgraph_constant(b->sg, name, &t) || t.dtype != SEAM_DTYPE_FLOAT32) return false;
    for (size_t i = 0; i < t.nbytes / sizeof(float); i++)
        if (((const float *)t.data)[i] != want) return false;
    return true;
}

static bool compile_instnorm(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    float eps = 1e-5f;
    seam_node_attr_float(n, "epsilon", &eps);
    const slot *x = &p->slots[io->sin];
    int64_t N = x->dims[0], C = x->dims[1], S = 1;
    for (int32_t d = 2; d < x->rank; d++) S *= x->dims[d];
    const char *scale = n->inputs[1].name, *bias = n->inputs[2].name;
    bool affine = !all_equal(b, scale, 1.0f) || !all_equal(b, bias, 0.0f);
    int32_t sc = dx_named_slot(b, scale), sh = dx_named_slot(b, bias);
    if (sc < 0 || sh < 0 || dx_slot_numel(&p->slots[sc]) != C || dx_slot_numel(&p->slots[sh]) != C)
        return dx_fail(b, "scale and B must be float32 constants with one value per channel"), false;
    slot rows = *x; /* [N * C, S] */
    rows.rank = 2, rows.dims[0] = N * C, rows.dims[1] = S, rows.has_md = false;
    int32_t vin = dx_view_slot(p, io->sin, &rows, NULL);
    /* the normalized rows: the output itself, or a temporary the affine
     * step reads */
    dnnl_memory_desc_t xmd;
    dx_md_of(&p->slots[io->sin], &xmd);
    int32_t out = io->sd, norm = affine ? dx_temp_slot(b, &p->slots[io->sin], &xmd) : out;
    if (norm >= 0 && affine) p->slots[norm].has_md = false;
    int32_t vnorm = norm < 0 ? -1 : dx_view_slot(p, norm, &rows, NULL);
    if (vin < 0 || vnorm < 0) return dx_fail(b, "out of memory"), false;
    dnnl_memory_desc_t md;
    dx_md_of(&p->slots[vin], &md);
    dnnl_layer_normalization_desc_t ld;
    if (dnnl_layer_normalization_forward_desc_init(&ld, dnnl_forward_inference, &md, NULL, eps, 0) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this normalization"), false;
    int32_t kinds[5] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[5] = {vin, vnorm};
    if (!dx_add_step(b, &ld, NULL, 2, kinds, slots)) return false;
    if (!affine) return true;
    /* y = norm * scale[c] + bias[c] over [N, C, S] */
    slot three = rows, per_c = rows;
    three.rank = 3, three.dims[0] = N, three.dims[1] = C, three.dims[2] = S;
    per_c.rank = 3, per_c.dims[0] = 1, per_c.dims[1] = C, per_c.dims[2] = 1;
    int32_t a = dx_view_slot(p, norm, &three, NULL), y = dx_view_slot(p, out, &three, NULL);
    int32_t vs = dx_view_slot(p, sc, &per_c, NULL), vb = dx_view_slot(p, sh, &per_c, NULL);
    if (a < 0 || y < 0 || vs < 0 || vb < 0) return dx_fail(b, "out of memory"), false;
    dnnl_memory_desc_t amd, smd, bmd;
    dx_md_of(&p->slots[a], &amd), dx_md_of(&p->slots[vs], &smd), dx_md_of(&p->slots[vb], &bmd);
    /* two binary steps (the Add as a post-op of the Mul broadcast a
     * [1, C, 1] bias as one value when S is 1: every output was bias[0]) */
    dnnl_binary_desc_t bm, ba;
    if (dnnl_binary_desc_init(&bm, dnnl_binary_mul, &amd, &smd, &amd) != dnnl_success ||
        dnnl_binary_desc_init(&ba, dnnl_binary_add, &amd, &bmd, &amd) != dnnl_success)
        return dx_fail(b, "oneDNN refuses the scale and bias steps"), false;
    int32_t bk[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, s1[3] = {a, vs, y}, s2[3] = {y, vb, y};
    return dx_add_step(b, &bm, NULL, 3, bk, s1) && dx_add_step(b, &ba, NULL, 3, bk, s2);
}

static bool supports_lrn(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[0].rank < 3 || n->inputs[0].rank > 5)
        return dx_refuse(why, wn, "LRN of rank %d is not supported", n->inputs[0].rank);
    return true;
}

/* LRN: y = x / (bias + alpha / size * sum of squares)^beta, as oneDNN's. */
static bool compile_lrn(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    int64_t size = 0;
    float la = 1e-4f, lb = 0.75f, bias = 1.0f;
    if (!seam_node_attr_int(n, "size", &size) || size < 1) return dx_fail(b, "LRN needs size >= 1"), false;
    seam_node_attr_float(n, "alpha", &la);
    seam_node_attr_float(n, "beta", &lb);
    seam_node_attr_float(n, "bias", &bias);
    dnnl_lrn_desc_t ld;
    if (dnnl_lrn_forward_desc_init(&ld, dnnl_forward_inference, dnnl_lrn_across_channels, &io->src, size, la, lb, bias) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this LRN"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {io->sin, io->sd};
    return dx_add_step(b, &ld, NULL, 2, kinds, slots);
}

static bool supports_softmax(const seam_node_view *n, char *why, size_t wn) {
    if (n->opset < 13) return dx_refuse(why, wn, "%s before opset 13 (2-D coercion) is not supported", n->op_type);
    return true;
}

static bool compile_softmax(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int64_t axis = -1;
    seam_node_attr_int(n, "axis", &axis);
    if (n->opset < 13) return dx_fail(b, "Softmax before opset 13 (2-D coercion) is not supported"), false;
    if (axis < 0) axis += n->inputs[0].rank;
    dnnl_alg_kind_t alg = is_op(n, "Softmax") ? dnnl_softmax_accurate : dnnl_softmax_log;
    dnnl_softmax_v2_desc_t sd2;
    dnnl_primitive_desc_t pd;
    if (axis < 0 || axis >= io->src.ndims ||
        dnnl_softmax_v2_forward_desc_init(&sd2, dnnl_forward_inference, alg, &io->src, &io->dst, (int)axis) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &sd2, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this softmax"), false;
    /* oneDNN's fast softmax wants its axis innermost: on another axis, the
     * input is reordered to a layout where it is, and the result back */
    bool inner[MAXR] = {false};
    inner[axis] = true;
    dnnl_memory_desc_t imd;
    dnnl_primitive_desc_t ipd = NULL;
    if (dx_is_slow_ref(pd) && dx_inner_md(&p->slots[io->sin], inner, &imd) &&
        dnnl_softmax_v2_forward_desc_init(&sd2, dnnl_forward_inference, alg, &imd, &imd, (int)axis) == dnnl_success &&
        dnnl_primitive_desc_create(&ipd, &sd2, dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success &&
        dx_is_slow_ref(ipd))
        dnnl_primitive_desc_destroy(ipd), ipd = NULL;
    if (ipd) {
        dnnl_primitive_desc_destroy(pd);
        slot like = p->slots[io->sin];
        int32_t t = dx_in_layout(b, io->sin, &imd), t2 = t >= 0 ? dx_temp_slot(b, &like, &imd) : -1;
        int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {t, t2};
        bool ok = t2 >= 0 && dx_add_prim(b, ipd, 2, kinds, slots) && dx_add_reorder(b, t2, io->sd);
        dnnl_primitive_desc_destroy(ipd);
        return ok || (dx_fail(b, "out of memory"), false);
    }
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {io->sin, io->sd};
    bool ok = dx_add_prim(b, pd, 2, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
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
    /* ONNX maps the coordinates by the scales, oneDNN by out/in: they agree
     * only where the scale is out/in exactly (a 0.6 downscale of 5 to 3
     * samples at 0.33, oneDNN at 0.33 of 5/3; seam backend-check found it);
     * and oneDNN's nearest (half-pixel, rounded) is asymmetric-floor only
     * for a whole-number upscale */
    const seam_value_info *x = &n->inputs[0], *y = &n->outputs[0];
    int32_t si = n->opset >= 11 ? 2 : 1;
    bool has_scales = si < n->n_inputs && n->inputs[si].name && n->inputs[si].name[0] && dx_value_numel(&n->inputs[si]) != 0;
    seam_tensor_view sc;
    if (has_scales && !seam_node_input_data(n, si, &sc))
        return dx_refuse(why, wn, "Resize with scales computed at run time (dnnl maps the coordinates by out/in)");
    for (int32_t d = 2; d < x->rank; d++) {
        int64_t in = x->dims[d], out = y->dims[d];
        if (in < 1 || out < 1) continue; /* symbolic: compile sees the shapes, and the scales were checked above */
        if (!strcmp(mode, "nearest") && (out % in || out < in))
            return dx_refuse(why, wn, "Resize nearest of dim %d from %lld to %lld: dnnl's nearest is ONNX's only for a "
                             "whole-number upscale", d, (long long)in, (long long)out);
        if (has_scales && sc.dtype == SEAM_DTYPE_FLOAT32 && sc.nbytes == sizeof(float) * (size_t)x->rank) {
            double s = ((const float *)sc.data)[d];
            if (fabs(s * (double)in - (double)out) > 1e-6 * (double)out)
                return dx_refuse(why, wn, "Resize of dim %d by %g from %lld to %lld: dnnl maps by out/in, ONNX by the scale",
                                 d, s, (long long)in, (long long)out);
        }
    }
    return true;
}

/* Resize: the factors from the static shapes (supports_resize took only
 * scales that out/in gives exactly). */
static bool compile_resize(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    const char *mode = "nearest";
    seam_node_attr_string(n, "mode", &mode);
    float factors[3];
    int32_t nsp = io->src.ndims - 2;
    for (int32_t d = 0; d < nsp; d++) factors[d] = (float)n->outputs[0].dims[2 + d] / (float)n->inputs[0].dims[2 + d];
    dnnl_resampling_desc_t rd;
    if (dnnl_resampling_forward_desc_init(&rd, dnnl_forward_inference, strcmp(mode, "linear") ? dnnl_resampling_nearest : dnnl_resampling_linear,
                                          factors, &io->src, &io->dst) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this resampling"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {io->sin, io->sd};
    return dx_add_step(b, &rd, NULL, 2, kinds, slots);
}

const dx_op dx_pool_norm_rows[] = {
    {"MaxPool", STAGE_ANY_LAYOUT, supports_pool, compile_pool},
    {"AveragePool", STAGE_ANY_LAYOUT, supports_pool, compile_pool},
    {"GlobalAveragePool", STAGE_ANY_LAYOUT, NULL, compile_pool},
    {"GlobalMaxPool", STAGE_ANY_LAYOUT, NULL, compile_pool},
    {"BatchNormalization", STAGE_ANY_LAYOUT, supports_batchnorm, compile_batchnorm},
    {"LayerNormalization", STAGE_PLAIN, supports_layernorm, compile_layernorm},
    {"InstanceNormalization", STAGE_PLAIN_OUT, supports_instnorm, compile_instnorm},
    {"LRN", STAGE_PLAIN_OUT, supports_lrn, compile_lrn},
    {"Softmax", STAGE_PLAIN_OUT, supports_softmax, compile_softmax},
    {"LogSoftmax", STAGE_PLAIN_OUT, supports_softmax, compile_softmax},
    {"Resize", STAGE_PLAIN_OUT, supports_resize, compile_resize},
    {NULL, STAGE_VIEW, NULL, NULL},
};
