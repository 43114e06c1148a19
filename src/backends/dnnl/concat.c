/*
 * dnnl: Concat without oneDNN's concat primitive where it can.
 *
 * oneDNN's `concat simple:any` splits its copy over the dims outside the
 * concat axis: at batch 1 on axis 1 (every inception block) one thread
 * copies the whole output. Instead, per source:
 *
 *   - written in place: a source that is an intermediate of this program,
 *     written by its own steps, whose bytes in its layout are one
 *     contiguous range of the output in the output's layout (the axis is
 *     the outermost dim of more than one block, and the source starts on a
 *     block boundary), becomes a view of the output at that byte offset.
 *     Its producer then writes straight into place; its other readers read
 *     the same bytes, which live as long as the output's (the memory plan
 *     follows views to their root, plan_arena).
 *   - copied: every other source is reordered into its sub-memory of the
 *     output (dnnl_memory_desc_init_submemory), when oneDNN has a jit
 *     reorder for it.
 *
 * When some source has no jit reorder into place, the concat primitive
 * stays (below): nothing is written in place then, since it writes all of
 * its output.
 */
#include <stdio.h>
#include <string.h>

#include "concat.h"

/* The most blocks of the output outside the concat axis (a batch) for
 * which reorders into place replace oneDNN's concat primitive. */
#define MAX_OUTER 4

/* Whether slot s is an intermediate of this program that its steps write
 * whole (DST of some step), so that pointing it elsewhere retargets its
 * producer: not a view, a boundary value, a constant, a resident copy, a
 * lazy view or a value with a pending Pad or factor. */
static bool retargetable(const program *p, int32_t s) {
    const slot *sl = &p->slots[s];
    if (sl->alias >= 0 || !sl->bytes || sl->boundary || sl->constant || sl->owned || sl->lazy || sl->pad_pending ||
        sl->scale != 1.0f)
        return false;
    for (int32_t i = 0; i < p->n_steps; i++)
        for (int32_t a = 0; a < p->steps[i].n_args; a++)
            if (p->steps[i].arg_slot[a] == s && p->steps[i].arg_kind[a] >= DNNL_ARG_DST_0 &&
                p->steps[i].arg_kind[a] <= DNNL_ARG_DST_2)
                return true;
    return false;
}

/* Outer blocks of dim d (its padded size over its inner blocks), and the
 * product of the inner blocks on d. */
static int64_t inner_block(const dnnl_memory_desc_t *md, int32_t d) {
    int64_t blk = 1;
    const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
    for (int32_t k = 0; k < bd->inner_nblks; k++)
        if (bd->inner_idxs[k] == d) blk *= bd->inner_blks[k];
    return blk;
}

/* The byte offset at which a source of layout src, placed at element `at`
 * along `axis` of dst, is a contiguous byte range of dst (its bytes,
 * padding included, exactly those of dst there), or -1. `last`: the
 * source ends dst along the axis (a partial last block is its own). */
static int64_t in_place_offset(const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst, int32_t axis, int64_t at,
                               bool last) {
    if (src->format_kind != dnnl_blocked || dst->format_kind != dnnl_blocked || src->data_type != dnnl_f32 ||
        dst->data_type != dnnl_f32 || src->ndims != dst->ndims || src->offset0 || dst->offset0 || src->extra.flags ||
        dst->extra.flags)
        return -1;
    const dnnl_blocking_desc_t *sb = &src->format_desc.blocking, *db = &dst->format_desc.blocking;
    if (sb->inner_nblks != db->inner_nblks) return -1;
    for (int32_t k = 0; k < sb->inner_nblks; k++)
        if (sb->inner_blks[k] != db->inner_blks[k] || sb->inner_idxs[k] != db->inner_idxs[k]) return -1;
    int64_t blk = inner_block(dst, axis), len = src->dims[axis];
    if (at % blk || (!last && len % blk) || src->padded_dims[axis] != (len + blk - 1) / blk * blk) return -1;
    for (int32_t d = 0; d < dst->ndims; d++) {
        if (src->padded_offsets[d] || dst->padded_offsets[d]) return -1;
        if (d == axis) continue;
        if (src->dims[d] != dst->dims[d] || src->padded_dims[d] != dst->padded_dims[d]) return -1;
        /* every other dim of more than one block is inside the axis */
        if (dst->padded_dims[d] / inner_block(dst, d) > 1 && (db->strides[d] >= db->strides[axis] || sb->strides[d] != db->strides[d]))
            return -1;
    }
    /* both dense along the axis: a block of the axis is one stride */
    int64_t src_blocks = src->padded_dims[axis] / blk, dst_blocks = dst->padded_dims[axis] / blk;
    if ((src_blocks > 1 && sb->strides[axis] != db->strides[axis]) ||
        dnnl_memory_desc_get_size(src) != (size_t)(src_blocks * db->strides[axis] * 4) ||
        dnnl_memory_desc_get_size(dst) != (size_t)(dst_blocks * db->strides[axis] * 4))
        return -1;
    return at / blk * db->strides[axis] * 4;
}

