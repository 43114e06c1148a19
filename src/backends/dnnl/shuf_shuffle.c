/*
 * dnnl: the channel shuffle, in the layout of the convolutions around it.
 *
 * torch exports ShuffleNet's channel_shuffle(x, g) as
 *
 *     [Concat(a, b, ...) ->] Reshape [N, g, C/g, S...] -> Transpose (0, 2, 1, 3, ...)
 *                         -> Reshape [N, C, S...] [-> Slices or a Split of the channels]
 *
 * (S the spatial dims). Node by node, dnnl did the Concat and the
 * Transpose in the plain layout: every shuffle cost a reorder of the
 * convolutions' channels-last output to plain, the Concat, a reorder for
 * the Transpose, and a reorder back to channels-last for the next
 * convolution (50 per run in shufflenet_v2).
 *
 * Here the pattern is one step per source: source k of the Concat (or the
 * Reshape's input), whose channels are whole groups g0 .. g0+n-1 of the
 * concatenated value, has its channel j = a * C/g + c (a-th of its groups,
 * c-th channel in it) go to output channel c * g + g0 + a. Seen as
 * [N, n, C/g, S...], the source is one strided view and its place in the
 * output another: one reorder, and no Concat, Transpose or plain copy.
 *
 * The output is channels-last (as the convolutions write it; plain when
 * the source is plain). When it is read only by Slices or a Split into
 * equal parts of the channels (ShuffleNet's x.chunk(2, dim=1)), the output
 * is laid out part by part, each part a dense channels-last tensor: the
 * parts are the Slices' outputs, read by the next convolution (or the next
 * shuffle) in place, with no copy.
 */
#include "shuf_shuffle.h"

#include <stdio.h>
#include <string.h>

#include "ops/attr.h"

#define MAX_SRC 16 /* sources (Concat inputs) */
#define MAX_PART 16 /* part readers */

typedef struct shuffle {
    int32_t r, nsp;             /* rank of the shuffled value [N, C, S...], spatial dims */
    int64_t dims[MAXR];         /* [N, C, S...] */
    int64_t g, cg;              /* groups, channels per group */
    int32_t node[3];            /* Reshape, Transpose, Reshape */
    const char *out;            /* the shuffled value */
    int32_t n_src;
    int32_t src[MAX_SRC];       /* their slots */
    int64_t first[MAX_SRC];     /* first group each covers */
    int64_t groups[MAX_SRC];    /* groups each covers */
    int32_t n_part;             /* readers of the output that take one part each: 0 when not laid out by parts */
    int32_t part_node[MAX_PART];
    const char *part_out[MAX_PART];
    int64_t part_at[MAX_PART];  /* which part */
    int64_t p;                  /* channels per part */
} shuffle;

static const seam_node_view *node_at(builder *b, int32_t i, seam_node_view *st) {
    return seam_subgraph_node(b->sg, i, st);
}

static bool is_float(const seam_value_info *v) { return v->dtype == SEAM_DTYPE_FLOAT32; }

/* The node that alone reads value name as its input 0 and is op, or -1. */
static int32_t sole_reader_op(builder *b, const char *name, const char *op) {
    int32_t r = dx_sole_reader(b, name);
    if (r < 0) return -1;
    seam_node_view st;
    const seam_node_view *m = node_at(b, r, &st);
    if (!is_op(m, op) || m->n_inputs < 1 || !m->inputs[0].name || strcmp(m->inputs[0].name, name)) return -1;
    for (int32_t k = 1; k < m->n_inputs; k++)
        if (m->inputs[k].name && !strcmp(m->inputs[k].name, name)) return -1;
    return r;
}

/* Reshape [N, C, S...] -> [N, g, C/g, S...] -> Transpose (0, 2, 1, ...) ->
 * Reshape [N, C, S...], from the Reshape at node r1 on. */
