/*
 * dnnl: the mask and shape ops exporters write around the fast ones
 * (comparisons, Where, Expand, Tile, Cast); see mask.h for how values
 * other than float32 live inside a subgraph.
 *
 *   Equal, Greater, Less, GreaterOrEqual, LessOrEqual: a binary
 *     comparison (dst 1 or 0), the operands swapped (and the comparison
 *     mirrored) when only the first is broadcast, expanded first when both
 *     are.
 *   Expand, Tile: one reorder from a view of the input whose strides are 0
 *     along the broadcast or repeated dims (oneDNN's reorder takes zero
 *     strides).
 *   Where(c, a, b): a select is not in oneDNN 2.6, and a*c + b*(1-c) is
 *     wrong when the unused branch is inf or NaN (inf*0 is NaN). It runs on
 *     the bytes: a, b and the result seen as uint8 (4 per float), one
 *     binary computing (a - b)*m + b in float per byte, m the condition
 *     repeated over the 4 bytes (a zero-stride reorder). Each byte is an
 *     integer in [0, 255], so the arithmetic is exact and the result's bytes
 *     are a's or b's whatever they hold.
 *   Cast: float to an integer truncates toward zero (ONNX, as C and numpy
 *     do); oneDNN's reorder and its round eltwise round to nearest even.
 *     The truncation is |x| rounded, minus 1 where that rounded up, with
 *     x's sign: abs, round, a comparison, a product, all exact in float.
 *     float to bool is x != 0 (NaN is true). bool, int8 and uint8 to wider
 *     types, and anything held to float, keep the held value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mask.h"
#include "ops/attr.h"

#define MAXD 12 /* oneDNN's DNNL_MAX_NDIMS: a Tile's view doubles the rank */

