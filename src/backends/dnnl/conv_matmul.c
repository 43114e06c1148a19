/*
 * dnnl: the ops with weights, which absorb post-op chains: Conv and
 * ConvTranspose (weights reordered once, at compile time, into the layout
 * the primitive picks) and MatMul/Gemm (B read in place, or packed once
 * when constant).
 */
#include <stdio.h>
#include <string.h>

#include "conv_matmul.h"
#include "ops/attr.h"

/* The step of a primitive with weights: src, weights, dst and (when sb >= 0)
 * bias go in slots 0-3, post-op operands after them (already in
 * kinds/slots). Consumes pd; a dst that is a stand-in for a boundary
 * output (final_slot >= 0) is copied there after. */
static bool weighted_step(builder *b, dnnl_primitive_desc_t pd, int32_t n_args, const int32_t *kinds, int32_t *slots,
                          int32_t src, int32_t w, int32_t dst, int32_t sb, int32_t final_slot) {
    slots[0] = src, slots[1] = w, slots[2] = dst;
    if (sb >= 0) slots[3] = sb; /* else the post-op operands start at 3 */
    bool ok = dx_add_prim(b, pd, n_args, kinds, slots);
    b->chain = NULL;
    dnnl_primitive_desc_destroy(pd);
    if (ok && final_slot >= 0) ok = dx_add_reorder(b, dst, final_slot);
    return ok;
}

/* The log line of a post-op chain compiled otherwise than written, because
 * oneDNN has only its reference kernel for it as written: how (the sum
 * first, the bias, ...), and where the chain was cut. */
static void log_rearranged(builder *b, const chain *whole, const chain *c, const char *how) {
    char cut[200] = "";
    if (c->n < whole->n)
        snprintf(cut, sizeof(cut), "%s'%s' (%s) and the nodes after it run as steps of their own", how[0] ? "; " : "",
                 whole->name[c->n], whole->op[c->n]);
    dx_log(b->p, "node %d '%s' (%s): compiled otherwise than written, where oneDNN has a fast kernel: %s%s", b->n->index,
           b->n->name ? b->n->name : "", b->n->op_type, how, cut);
}

static bool supports_conv(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[0].rank < 3 || n->inputs[0].rank > 5)
        return dx_refuse(why, wn, "Conv of rank %d: dnnl does 1-D, 2-D and 3-D", n->inputs[0].rank);
    if (n->n_inputs < 2 || !n->inputs[1].name || n->inputs[1].rank != n->inputs[0].rank)
        return dx_refuse(why, wn, "Conv without weights of its input's rank");
    /* the weights (and bias) are laid out once, at compile time */
    if (!dx_const_input(n, 1) || !dx_const_input(n, 2))
        return dx_refuse(why, wn, "Conv with weights or bias that are not constant (a graph input) is not supported");
    conv_geom g;
    return dx_window_geom(n, n->inputs[1].dims + 2, false, &g, why, wn);
}

/* ---- convolution algorithms ----
 * oneDNN 2.6 has two for float32 on the CPU: direct (brgconv, jit; every
 * shape) and Winograd (jit_fp32_wino_2x3 and jit_wino_4x3; AVX-512 only,
 * for 2-D 3x3 kernels at stride 1 without dilation or groups, taking no
 * post-ops but relu and sum). Winograd does 2.25 (F(2,3)) to 4 (F(4,3))
 * times fewer multiplies, plus transforms of the input and output tiles;
 * dnnl_convolution_auto never picks it for inference. Measured per conv
 * shape of the benchmark set (bench/results/dnnlconv.md, the primitive
 * alone, alternating, 2 threads), Winograd took 0.48-0.83 of direct's time
 * whenever both channel counts were at least 64, and lost (up to 2.2x) or
 * broke even with fewer (densenet121's 3x3 convolutions with 32 outputs,
 * googlenet's with 16-48 inputs): conv=auto takes Winograd for those
 * shapes only. A fixed rule, not a race at compile time: the same model
 * compiles to the same program on every run. */
#define WINO_MIN_CHANNELS 64

bool dx_conv_option(const char *opt, int32_t *conv) {
    static const char *const names[] = {[DX_CONV_AUTO] = "conv=auto", [DX_CONV_DIRECT] = "conv=direct",
                                        [DX_CONV_WINOGRAD] = "conv=winograd"};
    for (int32_t k = 0; k < (int32_t)(sizeof(names) / sizeof(names[0])); k++)
        if (!strcmp(opt, names[k])) {
            *conv = k;
            return true;
        }
    return false;
}

/* A convolution's descriptor inputs, for creating it with either algorithm. */
typedef struct conv_desc {
    dnnl_memory_desc_t any_src, any_w, any_dst, bias;
    bool has_bias;
    dnnl_dims_t strides, dilates, pl, pr;
} conv_desc;

static dnnl_primitive_desc_t conv_create(const conv_desc *g, dnnl_alg_kind_t alg, const dnnl_memory_desc_t *dst,
                                         const_dnnl_primitive_attr_t attr) {
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, &g->any_src, &g->any_w,
                                                   g->has_bias ? &g->bias : NULL, dst, g->strides, g->dilates, g->pl,
                                                   g->pr) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &cd, attr ? attr : dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return NULL;
    return pd;
}

/* Whether a post-op chain may go to Winograd: eltwise entries (oneDNN
 * takes relu only, and says so) and the sum. Other binaries are not tried,
 * as laying out their operands would add steps for nothing. */
static bool wino_chain_may(const chain *c) {
    int32_t ks = dx_chain_sum_entry(c);
    for (int32_t k = 0; k < c->n; k++)
        if (c->is_binary[k] && k != ks) return false;
    return true;
}