static bool match_shuffle(builder *b, int32_t r1, shuffle *sh) {
    seam_node_view st;
    const seam_node_view *m = node_at(b, r1, &st);
    const seam_value_info *in = &m->inputs[0], *o = &m->outputs[0];
    int32_t r = in->rank;
    if (r < 3 || r > MAXR - 1 || o->rank != r + 1 || !is_float(in) || !is_float(o)) return false;
    sh->r = r, sh->nsp = r - 2;
    for (int32_t d = 0; d < r; d++) {
        sh->dims[d] = in->dims[d];
        if (sh->dims[d] < 1) return false;
    }
    if (o->dims[0] != sh->dims[0] || o->dims[1] < 2 || o->dims[2] < 1 || o->dims[1] * o->dims[2] != sh->dims[1])
        return false;
    for (int32_t d = 2; d < r; d++)
        if (o->dims[d + 1] != sh->dims[d]) return false;
    sh->g = o->dims[1], sh->cg = o->dims[2];
    const char *v1 = o->name;
    sh->node[0] = r1;
    int32_t t = sole_reader_op(b, v1, "Transpose");
    if (t < 0) return false;
    m = node_at(b, t, &st);
    const int64_t *perm;
    int32_t np = 0;
    if (!seam_node_attr_ints(m, "perm", &perm, &np) || np != r + 1) return false;
    for (int32_t d = 0; d <= r; d++)
        if (perm[d] != (d == 1 ? 2 : d == 2 ? 1 : d)) return false;
    const char *v2 = m->outputs[0].name;
    int32_t r2 = sole_reader_op(b, v2, "Reshape");
    if (r2 < 0) return false;
    m = node_at(b, r2, &st);
    if (m->outputs[0].rank != r || !is_float(&m->outputs[0])) return false;
    for (int32_t d = 0; d < r; d++)
        if (m->outputs[0].dims[d] != sh->dims[d]) return false;
    sh->node[1] = t, sh->node[2] = r2;
    sh->out = m->outputs[0].name;
    return true;
}

/* The channels [*at, *at + *len) a Slice of the shuffled value takes
 * (constant bounds on axis 1, step 1); false for any other Slice. */
static bool slice_part(builder *b, const seam_node_view *m, const shuffle *sh, int64_t *at, int64_t *len) {
    if (m->opset < 10 || m->n_inputs < 3) return false;
    int64_t s, e, a = 0, stp = 1;
    if (dx_const_ints(b, &m->inputs[1], &s, 1) != 1 || dx_const_ints(b, &m->inputs[2], &e, 1) != 1) return false;
    if (m->n_inputs > 3 && m->inputs[3].name && dx_const_ints(b, &m->inputs[3], &a, 1) != 1) return false;
    if (m->n_inputs > 4 && m->inputs[4].name && dx_const_ints(b, &m->inputs[4], &stp, 1) != 1) return false;
    if (m->n_inputs <= 3 || !m->inputs[3].name) a = 0;
    if (a < 0) a += sh->r;
    int64_t c = sh->dims[1];
    if (a != 1 || stp != 1) return false;
    s = s < 0 ? s + c : s, e = e < 0 ? e + c : e;
    s = s < 0 ? 0 : s > c ? c : s, e = e < 0 ? 0 : e > c ? c : e;
    if (e <= s || m->outputs[0].rank != sh->r || m->outputs[0].dims[1] != e - s) return false;
    *at = s, *len = e - s;
    return true;
}

/* Whether every reader of the shuffled value takes one part of its
 * channels (Slices, or a Split) of a size that lets the output be laid out
 * part by part: then sh->n_part readers, else 0. */
