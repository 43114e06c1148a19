/*
 * dnnl: the patterns exporters write that become one primitive (or none):
 * the decomposed layer norm, GELU with Erf, a scalar factor deferred to the
 * MatMul it feeds, a squeeze-excite scale folded into the next
 * convolution's weights; and the layer normalization step they share with
 * the LayerNormalization op.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "ops/attr.h"

/* Node i of the subgraph if it is op `op` reading `name` (as input `pos`,
 * or either when pos < 0), with the output name copied to out_name. */
static bool node_is(const seam_subgraph_view *sg, int32_t i, const char *op, const char *name, int32_t pos,
                    const char **out_name, const char **other) {
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(sg, i, &st);
    if (!is_op(m, op) || m->n_outputs < 1 || !m->outputs[0].name) return false;
    int32_t at = -1;
    for (int32_t k = 0; k < m->n_inputs && k < 2; k++)
        if (m->inputs[k].name && !strcmp(m->inputs[k].name, name) && (pos < 0 || pos == k)) at = k;
    if (at < 0) return false;
    if (other) *other = m->n_inputs > 1 && m->inputs[1 - at].name ? m->inputs[1 - at].name : NULL;
    *out_name = m->outputs[0].name;
    return true;
}

static bool scalar_const(builder *b, const char *name, float *v) {
    seam_tensor_view c;
    if (!name || !seam_subgraph_constant(b->sg, name, &c) || c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != 4)
        return false;
    memcpy(v, c.data, 4);
    return true;
}

/* Whether value `name` is a float32 vector of c values available now: a
 * constant, or a value made earlier or given to the subgraph (the scale of
 * a layer norm, which the primitive reads at run time). */
static bool vector_of(builder *b, const char *name, int64_t c) {
    if (!name) return false;
    int32_t s = dx_slot_of(b->p, name);
    if (s >= 0) return dx_slot_numel(&b->p->slots[s]) == c && !b->p->slots[s].has_md;
    seam_tensor_view t;
    return seam_subgraph_constant(b->sg, name, &t) && t.dtype == SEAM_DTYPE_FLOAT32 && t.nbytes == 4 * (size_t)c;
}

/* The decomposed layer norm exporters write (torch's LayerNorm before
 * opset 17):
 *     mean = ReduceMean(x, last axis); d = Sub(x, mean)
 *     var = ReduceMean(Pow(d, 2)); y = Div(d, Sqrt(Add(var, eps)))
 *     [y = Add(Mul(y, gamma), beta)]
 * becomes one layer normalization. Called on the first ReduceMean; false
 * (and no error) when the nodes do not form the pattern. */