/* The primitive of algorithm alg for the convolution and as much of the
 * post-op chain *c as oneDNN's fast kernels take: the chain as collected,
 * then the sum first, then (unless whole) the chain cut short; *c is left
 * with what the primitive absorbs (none when it takes nothing). NULL when
 * alg refuses the convolution, or has only a reference kernel for it
 * (fast), or (whole) refuses the whole chain; then also *failed when the
 * builder's error is set. */
static dnnl_primitive_desc_t conv_prim(builder *b, const conv_desc *g, dnnl_alg_kind_t alg, bool whole, bool fast, chain *c,
                                       int32_t *kinds, int32_t *slots, int32_t *n_args, int32_t *sum_from,
                                       bool *failed) {
    int32_t args0 = *n_args;
    *sum_from = -1;
    /* first without post-ops, to learn the layout dst will have; then with
     * the chain, its same-shape operands in that layout */
    dnnl_primitive_desc_t pd = conv_create(g, alg, &g->any_dst, NULL);
    if (pd && fast && dx_is_slow_ref(pd)) dnnl_primitive_desc_destroy(pd), pd = NULL;
    if (!pd || !c->n) return pd;
    dnnl_memory_desc_t dst = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    chain all = *c;
    dnnl_primitive_desc_t pd2 = NULL;
    const char *how = NULL;
    for (int32_t keep = all.n; keep > (whole ? all.n - 1 : 0) && !pd2; keep--)
        for (int32_t alt = 0; alt < 2 && !pd2; alt++) {
            *c = all;
            dx_chain_cut(c, keep, &b->n->outputs[0]);
            int32_t ks = dx_chain_sum_entry(c);
            if (alt && (ks <= 0 || !dx_chain_may_lead(c, ks))) continue;
            c->sum_first = alt;
            *n_args = args0;
            dnnl_primitive_attr_t attr;
            if (!dx_chain_attr(b, c, &dst, &attr, kinds, slots, n_args, sum_from)) {
                *failed = true;
                dnnl_primitive_desc_destroy(pd);
                return NULL;
            }
            pd2 = conv_create(g, alg, &dst, attr);
            if (pd2 && dx_is_slow_ref(pd2) && !dx_is_slow_ref(pd)) dnnl_primitive_desc_destroy(pd2), pd2 = NULL;
            if (attr) dnnl_primitive_attr_destroy(attr);
            if (pd2 && (keep < all.n || alt)) how = alt ? "the sum first" : "";
        }
    if (pd2) {
        dnnl_primitive_desc_destroy(pd);
        if (how) log_rearranged(b, &all, c, how);
        return pd2;
    }
    *c = all;
    *n_args = args0, *sum_from = -1;
    if (whole) {
        dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    c->n = 0; /* oneDNN cannot fuse these: they run on their own */
    return pd;
}

/* Whether slot s is in a layout with one inner block (aBcd16b, aBcd8b):
 * not plain, not channels-last. */
static bool blocked_md(const slot *s) {
    return s->has_md && !s->lazy && s->md.format_kind == dnnl_blocked && s->md.format_desc.blocking.inner_nblks == 1;
}

/* Weights sw in layout md, scaled per input channel (dim 1) at each run by
 * the vector in slot scale (the squeeze-excite scale of the convolution's
 * input, see fuse.c), into a temporary the convolution reads; -1 with the
 * builder's error set when oneDNN cannot.
 *
 * A 1x1 kernel's weights in a layout blocked on the outputs only (Acdb16a:
 * [O/16][I][16]) or plain are, as bytes, a plain [O/B, I, B]: reordered
 * once, now, then multiplied at each run by the vector as [1, I, 1], a
 * binary oneDNN runs on its jit kernel (per channel over plain rows). Any
 * other layout takes a reorder from the plain weights with the vector as
 * its run-time output scales, which oneDNN runs at a quarter of that
 * speed (112 x 672 weights: 34 us). */
static int32_t scaled_weights(builder *b, int32_t sw, const dnnl_memory_desc_t *md, int32_t scale) {
    program *p = b->p;
    slot like = p->slots[sw];
    int64_t in = like.dims[1], blk = 0;
    bool one = md->format_kind == dnnl_blocked && md->offset0 == 0 && md->ndims == like.rank;
    for (int32_t d = 2; one && d < md->ndims; d++) one = md->dims[d] == 1;
    if (one) {
        const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
        blk = bd->inner_nblks == 0 ? 1 : bd->inner_nblks == 1 && bd->inner_idxs[0] == 0 ? bd->inner_blks[0] : 0;
        one = blk > 0 && md->padded_dims[1] == in && md->padded_dims[0] % blk == 0 && bd->strides[1] == blk &&
              bd->strides[0] == blk * in;
    }
    int32_t t = dx_temp_slot(b, &like, md);
    if (t < 0) return dx_fail(b, "out of memory"), -1;
    p->slots[t].name = "(scaled weights)";
    if (one) {
        int32_t rw = dx_resident_copy(b, sw, md);
        if (rw < 0) return dx_fail(b, "could not reorder the weights"), -1;
        slot rows, vec;
        memset(&rows, 0, sizeof(rows));
        rows.rank = 3, rows.dims[0] = md->padded_dims[0] / blk, rows.dims[1] = in, rows.dims[2] = blk;
        vec = rows;
        vec.dims[0] = 1, vec.dims[2] = 1;
        int32_t a = dx_view_slot(p, rw, &rows, NULL), c = dx_view_slot(p, t, &rows, NULL);
        int32_t v = dx_view_slot(p, scale, &vec, NULL);
        if (a < 0 || c < 0 || v < 0) return dx_fail(b, "out of memory"), -1;
        dnnl_memory_desc_t amd, vmd;
        dx_md_of(&p->slots[a], &amd);
        dx_md_of(&p->slots[v], &vmd);
        dnnl_binary_desc_t bin;
        if (dnnl_binary_desc_init(&bin, dnnl_binary_mul, &amd, &vmd, &amd) != dnnl_success)
            return dx_fail(b, "oneDNN cannot scale these weights per input channel"), -1;
        int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {a, v, c};
        return dx_add_step(b, &bin, NULL, 3, kinds, slots) ? t : -1;
    }
    dnnl_memory_desc_t from;
    dx_md_of(&like, &from);
    const float runtime = DNNL_RUNTIME_F32_VAL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dnnl_primitive_attr_create(&attr) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
              dnnl_primitive_attr_set_output_scales(attr, 1, 1 << 1, &runtime) == dnnl_success &&
              dnnl_reorder_primitive_desc_create(&pd, &from, dx_ctx.engine, md, dx_ctx.engine, attr) == dnnl_success;
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!ok) return dx_fail(b, "oneDNN has no reorder that scales these weights per input channel"), -1;
    int32_t kinds[3] = {DNNL_ARG_FROM, DNNL_ARG_TO, DNNL_ARG_ATTR_OUTPUT_SCALES}, slots[3] = {sw, t, scale};
    ok = dx_add_prim(b, pd, 3, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok ? t : -1;
}

/* The post-op chain's ops, for a log line: "'a' (Relu), 'b' (Add)". */
static void chain_names(const chain *c, char *out, size_t n) {
    size_t at = 0;
    out[0] = 0;
    for (int32_t k = 0; k < c->n && at + 1 < n; k++) {
        int w = snprintf(out + at, n - at, "%s'%s' (%s)", k ? ", " : "", c->name[k] ? c->name[k] : "",
                         c->op[k] ? c->op[k] : "?");
        if (w < 0) break;
        at += (size_t)w;
        if (at >= n) at = n - 1;
    }
}

/* A convolution in the layouts oneDNN picks (blocked ones for its fast
 * kernels): the input is reordered to it if needed, the weights once, now.
 * Its post-op chain comes along when oneDNN accepts it. The algorithm:
 * Winograd where it wins (see above) or where asked (conv=winograd) and
 * oneDNN takes it, else direct. */
static bool compile_conv(builder *b, bool *fused, const dx_io *io) {
    program *p = b->p;
    chain c;
    dx_collect_chain(b, &b->n->outputs[0], false, &c); /* (dst is blocked: no views) */
    const seam_node_view *n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    int32_t sin = io->sin; /* as compile_node readied it (a strided view already copied dense) */
    if (sin < 0) return dx_fail(b, "input 0 is neither made earlier nor a constant"), false;
    conv_desc g;
    memset(&g, 0, sizeof(g));
    dnnl_memory_desc_t src = io->src, w;
    int32_t nsp = n->inputs[0].rank - 2;
    int64_t group = node_attr_int(dx_ir(n), "group", 1);
    const int64_t *kernel = n->inputs[1].dims + 2;
    if (!dx_window(b, nsp, kernel, false, g.strides, g.dilates, g.pl, g.pr)) return false;
    if (p->slots[sin].pad_pending) /* a zero Pad before it (see compile_pad in tensor.c) */
        for (int32_t d = 0; d < nsp; d++) g.pl[d] += p->slots[sin].pad_lo[d], g.pr[d] += p->slots[sin].pad_hi[d];
    int32_t sw = dx_input_slot(b, &n->inputs[1]);
    if (sw < 0) return dx_fail(b, "the weights are not constant"), false;
    /* grouped weights [M, C/g, k...] viewed as [g, M/g, C/g, k...] (same bytes) */
    if (group > 1) {
        slot ws = p->slots[sw];
        ws.rank = n->inputs[1].rank + 1;
        ws.dims[0] = group;
        ws.dims[1] = n->inputs[1].dims[0] / group;
        for (int32_t d = 1; d < n->inputs[1].rank; d++) ws.dims[d + 1] = n->inputs[1].dims[d];
        sw = dx_view_slot(p, sw, &ws, NULL);
        if (sw < 0) return dx_fail(b, "out of memory"), false;
    }
    dx_md_of(&p->slots[sw], &w);
    /* a squeeze-excite scale of the input, applied to the weights (fuse.c) */
    int32_t se = group == 1 ? dx_se_scale_for_conv(b, sin, n->inputs[0].name) : -1;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    int32_t sb = n->n_inputs > 2 && n->inputs[2].name ? dx_input_slot(b, &n->inputs[2]) : -1;
    if (n->n_inputs > 2 && n->inputs[2].name && sb < 0) return dx_fail(b, "the bias is not constant"), false;
    if (sb >= 0) dx_md_of(&p->slots[sb], &g.bias), g.has_bias = true;
    dnnl_memory_desc_init_by_tag(&g.any_src, src.ndims, src.dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&g.any_w, w.ndims, w.dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&g.any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any);
    /* Winograd's shapes: 2-D, 3x3, stride 1, no dilation, one group */
    bool wino_shape = nsp == 2 && group == 1 && kernel[0] == 3 && kernel[1] == 3 && g.strides[0] == 1 &&
                      g.strides[1] == 1 && g.dilates[0] == 0 && g.dilates[1] == 0;
    bool wino = se >= 0                       ? false /* (its weights are transformed at compile time) */
                : p->conv == DX_CONV_WINOGRAD ? wino_shape
                : p->conv == DX_CONV_AUTO   ? wino_shape && n->inputs[0].dims[1] >= WINO_MIN_CHANNELS &&
                                                n->outputs[0].dims[1] >= WINO_MIN_CHANNELS
                                            : false;
    int32_t kinds[4 + MAX_CHAIN] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS}, slots[4 + MAX_CHAIN];
    int32_t n_args = sb >= 0 ? 4 : 3, sum_from = -1;
    bool failed = false;
    dnnl_primitive_desc_t pd = NULL;
    if (wino) {
        /* conv=auto: Winograd with the whole chain, else direct with it (an
         * unfused activation costs a pass over memory); conv=winograd:
         * Winograd with what of the chain it takes */
        chain all = c;
        bool whole = p->conv == DX_CONV_AUTO;
        if (!whole || wino_chain_may(&c))
            pd = conv_prim(b, &g, dnnl_convolution_winograd, whole, true, &c, kinds, slots, &n_args, &sum_from, &failed);
        if (failed) return false;
        if (!pd) {
            char names[300];
            chain_names(&all, names, sizeof(names));
            c = all;
            dnnl_primitive_desc_t probe = conv_create(&g, dnnl_convolution_winograd, &g.any_dst, NULL);
            if (!probe)
                dx_log(p, "node %d '%s' (%s): direct convolution: oneDNN has no Winograd kernel for this shape on "
                          "this CPU (its kernels need AVX-512)",
                       n->index, n->name ? n->name : "", n->op_type);
            else
                dx_log(p, "node %d '%s' (%s): direct convolution: oneDNN's Winograd takes no post-ops but relu and "
                          "sum, and the chain %s fuses into direct",
                       n->index, n->name ? n->name : "", n->op_type, names);
            if (probe) dnnl_primitive_desc_destroy(probe);
        }
    }
    /* A direct convolution whose input is in a blocked layout already
     * (aBcd16b, as Winograd writes it) reads it as it is, when oneDNN has a
     * fast kernel for that (jit, jit_1x1): its own pick for a layout left
     * open is channels-last brgconv, which costs a reorder of the input
     * here and another at the next Winograd convolution; resnet50 made 27
     * reorders per run that way, googlenet 48. */
    if (!pd && blocked_md(&p->slots[sin])) {
        conv_desc k = g;
        k.any_src = p->slots[sin].md;
        pd = conv_prim(b, &k, dnnl_convolution_direct, false, true, &c, kinds, slots, &n_args, &sum_from, &failed);
        if (failed) return false;
    }
    if (!pd) pd = conv_prim(b, &g, dnnl_convolution_direct, false, false, &c, kinds, slots, &n_args, &sum_from, &failed);
    if (failed) return false;
    if (!pd) return dx_fail(b, "oneDNN refuses this convolution's shapes"), false;
    dx_take_chain(&c, fused);
    const seam_value_info *result = c.n ? &c.out : &n->outputs[0];
    const dnnl_memory_desc_t *csrc = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *cw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *cdst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int32_t xs = dx_in_layout(b, sin, csrc);
    int32_t wt = xs < 0 ? -1 : se >= 0 ? scaled_weights(b, sw, cw, se) : dx_resident_copy(b, sw, cw);
    int32_t final_slot = -1;
    int32_t sd = xs < 0 || wt < 0 ? -1
                 : sum_from >= 0 ? dx_sum_dst(b, &c, sum_from, result, cdst, &final_slot)
                                 : dx_result_slot(b, result, cdst, &final_slot);
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "could not lay out the convolution's tensors"), false;
    }
    b->chain = c.n ? &c : NULL;
    return weighted_step(b, pd, n_args, kinds, slots, xs, wt, sd, sb, final_slot);
}