static void match_parts(builder *b, shuffle *sh) {
    int32_t rd[MAX_PART];
    int32_t n = dx_readers(b, sh->out, rd, MAX_PART);
    sh->n_part = 0, sh->p = 0;
    if (n < 1 || sh->nsp > 2) return; /* (a part view has rank r + 2 <= 6) */
    int64_t at[MAX_PART], len[MAX_PART];
    int32_t cnt = 0;
    for (int32_t k = 0; k < n; k++) {
        seam_node_view st;
        const seam_node_view *m = node_at(b, rd[k], &st);
        if (m->n_inputs < 1 || !m->inputs[0].name || strcmp(m->inputs[0].name, sh->out)) return;
        for (int32_t i = 1; i < m->n_inputs; i++)
            if (m->inputs[i].name && !strcmp(m->inputs[i].name, sh->out)) return;
        if (is_op(m, "Slice")) {
            if (cnt == MAX_PART || !slice_part(b, m, sh, &at[cnt], &len[cnt])) return;
            sh->part_node[cnt] = rd[k], sh->part_out[cnt] = m->outputs[0].name, cnt++;
        } else if (is_op(m, "Split")) {
            int64_t axis = node_attr_int(dx_ir(m), "axis", 0), from = 0;
            if (axis < 0) axis += sh->r;
            if (axis != 1) return;
            for (int32_t i = 0; i < m->n_outputs; i++) {
                const seam_value_info *o = &m->outputs[i];
                if (o->rank != sh->r || o->dims[1] < 1) return;
                if (o->name) {
                    if (cnt == MAX_PART) return;
                    at[cnt] = from, len[cnt] = o->dims[1];
                    sh->part_node[cnt] = rd[k], sh->part_out[cnt] = o->name, cnt++;
                }
                from += o->dims[1];
            }
            if (from != sh->dims[1]) return;
        } else {
            return;
        }
    }
    int64_t p = cnt ? len[0] : 0, c = sh->dims[1];
    if (!p || c % p || c / p < 2 || p % sh->g) return;
    for (int32_t k = 0; k < cnt; k++) {
        if (len[k] != p || at[k] % p) return;
        sh->part_at[k] = at[k] / p;
    }
    sh->p = p, sh->n_part = cnt;
}

/* The element strides of slot s when it has no inner blocks (plain,
 * channels-last, a strided view); false for a blocked layout. */
static bool strides_of(const slot *s, int64_t *st) {
    if (s->has_md && !dx_is_strided(s)) return false;
    dx_dense_strides(s, st);
    return true;
}

/* Channels-last strides of [N, C, S...] (C innermost, then S, then N). */
static void channels_last(int32_t r, const int64_t *dims, int64_t *st) {
    int64_t acc = 1;
    st[1] = acc, acc *= dims[1];
    for (int32_t d = r - 1; d >= 2; d--) st[d] = acc, acc *= dims[d];
    st[0] = acc;
}

/* A view of slot base's bytes from element `offset` on, by strides. */
static int32_t view(builder *b, int32_t base, int32_t rank, const int64_t *dims, const int64_t *strides,
                    int64_t offset) {
    dnnl_dims_t dd, ss;
    slot shape;
    memset(&shape, 0, sizeof(shape));
    shape.rank = rank;
    for (int32_t d = 0; d < rank; d++) dd[d] = shape.dims[d] = dims[d], ss[d] = strides[d];
    dnnl_memory_desc_t md;
    if (dnnl_memory_desc_init_by_strides(&md, rank, dd, dnnl_f32, ss) != dnnl_success) return -1;
    int32_t v = dx_view_slot(b->p, base, &shape, &md);
    if (v >= 0) b->p->slots[v].offset = offset * (int64_t)sizeof(float);
    return v;
}

/* Source k into its channels of the output: one reorder between two
 * strided views, [N, n, C/g, S...], or [N, n, parts, C/g/parts, S...] when
 * the output is laid out by parts (zst then the strides within a part,
 * zpart a part's elements). */