bool dx_compile_layernorm_pattern(builder *b, bool *fused, int32_t sin) {
    const seam_subgraph_view *sg = b->sg;
    const seam_node_view *n = b->n;
    int32_t r = b->p->slots[sin].rank;
    bool mask[MAXR];
    int64_t keep = 1;
    seam_node_attr_int(n, "keepdims", &keep);
    if (r < 1 || !keep || !dx_reduce_axes(b, r, mask) || !mask[r - 1]) return false;
    for (int32_t d = 0; d < r - 1; d++)
        if (mask[d]) return false;
    const char *x = n->inputs[0].name, *mean = n->outputs[0].name, *d, *sq, *var, *ve, *sd, *y, *other;
    int32_t nodes[9], cnt = 0, rd[2];
    float pw, eps;
    nodes[cnt++] = b->index;
    /* mean -> Sub(x, mean) */
    if (dx_readers(b, mean, rd, 1) != 1 || !node_is(sg, rd[0], "Sub", mean, 1, &d, &other) || strcmp(other, x))
        return false;
    nodes[cnt++] = rd[0];
    /* d -> Pow(d, 2) and Div(d, ...) */
    int32_t dr[2];
    if (dx_readers(b, d, dr, 2) != 2) return false;
    int32_t ipow = node_is(sg, dr[0], "Pow", d, 0, &sq, &other) ? 0 : node_is(sg, dr[1], "Pow", d, 0, &sq, &other) ? 1 : -1;
    if (ipow < 0 || !scalar_const(b, other, &pw) || pw != 2.0f) return false;
    int32_t idiv = dr[1 - ipow];
    nodes[cnt++] = dr[ipow];
    /* Pow -> ReduceMean (same axes) -> Add(eps) -> Sqrt -> the Div */
    int32_t k1;
    if (dx_readers(b, sq, &k1, 1) != 1 || !node_is(sg, k1, "ReduceMean", sq, 0, &var, &other)) return false;
    {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(sg, k1, &st);
        int64_t kd = 1;
        seam_node_attr_int(m, "keepdims", &kd);
        const int64_t *ax;
        int32_t na;
        if (!kd || !seam_node_attr_ints(m, "axes", &ax, &na) || na != 1 || (ax[0] != -1 && ax[0] != r - 1))
            return false;
    }
    nodes[cnt++] = k1;
    if (dx_readers(b, var, &k1, 1) != 1 || !node_is(sg, k1, "Add", var, -1, &ve, &other) || !scalar_const(b, other, &eps))
        return false;
    nodes[cnt++] = k1;
    if (dx_readers(b, ve, &k1, 1) != 1 || !node_is(sg, k1, "Sqrt", ve, 0, &sd, &other)) return false;
    nodes[cnt++] = k1;
    if (dx_readers(b, sd, &k1, 1) != 1 || k1 != idiv || !node_is(sg, k1, "Div", sd, 1, &y, &other) || strcmp(other, d))
        return false;
    nodes[cnt++] = k1;
    /* optional scale and shift */
    const char *scale = NULL, *shift = NULL, *end = y, *o;
    int64_t ch = b->p->slots[sin].dims[r - 1];
    if (dx_readers(b, y, &k1, 1) == 1 && node_is(sg, k1, "Mul", y, -1, &o, &other) && vector_of(b, other, ch)) {
        scale = other, end = o, nodes[cnt++] = k1;
        if (dx_readers(b, end, &k1, 1) == 1 && node_is(sg, k1, "Add", end, -1, &o, &other) && vector_of(b, other, ch))
            shift = other, end = o, nodes[cnt++] = k1;
    }
    /* the output's value info, from the last node */
    seam_value_info out = {0};
    int64_t dims[MAXR];
    {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(sg, nodes[cnt - 1], &st);
        out = m->outputs[0];
        if (out.rank != r) return false;
        for (int32_t k = 0; k < out.rank; k++) dims[k] = out.dims[k];
        out.dims = dims;
    }
    b->n = seam_subgraph_node(sg, b->index, b->storage);
    for (int32_t k = 0; k < r; k++)
        if (out.dims[k] != b->p->slots[sin].dims[k]) return false;
    if (!dx_layernorm_step(b, sin, scale, shift, eps, &out)) return false;
    for (int32_t k = 0; k < cnt; k++) fused[nodes[k]] = true;
    return true;
}

static bool se_defer(builder *b);

/* A Div or Mul by a constant scalar whose only reader is a MatMul (the
 * 1/sqrt(d) of attention): no step; its output is a view of its input
 * carrying the factor, which the MatMul applies to its result as a post-op
 * ((A/c) B = (A B)/c). A squeeze-excite Mul makes no step either (se_defer,
 * below). */
bool dx_defer_scale(builder *b, int32_t sin) {
    if (is_op(b->n, "Mul") && se_defer(b)) return true;
    if (b->err[0]) return false;
    const seam_node_view *n = b->n;
    program *p = b->p;
    if (!b->fuse || n->n_inputs != 2 || !n->inputs[1].name || p->slots[sin].scale != 1.0f) return false;
    if (!full_shape(&n->inputs[0], &n->outputs[0])) return false;
    float c;
    if (!scalar_const(b, n->inputs[1].name, &c) || c == 0.0f || !isfinite(c)) return false;
    float f = is_op(n, "Div") ? 1.0f / c : c;
    const char *out = n->outputs[0].name;
    int32_t rank = n->outputs[0].rank, r = dx_sole_reader(b, out); /* (n is stale after this) */
    seam_node_view st;
    const seam_node_view *m = r >= 0 ? seam_subgraph_node(b->sg, r, &st) : NULL;
    bool ok = m && is_op(m, "MatMul") && m->n_inputs == 2 && m->outputs[0].rank == rank &&
              m->inputs[0].rank == rank && m->inputs[1].rank == rank && rank >= 2 &&
              strcmp(m->inputs[0].name, m->inputs[1].name);
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (!ok) return false;
    slot shape = p->slots[sin];
    int32_t v = dx_view_slot(p, sin, &shape, shape.has_md ? &shape.md : NULL);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    p->slots[v].name = out;
    p->slots[v].lazy = p->slots[sin].lazy;
    p->slots[v].scale = f;
    return true;
}