static const char *const compare_ops[] = {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"};
static const char *const mask_ops[] = {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual",
                                       "Where", "Expand",  "Tile", "Cast"};

bool dx_is_mask_op(const seam_node_view *n) { return IN_LIST(n, mask_ops); }

dnnl_data_type_t dx_boundary_type(seam_dtype dt) {
    switch (dt) {
    case SEAM_DTYPE_FLOAT32: return dnnl_f32;
    case SEAM_DTYPE_BOOL: return dnnl_u8;
    case SEAM_DTYPE_UINT8: return dnnl_u8;
    case SEAM_DTYPE_INT8: return dnnl_s8;
    case SEAM_DTYPE_INT32: return dnnl_s32;
    default: return dnnl_data_type_undef;
    }
}

bool dx_view_dtype_ok(seam_dtype dt) {
    return dt == SEAM_DTYPE_FLOAT32 || dt == SEAM_DTYPE_BOOL || dt == SEAM_DTYPE_UINT8 || dt == SEAM_DTYPE_INT8;
}

/* Input k of n is held exactly: a dtype exact whatever its origin, or an
 * integer constant (its values checked when compiled). */
static bool held_input(const seam_node_view *n, int32_t k, char *why, size_t wn) {
    const seam_value_info *v = &n->inputs[k];
    if (dx_view_dtype_ok(v->dtype)) return true;
    if ((v->dtype == SEAM_DTYPE_INT32 || v->dtype == SEAM_DTYPE_INT64) && dx_const_input(n, k)) return true;
    if (v->dtype == SEAM_DTYPE_INT32 || v->dtype == SEAM_DTYPE_INT64)
        return dx_refuse(why, wn,
                         "%s on a computed %s input %d: dnnl holds integers in float32, exact only up to 2^24, "
                         "and oneDNN has no int64",
                         n->op_type, seam_dtype_name(v->dtype), k);
    return dx_refuse(why, wn, "%s on %s: dnnl takes float32, bool, int8, uint8 (and integer constants)", n->op_type,
                     seam_dtype_name(v->dtype));
}

/* An output dtype dnnl can hold and hand over. */
static bool held_output(const seam_node_view *n, char *why, size_t wn) {
    seam_dtype dt = n->outputs[0].dtype;
    if (dx_boundary_type(dt) != dnnl_data_type_undef) return true;
    return dx_refuse(why, wn, "%s with a %s output: oneDNN has no such type (dnnl takes float32, bool, int8, uint8, int32)",
                     n->op_type, seam_dtype_name(dt));
}

bool dx_held_constant(builder *b, const seam_value_info *v) {
    seam_tensor_view c;
    if (!v->name || dx_slot_of(b->p, v->name) >= 0 || !seam_subgraph_constant(b->sg, v->name, &c) ||
        c.dtype == SEAM_DTYPE_FLOAT32)
        return true;
    size_t esz = seam_dtype_size(c.dtype);
    bool known = c.dtype == SEAM_DTYPE_BOOL || c.dtype == SEAM_DTYPE_UINT8 || c.dtype == SEAM_DTYPE_INT8 ||
                 c.dtype == SEAM_DTYPE_INT32 || c.dtype == SEAM_DTYPE_INT64;
    if (!known || !esz) return true; /* (supports() refused it; compile says so) */
    int32_t s = dx_add_slot(b->p, v->name, v);
    if (s < 0) return dx_fail(b, "out of memory"), false;
    slot *sl = &b->p->slots[s];
    int64_t cnt = dx_slot_numel(sl);
    if (cnt < 0 || (size_t)cnt * esz != c.nbytes) return dx_fail(b, "a constant's size does not match its shape"), false;
    float *f = malloc((size_t)cnt * sizeof(float) + 1);
    dnnl_memory_desc_t md;
    if (!f || !dx_md_of(sl, &md) || dnnl_memory_create(&sl->mem, &md, dx_ctx.engine, f) != dnnl_success)
        return free(f), dx_fail(b, "out of memory"), false;
    sl->owned = f, sl->constant = true;
    const unsigned char *d = c.data;
    for (int64_t k = 0; k < cnt; k++) {
        int64_t x;
        switch (c.dtype) {
        case SEAM_DTYPE_BOOL: x = d[k] != 0; break;
        case SEAM_DTYPE_UINT8: x = d[k]; break;
        case SEAM_DTYPE_INT8: x = (int8_t)d[k]; break;
        case SEAM_DTYPE_INT32: {
            int32_t y;
            memcpy(&y, d + 4 * k, 4);
            x = y;
            break;
        }
        default: memcpy(&x, d + 8 * k, 8); break;
        }
        if (x > (1 << 24) || x < -(1 << 24)) {
            char msg[200];
            snprintf(msg, sizeof(msg),
                     "constant '%s' holds %lld, which float32 (how dnnl holds integers) does not represent exactly; "
                     "dnnl takes integer constants of magnitude up to 2^24",
                     v->name, (long long)x);
            return dx_fail(b, msg), false;
        }
        f[k] = (float)x;
    }
    return true;
}

/* ---- helpers ---- */

/* Input k as a dense float32 slot. */
static int32_t plain_input(builder *b, int32_t k) {
    const seam_node_view *n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (k >= n->n_inputs || !n->inputs[k].name) return -1;
    if (!dx_held_constant(b, &n->inputs[k])) return -1;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    int32_t s = dx_input_slot(b, &n->inputs[k]);
    if (s < 0) return dx_fail(b, "an input is neither made earlier nor a constant"), -1;
    s = dx_as_plain(b, s); /* (a value of another type at the boundary: its float32 copy) */
    if (s < 0) dx_fail(b, "out of memory");
    return s;
}

static dnnl_data_type_t slot_type(const slot *s) {
    dnnl_memory_desc_t md;
    dx_md_of(s, &md);
    return md.data_type;
}

/* Strides of a plain tensor of dims (elements). */
static void dense_strides(int32_t r, const int64_t *dims, int64_t *st) {
    int64_t acc = 1;
    for (int32_t d = r - 1; d >= 0; d--) st[d] = acc, acc *= dims[d] > 0 ? dims[d] : 1;
}

/* md: slot s (dense) seen with the R dims of out, numpy's broadcast (right
 * aligned, stride 0 along a dim of size 1 that grows, and along the dims s
 * lacks), then `tail` trailing dims of stride 0 (Where's bytes). False when
 * the shapes do not broadcast. */
static bool broadcast_md(const slot *s, int32_t R, const int64_t *out, int32_t tail, int64_t tail_dim,
                         dnnl_data_type_t dt, dnnl_memory_desc_t *md) {
    int64_t st[MAXR];
    dense_strides(s->rank, s->dims, st);
    if (s->rank > R) return false;
    dnnl_dims_t dims, strides;
    for (int32_t d = 0; d < R; d++) {
        int32_t e = d - (R - s->rank);
        int64_t sd = e >= 0 ? s->dims[e] : 1;
        if (sd != out[d] && sd != 1) return false;
        dims[d] = out[d], strides[d] = sd == out[d] && sd != 1 ? st[e] : 0;
    }
    for (int32_t k = 0; k < tail; k++) dims[R + k] = tail_dim, strides[R + k] = 0;
    int32_t nd = R + tail;
    if (!nd) dims[0] = 1, strides[0] = 1, nd = 1;
    return dnnl_memory_desc_init_by_strides(md, nd, dims, dt, strides) == dnnl_success;
}

/* A view of slot `base` in md; its slot shape is `shape`'s. */
static int32_t view_in(builder *b, int32_t base, int32_t rank, const int64_t *dims, const dnnl_memory_desc_t *md) {
    slot shape;
    memset(&shape, 0, sizeof(shape));
    shape.rank = rank > MAXR ? MAXR : rank;
    for (int32_t d = 0; d < shape.rank; d++) shape.dims[d] = dims[d];
    int32_t v = dx_view_slot(b->p, base, &shape, md);
    if (v < 0) dx_fail(b, "its shapes do not fit its input's bytes");
    return v;
}

/* A new dense intermediate of the given dims and type. */
static int32_t temp(builder *b, const char *name, int32_t rank, const int64_t *dims, dnnl_data_type_t dt) {
    slot like;
    memset(&like, 0, sizeof(like));
    like.name = name, like.rank = rank > MAXR ? MAXR : rank;
    for (int32_t d = 0; d < like.rank; d++) like.dims[d] = dims[d];
    dnnl_dims_t dd, st;
    int64_t s[MAXD];
    dense_strides(rank, dims, s);
    for (int32_t d = 0; d < rank; d++) dd[d] = dims[d], st[d] = s[d];
    if (!rank) dd[0] = 1, st[0] = 1;
    dnnl_memory_desc_t md;
    int32_t t = -1;
    if (dnnl_memory_desc_init_by_strides(&md, rank ? rank : 1, dd, dt, st) == dnnl_success) t = dx_temp_slot(b, &like, &md);
    if (t < 0) dx_fail(b, "out of memory");
    return t;
}

/* A resident float32 constant of `rank` dims of size 1 holding x. */
static int32_t scalar_slot(builder *b, int32_t rank, float x) {
    int64_t ones[MAXR] = {1, 1, 1, 1, 1, 1};
    seam_value_info v = {"(scalar)", SEAM_DTYPE_FLOAT32, rank, ones, NULL};
    int32_t s = dx_add_slot(b->p, "(scalar)", &v);
    if (s < 0) return dx_fail(b, "out of memory"), -1;
    slot *sl = &b->p->slots[s];
    float *f = malloc(sizeof(float));
    dnnl_memory_desc_t md;
    if (!f || !dx_md_of(sl, &md) || dnnl_memory_create(&sl->mem, &md, dx_ctx.engine, f) != dnnl_success)
        return free(f), dx_fail(b, "out of memory"), -1;
    *f = x;
    sl->owned = f, sl->constant = true;
    return s;
}

static int32_t numel(int32_t r, const int64_t *dims) {
    int64_t n = 1;
    for (int32_t d = 0; d < r; d++)
        if (!dims[d]) return 0;
    for (int32_t d = 0; d < r; d++)
        if ((n *= dims[d]) > INT32_MAX) return -1; /* (each dim at most IR_MAX_DIM: no wrap) */
    return (int32_t)n;
}

/* A binary step: src0 op src1 -> dst, then post-ops (binary ops with
 * operands, or an eltwise linear with alpha/beta when po_slot is -1). */
typedef struct post { dnnl_alg_kind_t alg; int32_t operand; float alpha, beta; } post;

static bool binary_step(builder *b, dnnl_alg_kind_t alg, int32_t s0, int32_t s1, int32_t dst, const post *po, int32_t npo) {
    program *p = b->p;
    dnnl_memory_desc_t m0, m1, md;
    dx_md_of(&p->slots[s0], &m0);
    dx_md_of(&p->slots[s1], &m1);
    dx_md_of(&p->slots[dst], &md);
    dnnl_binary_desc_t bd;
    if (dnnl_binary_desc_init(&bd, alg, &m0, &m1, &md) != dnnl_success) return dx_fail(b, "oneDNN refuses a binary"), false;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    int32_t kinds[3 + 4], slots[3 + 4], na = 0;
    kinds[na] = DNNL_ARG_SRC_0, slots[na++] = s0;
    kinds[na] = DNNL_ARG_SRC_1, slots[na++] = s1;
    if (npo) {
        bool ok = dnnl_primitive_attr_create(&attr) == dnnl_success &&
                  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
                  dnnl_post_ops_create(&ops) == dnnl_success;
        for (int32_t k = 0; ok && k < npo; k++) {
            if (po[k].operand < 0) {
                ok = dnnl_post_ops_append_eltwise(ops, 1.0f, po[k].alg, po[k].alpha, po[k].beta) == dnnl_success;
                continue;
            }
            dnnl_memory_desc_t om;
            dx_md_of(&p->slots[po[k].operand], &om);
            ok = dnnl_post_ops_append_binary(ops, po[k].alg, &om) == dnnl_success;
            kinds[na] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(k) | DNNL_ARG_SRC_1, slots[na++] = po[k].operand;
        }
        if (ok) ok = dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success;
        if (ops) dnnl_post_ops_destroy(ops);
        if (!ok) {
            if (attr) dnnl_primitive_attr_destroy(attr);
            return dx_fail(b, "oneDNN refuses a post-op"), false;
        }
    }
    kinds[na] = DNNL_ARG_DST, slots[na++] = dst;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dnnl_primitive_desc_create(&pd, &bd, attr ? attr : dx_ctx.user_scratch, dx_ctx.engine, NULL) == dnnl_success;
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!ok) return dx_fail(b, "oneDNN has no implementation for these shapes and attributes"), false;
    if (dx_is_slow_ref(pd) && md.data_type != dnnl_f32) {
        /* (oneDNN 2.6 has only its reference kernel for some binaries
         * writing u8 or s32, a 1-D one among them): float32, then a reorder */
        dnnl_primitive_desc_destroy(pd);
        int32_t t = temp(b, "(binary result)", p->slots[dst].rank, p->slots[dst].dims, dnnl_f32);
        return t >= 0 && binary_step(b, alg, s0, s1, t, po, npo) && dx_add_reorder(b, t, dst);
    }
    ok = dx_add_prim(b, pd, na, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

static bool eltwise_step(builder *b, dnnl_alg_kind_t alg, int32_t src, int32_t dst) {
    dnnl_memory_desc_t md;
    dx_md_of(&b->p->slots[src], &md);
    dnnl_eltwise_desc_t ed;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &md, 0, 0) != dnnl_success)
        return dx_fail(b, "oneDNN refuses an eltwise"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {src, dst};
    return dx_add_step(b, &ed, NULL, 2, kinds, slots);
}

/* The output slot and its dims, checked against what the op computes
 * (want, when given). */
static int32_t out_slot(builder *b, int32_t *R, int64_t *dims, const int64_t *want, int32_t want_rank) {
    const seam_node_view *n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    const seam_value_info *o = &n->outputs[0];
    if (o->rank < 0 || o->rank > MAXR) return dx_fail(b, "its output has no known rank <= 6"), -1;
    /* (want may be dims itself: compared before dims is written) */
    if (want) {
        bool same = want_rank == o->rank;
        for (int32_t d = 0; same && d < o->rank; d++) same = want[d] == o->dims[d];
        if (!same) return dx_fail(b, "its output's shape is not what its inputs give (inconsistent shapes in the file)"), -1;
    }
    *R = o->rank;
    for (int32_t d = 0; d < o->rank; d++) dims[d] = o->dims[d];
    int32_t s = dx_output_slot(b, o);
    if (s < 0) dx_fail(b, "out of memory");
    return s;
}

/* numpy's broadcast of the slots' shapes; false when they do not. */
static bool broadcast_shape(const slot *const *s, int32_t cnt, int32_t *R, int64_t *dims) {
    *R = 0;
    for (int32_t k = 0; k < cnt; k++)
        if (s[k]->rank > *R) *R = s[k]->rank;
    for (int32_t d = 0; d < *R; d++) {
        dims[d] = 1;
        for (int32_t k = 0; k < cnt; k++) {
            int32_t e = d - (*R - s[k]->rank);
            int64_t x = e >= 0 ? s[k]->dims[e] : 1;
            if (x == dims[d] || x == 1) continue;
            if (dims[d] != 1) return false;
            dims[d] = x;
        }
    }
    return true;
}

static bool same_shape(const slot *s, int32_t R, const int64_t *dims) {
    if (s->rank != R) return false;
    for (int32_t d = 0; d < R; d++)
        if (s->dims[d] != dims[d]) return false;
    return true;
}

/* Slot s as the full shape (R, dims): itself, or expanded into a new
 * float32 intermediate by a reorder from its zero-stride view. */
static int32_t expanded(builder *b, int32_t s, int32_t R, const int64_t *dims) {
    if (same_shape(&b->p->slots[s], R, dims)) return s;
    dnnl_memory_desc_t md;
    if (!broadcast_md(&b->p->slots[s], R, dims, 0, 0, dnnl_f32, &md)) return dx_fail(b, "its inputs do not broadcast"), -1;
    int32_t v = view_in(b, s, R, dims, &md);
    int32_t t = v >= 0 ? temp(b, "(expanded)", R, dims, dnnl_f32) : -1;
    if (t < 0 || !dx_add_reorder(b, v, t)) return -1;
    return t;
}

/* Slot s seen with rank R (leading 1s): the form oneDNN's binary wants
 * for a broadcast operand. */
static int32_t ranked(builder *b, int32_t s, int32_t R) {
    slot *sl = &b->p->slots[s];
    if (sl->rank == R) return s;
    int64_t dims[MAXR];
    for (int32_t d = 0; d < R; d++) {
        int32_t e = d - (R - sl->rank);
        dims[d] = e >= 0 ? sl->dims[e] : 1;
    }
    return view_in(b, s, R, dims, NULL);
}

/* ---- comparisons ---- */

static bool supports_compare(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_inputs != 2 || !n->inputs[1].name) return dx_refuse(why, wn, "%s needs two inputs", n->op_type);
    for (int32_t k = 0; k < 2; k++)
        if (!held_input(n, k, why, wn)) return false;
    return held_output(n, why, wn);
}

