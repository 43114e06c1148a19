/*
 * dnnl: an int8 convolution whose input has a zero point, made without it
 * (part of quant.c's op family; see quant.h).
 *
 * oneDNN 2.6 runs an int8 convolution with a source zero point on its
 * older jit_int8 kernel: the first convolution of a QDQ network (its
 * input quantized asymmetrically) took 0.22 ms there against 0.05 ms on
 * brgconv without the zero point. Integers allow taking it out exactly:
 *     sum_k w[k] * (xp[k] - xz) = sum_k w[k] * xp[k] - xz * sum_k w[k]
 * where xp is x padded with xz (the quantized zero, which QLinearConv's
 * padding is). So the input is padded explicitly with its zero point, the
 * convolution runs unpadded and without a source zero point, and its bias
 * becomes b - xz * sum(w) per output channel: the same int32 sums, then
 * the same scales and rounding, to the bit.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

/* ---- the padding step: x (channels-last, n h w c) into xp with its
 * zero point around it ---- */

typedef struct qpad {
    int64_t n, h, w, c, ph, pw, hp, wp; /* xp is [n, hp, wp, c] */
    uint8_t fill;
} qpad;

static bool run_qpad(const program *p, const step *st) {
    const qpad *k = st->host_data;
    const uint8_t *x = dx_q_data(p, st->arg_slot[0]);
    uint8_t *y = dx_q_data(p, st->arg_slot[1]);
    int64_t row = k->wp * k->c;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (k->n * k->hp * row >= 65536)
#endif
    for (int64_t r = 0; r < k->n * k->hp; r++) {
        int64_t i = r / k->hp, hh = r % k->hp - k->ph;
        uint8_t *out = y + r * row;
        if (hh < 0 || hh >= k->h) {
            memset(out, k->fill, (size_t)row);
            continue;
        }
        const uint8_t *in = x + ((i * k->h + hh) * k->w) * k->c;
        int64_t left = k->pw * k->c, mid = k->w * k->c;
        memset(out, k->fill, (size_t)left);
        memcpy(out + left, in, (size_t)mid);
        memset(out + left + mid, k->fill, (size_t)(row - left - mid));
    }
    return true;
}

/* A slot owning `count` int32 values (a bias made at compile time). */
static int32_t owned_s32(builder *b, const int32_t *values, int64_t count) {
    seam_value_info v = {"(shifted bias)", SEAM_DTYPE_INT32, 1, &count, NULL};
    int32_t s = dx_add_slot(b->p, "(shifted bias)", &v);
    if (s < 0) return -1;
    slot *sl = &b->p->slots[s];
    int32_t *d = malloc(sizeof(int32_t) * (size_t)(count + 1));
    dnnl_memory_desc_t md;
    if (!d || dnnl_memory_desc_init_by_tag(&md, 1, sl->dims, dnnl_s32, dnnl_a) != dnnl_success ||
        dnnl_memory_create(&sl->mem, &md, dx_ctx.engine, d) != dnnl_success)
        return free(d), -1;
    memcpy(d, values, sizeof(int32_t) * (size_t)count);
    sl->owned = d, sl->has_md = true, sl->md = md, sl->constant = true;
    return s;
}

/* The bias b - xz * sum(w) per output channel, or false when a sum does
 * not fit int32 (then the zero point stays oneDNN's). */
static bool shifted_bias(builder *b, const qconv_plan *c, int32_t *out) {
    seam_node_view st;
    const seam_node_view *n = seam_subgraph_node(b->sg, b->index, &st);
    seam_tensor_view w, bias;
    if (!seam_subgraph_constant(b->sg, n->inputs[3].name, &w) || w.dtype != SEAM_DTYPE_INT8) return false;
    bool has_bias = n->n_inputs > 8 && n->inputs[8].name;
    if (has_bias && (!seam_subgraph_constant(b->sg, n->inputs[8].name, &bias) || bias.dtype != SEAM_DTYPE_INT32))
        return false;
    int64_t per = c->m ? (int64_t)w.nbytes / c->m : 0;
    if (per <= 0 || per * c->m != (int64_t)w.nbytes) return false;
    for (int64_t o = 0; o < c->m; o++) {
        int64_t sum = 0;
        const int8_t *wo = (const int8_t *)w.data + o * per;
        for (int64_t k = 0; k < per; k++) sum += wo[k];
        int64_t v = (has_bias ? ((const int32_t *)bias.data)[o] : 0) - (int64_t)c->xz * sum;
        if (v < INT32_MIN || v > INT32_MAX) return false;
        out[o] = (int32_t)v;
    }
    return true;
}

static bool is_brg(const_dnnl_primitive_desc_t pd) {
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl && strstr(impl, "brg");
}