static bool place_source(builder *b, const shuffle *sh, int32_t k, int32_t z, const int64_t *zst, int64_t zpart) {
    program *p = b->p;
    int32_t s = sh->src[k], r = sh->r;
    int64_t sst[MAXR], dims[MAXR], from[MAXR], to[MAXR];
    if (!strides_of(&p->slots[s], sst)) return dx_fail(b, "a channel shuffle's source is in a blocked layout"), false;
    int32_t o = 0;
    dims[o] = sh->dims[0], from[o] = sst[0], to[o++] = zst[0];
    dims[o] = sh->groups[k], from[o] = sh->cg * sst[1], to[o++] = zst[1]; /* its groups: next to each other */
    if (sh->n_part) {
        int64_t per = sh->p / sh->g; /* channels of a group in each part */
        dims[o] = sh->dims[1] / sh->p, from[o] = per * sst[1], to[o++] = zpart;
        dims[o] = per, from[o] = sst[1], to[o++] = sh->g * zst[1];
    } else {
        dims[o] = sh->cg, from[o] = sst[1], to[o++] = sh->g * zst[1];
    }
    for (int32_t d = 2; d < r; d++) dims[o] = sh->dims[d], from[o] = sst[d], to[o++] = zst[d];
    int32_t sv = view(b, s, o, dims, from, 0);
    int32_t dv = sv >= 0 ? view(b, z, o, dims, to, sh->first[k] * zst[1]) : -1;
    if (sv < 0 || dv < 0) return dx_fail(b, "out of memory"), false;
    return dx_add_reorder(b, sv, dv);
}