static dnnl_alg_kind_t compare_alg(const seam_node_view *n, bool swapped) {
    static const dnnl_alg_kind_t algs[] = {dnnl_binary_eq, dnnl_binary_gt, dnnl_binary_lt, dnnl_binary_ge, dnnl_binary_le};
    static const dnnl_alg_kind_t mirror[] = {dnnl_binary_eq, dnnl_binary_lt, dnnl_binary_gt, dnnl_binary_le, dnnl_binary_ge};
    for (size_t k = 0; k < sizeof(algs) / sizeof(algs[0]); k++)
        if (is_op(n, compare_ops[k])) return swapped ? mirror[k] : algs[k];
    return dnnl_alg_kind_undef;
}

static bool compile_compare(builder *b, bool *fused, const dx_io *io) {
    int32_t s0 = plain_input(b, 0), s1 = s0 >= 0 ? plain_input(b, 1) : -1;
    if (s1 < 0) return false;
    const slot *in[2] = {&b->p->slots[s0], &b->p->slots[s1]};
    int32_t R;
    int64_t dims[MAXR];
    if (!broadcast_shape(in, 2, &R, dims)) return dx_fail(b, "its inputs do not broadcast"), false;
    int32_t out = out_slot(b, &R, dims, dims, R);
    if (out < 0) return false;
    if (!numel(R, dims)) return true;
    /* oneDNN broadcasts src1 only */
    bool swap = !same_shape(&b->p->slots[s0], R, dims) && same_shape(&b->p->slots[s1], R, dims);
    if (swap) {
        int32_t t = s0;
        s0 = s1, s1 = t;
    }
    s0 = expanded(b, s0, R, dims);
    s1 = s0 >= 0 ? ranked(b, s1, R) : -1;
    if (s1 < 0) return false;
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    return binary_step(b, compare_alg(b->n, swap), s0, s1, out, NULL, 0);
}

