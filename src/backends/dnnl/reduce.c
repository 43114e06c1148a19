/*
 * dnnl: the reductions (one op family, see program.h): ReduceMean, Sum,
 * Max and Min on oneDNN's reduction, and a ReduceMean or ReduceMax over
 * the spatial axes as a global pooling (dx_reduce_as_pool).
 */
#include <string.h>

#include "reduce.h"
#include "ops/attr.h"

static bool supports_reduce(const seam_node_view *n, char *why, size_t wn) {
    if (!dx_supports_param_inputs(n, why, wn)) return false;
    if (node_attr_int(dx_ir(n), "noop_with_empty_axes", 0))
        return dx_refuse(why, wn, "%s with noop_with_empty_axes=1 is not supported", n->op_type);
    return true;
}

/* ReduceMean/Sum/Max/Min: oneDNN's reduction into the kept-dims shape,
 * which is a view of the output when keepdims=0. */
static bool compile_reduce(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[io->sin].rank;
    bool mask[MAXR];
    if (!dx_reduce_axes(b, r, mask)) return dx_fail(b, "axes must be constants within the input's rank"), false;
    slot kept = p->slots[io->sin];
    kept.has_md = false;
    for (int32_t d = 0; d < r; d++)
        if (mask[d]) kept.dims[d] = 1;
    int32_t sd = dx_output_slot(b, &n->outputs[0]);
    if (sd < 0) return dx_fail(b, "out of memory"), false;
    int32_t dv = dx_view_slot(p, sd, &kept, NULL);
    if (dv < 0) return dx_fail(b, "out of memory"), false;
    /* axes of size 1 only (a detector's max over one score): nothing to
     * reduce, which oneDNN refuses; the value is the input's, copied */
    bool reduces = false;
    for (int32_t d = 0; d < r; d++) reduces |= mask[d] && p->slots[io->sin].dims[d] != 1;
    if (!reduces) return dx_add_reorder(b, io->sin, dv);
    dnnl_memory_desc_t dst;
    dx_md_of(&p->slots[dv], &dst);
    dnnl_alg_kind_t alg = is_op(n, "ReduceMean") ? dnnl_reduction_mean : is_op(n, "ReduceSum") ? dnnl_reduction_sum
                          : is_op(n, "ReduceMax") ? dnnl_reduction_max : dnnl_reduction_min;
    dnnl_reduction_desc_t rd;
    dnnl_primitive_desc_t pd;
    if (dnnl_reduction_desc_init(&rd, alg, &io->src, &dst, 0.0f, 0.0f) != dnnl_success ||
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
    for (int32_t d = 0; d < r; d++) s2.dims[mask[d] ? 1 : 0] *= p->slots[io->sin].dims[d];
    d2 = s2, d2.dims[1] = 1;
    if (dx_is_slow_ref(pd) && dx_inner_md(&p->slots[io->sin], mask, &isrc) && dx_md_of(&s2, &src2) && dx_md_of(&d2, &dst2) &&
        dnnl_reduction_desc_init(&rd, alg, &src2, &dst2, 0.0f, 0.0f) == dnnl_success &&
        dnnl_primitive_desc_create(&ipd, &rd, dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success &&
        dx_is_slow_ref(ipd))
        dnnl_primitive_desc_destroy(ipd), ipd = NULL;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {io->sin, dv};
    if (ipd) {
        dnnl_primitive_desc_destroy(pd);
        pd = ipd;
        int32_t t = dx_in_layout(b, io->sin, &isrc);
        slots[0] = t >= 0 ? dx_view_slot(p, t, &s2, NULL) : -1;
        slots[1] = dx_view_slot(p, sd, &d2, NULL);
        if (slots[0] < 0 || slots[1] < 0) return dnnl_primitive_desc_destroy(pd), dx_fail(b, "out of memory"), false;
    }
    bool ok = dx_add_prim(b, pd, 2, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

int32_t dx_reduce_as_pool(builder *b, int32_t sin) {
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

const dx_op dx_reduce_rows[] = {
    {"ReduceMean", STAGE_PLAIN, supports_reduce, compile_reduce},
    {"ReduceSum", STAGE_PLAIN, supports_reduce, compile_reduce},
    {"ReduceMax", STAGE_PLAIN, supports_reduce, compile_reduce},
    {"ReduceMin", STAGE_PLAIN, supports_reduce, compile_reduce},
    {NULL, STAGE_VIEW, NULL, NULL},
};