/* GELU's five nodes, x * 0.5 * (1 + Erf(x / sqrt(2))) (the 0.5 on either
 * side, Div by sqrt(2) or Mul by 1/sqrt(2)), from the Div/Mul `first`:
 * first, Erf, Add, Mul, Mul (the last one's output is GELU(x)). */
bool dx_gelu_nodes(builder *b, int32_t first, int32_t nodes[5]) {
    const seam_subgraph_view *sg = b->sg;
    seam_node_view nst;
    const seam_node_view *n = seam_subgraph_node(sg, first, &nst);
    float c;
    if (!(is_op(n, "Div") || is_op(n, "Mul")) || n->n_inputs != 2 || !n->inputs[0].name || !n->inputs[1].name ||
        n->n_outputs < 1 || !n->outputs[0].name || !scalar_const(b, n->inputs[1].name, &c))
        return false;
    float inv = is_op(n, "Div") ? 1.0f / c : c;
    if (fabsf(inv - 0.70710678f) > 1e-4f) return false;
    const char *x = n->inputs[0].name, *dv = n->outputs[0].name, *e, *o, *h, *y, *other;
    int32_t cnt = 0, k;
    nodes[cnt++] = first;
    if (dx_readers(b, dv, &k, 1) != 1 || !node_is(sg, k, "Erf", dv, 0, &e, &other)) return false;
    nodes[cnt++] = k;
    float one, half;
    if (dx_readers(b, e, &k, 1) != 1 || !node_is(sg, k, "Add", e, -1, &o, &other) || !scalar_const(b, other, &one) || one != 1.0f)
        return false;
    nodes[cnt++] = k;
    /* (1 + erf) * x * 0.5 in either order */
    if (dx_readers(b, o, &k, 1) != 1 || !node_is(sg, k, "Mul", o, -1, &h, &other)) return false;
    nodes[cnt++] = k;
    bool have_x = other && !strcmp(other, x), have_half = scalar_const(b, other, &half) && half == 0.5f;
    if (!have_x && !have_half) return false;
    if (dx_readers(b, h, &k, 1) != 1 || !node_is(sg, k, "Mul", h, -1, &y, &other)) return false;
    if (have_x ? !(scalar_const(b, other, &half) && half == 0.5f) : !(other && !strcmp(other, x))) return false;
    nodes[cnt++] = k;
    return true;
}

/* GELU as exporters write it, x * 0.5 * (1 + Erf(x / sqrt(2))) (the 0.5
 * on either side, Div by sqrt(2) or Mul by 1/sqrt(2)), as one gelu_erf
 * eltwise. Called on the Div/Mul feeding the Erf; false when the nodes do
 * not form the pattern. (After a MatMul or Conv it is a post-op instead:
 * dx_collect_chain.) */
bool dx_compile_gelu_pattern(builder *b, bool *fused, int32_t sin) {
    const seam_subgraph_view *sg = b->sg;
    int32_t nodes[5], cnt = 5, k;
    if (!dx_gelu_nodes(b, b->index, nodes)) return false;
    k = nodes[4];
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(sg, k, &st);
    seam_value_info out = m->outputs[0];
    int64_t dims[MAXR];
    for (int32_t d = 0; d < out.rank && d < MAXR; d++) dims[d] = out.dims[d];
    out.dims = dims;
    b->n = seam_subgraph_node(sg, b->index, b->storage);
    if (!full_shape(&out, &b->n->inputs[0])) return false;
    program *p = b->p;
    if (p->slots[sin].lazy && (sin = dx_as_plain(b, sin)) < 0)
        return dx_fail(b, "could not copy input 0 to a dense layout"), false;
    dnnl_memory_desc_t src;
    dx_md_of(&p->slots[sin], &src);
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_t pd;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_gelu_erf, &src, 0.0f, 0.0f) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &ed, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return false;
    for (int32_t j = 0; j < cnt; j++) fused[nodes[j]] = true;
    return dx_layout_step(b, pd, sin, &out);
}