static bool supports_matmul(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[0].rank < 2 || n->inputs[1].rank < 2)
        return dx_refuse(why, wn, "MatMul with a 1-D operand is not supported");
    return true;
}

static bool supports_gemm(const seam_node_view *n, char *why, size_t wn) {
    const ir_node *ir = dx_ir(n);
    if (node_attr_int(ir, "transA", 0)) return dx_refuse(why, wn, "Gemm transA=1 is not supported");
    if (node_attr_float(ir, "alpha", 1) != 1 || node_attr_float(ir, "beta", 1) != 1)
        return dx_refuse(why, wn, "Gemm with alpha or beta other than 1 is not supported");
    if (n->n_inputs > 2 && n->inputs[2].name && n->inputs[2].rank != 1)
        return dx_refuse(why, wn, "Gemm with a C of rank other than 1 is not supported");
    return true;
}

/* Whether the chain has a Reshape-like node. */
static bool views_in(const chain *c) {
    for (int32_t k = 0; k < c->n; k++)
        if (c->is_view[k]) return true;
    return false;
}

/* Arrangement `alt` of a matrix product's post-op chain: bit 1, the first
 * Add of a row vector (the bias of a Linear layer) given to the product as
 * its bias (*sb, *bias), not as a post-op (tried first: faster); bit 0,
 * the sum first, which oneDNN's fast kernels may take when they do not
 * take the chain as written (its gemm-based kernel, without AVX-512, does
 * not take a sum after a binary Add). Both only where the post-ops before
 * them are Adds or Subs, which commute with them. False when the
 * arrangement does not apply (or is the one as written). */