/* ---- Where ---- */

static bool supports_where(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_inputs != 3 || !n->inputs[1].name || !n->inputs[2].name) return dx_refuse(why, wn, "Where needs three inputs");
    if (n->inputs[0].dtype != SEAM_DTYPE_BOOL)
        return dx_refuse(why, wn, "Where with a %s condition", seam_dtype_name(n->inputs[0].dtype));
    for (int32_t k = 1; k < 3; k++)
        if (!held_input(n, k, why, wn)) return false;
    return held_output(n, why, wn);
}

/* Slot s (float32, dense, full shape: numel elements) seen as numel * 4 bytes. */
static int32_t as_bytes(builder *b, int32_t s, int64_t count) {
    dnnl_dims_t dims = {count * 4};
    dnnl_memory_desc_t md;
    if (dnnl_memory_desc_init_by_tag(&md, 1, dims, dnnl_u8, dnnl_a) != dnnl_success) return dx_fail(b, "bad bytes"), -1;
    int64_t d = count * 4;
    return view_in(b, s, 1, &d, &md);
}

static bool compile_where(builder *b, bool *fused, const dx_io *io) {
    int32_t sc = plain_input(b, 0), sa = sc >= 0 ? plain_input(b, 1) : -1, sb = sa >= 0 ? plain_input(b, 2) : -1;
    if (sb < 0) return false;
    const slot *in[3] = {&b->p->slots[sc], &b->p->slots[sa], &b->p->slots[sb]};
    int32_t R;
    int64_t dims[MAXR];
    if (!broadcast_shape(in, 3, &R, dims)) return dx_fail(b, "its inputs do not broadcast"), false;
    int32_t out = out_slot(b, &R, dims, dims, R);
    if (out < 0) return false;
    int32_t cnt = numel(R, dims);
    if (cnt < 0) return dx_fail(b, "its output is too large"), false;
    if (!cnt) return true;
    /* the condition over each float's 4 bytes */
    dnnl_memory_desc_t cmd;
    if (!broadcast_md(&b->p->slots[sc], R, dims, 1, 4, dnnl_f32, &cmd)) return dx_fail(b, "its inputs do not broadcast"), false;
    int64_t cdims[MAXR + 1];
    memcpy(cdims, dims, sizeof(int64_t) * (size_t)R);
    cdims[R] = 4;
    int32_t cv = view_in(b, sc, R + 1, cdims, &cmd);
    int32_t m = cv >= 0 ? temp(b, "(where mask)", R + 1, cdims, dnnl_u8) : -1;
    if (m < 0 || !dx_add_reorder(b, cv, m)) return false;
    sa = expanded(b, sa, R, dims);
    sb = sa >= 0 ? expanded(b, sb, R, dims) : -1;
    if (sb < 0) return false;
    /* the result: in place when float32, else through a float32 copy */
    bool direct = slot_type(&b->p->slots[out]) == dnnl_f32 && !b->p->slots[out].has_md;
    int32_t res = direct ? out : temp(b, "(where result)", R, dims, dnnl_f32);
    if (res < 0) return false;
    int64_t bytes = (int64_t)cnt * 4;
    int32_t ab = as_bytes(b, sa, cnt), bb = ab >= 0 ? as_bytes(b, sb, cnt) : -1;
    int32_t ob = bb >= 0 ? as_bytes(b, res, cnt) : -1;
    int32_t mb = ob >= 0 ? view_in(b, m, 1, &bytes, &b->p->slots[ob].md) : -1;
    if (mb < 0) return false;
    post po[2] = {{dnnl_binary_mul, mb, 0, 0}, {dnnl_binary_add, bb, 0, 0}};
    if (!binary_step(b, dnnl_binary_sub, ab, bb, ob, po, 2)) return false;
    return direct || dx_add_reorder(b, res, out);
}

