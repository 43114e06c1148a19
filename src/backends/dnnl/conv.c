/*
 * dnnl: convolutions (one op family, see program.h): Conv and
 * ConvTranspose, their weights reordered once, at compile time, into the
 * layout the primitive picks, with their post-op chains.
 */
#include <stdio.h>
#include <string.h>

#include "conv.h"
#include "ops/attr.h"

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
        if (how) dx_log_rearranged(b, &all, c, how);
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
 * input, see pattern.c), into a temporary the convolution reads; -1 with the
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
    const chain all_chain = c;
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
    /* a squeeze-excite scale of the input, applied to the weights (pattern.c) */
    int32_t se = group == 1 && !p->bf16 ? dx_se_scale_for_conv(b, sin, n->inputs[0].name) : -1;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    int32_t sb = n->n_inputs > 2 && n->inputs[2].name ? dx_input_slot(b, &n->inputs[2]) : -1;
    if (n->n_inputs > 2 && n->inputs[2].name && sb < 0) return dx_fail(b, "the bias is not constant"), false;
    if (sb >= 0) dx_md_of(&p->slots[sb], &g.bias), g.has_bias = true;
    /* precision=bf16: input and weights in bfloat16 (the input converted
     * as it is reordered in, the weights once now), float32 out */
    dnnl_data_type_t in_t = p->bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_init_by_tag(&g.any_src, src.ndims, src.dims, in_t, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&g.any_w, w.ndims, w.dims, in_t, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&g.any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any);
    /* Winograd's shapes: 2-D, 3x3, stride 1, no dilation, one group */
    bool wino_shape = nsp == 2 && group == 1 && kernel[0] == 3 && kernel[1] == 3 && g.strides[0] == 1 &&
                      g.strides[1] == 1 && g.dilates[0] == 0 && g.dilates[1] == 0;
    bool wino = se >= 0 || p->bf16            ? false /* (its weights are transformed at compile time; no bf16 Winograd) */
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
    if (!pd && !p->bf16 && blocked_md(&p->slots[sin])) {
        conv_desc k = g;
        k.any_src = p->slots[sin].md;
        pd = conv_prim(b, &k, dnnl_convolution_direct, false, true, &c, kinds, slots, &n_args, &sum_from, &failed);
        if (failed) return false;
        /* not an AVX2 kernel on an AVX-512 machine for a layout blocked by
         * 8 (a grouped convolution's, 4 channels a group): resnext50's
         * 1x1 convolutions all ran at half width after the first one */
        if (pd && dx_below_best_isa(pd)) {
            dnnl_primitive_desc_destroy(pd), pd = NULL;
            c = all_chain, n_args = sb >= 0 ? 4 : 3, sum_from = -1;
        }
    }
    /* a grouped convolution (not depthwise) in channels-last when oneDNN
     * has a full-width kernel there: left open, it picks an AVX2 kernel
     * for a few channels a group, and its layout for the next ones */
    if (!pd && !p->bf16 && group > 1 && n->inputs[1].dims[1] > 1 && src.ndims >= 3 && src.ndims <= 5) {
        static const dnnl_format_tag_t cl[6] = {0, 0, 0, dnnl_acb, dnnl_acdb, dnnl_acdeb};
        conv_desc k = g;
        dnnl_memory_desc_init_by_tag(&k.any_src, src.ndims, src.dims, dnnl_f32, cl[src.ndims]);
        dnnl_memory_desc_init_by_tag(&k.any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, cl[src.ndims]);
        dnnl_primitive_desc_t probe = conv_create(&g, dnnl_convolution_direct, &g.any_dst, NULL);
        bool narrow = probe && dx_below_best_isa(probe);
        if (probe) dnnl_primitive_desc_destroy(probe);
        if (narrow) {
            pd = conv_prim(b, &k, dnnl_convolution_direct, false, true, &c, kinds, slots, &n_args, &sum_from, &failed);
            if (failed) return false;
            if (pd && dx_below_best_isa(pd)) {
                dnnl_primitive_desc_destroy(pd), pd = NULL;
                c = all_chain, n_args = sb >= 0 ? 4 : 3, sum_from = -1;
            }
        }
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
    return dx_weighted_step(b, pd, n_args, kinds, slots, xs, wt, sd, sb, final_slot);
}

/* Whether a ConvTranspose's output (output_padding, output_shape) ends
 * past its last window in some axis: oneDNN's deconvolution has no
 * negative end pad for it. False while a size is unknown (its compile
 * checks the shape it is given). */
static bool deconv_past_end(const seam_node_view *n) {
    const ir_node *ir = dx_ir(n);
    int32_t nsp = n->inputs[0].rank - 2;
    const int64_t *str, *dil, *pads = NULL;
    bool has_s = node_attr_ints(ir, "strides", &str) == nsp, has_d = node_attr_ints(ir, "dilations", &dil) == nsp;
    int32_t np = strcmp(node_attr_string(ir, "auto_pad", "NOTSET"), "NOTSET") ? 0 : node_attr_ints(ir, "pads", &pads);
    if (n->inputs[1].rank != nsp + 2 || n->outputs[0].rank != nsp + 2) return false;
    for (int32_t d = 0; d < nsp; d++) {
        int64_t in = n->inputs[0].dims[2 + d], k = n->inputs[1].dims[2 + d], out = n->outputs[0].dims[2 + d];
        if (in < 0 || k < 0 || out < 0) return false;
        int64_t pl = np == 2 * nsp ? pads[d] : 0;
        if ((in - 1) * (has_s ? str[d] : 1) + (k - 1) * (has_d ? dil[d] : 1) + 1 - pl - out < 0) return true;
    }
    return false;
}

static bool supports_convtranspose(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[0].rank < 3 || n->inputs[0].rank > 5)
        return dx_refuse(why, wn, "ConvTranspose of rank %d: dnnl does 1-D, 2-D and 3-D", n->inputs[0].rank);
    if (!dx_const_input(n, 1) || !dx_const_input(n, 2))
        return dx_refuse(why, wn, "ConvTranspose with weights or bias that are not constant is not supported");
    const char *ap = node_attr_string(dx_ir(n), "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
        return dx_refuse(why, wn, "ConvTranspose auto_pad=%s is not supported", ap);
    if (deconv_past_end(n))
        return dx_refuse(why, wn, "ConvTranspose whose output_padding or output_shape reaches past its end pad is not "
                                  "supported by oneDNN");
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
    return dx_weighted_step(b, pd, sb >= 0 ? 4 : 3, kinds, slots, sin, wt, sd, sb, final_slot);
}

const dx_op dx_conv_rows[] = {
    {"Conv", STAGE_ANY_LAYOUT, supports_conv, compile_conv},
    {"ConvTranspose", STAGE_ANY_LAYOUT, supports_convtranspose, compile_convtranspose},
    {NULL, STAGE_VIEW, NULL, NULL},
};