/* A view of slot `base` from byte `offset` on, in layout md (a sub-memory:
 * its offset0 says where), shaped like `like`: what a reorder into place
 * reads or writes. */
static int32_t place_view(program *p, int32_t base, int64_t offset, const slot *like, const dnnl_memory_desc_t *md) {
    int32_t v = dx_add_slot(p, "(concat place)", NULL);
    if (v < 0) return -1;
    slot *sl = &p->slots[v];
    sl->rank = like->rank;
    memcpy(sl->dims, like->dims, sizeof(sl->dims));
    sl->alias = base, sl->offset = offset, sl->has_md = true, sl->md = *md;
    return dnnl_memory_create(&sl->mem, md, dx_ctx.engine, DNNL_MEMORY_NONE) == dnnl_success ? v : -1;
}

static int32_t concat_places(builder *b, int32_t sin) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t cnt = n->n_inputs, rank = n->outputs[0].rank;
    int64_t axis = 0;
    seam_node_attr_int(n, "axis", &axis);
    if (axis < 0) axis += rank;
    if (cnt < 1 || cnt > MAX_ARGS - 2 || axis < 0 || axis >= rank || rank < 1) return 0;
    int32_t src[MAX_ARGS];
    dnnl_memory_desc_t mds[MAX_ARGS];
    int64_t at[MAX_ARGS + 1];
    at[0] = 0;
    for (int32_t k = 0; k < cnt; k++) {
        src[k] = k ? dx_input_slot(b, &n->inputs[k]) : sin;
        const slot *sk = src[k] >= 0 ? &p->slots[src[k]] : NULL;
        if (!sk || sk->lazy || sk->pad_pending || sk->scale != 1.0f || sk->rank != rank || !dx_slot_numel(sk))
            return 0; /* (as the concat primitive has them, or refuses them) */
        dx_md_of(&p->slots[src[k]], &mds[k]);
        at[k + 1] = at[k] + p->slots[src[k]].dims[axis];
    }
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (at[cnt] != n->outputs[0].dims[axis]) return 0;
    /* the output's layout: the one oneDNN's concat picks for these sources
     * (the first source's, blocked or strided), else plain */
    dnnl_memory_desc_t dmd;
    if (p->slots[sin].has_md) {
        dnnl_memory_desc_t any;
        dnnl_primitive_desc_t pd;
        if (dnnl_memory_desc_init_by_tag(&any, rank, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
            dnnl_concat_primitive_desc_create(&pd, &any, cnt, (int)axis, mds, dx_ctx.user_scratch, dx_ctx.engine) != dnnl_success)
            return 0;
        dmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
        dnnl_primitive_desc_destroy(pd);
    } else if (dnnl_memory_desc_init_by_tag(&dmd, rank, n->outputs[0].dims, dnnl_f32, dx_plain_tag(rank)) != dnnl_success)
        return 0;
    /* oneDNN's concat splits its copy over the dst's dims outside the axis
     * (and the sources): with many of them (channels-last, the spatial dims
     * outside the channels) it beats one reorder per source (densenet121:
     * 2.0 ms against 3.5 ms for its concats), and no source is in place
     * there (a source in place has only 1-sized dims outside the axis) */
    if (dmd.format_kind != dnnl_blocked) return 0;
    int64_t outer = 1;
    for (int32_t d = 0; d < rank; d++)
        if (d != axis && dmd.format_desc.blocking.strides[d] > dmd.format_desc.blocking.strides[axis])
            outer *= dmd.padded_dims[d] / inner_block(&dmd, d);
    if (outer > MAX_OUTER) return 0;
    /* per source: in place (its byte offset); else a reorder into place:
     * of its bytes as one run when they are a contiguous range of the
     * output (a graph input, a source used twice: oneDNN's direct copy,
     * "simple", a parallel memcpy), else a jit reorder into its sub-memory
     * of the output */
    int64_t off[MAX_ARGS];
    bool placed[MAX_ARGS];
    dnnl_memory_desc_t sub[MAX_ARGS], flat[MAX_ARGS];
    int32_t n_place = 0, n_copy = 0;
    for (int32_t k = 0; k < cnt; k++) {
        bool twice = false;
        for (int32_t j = 0; j < cnt; j++) twice |= j != k && src[j] == src[k];
        off[k] = in_place_offset(&mds[k], &dmd, (int32_t)axis, at[k], k == cnt - 1);
        placed[k] = off[k] >= 0 && !twice && retargetable(p, src[k]);
        if (placed[k]) {
            n_place++;
            continue;
        }
        dnnl_dims_t offsets = {0}, len = {(int64_t)(dnnl_memory_desc_get_size(&mds[k]) / 4)};
        offsets[axis] = at[k];
        dnnl_primitive_desc_t rpd = NULL;
        bool ok = off[k] >= 0 ? dnnl_memory_desc_init_by_tag(&flat[k], 1, len, dnnl_f32, dnnl_a) == dnnl_success
                              : dnnl_memory_desc_init_submemory(&sub[k], &dmd, mds[k].dims, offsets) == dnnl_success;
        const dnnl_memory_desc_t *from = off[k] >= 0 ? &flat[k] : &mds[k], *to = off[k] >= 0 ? &flat[k] : &sub[k];
        ok = ok && dnnl_reorder_primitive_desc_create(&rpd, from, dx_ctx.engine, to, dx_ctx.engine, dx_ctx.user_scratch) ==
                       dnnl_success &&
             (!strncmp(dx_impl_name(rpd), "jit", 3) || (off[k] >= 0 && !strncmp(dx_impl_name(rpd), "simple", 6)));
        if (rpd) dnnl_primitive_desc_destroy(rpd);
        if (!ok) return 0;
        n_copy++;
    }
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    int32_t final_slot = -1;
    int32_t sd = dx_result_slot(b, &n->outputs[0], &dmd, &final_slot);
    if (sd < 0) return dx_fail(b, "out of memory"), -1;
    if (n_copy) dx_log(p, "node %d '%s' (Concat): %d reorders into the output (%d sources written in place)", n->index, n->name,
                       n_copy, n_place);
    else dx_log(p, "node %d '%s' (Concat): no step: sources written in place", n->index, n->name);
    for (int32_t k = 0; k < cnt; k++) {
        if (placed[k]) {
            p->slots[src[k]].alias = sd, p->slots[src[k]].offset = off[k];
            continue;
        }
        slot like = p->slots[src[k]];
        if (off[k] >= 0) like.rank = 1, like.dims[0] = flat[k].dims[0];
        int32_t from = off[k] >= 0 ? place_view(p, src[k], 0, &like, &flat[k]) : src[k];
        int32_t to = from >= 0 ? place_view(p, sd, off[k] >= 0 ? off[k] : 0, &like, off[k] >= 0 ? &flat[k] : &sub[k]) : -1;
        if (to < 0) return dx_fail(b, "out of memory"), -1;
        if (!dx_add_reorder(b, from, to)) return -1;
    }
    if (final_slot >= 0 && !dx_add_reorder(b, sd, final_slot)) return -1;
    return 1;
}

int32_t dx_compile_concat_places(builder *b, int32_t sin) {
    int32_t r = concat_places(b, sin);
    b->n = seam_subgraph_node(b->sg, b->index, b->storage); /* (other nodes were looked at) */
    return r;
}

int32_t dx_blocked_concat(builder *b, int32_t sin) {
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

static bool supports_concat(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_inputs > MAX_ARGS - 2) return dx_refuse(why, wn, "Concat of more than 64 inputs is not supported");
    return true;
}

/* Concat in the plain layout. */
static bool compile_concat(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    program *p = b->p;
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
    kinds[cnt] = DNNL_ARG_DST, slots[cnt] = io->sd;
    dnnl_primitive_desc_t pd;
    if (dnnl_concat_primitive_desc_create(&pd, &io->dst, cnt, (int)axis, mds, dx_ctx.user_scratch, dx_ctx.engine) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this concat"), false;
    bool ok = dx_add_prim(b, pd, cnt + 1, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

const dx_op dx_concat_rows[] = {
    {"Concat", STAGE_PLAIN_OUT, supports_concat, compile_concat},
    {NULL, STAGE_VIEW, NULL, NULL},
};