/* ---- Expand and Tile ---- */

static bool shape_param(const seam_node_view *n, const char *what, char *why, size_t wn) {
    if (n->n_inputs != 2 || !n->inputs[1].name) return dx_refuse(why, wn, "%s needs two inputs", n->op_type);
    if (n->inputs[1].dtype != SEAM_DTYPE_INT64)
        return dx_refuse(why, wn, "%s with %s of type %s", n->op_type, what, seam_dtype_name(n->inputs[1].dtype));
    if (!held_input(n, 0, why, wn)) return false;
    return held_output(n, why, wn);
}

static bool supports_expand(const seam_node_view *n, char *why, size_t wn) { return shape_param(n, "a shape", why, wn); }
static bool supports_tile(const seam_node_view *n, char *why, size_t wn) { return shape_param(n, "repeats", why, wn); }

static bool compile_expand(builder *b, bool *fused, const dx_io *io) {
    int32_t s = plain_input(b, 0);
    if (s < 0) return false;
    int64_t shape[MAXR];
    int32_t ns = dx_const_ints(b, &b->n->inputs[1], shape, MAXR);
    if (ns < 0) return dx_fail(b, "its shape must be known when compiled (at most 6 values)"), false;
    /* the output: the broadcast of the input's shape and `shape` */
    slot sh;
    memset(&sh, 0, sizeof(sh));
    sh.rank = ns;
    for (int32_t d = 0; d < ns; d++) {
        if (shape[d] < 0) return dx_fail(b, "its shape has a negative size"), false;
        sh.dims[d] = shape[d];
    }
    const slot *in[2] = {&b->p->slots[s], &sh};
    int32_t R;
    int64_t dims[MAXR];
    if (!broadcast_shape(in, 2, &R, dims)) return dx_fail(b, "its input does not broadcast to its shape"), false;
    int32_t out = out_slot(b, &R, dims, dims, R);
    if (out < 0) return false;
    if (!numel(R, dims)) return true;
    dnnl_memory_desc_t md;
    if (!broadcast_md(&b->p->slots[s], R, dims, 0, 0, dnnl_f32, &md)) return dx_fail(b, "bad broadcast"), false;
    int32_t v = view_in(b, s, R, dims, &md);
    return v >= 0 && dx_add_reorder(b, v, out);
}