int32_t dx_qconv_without_src_zp(builder *b, const dx_io *io, const qconv_plan *c, const_dnnl_primitive_desc_t with_zp) {
    program *p = b->p;
    /* a 2-D convolution without groups on a kernel oneDNN did not give to
     * brgconv, with pads it can fill */
    /* (with 3 input channels brgconv is no faster: resnet18's first
     * 7x7 convolution took 0.23 ms either way; with 16, 0.05 against
     * jit_int8's 0.22) */
    if (!b->fuse || !c->xz || c->group != 1 || c->nsp != 2 || c->id[1] < 8 || is_brg(with_zp)) return 0;
    for (int32_t d = 0; d < 2; d++)
        if (c->pl[d] < 0 || c->pr[d] < 0) return 0;
    int64_t n0 = c->id[0], ch = c->id[1], h = c->id[2], w = c->id[3];
    int64_t hp = h + c->pl[0] + c->pr[0], wp = w + c->pl[1] + c->pr[1];
    dnnl_dims_t xpd = {n0, ch, hp, wp}, zero = {0, 0};
    int32_t *nb = malloc(sizeof(int32_t) * (size_t)(c->m + 1));
    if (!nb) return dx_fail(b, "out of memory"), -1;
    if (!shifted_bias(b, c, nb)) return free(nb), 0;
    /* the convolution on xp, unpadded, without x's zero point */
    dnnl_memory_desc_t src, w_any, dst, bias;
    dnnl_memory_desc_init_by_tag(&src, 4, xpd, c->xdt, dnnl_acdb);
    dnnl_memory_desc_init_by_tag(&w_any, c->wr, c->wd, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dst, 4, c->od, c->ydt, dnnl_format_tag_any);
    dnnl_dims_t bd = {c->m};
    dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_s32, dnnl_a);
    int32_t kinds[8] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS}, slots[8], n_args = 4;
    dnnl_primitive_attr_t attr = dx_q_attr(b, c->oscale, c->n_scales, 1, 0, 0, c->yz, kinds, slots, &n_args);
    if (!attr) return free(nb), -1;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src, &w_any,
                                                         &bias, &dst, c->strides, c->dilates, zero, zero) == dnnl_success &&
              dnnl_primitive_desc_create(&pd, &cd, attr, dx_ctx.engine, NULL) == dnnl_success;
    dnnl_primitive_attr_destroy(attr);
    if (!ok || !is_brg(pd)) { /* (no faster kernel this way: keep the zero point) */
        if (pd) dnnl_primitive_desc_destroy(pd);
        return free(nb), 0;
    }
    int32_t sb = owned_s32(b, nb, c->m);
    free(nb);
    /* x channels-last in its 8-bit type, then padded into xp */
    dnnl_memory_desc_t x_cl;
    dnnl_memory_desc_init_by_tag(&x_cl, 4, c->id, c->xdt, dnnl_acdb);
    int32_t xs = sb < 0 ? -1 : dx_in_layout(b, io->sin, &x_cl);
    slot like = xs < 0 ? (slot){0} : p->slots[xs];
    like.dims[2] = hp, like.dims[3] = wp;
    int32_t xp = xs < 0 ? -1 : dx_temp_slot(b, &like, &src);
    qpad *k = xp < 0 ? NULL : malloc(sizeof(*k));
    if (!k) return dnnl_primitive_desc_destroy(pd), dx_fail(b, "out of memory"), -1;
    *k = (qpad){n0, h, w, ch, c->pl[0], c->pl[1], hp, wp, (uint8_t)c->xz};
    int32_t hk[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, hs[2] = {xs, xp};
    if (!dx_add_host(b, "pad_with_zero_point", run_qpad, k, 2, hk, hs)) return dnnl_primitive_desc_destroy(pd), -1;
    const dnnl_memory_desc_t *cw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *cdst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int32_t final_slot = -1;
    int32_t wt = dx_resident_copy(b, c->sw, cw);
    seam_node_view st;
    const seam_node_view *n = seam_subgraph_node(b->sg, b->index, &st);
    int32_t sd = wt < 0 ? -1 : dx_result_slot(b, &n->outputs[0], cdst, &final_slot);
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (sd < 0) return dnnl_primitive_desc_destroy(pd), dx_fail(b, "could not lay out the convolution's tensors"), -1;
    if (!dx_weighted_step(b, pd, n_args, kinds, slots, xp, wt, sd, sb, final_slot)) return -1;
    dx_log(p, "node %d (QLinearConv): input zero point %d taken out (the input padded with it, the bias shifted by "
              "zero point x the weights' sums): oneDNN's brgconv instead of its jit_int8 kernel, the same integers",
           b->n->index, c->xz);
    return 1;
}
