/*
 * dnnl: the quantized Concat (part of the dynamic-quantization family's
 * file set, see quant_dyn.h): DQ(a), DQ(b), ... -> Concat -> Q.
 *
 * In the QDQ form a Concat runs in float32 between DequantizeLinear nodes
 * and a QuantizeLinear: a reorder to float per input, the float concat,
 * two reorders back, all over the whole tensor. Here the 8-bit values are
 * concatenated (oneDNN's concat in their layout); an input whose scale or
 * zero point differs from the output's is first requantized by one host
 * pass in the QDQ form's own float32 arithmetic,
 *     y = saturate(round((x - zx) * sx / sy) + zy)
 * (DQ's product, Q's division, rounding half to even), and one whose
 * parameters are the output's is taken as it is: Q(DQ(x)) is x exactly,
 * since (x - z) * s / s rounds back to the integer x - z. The result is
 * the nodes' to the bit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/attr.h"
#include "quant_dyn.h"

typedef struct requant {
    int64_t count;
    float sx, zx, sy, zy;
    bool x8s, y8s; /* int8, else uint8 */
} requant;

#define REQUANT_LOOP(TX, TY, LO, HI)                                           \
    for (int64_t i = 0; i < n; i++) {                                          \
        float v = ((float)((const TX *)x)[i] - k->zx) * k->sx / k->sy;         \
        v = v > -1024.0f ? v : -1024.0f; /* (saturated either way) */          \
        v = v < 1024.0f ? v : 1024.0f;                                         \
        v = ((v + big) - big) + k->zy;                                         \
        v = v < LO ? LO : v;                                                   \
        ((TY *)y)[i] = (TY)(int32_t)(v > HI ? HI : v);                         \
    }

DX_HOT static void requant_span(const requant *k, const void *x, void *y, int64_t n, float big) {
    if (!k->x8s && !k->y8s) REQUANT_LOOP(uint8_t, uint8_t, 0.0f, 255.0f)
    else if (!k->x8s) REQUANT_LOOP(uint8_t, int8_t, -128.0f, 127.0f)
    else if (!k->y8s) REQUANT_LOOP(int8_t, uint8_t, 0.0f, 255.0f)
    else REQUANT_LOOP(int8_t, int8_t, -128.0f, 127.0f)
}

static bool run_requant(const program *p, const step *st) {
    const requant *k = st->host_data;
    const uint8_t *x = dx_q_data(p, st->arg_slot[0]);
    uint8_t *y = dx_q_data(p, st->arg_slot[1]);
    float big = dx_round_big; /* (see quant.h) */
    DX_Q_CHUNKS(k->count, at, n, requant_span(k, x + at, y + at, n, big));
    return true;
}

/* What the pattern found: the Concat, the Q after it and, per input, the
 * DQ node and its parameters. */
typedef struct qconcat {
    int32_t concat, q, cnt;
    int32_t dq[MAX_ARGS - 1];
    double s[MAX_ARGS - 1], z[MAX_ARGS - 1];
    seam_dtype dt[MAX_ARGS - 1];
    double ys, yz;
    seam_dtype ydt;
    int64_t axis;
} qconcat;

/* Whether DQ node `self`'s output feeds such a chain; fills f. Fetches
 * other nodes. */