/* ---- the squeeze-excite scale, folded into the next convolution's weights ----
 * A squeeze-excite block ends in Mul(s, x) (torch writes the scale
 * first): x [1, C, H, W] scaled per channel by s [1, C, 1, 1], which the
 * block's projection convolution alone reads. Conv(W, s x) = Conv(W
 * diag(s), x): the weights scaled per input channel at each run replace
 * the Mul's pass over x, which oneDNN runs on its generic `binary jit:uni`
 * in channels-last (efficientnet_b0's first block: 70 us for the Mul over
 * 32 x 112 x 112, 3 us to scale the 16 x 32 weights). Only at batch 1 (s
 * differs per image), for a convolution of one group, and where x has at
 * least SE_FOLD_RATIO times the weights' elements: scaling the weights (a
 * binary over [O/16, I, 16] rows, see scaled_weights in conv.c)
 * runs at about half the speed per element of the Mul over x (a
 * channels-last row per pixel), and the convolution then reads x from
 * where the depthwise convolution left it rather than the Mul's fresh
 * output. With fusion off the Mul is a step of its own. Measured per block of
 * efficientnet_b0 (bench/results/dnnl_eff.md): x/w of 20 and more (the
 * 112 x 112 to 28 x 28 blocks) win 10-50 us each, 2.4 (14 x 14, 240 into
 * 80) breaks even, 1.75 (672 into 112) loses 15 us. */
#define SE_FOLD_RATIO 8

/* Whether node `mul` is such a Mul, with fusion on: then its reader in
 * *conv, x and s by name. The Mul and the convolution ask the same
 * question (the Mul makes no step, the convolution scales its weights). */
static bool se_fold_of(builder *b, int32_t mul, int32_t *conv, const char **x, const char **s) {
    if (!b->fuse || mul < 0) return false;
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, mul, &st);
    if (!is_op(m, "Mul") || m->n_inputs != 2 || !m->inputs[0].name || !m->inputs[1].name || m->n_outputs < 1 ||
        !m->outputs[0].name)
        return false;
    const seam_value_info *o = &m->outputs[0];
    if (o->rank < 3 || o->rank > 5 || o->dims[0] != 1 || dx_value_numel(o) <= 0) return false;
    int32_t ks = -1;
    for (int32_t k = 0; k < 2 && ks < 0; k++) {
        const seam_value_info *v = &m->inputs[k], *w = &m->inputs[1 - k];
        bool chan = v->rank == o->rank && v->dims[1] == o->dims[1] && w->rank == o->rank;
        for (int32_t d = 0; chan && d < o->rank; d++) chan = (d == 1 || v->dims[d] == 1) && w->dims[d] == o->dims[d];
        if (chan) ks = k;
    }
    if (ks < 0 || !strcmp(m->inputs[0].name, m->inputs[1].name)) return false;
    const char *sn = m->inputs[ks].name, *xn = m->inputs[1 - ks].name, *out = m->outputs[0].name;
    /* the scale read by this Mul alone: it is read again at the
     * convolution (its weights scaled then), and no node in between may
     * take its bytes (a sum post-op in place) */
    if (dx_sole_reader(b, sn) != mul) return false;
    int64_t xcount = dx_value_numel(o), channels = o->dims[1];
    int32_t rank = o->rank;
    program *p = b->p;
    int32_t sx = dx_slot_of(p, xn), ss = dx_slot_of(p, sn);
    if (sx < 0 || ss < 0) return false; /* made earlier (not constants: those would fold at compile time) */
    const slot *a = &p->slots[sx], *c = &p->slots[ss];
    if (a->lazy || a->pad_pending || a->scale != 1.0f || c->lazy || c->pad_pending || c->scale != 1.0f) return false;
    /* x channels-last or plain: the convolution then runs on brgconv with
     * weights blocked on the outputs only, which scaled_weights scales
     * fast. x in a blocked layout (aBcd8b, as regnet_y_400mf's grouped
     * convolutions write it) would keep the convolution on jit_1x1 with
     * weights blocked on both dims, scaled by the slow reorder (50 us for
     * 48 x 48 there, against 23 us for the Mul). */
    if (a->has_md && (a->md.format_kind != dnnl_blocked || a->md.format_desc.blocking.inner_nblks > 0)) return false;
    int32_t r = dx_sole_reader(b, out);
    if (r < 0) return false;
    const seam_node_view *n = seam_subgraph_node(b->sg, r, &st);
    if (!is_op(n, "Conv") || n->n_inputs < 2 || !n->inputs[0].name || strcmp(n->inputs[0].name, out) ||
        !n->inputs[1].name || !strcmp(n->inputs[1].name, out) || !dx_const_input(n, 1) || n->inputs[1].rank != rank ||
        n->inputs[1].dims[1] != channels || node_attr_int(dx_ir(n), "group", 1) != 1)
        return false;
    if (n->n_inputs > 2 && n->inputs[2].name && !strcmp(n->inputs[2].name, out)) return false;
    int64_t wcount = dx_value_numel(&n->inputs[1]);
    if (wcount <= 0 || wcount * SE_FOLD_RATIO > xcount) return false;
    *conv = r, *x = xn, *s = sn;
    return true;
}