static bool compile_tile(builder *b, bool *fused, const dx_io *io) {
    int32_t s = plain_input(b, 0);
    if (s < 0) return false;
    int64_t rep[MAXR];
    slot *in = &b->p->slots[s];
    int32_t r = in->rank;
    if (dx_const_ints(b, &b->n->inputs[1], rep, MAXR) != r)
        return dx_fail(b, "its repeats must be known when compiled, one per axis"), false;
    int64_t want[MAXR];
    for (int32_t d = 0; d < r; d++) {
        if (rep[d] < 0) return dx_fail(b, "a negative repeat"), false;
        if (in->dims[d] && rep[d] > IR_MAX_DIM / in->dims[d]) return dx_fail(b, "its repeats are too large"), false;
        want[d] = in->dims[d] * rep[d];
    }
    int32_t R;
    int64_t dims[MAXR];
    int32_t out = out_slot(b, &R, dims, want, r);
    if (out < 0) return false;
    if (!numel(R, dims)) return true;
    in = &b->p->slots[s];
    /* out seen as [rep0, d0, rep1, d1, ...] (a repeat of 1 left out); the
     * input the same, with stride 0 along the repeats */
    int64_t ist[MAXR], ost[MAXR];
    dense_strides(r, in->dims, ist);
    dense_strides(r, dims, ost);
    dnnl_dims_t vd, is, os;
    int32_t nd = 0;
    for (int32_t d = 0; d < r; d++) {
        if (rep[d] != 1) vd[nd] = rep[d], is[nd] = 0, os[nd] = in->dims[d] * ost[d], nd++;
        vd[nd] = in->dims[d], is[nd] = ist[d], os[nd] = ost[d], nd++;
    }
    if (!nd) vd[0] = 1, is[0] = os[0] = 1, nd = 1;
    dnnl_memory_desc_t imd, omd;
    if (dnnl_memory_desc_init_by_strides(&imd, nd, vd, dnnl_f32, is) != dnnl_success ||
        dnnl_memory_desc_init_by_strides(&omd, nd, vd, slot_type(&b->p->slots[out]), os) != dnnl_success)
        return dx_fail(b, "bad repeats"), false;
    int32_t iv = view_in(b, s, r, in->dims, &imd), ov = iv >= 0 ? view_in(b, out, R, dims, &omd) : -1;
    return ov >= 0 && dx_add_reorder(b, iv, ov);
}