static bool matmul_candidate(builder *b, chain *c, int32_t alt, int64_t n_cols, int32_t r, int32_t *sb,
                             dnnl_memory_desc_t *bias) {
    if (alt & 1) {
        int32_t ks = dx_chain_sum_entry(c);
        if (ks <= 0 || !dx_chain_may_lead(c, ks)) return false;
        c->sum_first = true;
    }
    if (alt & 2) {
        if (*sb >= 0) return false;
        int32_t kb = -1;
        for (int32_t k = 0; k < c->n && kb < 0; k++) {
            if (c->is_view[k] || !c->is_binary[k] || c->full[k] || c->alg[k] != dnnl_binary_add) continue;
            const slot *o = &b->p->slots[c->operand[k]];
            if (dx_slot_numel(o) == n_cols && o->rank >= 1 && o->dims[o->rank - 1] == n_cols) kb = k;
        }
        if (kb < 0 || !dx_chain_may_lead(c, kb)) return false;
        int32_t s = dx_as_plain(b, c->operand[kb]);
        if (s < 0) return false;
        slot bv;
        memset(&bv, 0, sizeof(bv));
        bv.rank = r;
        for (int32_t d = 0; d < r; d++) bv.dims[d] = d == r - 1 ? n_cols : 1;
        s = dx_view_slot(b->p, s, &bv, NULL);
        if (s < 0) return false;
        dx_md_of(&b->p->slots[s], bias);
        *sb = s;
        c->skip = kb;
    }
    return true;
}