bool dx_compile_shuffle_pattern(builder *b, bool *fused, int32_t sin) {
    program *p = b->p;
    const seam_node_view *n = b->n;
    shuffle sh;
    memset(&sh, 0, sizeof(sh));
    /* the sources: the Concat's inputs, or the Reshape's input */
    bool concat = is_op(n, "Concat");
    const char *head_out = n->outputs[0].name;
    int64_t total = 0;
    if (concat) {
        int64_t axis = node_attr_int(dx_ir(n), "axis", 0);
        if (n->n_inputs < 1 || n->n_inputs > MAX_SRC || n->outputs[0].rank < 3) return false;
        if (axis < 0) axis += n->outputs[0].rank;
        if (axis != 1) return false;
        for (int32_t k = 0; k < n->n_inputs; k++) {
            const seam_value_info *v = &n->inputs[k];
            if (!v->name || !is_float(v) || v->rank != n->outputs[0].rank) return false;
            int32_t s = k ? dx_input_slot(b, v) : sin;
            if (s < 0) return false; /* (not float32: the Concat as written) */
            sh.src[k] = s, sh.first[k] = total, sh.groups[k] = v->dims[1];
            total += v->dims[1];
            n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
        }
        sh.n_src = n->n_inputs;
    } else {
        if (!is_op(n, "Reshape") || !is_float(&n->inputs[0])) return false;
        sh.src[0] = sin, sh.first[0] = 0, sh.groups[0] = n->inputs[0].rank >= 2 ? n->inputs[0].dims[1] : 0;
        sh.n_src = 1;
        total = sh.groups[0];
    }
    int32_t r1 = concat ? sole_reader_op(b, head_out, "Reshape") : b->index;
    bool ok = r1 >= 0 && match_shuffle(b, r1, &sh) && total == sh.dims[1];
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (!ok) return false;
    /* each source: whole groups, the shape of the shuffled value otherwise,
     * in a layout without inner blocks (a blocked one: channels-last first),
     * not a Pad left to its reader */
    for (int32_t k = 0; k < sh.n_src; k++) {
        const slot *s = &p->slots[sh.src[k]];
        if (s->rank != sh.r || s->pad_pending || s->scale != 1.0f || sh.groups[k] % sh.cg) return false;
        for (int32_t d = 0; d < sh.r; d++)
            if (d != 1 && s->dims[d] != sh.dims[d]) return false;
        sh.first[k] /= sh.cg, sh.groups[k] /= sh.cg;
    }
    match_parts(b, &sh);
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    for (int32_t k = 0; k < sh.n_src; k++) {
        int64_t st[MAXR];
        if (strides_of(&p->slots[sh.src[k]], st)) continue;
        dnnl_memory_desc_t cl;
        dnnl_dims_t dd, ss;
        channels_last(sh.r, p->slots[sh.src[k]].dims, st);
        for (int32_t d = 0; d < sh.r; d++) dd[d] = p->slots[sh.src[k]].dims[d], ss[d] = st[d];
        if (dnnl_memory_desc_init_by_strides(&cl, sh.r, dd, dnnl_f32, ss) != dnnl_success)
            return dx_fail(b, "bad channel shuffle"), false;
        sh.src[k] = dx_in_layout(b, sh.src[k], &cl);
        if (sh.src[k] < 0) return dx_fail(b, "out of memory"), false;
    }
    /* the output: channels-last unless the first source is plain; by parts
     * when its readers take parts */
    int64_t zst[MAXR], zpart = 0, numel = 1;
    for (int32_t d = 0; d < sh.r; d++) numel *= sh.dims[d];
    int32_t z, final_out = -1;
    if (sh.n_part) {
        int64_t pd[MAXR];
        memcpy(pd, sh.dims, sizeof(pd));
        pd[1] = sh.p;
        channels_last(sh.r, pd, zst);
        zpart = numel / (sh.dims[1] / sh.p);
        slot like;
        memset(&like, 0, sizeof(like));
        like.name = sh.out, like.rank = 1, like.dims[0] = numel;
        dnnl_memory_desc_t md;
        dx_md_of(&like, &md);
        z = dx_temp_slot(b, &like, &md);
        if (z >= 0) p->slots[z].has_md = false;
    } else {
        if (p->slots[sh.src[0]].has_md) channels_last(sh.r, sh.dims, zst);
        else for (int64_t acc = 1, d = sh.r - 1; d >= 0; d--) zst[d] = acc, acc *= sh.dims[d];
        dnnl_memory_desc_t md;
        dnnl_dims_t dd, ss;
        for (int32_t d = 0; d < sh.r; d++) dd[d] = sh.dims[d], ss[d] = zst[d];
        if (dnnl_memory_desc_init_by_strides(&md, sh.r, dd, dnnl_f32, ss) != dnnl_success)
            return dx_fail(b, "bad channel shuffle"), false;
        seam_value_info vi = {sh.out, SEAM_DTYPE_FLOAT32, sh.r, sh.dims, NULL};
        z = dx_result_slot(b, &vi, &md, &final_out);
    }
    if (z < 0) return dx_fail(b, "out of memory"), false;
    static const char *const spared[2][2] = {{"Transpose", "Transpose or Slice"},
                                             {"Concat or Transpose", "Concat, Transpose or Slice"}};
    dx_log(p, "node %d '%s' (%s): channel shuffle (%lld groups of %lld) of %d source%s into %s: one reorder each, "
              "no %s copy",
           n->index, n->name, n->op_type, (long long)sh.g, (long long)sh.cg, sh.n_src, sh.n_src > 1 ? "s" : "",
           sh.n_part ? "its readers' parts (channels-last each)" : p->slots[z].has_md ? "channels-last" : "plain",
           spared[concat][sh.n_part > 0]);
    for (int32_t k = 0; k < sh.n_src; k++)
        if (!place_source(b, &sh, k, z, zst, zpart)) return false;
    if (final_out >= 0 && !dx_add_reorder(b, z, final_out)) return false;
    for (int32_t k = 0; k < 3; k++) fused[sh.node[k]] = true;
    if (!sh.n_part) return true;
    /* each part: a dense channels-last view of the output, the reader's
     * value (copied into place when it leaves the subgraph) */
    int64_t pdims[MAXR];
    memcpy(pdims, sh.dims, sizeof(pdims));
    pdims[1] = sh.p;
    for (int32_t k = 0; k < sh.n_part; k++) {
        int32_t bs = dx_slot_of(p, sh.part_out[k]); /* a boundary output */
        int32_t v = view(b, z, sh.r, pdims, zst, sh.part_at[k] * zpart);
        if (v < 0) return dx_fail(b, "out of memory"), false;
        if (bs >= 0) {
            if (!dx_add_reorder(b, v, bs)) return false;
        } else {
            p->slots[v].name = sh.part_out[k];
        }
        fused[sh.part_node[k]] = true;
    }
    return true;
}