/* ---- Cast ---- */

static bool supports_cast(const seam_node_view *n, char *why, size_t wn) {
    int64_t to = node_attr_int(dx_ir(n), "to", 0);
    seam_dtype from = n->inputs[0].dtype;
    if (!held_output(n, why, wn)) return false;
    if (n->outputs[0].dtype != (seam_dtype)to) return dx_refuse(why, wn, "Cast whose output type is not its 'to'");
    if (from == SEAM_DTYPE_INT32 && !dx_const_input(n, 0) && to != SEAM_DTYPE_FLOAT32)
        return dx_refuse(why, wn, "Cast from a computed int32 to %s: dnnl holds integers in float32, exact only up to 2^24",
                         seam_dtype_name((seam_dtype)to));
    if (from != SEAM_DTYPE_INT32 && !held_input(n, 0, why, wn)) return false;
    /* the conversions whose result is the held value: wrapping (uint8 200
     * to int8) and saturation differ, so those between int8 and uint8 are
     * left to the CPU */
    if ((from == SEAM_DTYPE_UINT8 && to == SEAM_DTYPE_INT8) || (from == SEAM_DTYPE_INT8 && to == SEAM_DTYPE_UINT8) ||
        ((from == SEAM_DTYPE_INT32 || from == SEAM_DTYPE_INT64) && (to == SEAM_DTYPE_INT8 || to == SEAM_DTYPE_UINT8)))
        return dx_refuse(why, wn, "Cast from %s to %s wraps around on the CPU; oneDNN saturates", seam_dtype_name(from),
                         seam_dtype_name((seam_dtype)to));
    return true;
}