/* A matrix product as compile_matmul makes it, step by step. */
typedef struct matmul {
    chain c;                 /* the post-op chain (as collected, then the one made) */
    int32_t r;               /* the product's rank (2 when flat) */
    int64_t n_cols;          /* the output's last dim */
    bool flat;               /* rows times 2-D constant weights as one 2-D product */
    int32_t sin;             /* A's slot */
    float prescale;          /* A's and B's pending factors (see defer_scale) */
    int32_t a;               /* B's view (its packed copy once made) */
    bool packed;             /* B constant: packed once into the layout the primitive prefers */
    dnnl_memory_desc_t w;    /* B as stored */
    dnnl_memory_desc_t any_w;
    int32_t sa;              /* A's view */
    dnnl_memory_desc_t src;
    int32_t sb;              /* Gemm's C as a row, or -1 */
    dnnl_memory_desc_t bias;
    int32_t tnode;           /* the Transpose the product writes through, or -1 */
    seam_value_info tout;    /* its output */
    int64_t tdims[MAXR];
    dnnl_memory_desc_t tmd;  /* the product's dst as a view of tout */
    slot rs;                 /* the product's own shape (the chain may end in another) */
    dnnl_memory_desc_t dst;
} matmul;

/* A and B readied (B plain unless a strided view of the product's rank;
 * A copied dense when it runs flat), and whether the product runs flat:
 * rows times 2-D constant weights (a Linear layer on [B, S, K]) as one 2-D
 * product [B*S, K] x [K, N], as oneDNN 2.6 keeps weights packed only for
 * 2-D products. The chain's broadcast operands must then be one row (a
 * bias). *sw is B's slot. */
static bool matmul_operands(builder *b, matmul *m, int32_t *sw) {
    program *p = b->p;
    const seam_node_view *n = b->n;
    int32_t r = m->r = n->outputs[0].rank;
    *sw = dx_input_slot(b, &n->inputs[1]);
    if (*sw >= 0 && !(p->slots[*sw].lazy && p->slots[*sw].rank == r)) *sw = dx_as_plain(b, *sw);
    if (*sw < 0) return dx_fail(b, "input 1 is not available"), false;
    if (p->slots[m->sin].lazy && p->slots[m->sin].rank != r) m->sin = dx_as_plain(b, m->sin);
    if (m->sin < 0) return dx_fail(b, "input 0 is not available"), false;
    m->prescale = p->slots[m->sin].scale * p->slots[*sw].scale;
    int64_t n_cols = m->n_cols = n->outputs[0].rank >= 1 ? n->outputs[0].dims[r - 1] : 0;
    bool rows_ok = b->fuse && p->slots[*sw].constant && p->slots[*sw].rank == 2 && r > 2 &&
                   p->slots[m->sin].rank == r && n_cols > 0;
    for (int32_t k = 0; rows_ok && k < m->c.n; k++)
        if (m->c.is_binary[k] && !m->c.full[k]) {
            const slot *o = &p->slots[m->c.operand[k]];
            int64_t cnt = dx_slot_numel(o);
            rows_ok = o->rank <= 2 && (cnt == 1 || (cnt == n_cols && o->dims[o->rank - 1] == n_cols));
        }
    /* A Linear layer reading a Transpose ([B, S, E] -> [S, B, E], as
     * nn.MultiheadAttention's in-projection does without batch_first)
     * would read its rows through a strided view, on oneDNN's gemm-based
     * kernel with the weights unpacked (encoder_2x32: 270 us where
     * ONNX Runtime takes 170). Copying the rows dense first (rows x K
     * floats, against rows x K x N multiply-adds) lets it run flat, on
     * the brgemm kernel with packed weights (120 us with the copy). */
    if (rows_ok && p->slots[m->sin].lazy) {
        m->sin = dx_as_plain(b, m->sin);
        if (m->sin < 0) return dx_fail(b, "could not copy input 0 dense"), false;
    }
    m->flat = rows_ok && !p->slots[m->sin].has_md;
    if (m->flat) {
        int64_t rows = 1;
        for (int32_t d = 0; d < r - 1; d++) rows *= n->outputs[0].dims[d];
        m->c.prim_rank = 2, m->c.prim_dims[0] = rows, m->c.prim_dims[1] = n_cols;
        m->c.reshaped = true;
        m->r = 2;
    }
    return true;
}

/* B (slot sw) as stored (plain, or a strided view of a Transpose), its
 * batch dims right-aligned to the product's rank, transposed when transB:
 * the view m->a in layout m->w. */