static bool find_chain(builder *b, const bool *fused, int32_t self, qconcat *f) {
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, self, &st);
    if (!m->outputs[0].name) return false;
    f->concat = dx_sole_reader(b, m->outputs[0].name);
    if (f->concat < 0 || fused[f->concat]) return false;
    m = seam_subgraph_node(b->sg, f->concat, &st);
    if (!is_op(m, "Concat") || m->n_inputs < 1 || m->n_inputs > MAX_ARGS - 1 || !m->outputs[0].name ||
        m->outputs[0].rank < 1)
        return false;
    f->cnt = m->n_inputs;
    int32_t rank = m->outputs[0].rank;
    f->axis = node_attr_int(dx_ir(m), "axis", 0);
    if (f->axis < 0) f->axis += rank;
    if (f->axis < 0 || f->axis >= rank) return false;
    const char *names[MAX_ARGS - 1];
    for (int32_t k = 0; k < f->cnt; k++) names[k] = m->inputs[k].name;
    f->q = dx_sole_reader(b, m->outputs[0].name);
    if (f->q < 0 || fused[f->q]) return false;
    m = seam_subgraph_node(b->sg, f->q, &st);
    if (!is_op(m, "QuantizeLinear") || !dx_q_is_8bit(m->outputs[0].dtype) || !dx_qdq_params(b, m, &f->ys, &f->yz))
        return false;
    f->ydt = m->outputs[0].dtype;
    for (int32_t k = 0; k < f->cnt; k++) {
        if (!names[k] || dx_sole_reader(b, names[k]) != f->concat) return false;
        /* (another of the DQ nodes may be waiting already: fused by this) */
        f->dq[k] = dx_producer_of(b, names[k]);
        if (f->dq[k] < 0) return false;
        m = seam_subgraph_node(b->sg, f->dq[k], &st);
        if (!is_op(m, "DequantizeLinear") || !dx_q_is_8bit(m->inputs[0].dtype) || m->inputs[0].rank != rank ||
            dx_const_input(m, 0) || !dx_qdq_params(b, m, &f->s[k], &f->z[k]))
            return false;
        f->dt[k] = m->inputs[0].dtype;
    }
    return true;
}

/* Input k's 8-bit value in layout `tag` (requantized to the output's type
 * and parameters when they are not its own); -1 on failure. */
static int32_t input_in(builder *b, const qconcat *f, int32_t k, int32_t src, dnnl_format_tag_t tag) {
    const slot *sl = &b->p->slots[src];
    dnnl_memory_desc_t md;
    dnnl_dims_t d;
    for (int32_t q = 0; q < sl->rank; q++) d[q] = sl->dims[q];
    dnnl_memory_desc_init_by_tag(&md, sl->rank, d, dx_q_dt(f->dt[k]), tag);
    int32_t s8 = dx_as_8bit(b, src, md.data_type, &md);
    if (s8 < 0 || (f->s[k] == f->ys && f->z[k] == f->yz && f->dt[k] == f->ydt)) return s8;
    md.data_type = dx_q_dt(f->ydt);
    int32_t t = dx_temp_slot(b, &b->p->slots[s8], &md);
    requant *rq = malloc(sizeof(*rq));
    if (t < 0 || !rq) return free(rq), -1;
    *rq = (requant){(int64_t)dnnl_memory_desc_get_size(&md), (float)f->s[k], (float)f->z[k], (float)f->ys, (float)f->yz,
                    f->dt[k] == SEAM_DTYPE_INT8, f->ydt == SEAM_DTYPE_INT8};
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {s8, t};
    return dx_add_host(b, "requantize", run_requant, rq, 2, kinds, slots) ? t : -1;
}

/* The concat primitive of the readied inputs in layout `like`; false when
 * oneDNN refuses it (nothing added) or on an error (b's error set). */
static bool concat_step(builder *b, const qconcat *f, const int32_t *srcs, dnnl_format_tag_t tag, bool *refused) {
    program *p = b->p;
    int32_t kinds[MAX_ARGS], slots[MAX_ARGS];
    dnnl_memory_desc_t mds[MAX_ARGS - 1], any_dst;
    *refused = false;
    for (int32_t k = 0; k < f->cnt; k++) {
        slots[k] = input_in(b, f, k, srcs[k], tag);
        if (slots[k] < 0) return dx_fail(b, "could not lay out a quantized Concat's input"), false;
        dx_md_of(&p->slots[slots[k]], &mds[k]);
        kinds[k] = DNNL_ARG_MULTIPLE_SRC + k;
    }
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, f->q, &st);
    dnnl_dims_t od;
    for (int32_t d = 0; d < m->outputs[0].rank; d++) od[d] = m->outputs[0].dims[d];
    dnnl_memory_desc_init_by_tag(&any_dst, m->outputs[0].rank, od, dx_q_dt(f->ydt), dnnl_format_tag_any);
    dnnl_primitive_desc_t pd;
    if (dnnl_concat_primitive_desc_create(&pd, &any_dst, f->cnt, (int)f->axis, mds, dx_ctx.user_scratch, dx_ctx.engine) !=
        dnnl_success)
        return *refused = true, false;
    int32_t final_slot = -1;
    m = seam_subgraph_node(b->sg, f->q, &st);
    int32_t sd = dx_result_slot(b, &m->outputs[0], dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &final_slot);
    kinds[f->cnt] = DNNL_ARG_DST, slots[f->cnt] = sd;
    bool ok = sd >= 0 && dx_add_prim(b, pd, f->cnt + 1, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (ok && final_slot >= 0) ok = dx_add_reorder(b, sd, final_slot);
    return ok || (dx_fail(b, "out of memory"), false);
}