/* trunc(x) of float32 slot s into dst: sign(x) * (round(|x|) - (round(|x|) > |x|)). */
static bool trunc_steps(builder *b, int32_t s, int32_t dst, int32_t R, const int64_t *dims) {
    int32_t ax = temp(b, "(cast |x|)", R, dims, dnnl_f32), ra = ax >= 0 ? temp(b, "(cast round)", R, dims, dnnl_f32) : -1;
    int32_t nf = ra >= 0 ? temp(b, "(cast -floor)", R, dims, dnnl_f32) : -1;
    int32_t ns = nf >= 0 ? temp(b, "(cast -sign)", R, dims, dnnl_f32) : -1;
    int32_t zero = ns >= 0 ? scalar_slot(b, R, 0.0f) : -1;
    if (zero < 0) return false;
    post sub = {dnnl_binary_sub, ra, 0, 0};         /* (ra > |x|) - ra = -floor(|x|) */
    post lin = {dnnl_eltwise_linear, -1, 2.0f, -1.0f}; /* 2 * (x < 0) - 1 = -sign(x) */
    return eltwise_step(b, dnnl_eltwise_abs, s, ax) && eltwise_step(b, dnnl_eltwise_round, ax, ra) &&
           binary_step(b, dnnl_binary_gt, ra, ax, nf, &sub, 1) && binary_step(b, dnnl_binary_lt, s, zero, ns, &lin, 1) &&
           binary_step(b, dnnl_binary_mul, nf, ns, dst, NULL, 0);
}

static bool compile_cast(builder *b, bool *fused, const dx_io *io) {
    int32_t s = plain_input(b, 0);
    if (s < 0) return false;
    const seam_node_view *n = b->n;
    seam_dtype from = n->inputs[0].dtype, to = (seam_dtype)node_attr_int(dx_ir(n), "to", 0);
    slot *in = &b->p->slots[s];
    int32_t R = in->rank;
    int64_t dims[MAXR];
    memcpy(dims, in->dims, sizeof(dims));
    int32_t out = out_slot(b, &R, dims, in->dims, in->rank);
    if (out < 0) return false;
    if (!numel(R, dims)) return true;
    if (to == SEAM_DTYPE_BOOL) { /* x != 0 */
        int32_t zero = scalar_slot(b, R, 0.0f);
        return zero >= 0 && binary_step(b, dnnl_binary_ne, s, zero, out, NULL, 0);
    }
    bool truncate = from == SEAM_DTYPE_FLOAT32 && to != SEAM_DTYPE_FLOAT32;
    if (truncate) { /* in float32 (a binary writing int32 is oneDNN's reference kernel), then to out's type */
        bool direct = slot_type(&b->p->slots[out]) == dnnl_f32 && !b->p->slots[out].has_md;
        int32_t res = direct ? out : temp(b, "(cast result)", R, dims, dnnl_f32);
        return res >= 0 && trunc_steps(b, s, res, R, dims) && (direct || dx_add_reorder(b, res, out));
    }
    return dx_add_reorder(b, s, out); /* the held value, in the output's type at the boundary */
}

/* (values other than float32 are held in float32, see mask.h) */
const dx_op dx_mask_rows[] = {
    {"Equal", STAGE_PLAIN, supports_compare, compile_compare},
    {"Greater", STAGE_PLAIN, supports_compare, compile_compare},
    {"Less", STAGE_PLAIN, supports_compare, compile_compare},
    {"GreaterOrEqual", STAGE_PLAIN, supports_compare, compile_compare},
    {"LessOrEqual", STAGE_PLAIN, supports_compare, compile_compare},
    {"Where", STAGE_PLAIN, supports_where, compile_where},
    {"Expand", STAGE_PLAIN, supports_expand, compile_expand},
    {"Tile", STAGE_PLAIN, supports_tile, compile_tile},
    {"Cast", STAGE_PLAIN, supports_cast, compile_cast},
    {NULL, STAGE_VIEW, NULL, NULL},
};