/* The Mul side: its output becomes a view of x (the scale is the
 * convolution's to apply). False when the Mul is not such a block's. */
static bool se_defer(builder *b) {
    int32_t conv;
    const char *x, *s;
    if (b->p->bf16) return false; /* (the convolution reads bfloat16 weights, made once: it applies no scale) */
    bool ok = se_fold_of(b, b->index, &conv, &x, &s);
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (!ok) return false;
    program *p = b->p;
    int32_t sx = dx_slot_of(p, x);
    slot shape = p->slots[sx];
    int32_t v = dx_view_slot(p, sx, &shape, shape.has_md ? &shape.md : NULL);
    if (v < 0) return dx_fail(b, "out of memory"), false;
    p->slots[v].name = b->n->outputs[0].name;
    seam_node_view st;
    const seam_node_view *c = seam_subgraph_node(b->sg, conv, &st);
    dx_log(p, "node %d '%s' (%s): no step of its own: the squeeze-excite scale '%s' goes into the weights of node %d "
              "'%s' (Conv), scaled per input channel at each run",
           b->n->index, b->n->name ? b->n->name : "", b->n->op_type, s, c->index, c->name ? c->name : "");
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    return true;
}

/* The convolution side (node b->index, reading value `input` as slot
 * sin): the slot of the squeeze-excite scale to apply to its weights, as a
 * plain vector of the input's channels, or -1 when its input is no such
 * Mul's. Sets the builder's error (and returns -1) only when out of
 * memory. */
int32_t dx_se_scale_for_conv(builder *b, int32_t sin, const char *input) {
    if (!b->fuse || !input || sin < 0 || b->p->slots[sin].alias < 0) return -1; /* (se_defer made a view) */
    int32_t mul = -1;
    for (int32_t i = b->index - 1; i >= 0 && mul < 0; i--) {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(b->sg, i, &st);
        for (int32_t k = 0; k < m->n_outputs; k++)
            if (m->outputs[k].name && !strcmp(m->outputs[k].name, input)) mul = i;
    }
    int32_t conv = -1;
    const char *x, *s;
    bool ok = mul >= 0 && se_fold_of(b, mul, &conv, &x, &s) && conv == b->index;
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (!ok) return -1;
    program *p = b->p;
    int32_t ss = dx_as_plain(b, dx_slot_of(p, s));
    if (ss < 0) return dx_fail(b, "could not reorder the squeeze-excite scale to the plain layout"), -1;
    slot vec;
    memset(&vec, 0, sizeof(vec));
    vec.rank = 1;
    vec.dims[0] = p->slots[ss].dims[1];
    int32_t v = dx_view_slot(p, ss, &vec, NULL);
    if (v < 0) return dx_fail(b, "out of memory"), -1;
    return v;
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