int32_t dx_compile_qconcat_pattern(builder *b, bool *fused, int32_t sin) {
    program *p = b->p;
    const int32_t self = b->index;
    qconcat f;
    bool found = find_chain(b, fused, self, &f);
    b->n = seam_subgraph_node(b->sg, self, b->storage);
    if (!found) return 0;
    /* every DQ's input must be ready: until the last of them, the DQ
     * nodes wait (each is the Concat's alone), and the last makes it all */
    int32_t srcs[MAX_ARGS - 1];
    for (int32_t k = 0; k < f.cnt; k++) {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(b->sg, f.dq[k], &st);
        srcs[k] = f.dq[k] == self ? sin : dx_slot_of(p, m->inputs[0].name);
        if (srcs[k] < 0) { /* (not a constant: find_chain refuses those) */
            b->n = seam_subgraph_node(b->sg, self, b->storage);
            fused[self] = true;
            return 1;
        }
        if (p->slots[srcs[k]].lazy) srcs[k] = dx_as_plain(b, srcs[k]);
        if (srcs[k] < 0) return dx_fail(b, "could not copy a quantized Concat's input"), -1;
    }
    b->n = seam_subgraph_node(b->sg, self, b->storage);
    /* channels-last when the first input is (after an int8 convolution),
     * else plain */
    dnnl_format_tag_t tag = dx_plain_tag(p->slots[srcs[0]].rank);
    if (p->slots[srcs[0]].rank >= 3 && p->slots[srcs[0]].rank <= 5) {
        static const dnnl_format_tag_t cl[6] = {0, 0, 0, dnnl_acb, dnnl_acdb, dnnl_acdeb};
        dnnl_memory_desc_t have, want;
        dnnl_dims_t d;
        dx_md_of(&p->slots[srcs[0]], &have);
        for (int32_t k = 0; k < have.ndims; k++) d[k] = have.dims[k];
        dnnl_memory_desc_init_by_tag(&want, have.ndims, d, have.data_type, cl[have.ndims]);
        if (dnnl_memory_desc_equal(&have, &want)) tag = cl[have.ndims];
    }
    bool refused;
    if (!concat_step(b, &f, srcs, tag, &refused)) {
        if (!refused) return -1;
        if (!concat_step(b, &f, srcs, dx_plain_tag(p->slots[srcs[0]].rank), &refused))
            return refused ? (dx_fail(b, "oneDNN has no concat for these 8-bit inputs"), -1) : -1;
    }
    for (int32_t k = 0; k < f.cnt; k++) fused[f.dq[k]] = true;
    fused[f.concat] = fused[f.q] = true;
    int32_t requantized = 0;
    for (int32_t k = 0; k < f.cnt; k++) requantized += !(f.s[k] == f.ys && f.z[k] == f.yz && f.dt[k] == f.ydt);
    dx_log(p, "node %d (Concat): with its %d DequantizeLinear and node %d (QuantizeLinear): the 8-bit values "
              "concatenated, %d of them requantized to the output's scale first",
           f.concat, f.cnt, f.q, requantized);
    return 1;
}