static bool matmul_b(builder *b, matmul *m, int32_t sw) {
    program *p = b->p;
    const seam_node_view *n = b->n;
    int32_t r = m->r;
    slot wv = p->slots[sw];
    int64_t tb = is_op(n, "Gemm") ? node_attr_int(dx_ir(n), "transB", 0) : 0;
    dnnl_dims_t wd, wst;
    int64_t vst[MAXR];
    dx_dense_strides(&wv, vst);
    int32_t shift = r - wv.rank;
    for (int32_t d = 0; d < r; d++) {
        wd[d] = d >= shift ? wv.dims[d - shift] : 1;
        wst[d] = d >= shift ? vst[d - shift] : wd[d] == 1 ? 1 : 0;
    }
    for (int32_t d = shift - 1; d >= 0; d--) wst[d] = wst[d + 1] * wd[d + 1]; /* 1-sized: any stride */
    if (tb) {
        int64_t t = wd[r - 1]; wd[r - 1] = wd[r - 2]; wd[r - 2] = t;
        t = wst[r - 1]; wst[r - 1] = wst[r - 2]; wst[r - 2] = t;
    }
    if (dnnl_memory_desc_init_by_strides(&m->w, r, wd, dnnl_f32, wst) != dnnl_success)
        return dx_fail(b, "bad B layout"), false;
    m->a = dx_view_slot(p, sw, &wv, &m->w);
    if (m->a < 0) return dx_fail(b, "out of memory"), false;
    /* constant weights go in the layout the primitive prefers, reordered
     * once now (as for convolutions): no packing of B at every run */
    m->packed = p->slots[sw].constant;
    if (dnnl_memory_desc_init_by_tag(&m->any_w, m->w.ndims, m->w.dims, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
        m->packed = false;
    return true;
}

/* A with batch dims right-aligned too (rows x K when flat): the view
 * m->sa; and Gemm's C, a row, as m->sb. */
static bool matmul_a_bias(builder *b, matmul *m) {
    program *p = b->p;
    const seam_node_view *n = b->n;
    int32_t r = m->r;
    slot av = p->slots[m->sin];
    if (m->flat) {
        av.rank = 2, av.dims[0] = m->c.prim_dims[0], av.dims[1] = p->slots[m->sin].dims[p->slots[m->sin].rank - 1];
    } else if (av.rank < r) {
        int32_t sh = r - av.rank;
        for (int32_t d = r - 1; d >= 0; d--) av.dims[d] = d >= sh ? p->slots[m->sin].dims[d - sh] : 1;
        av.rank = r;
    }
    dx_md_of(&av, &m->src);
    m->sa = dx_view_slot(p, m->sin, &av, av.has_md ? &av.md : NULL);
    if (m->sa < 0) return dx_fail(b, "out of memory"), false;
    m->sb = is_op(n, "Gemm") && n->n_inputs > 2 && n->inputs[2].name ? dx_input_slot(b, &n->inputs[2]) : -1;
    if (m->sb >= 0) {
        slot bv = p->slots[m->sb];
        bv.rank = 2, bv.dims[0] = 1, bv.dims[1] = p->slots[m->sb].dims[0];
        dx_md_of(&bv, &m->bias);
        int32_t ab = dx_view_slot(p, m->sb, &bv, NULL);
        if (ab < 0) return dx_fail(b, "out of memory"), false;
        m->sb = ab;
    }
    return true;
}

/* A Transpose alone reading the product that keeps the last axis (the
 * attention heads put back side by side): the product is written
 * through a strided view of the Transpose's output, which costs
 * nothing then. m->tnode is that Transpose, or -1. */
static void matmul_transpose_reader(builder *b, matmul *m) {
    int32_t r = m->r;
    m->tnode = -1;
    if (m->c.n || !b->fuse || m->flat) return;
    const char *out_name = b->n->outputs[0].name;
    int32_t t = dx_sole_reader(b, out_name);
    seam_node_view st;
    const seam_node_view *tr = t >= 0 ? seam_subgraph_node(b->sg, t, &st) : NULL;
    const int64_t *perm;
    int32_t np = 0;
    if (tr && is_op(tr, "Transpose") && seam_node_attr_ints(tr, "perm", &perm, &np) && np == r && perm[r - 1] == r - 1 &&
        tr->outputs[0].rank == r) {
        m->tout = tr->outputs[0];
        for (int32_t d = 0; d < r; d++) m->tdims[d] = m->tout.dims[d];
        m->tout.dims = m->tdims;
        int64_t tst[MAXR];
        dnnl_dims_t pd_dims, pd_strides;
        int64_t acc = 1;
        for (int32_t d = r - 1; d >= 0; d--) tst[d] = acc, acc *= m->tdims[d];
        bool ok = true, seen[MAXR] = {false};
        for (int32_t j = 0; j < r; j++) {
            int64_t ax = perm[j] < 0 ? perm[j] + r : perm[j];
            if (ax < 0 || ax >= r || seen[ax]) ok = false;
            else pd_strides[ax] = tst[j], pd_dims[ax] = m->tdims[j], seen[ax] = true;
        }
        if (ok && dnnl_memory_desc_init_by_strides(&m->tmd, r, pd_dims, dnnl_f32, pd_strides) == dnnl_success) m->tnode = t;
    }
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
}

/* The product's own dst (m->rs, m->dst): through the Transpose's view when
 * oneDNN takes the product so (else m->tnode becomes -1). */
static void matmul_dst(builder *b, matmul *m) {
    dx_shape_of(&m->rs, &b->n->outputs[0]);
    if (m->flat) m->rs.rank = 2, m->rs.dims[0] = m->c.prim_dims[0], m->rs.dims[1] = m->c.prim_dims[1];
    dx_md_of(&m->rs, &m->dst);
    dnnl_matmul_desc_t md;
    const dnnl_memory_desc_t *wd_for = m->packed ? &m->any_w : &m->w;
    if (m->tnode >= 0 && dnnl_matmul_desc_init(&md, &m->src, wd_for, m->sb >= 0 ? &m->bias : NULL, &m->tmd) == dnnl_success) {
        dnnl_primitive_desc_t probe;
        if (dnnl_primitive_desc_create(&probe, &md, dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success) {
            dnnl_primitive_desc_destroy(probe);
            m->dst = m->tmd;
        } else {
            m->tnode = -1;
        }
    } else {
        m->tnode = -1;
    }
}

/* The primitive: the chain with its bias Add as the product's bias, as
 * collected, then other arrangements of it when oneDNN has only its
 * reference kernel for those (see matmul_candidate), then shorter chains,
 * down to none at all. m->c becomes the chain made, m->sb the bias
 * given; kinds, slots, *n_args and *sum_from its arguments (dx_chain_attr).
 * *pd_out is NULL when oneDNN refuses every arrangement; false when
 * dx_chain_attr fails. */
static bool matmul_prim(builder *b, matmul *m, int32_t *kinds, int32_t *slots, int32_t *n_args, int32_t *sum_from,
                        dnnl_primitive_desc_t *pd_out) {
    const seam_node_view *n = b->n;
    int32_t gemm_bias = m->sb;
    const dnnl_memory_desc_t *wd_for = m->packed ? &m->any_w : &m->w;
    m->c.prescale = m->prescale;
    chain whole = m->c;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_matmul_desc_t md;
    const char *changed = NULL;
    static const char *const how[4] = {"", "the sum first", "the bias Add as the product's bias",
                                       "the bias Add as the product's bias, the sum first"};
    /* A Linear layer's bias Add goes to the product's bias argument first
     * (alt 2): oneDNN adds it in the kernel's epilogue, where a binary
     * post-op reads a broadcast row per tile (vit_b_16's MLP products, 197
     * x 768 x 3072: ~10% slower as a post-op). */
    static const int32_t alts[4] = {2, 0, 3, 1};
    for (int32_t pass = 0; pass < 2 && !pd; pass++) /* pass 0 takes no reference kernel; pass 1 the first that works */
        for (int32_t keep = whole.n; keep >= 0 && !pd; keep--)
            for (int32_t ai = 0; ai < 4 && !pd; ai++) {
                int32_t alt = alts[ai];
                if ((pass == 1 && alt) || (keep && keep < whole.n && whole.is_view[keep - 1])) continue;
                m->c = whole;
                dx_chain_cut(&m->c, keep, &n->outputs[0]);
                m->c.reshaped = m->flat || views_in(&m->c);
                m->sb = gemm_bias;
                if (!matmul_candidate(b, &m->c, alt, m->n_cols, m->r, &m->sb, &m->bias)) continue;
                *n_args = m->sb >= 0 ? 4 : 3;
                kinds[3] = DNNL_ARG_BIAS; /* (an earlier candidate's post-op operand may have taken entry 3) */
                dnnl_primitive_attr_t attr = NULL;
                if (dnnl_matmul_desc_init(&md, &m->src, wd_for, m->sb >= 0 ? &m->bias : NULL, &m->dst) != dnnl_success)
                    continue;
                if (!dx_chain_attr(b, &m->c, &m->dst, &attr, kinds, slots, n_args, sum_from)) return false;
                if (dnnl_primitive_desc_create(&pd, &md, attr ? attr : dx_ctx.user_scratch, dx_ctx.engine, NULL) !=
                    dnnl_success)
                    pd = NULL;
                else if (pass == 0 && dx_is_slow_ref(pd))
                    dnnl_primitive_desc_destroy(pd), pd = NULL;
                if (attr) dnnl_primitive_attr_destroy(attr);
                if (pd && (keep < whole.n || (alt & 1))) changed = how[alt];
            }
    if (pd && changed) log_rearranged(b, &whole, &m->c, changed);
    *pd_out = pd;
    return true;
}

/* MatMul and Gemm (transB, bias) on oneDNN's matmul, with B read in place
 * (a strided view when transposed) and the post-op chain: bias Adds,
 * residual Adds (a sum, in place when it may be), activations. */
static bool compile_matmul(builder *b, bool *fused, const dx_io *io) {
    program *p = b->p;
    matmul m;
    dx_collect_chain(b, &b->n->outputs[0], true, &m.c);
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    m.sin = io->sin;
    int32_t sw;
    if (!matmul_operands(b, &m, &sw) || !matmul_b(b, &m, sw) || !matmul_a_bias(b, &m)) return false;
    matmul_transpose_reader(b, &m);
    matmul_dst(b, &m);
    int32_t kinds[4 + MAX_CHAIN] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS}, slots[4 + MAX_CHAIN];
    int32_t n_args = 3, sum_from = -1;
    dnnl_primitive_desc_t pd;
    if (!matmul_prim(b, &m, kinds, slots, &n_args, &sum_from, &pd)) return false;
    if (!pd) return dx_fail(b, "oneDNN refuses this matrix product"), false;
    const seam_node_view *n = b->n;
    const seam_value_info *result = m.c.n ? &m.c.out : &n->outputs[0];
    dx_take_chain(&m.c, fused);
    int32_t final_slot = -1;
    int32_t sd;
    if (m.tnode >= 0) { /* the Transpose's output, written through a strided view */
        int32_t os = dx_output_slot(b, &m.tout);
        sd = os >= 0 ? dx_view_slot(p, os, &m.rs, &m.dst) : -1;
        fused[m.tnode] = true;
    } else if (m.c.reshaped) {
        sd = dx_reshaped_dst(b, &m.c, sum_from, result, &m.rs);
    } else {
        sd = sum_from >= 0 ? dx_sum_dst(b, &m.c, sum_from, result, &m.dst, &final_slot)
                           : dx_result_slot(b, result, &m.dst, &final_slot);
    }
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "out of memory"), false;
    }
    if (m.packed) {
        m.a = dx_resident_copy(b, m.a, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
        if (m.a < 0) {
            dnnl_primitive_desc_destroy(pd);
            return dx_fail(b, "could not reorder the weights"), false;
        }
    }
    b->chain = m.c.n ? &m.c : NULL;
    return weighted_step(b, pd, n_args, kinds, slots, m.sa, m.a, sd, m.sb, final_slot);
}

static bool supports_convtranspose(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[0].rank < 3 || n->inputs[0].rank > 5)
        return dx_refuse(why, wn, "ConvTranspose of rank %d: dnnl does 1-D, 2-D and 3-D", n->inputs[0].rank);
    if (!dx_const_input(n, 1) || !dx_const_input(n, 2))
        return dx_refuse(why, wn, "ConvTranspose with weights or bias that are not constant is not supported");
    const char *ap = node_attr_string(dx_ir(n), "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
        return dx_refuse(why, wn, "ConvTranspose auto_pad=%s is not supported", ap);
    return true;
}

/* ConvTranspose as oneDNN's deconvolution. ONNX keeps the weights as
 * [C_in, C_out/group, k...]; oneDNN wants [group, OC/group, IC/group, k...]:
 * a strided view of the same bytes, reordered once into the layout the
 * primitive picks. The right pads follow from the known output size (they
 * absorb output_padding and output_shape). */
static bool compile_convtranspose(builder *b, bool *fused, const dx_io *io) {
    program *p = b->p;
    const seam_node_view *n = b->n;
    int32_t sin = dx_input_slot(b, &n->inputs[0]);
    if (sin >= 0) sin = dx_as_plain(b, sin);
    int32_t sw = dx_input_slot(b, &n->inputs[1]);
    if (sin < 0 || sw < 0) return dx_fail(b, "input or weights not available"), false;
    const ir_node *ir = dx_ir(n);
    int32_t nsp = n->inputs[0].rank - 2;
    int64_t group = node_attr_int(ir, "group", 1), str[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
    const int64_t *v;
    if (node_attr_ints(ir, "strides", &v) == nsp) memcpy(str, v, sizeof(int64_t) * (size_t)nsp);
    if (node_attr_ints(ir, "dilations", &v) == nsp) memcpy(dil, v, sizeof(int64_t) * (size_t)nsp);
    const int64_t *wd = n->inputs[1].dims;
    int64_t cin = n->inputs[0].dims[1], cout = n->outputs[0].dims[1];
    if (group < 1 || cin % group || cout % group || wd[0] != cin || wd[1] * group != cout)
        return dx_fail(b, "weights do not match the channels and group"), false;
    int64_t kk = 1, ocg = cout / group, icg = cin / group;
    for (int32_t d = 0; d < nsp; d++) kk *= wd[2 + d];
    slot ws;
    memset(&ws, 0, sizeof(ws));
    ws.name = "(deconvolution weights)";
    dnnl_dims_t dims, strides;
    int32_t r = 0;
    if (group > 1) dims[r] = group, strides[r++] = icg * ocg * kk;
    dims[r] = ocg, strides[r++] = kk;
    dims[r] = icg, strides[r++] = ocg * kk;
    int64_t acc = 1;
    for (int32_t d = nsp - 1; d >= 0; d--) dims[r + d] = wd[2 + d], strides[r + d] = acc, acc *= wd[2 + d];
    r += nsp;
    ws.rank = r;
    for (int32_t d = 0; d < r; d++) ws.dims[d] = dims[d];
    dnnl_memory_desc_t wmd, src, bias, any_w, any_dst;
    if (dnnl_memory_desc_init_by_strides(&wmd, r, dims, dnnl_f32, strides) != dnnl_success)
        return dx_fail(b, "bad weights"), false;
    int32_t wv = dx_view_slot(p, sw, &ws, &wmd);
    if (wv < 0) return dx_fail(b, "out of memory"), false;
    dx_md_of(&p->slots[sin], &src);
    int32_t sb = n->n_inputs > 2 && n->inputs[2].name ? dx_input_slot(b, &n->inputs[2]) : -1;
    if (n->n_inputs > 2 && n->inputs[2].name && sb < 0) return dx_fail(b, "the bias is not available"), false;
    if (sb >= 0) dx_md_of(&p->slots[sb], &bias);
    dnnl_dims_t pl, pr, sd_, dl;
    const int64_t *pads = NULL;
    int32_t np = strcmp(node_attr_string(ir, "auto_pad", "NOTSET"), "NOTSET") ? 0 : node_attr_ints(ir, "pads", &pads);
    for (int32_t d = 0; d < nsp; d++) {
        pl[d] = np == 2 * nsp ? pads[d] : 0;
        pr[d] = (n->inputs[0].dims[2 + d] - 1) * str[d] + (wd[2 + d] - 1) * dil[d] + 1 - pl[d] - n->outputs[0].dims[2 + d];
        if (pr[d] < 0) return dx_fail(b, "output padding beyond the right pad is not supported by dnnl"), false;
        sd_[d] = str[d], dl[d] = dil[d] - 1;
    }
    dnnl_memory_desc_init_by_tag(&any_w, r, dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_deconvolution_desc_t dd;
    dnnl_primitive_desc_t pd;
    if (dnnl_dilated_deconvolution_forward_desc_init(&dd, dnnl_forward_inference, dnnl_deconvolution_direct, &src, &any_w,
                                                     sb >= 0 ? &bias : NULL, &any_dst, sd_, dl, pl, pr) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &dd, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this transposed convolution"), false;
    int32_t wt = dx_resident_copy(b, wv, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    int32_t final_slot = -1;
    int32_t sd = wt >= 0 ? dx_result_slot(b, &n->outputs[0], dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &final_slot) : -1;
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "could not lay out the transposed convolution's tensors"), false;
    }
    int32_t kinds[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS}, slots[4];
    return weighted_step(b, pd, sb >= 0 ? 4 : 3, kinds, slots, sin, wt, sd, sb, final_slot);
}

const dx_op dx_conv_matmul_rows[] = {
    {"Conv", STAGE_ANY_LAYOUT, supports_conv, compile_conv},
    {"ConvTranspose", STAGE_ANY_LAYOUT, supports_convtranspose, compile_convtranspose},
    {"MatMul", STAGE_PLAIN, supports_matmul, compile_matmul},
    {"Gemm", STAGE_PLAIN, supports_gemm, compile_matmul},
    {NULL, STAGE_VIEW, NULL, NULL},
};
