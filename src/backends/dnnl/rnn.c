/*
 * dnnl: LSTM and GRU on oneDNN's lstm_forward, gru_forward and
 * lbr_gru_forward (GRU with linear_before_reset=1, as torch exports it):
 * one layer, forward, reverse or bidirectional. ONNX and oneDNN lay out the
 * same numbers differently (for LSTM; GRU alike with 3 gates, z r h in
 * both, no c state, and for lbr_gru a fourth bias row, R's bias of h):
 *
 *               ONNX                        oneDNN
 *   X           [T, B, I]                   src_layer [T, B, I] (tnc)
 *   W           [D, 4H, I], gates i o f c   weights_layer [1, D, I, 4, H], gates i f c o (ldigo)
 *   R           [D, 4H, H]                  weights_iter [1, D, H, 4, H]
 *   B           [D, 8H] (Wb then Rb)        bias [1, D, 4, H] (their sum, ldgo)
 *   initial_h/c [D, B, H]                   src_iter(_c) [1, D, B, H] (the same bytes)
 *   Y           [T, D, B, H]                dst_layer [T, B, D*H] (the same bytes when D = 1)
 *   Y_h, Y_c    [D, B, H]                   dst_iter(_c) [1, D, B, H]
 *
 * The weights are rearranged once at compile time, then reordered into the
 * layout the primitive picks. What oneDNN's cells do not compute is
 * refused: other activations, clip, input_forget, peepholes,
 * sequence_lens, layout=1; and batch 1, where the CPU kernel is faster.
 */
#include <stdlib.h>
#include <string.h>

#include "rnn.h"
#include "ops/attr.h"

/* A cell: its gates, where oneDNN's gate g is in ONNX's order, its bias
 * rows, whether it has the c state. */
typedef struct cell {
    int32_t gates;
    int32_t onnx_gate[4];
    int32_t bias_rows; /* 4 for lbr_gru: the 4th is R's bias of the candidate gate */
    bool lstm, lbr;
} cell;

static cell cell_of(const seam_node_view *n) {
    if (is_op(n, "LSTM")) return (cell){4, {0, 2, 3, 1}, 4, true, false}; /* i f c o from i o f c */
    bool lbr = node_attr_int(dx_ir(n), "linear_before_reset", 0) != 0;
    return (cell){3, {0, 1, 2, 0}, lbr ? 4 : 3, false, lbr}; /* z r h in both */
}

static bool attr_strings_are(const ir_node *n, const char *name, const char *const *want, int32_t cnt) {
    const ir_attr *a = node_attr(n, name);
    if (!a) return true;
    if (a->kind != IR_ATTR_STRINGS || a->n != cnt) return false;
    for (int32_t k = 0; k < cnt; k++)
        if (a->strings[k].len != strlen(want[k]) || memcmp(a->strings[k].data, want[k], a->strings[k].len))
            return false;
    return true;
}

static int32_t directions(const ir_node *ir) {
    const char *dir = node_attr_string(ir, "direction", "forward");
    return !strcmp(dir, "forward") || !strcmp(dir, "reverse") ? 1 : !strcmp(dir, "bidirectional") ? 2 : 0;
}

static bool supports_rnn(const seam_node_view *n, char *why, size_t wn) {
    const ir_node *ir = dx_ir(n);
    static const char *const lstm_acts[] = {"Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Tanh"};
    static const char *const gru_acts[] = {"Sigmoid", "Tanh", "Sigmoid", "Tanh"};
    cell c = cell_of(n);
    const char *op = n->op_type;
    int32_t d = directions(ir), n_states = c.lstm ? 2 : 1;
    int64_t h = node_attr_int(ir, "hidden_size", -1), g = c.gates;
    if (!d) return dx_refuse(why, wn, "%s direction=%s is not supported", op, node_attr_string(ir, "direction", "?"));
    if (node_attr_int(ir, "layout", 0)) return dx_refuse(why, wn, "%s layout=1 is not supported", op);
    if (node_attr_int(ir, "input_forget", 0)) return dx_refuse(why, wn, "%s input_forget=1 is not supported", op);
    if (node_attr(ir, "clip")) return dx_refuse(why, wn, "%s with clip is not supported", op);
    if (!attr_strings_are(ir, "activations", c.lstm ? lstm_acts : gru_acts, (c.lstm ? 3 : 2) * d) ||
        node_attr(ir, "activation_alpha") || node_attr(ir, "activation_beta"))
        return dx_refuse(why, wn, "%s with activations other than its defaults is not supported", op);
    if (n->n_inputs > 4 && n->inputs[4].name) return dx_refuse(why, wn, "%s with sequence_lens is not supported", op);
    if (c.lstm && n->n_inputs > 7 && n->inputs[7].name)
        return dx_refuse(why, wn, "LSTM with peepholes (P) is not supported");
    if (n->n_inputs < 3 || !dx_const_input(n, 1) || !dx_const_input(n, 2) || !dx_const_input(n, 3))
        return dx_refuse(why, wn, "%s with weights that are not constant is not supported", op);
    const seam_value_info *x = &n->inputs[0];
    if (x->rank != 3 || h < 1) return dx_refuse(why, wn, "%s needs X of rank 3 and hidden_size", op);
    int64_t t = x->dims[0], b = x->dims[1], in = x->dims[2];
    const seam_value_info *w = &n->inputs[1], *r = &n->inputs[2];
    /* (a size not known yet, -1, matches: compile sees the run's) */
    if (w->rank != 3 || w->dims[0] != d || w->dims[1] != g * h || (in >= 0 && w->dims[2] != in) || r->rank != 3 ||
        r->dims[0] != d || r->dims[1] != g * h || r->dims[2] != h)
        return dx_refuse(why, wn, "%s weights of the wrong shape", op);
    if (n->n_inputs > 3 && n->inputs[3].name && dx_value_numel(&n->inputs[3]) != d * 2 * g * h)
        return dx_refuse(why, wn, "%s bias of the wrong shape", op);
    for (int32_t k = 5; k < 5 + n_states && k < n->n_inputs; k++)
        if (n->inputs[k].name && b >= 0 && dx_value_numel(&n->inputs[k]) >= 0 && dx_value_numel(&n->inputs[k]) != d * b * h)
            return dx_refuse(why, wn, "%s initial state of the wrong shape", op);
    int64_t want[3][4] = {{t, d, b, h}, {d, b, h, 0}, {d, b, h, 0}};
    for (int32_t k = 0; k < n->n_outputs; k++) {
        const seam_value_info *o = &n->outputs[k];
        if (!o->name) continue;
        bool ok = k <= n_states && o->rank == (k ? 3 : 4);
        for (int32_t j = 0; ok && j < o->rank; j++) ok = o->dims[j] < 0 || want[k][j] < 0 || o->dims[j] == want[k][j];
        if (!ok) return dx_refuse(why, wn, "%s output %d of the wrong shape", op, k);
    }
    /* At batch 1 a step is a matrix-vector product, bound by reading R:
     * seam's CPU kernel keeps each thread's share of R in its core's cache
     * across steps and runs them as one parallel region; oneDNN's cell was
     * 1.4-2.5x slower there (hidden 128-512, 2 threads; bench/RESULTS.md).
     * From batch 4 on oneDNN's is the faster, so a batch not known before
     * the run stays here. */
    if (b == 1)
        return dx_refuse(why, wn, "%s at batch 1 runs faster on seam's CPU kernel than on oneDNN's recurrent primitive",
                         op);
    return true;
}

/* A compile-time buffer of `count` floats in a slot of the given dims,
 * plain; its bytes stay the program's (freed with it). */
static int32_t owned_slot(builder *b, const char *name, int32_t rank, const int64_t *dims, float **data) {
    seam_value_info v = {name, SEAM_DTYPE_FLOAT32, rank, dims, NULL};
    int32_t s = dx_add_slot(b->p, name, &v);
    if (s < 0) return -1;
    slot *sl = &b->p->slots[s];
    size_t bytes = (size_t)dx_slot_numel(sl) * sizeof(float);
    dnnl_memory_desc_t md;
    *data = calloc(1, bytes + 1);
    if (!*data || !dx_md_of(sl, &md) || dnnl_memory_create(&sl->mem, &md, dx_ctx.engine, *data) != dnnl_success) {
        free(*data);
        return -1;
    }
    sl->owned = *data;
    sl->constant = true;
    return s;
}

/* Slot s seen with other dims (the same bytes, plain). */
static int32_t reshaped(builder *b, int32_t s, int32_t rank, const int64_t *dims) {
    slot v;
    memset(&v, 0, sizeof(v));
    v.rank = rank;
    for (int32_t d = 0; d < rank; d++) v.dims[d] = dims[d];
    return dx_view_slot(b->p, s, &v, NULL);
}

/* The slots of one recurrent layer's primitive (see the table above). */
typedef struct rnn_slots {
    int32_t swl, swi, sbias; /* the rearranged weights and bias */
    int32_t sh, sc;          /* initial h and c, or -1 */
    int32_t outs[3];         /* Y, Y_h, Y_c, or -1 */
    int32_t dl, dh, dc;      /* dst_layer, dst_iter, dst_iter_c (or -1) */
} rnn_slots;

/* W, R and B rearranged once (ldigo, ldgo) into owned slots. */
static bool rnn_weights(builder *b, const cell *cl, int32_t nd, int64_t h, int64_t in, rnn_slots *rs) {
    const seam_node_view *n = b->n;
    int32_t g4 = cl->gates;
    seam_tensor_view wv, rv, bv;
    bool has_b = n->n_inputs > 3 && n->inputs[3].name;
    if (!seam_subgraph_constant(b->sg, n->inputs[1].name, &wv) ||
        !seam_subgraph_constant(b->sg, n->inputs[2].name, &rv) ||
        (has_b && !seam_subgraph_constant(b->sg, n->inputs[3].name, &bv)))
        return dx_fail(b, "W, R and B must be constants"), false;
    if (wv.dtype != SEAM_DTYPE_FLOAT32 || rv.dtype != SEAM_DTYPE_FLOAT32 || (has_b && bv.dtype != SEAM_DTYPE_FLOAT32) ||
        wv.nbytes != (size_t)(nd * g4 * h * in) * 4 || rv.nbytes != (size_t)(nd * g4 * h * h) * 4 ||
        (has_b && bv.nbytes != (size_t)(nd * 2 * g4 * h) * 4))
        return dx_fail(b, "W, R or B of the wrong type or size"), false;
    /* the weights and bias rearranged (ldigo, ldgo) */
    dnnl_dims_t wl_dims = {1, nd, in, g4, h}, wi_dims = {1, nd, h, g4, h}, b_dims = {1, nd, cl->bias_rows, h};
    float *wl, *wi, *bias;
    rs->swl = owned_slot(b, "(rnn weights_layer)", 5, wl_dims, &wl);
    rs->swi = rs->swl >= 0 ? owned_slot(b, "(rnn weights_iter)", 5, wi_dims, &wi) : -1;
    rs->sbias = rs->swi >= 0 ? owned_slot(b, "(rnn bias)", 4, b_dims, &bias) : -1;
    if (rs->sbias < 0) return dx_fail(b, "out of memory"), false;
    const float *W = wv.data, *R = rv.data, *B = has_b ? bv.data : NULL;
    for (int64_t d = 0; d < nd; d++)
        for (int32_t g = 0; g < g4; g++) {
            int64_t og = cl->onnx_gate[g], nb = cl->bias_rows;
            const float *wb = B ? B + d * 2 * g4 * h : NULL, *rb = wb ? wb + g4 * h : NULL; /* Wb, Rb */
            for (int64_t o = 0; o < h; o++) {
                int64_t row = (d * g4 + og) * h + o; /* in W and R: [d][og*H + o] */
                for (int64_t i = 0; i < in; i++) wl[((d * in + i) * g4 + g) * h + o] = W[row * in + i];
                for (int64_t i = 0; i < h; i++) wi[((d * h + i) * g4 + g) * h + o] = R[row * h + i];
                if (!wb) continue;
                if (cl->lbr && g == 2) /* the candidate: Wb here, Rb in the 4th row (applied before r) */
                    bias[(d * nb + 2) * h + o] = wb[og * h + o], bias[(d * nb + 3) * h + o] = rb[og * h + o];
                else
                    bias[(d * nb + g) * h + o] = wb[og * h + o] + rb[og * h + o];
            }
        }
    return true;
}

/* The states and outputs: ONNX's [D, B, H] states seen as [1, D, B, H]; Y
 * directly when D = 1 (else through a [T, B, 2H] copy), Y_h and Y_c. */
static bool rnn_states(builder *b, const cell *cl, int32_t nd, int64_t t, int64_t bt, int64_t h, rnn_slots *rs) {
    const seam_node_view *n = b->n;
    int32_t n_states = cl->lstm ? 2 : 1;
    int64_t st_dims[4] = {1, nd, bt, h};
    rs->sh = -1, rs->sc = -1;
    for (int32_t k = 5; k < 5 + n_states && k < n->n_inputs; k++) {
        if (!n->inputs[k].name) continue;
        int32_t s = dx_input_slot(b, &n->inputs[k]);
        if (s >= 0) s = dx_as_plain(b, s);
        if (s >= 0) s = reshaped(b, s, 4, st_dims);
        if (s < 0) return dx_fail(b, "an initial state is not available"), false;
        if (k == 5) rs->sh = s;
        else rs->sc = s;
    }
    int32_t *outs = rs->outs;
    outs[0] = outs[1] = outs[2] = -1;
    for (int32_t k = 0; k <= n_states && k < n->n_outputs; k++)
        if (n->outputs[k].name) {
            n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
            if ((outs[k] = dx_output_slot(b, &n->outputs[k])) < 0) return dx_fail(b, "out of memory"), false;
        }
    int64_t layer_dims[3] = {t, bt, nd * h};
    if (outs[0] >= 0 && nd == 1) {
        rs->dl = reshaped(b, outs[0], 3, layer_dims);
    } else {
        slot like;
        memset(&like, 0, sizeof(like));
        like.name = "(rnn dst_layer)", like.rank = 3;
        for (int32_t d = 0; d < 3; d++) like.dims[d] = layer_dims[d];
        dnnl_memory_desc_t md;
        rs->dl = dx_md_of(&like, &md) ? dx_temp_slot(b, &like, &md) : -1;
    }
    /* oneDNN takes the states h and c both or neither: a missing one is
     * zeros (an input) or a scratch slot (an output) */
    if (cl->lstm && (rs->sh < 0) != (rs->sc < 0)) {
        float *zeros;
        int32_t z = owned_slot(b, "(rnn zero state)", 4, st_dims, &zeros);
        if (z < 0) return dx_fail(b, "out of memory"), false;
        if (rs->sh < 0) rs->sh = z;
        else rs->sc = z;
    }
    rs->dh = outs[1] >= 0 ? reshaped(b, outs[1], 4, st_dims) : -1;
    rs->dc = outs[2] >= 0 ? reshaped(b, outs[2], 4, st_dims) : -1;
    if (rs->dl < 0 || (outs[1] >= 0 && rs->dh < 0) || (outs[2] >= 0 && rs->dc < 0))
        return dx_fail(b, "out of memory"), false;
    if (cl->lstm && (rs->dh < 0) != (rs->dc < 0)) {
        slot like;
        dnnl_memory_desc_t md;
        memset(&like, 0, sizeof(like));
        like.name = "(rnn state)", like.rank = 4;
        for (int32_t d = 0; d < 4; d++) like.dims[d] = st_dims[d];
        int32_t s = dx_md_of(&like, &md) ? dx_temp_slot(b, &like, &md) : -1;
        if (s < 0) return dx_fail(b, "out of memory"), false;
        if (rs->dh < 0) rs->dh = s;
        else rs->dc = s;
    }
    return true;
}

/* The primitive descriptor of the layer (sin its src_layer), the weights
 * left for it to pick the layout of; NULL when oneDNN refuses it. */
static dnnl_primitive_desc_t rnn_prim(builder *b, const cell *cl, int32_t nd, int64_t h, int64_t in, int32_t sin,
                                      const rnn_slots *rs) {
    program *p = b->p;
    int32_t g4 = cl->gates;
    dnnl_dims_t wl_dims = {1, nd, in, g4, h}, wi_dims = {1, nd, h, g4, h};
    dnnl_memory_desc_t src_layer, src_iter, src_iter_c, any_wl, any_wi, bmd, dst_layer, dst_iter, dst_iter_c;
    int32_t sh = rs->sh, sc = rs->sc, dh = rs->dh, dc = rs->dc;
    dx_md_of(&p->slots[sin], &src_layer);
    if (sh >= 0) dx_md_of(&p->slots[sh], &src_iter);
    if (sc >= 0) dx_md_of(&p->slots[sc], &src_iter_c);
    dx_md_of(&p->slots[rs->sbias], &bmd);
    dx_md_of(&p->slots[rs->dl], &dst_layer);
    if (dh >= 0) dx_md_of(&p->slots[dh], &dst_iter);
    if (dc >= 0) dx_md_of(&p->slots[dc], &dst_iter_c);
    dnnl_memory_desc_init_by_tag(&any_wl, 5, wl_dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&any_wi, 5, wi_dims, dnnl_f32, dnnl_format_tag_any);
    const char *dir = node_attr_string(dx_ir(b->n), "direction", "forward");
    dnnl_rnn_direction_t rd = nd == 2 ? dnnl_bidirectional_concat
                              : !strcmp(dir, "reverse") ? dnnl_unidirectional_right2left
                                                        : dnnl_unidirectional_left2right;
    dnnl_rnn_desc_t desc;
    dnnl_primitive_desc_t pd;
    dnnl_status_t st =
        cl->lstm ? dnnl_lstm_forward_desc_init(&desc, dnnl_forward_inference, rd, &src_layer, sh >= 0 ? &src_iter : NULL,
                                               sc >= 0 ? &src_iter_c : NULL, &any_wl, &any_wi, &bmd, &dst_layer,
                                               dh >= 0 ? &dst_iter : NULL, dc >= 0 ? &dst_iter_c : NULL, 0)
        : cl->lbr ? dnnl_lbr_gru_forward_desc_init(&desc, dnnl_forward_inference, rd, &src_layer,
                                                   sh >= 0 ? &src_iter : NULL, &any_wl, &any_wi, &bmd, &dst_layer,
                                                   dh >= 0 ? &dst_iter : NULL, 0)
                  : dnnl_gru_forward_desc_init(&desc, dnnl_forward_inference, rd, &src_layer, sh >= 0 ? &src_iter : NULL,
                                               &any_wl, &any_wi, &bmd, &dst_layer, dh >= 0 ? &dst_iter : NULL, 0);
    if (st != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &desc, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return NULL;
    return pd;
}

/* Bidirectional: [T, B, 2H] (the directions side by side, slot dl) into Y
 * [T, 2, B, H] (slot y). */
static bool rnn_bidirectional_y(builder *b, int32_t nd, int64_t t, int64_t bt, int64_t h, int32_t dl, int32_t y) {
    int64_t four[4] = {t, bt, nd, h};
    dnnl_dims_t ydims = {t, bt, nd, h}, ystrides = {nd * bt * h, h, bt * h, 1};
    dnnl_memory_desc_t ymd;
    slot ys;
    memset(&ys, 0, sizeof(ys));
    ys.rank = 4;
    for (int32_t d = 0; d < 4; d++) ys.dims[d] = four[d];
    if (dnnl_memory_desc_init_by_strides(&ymd, 4, ydims, dnnl_f32, ystrides) != dnnl_success)
        return dx_fail(b, "bad Y"), false;
    int32_t from = reshaped(b, dl, 4, four), to = dx_view_slot(b->p, y, &ys, &ymd);
    if (from < 0 || to < 0) return dx_fail(b, "out of memory"), false;
    return dx_add_reorder(b, from, to);
}

static bool compile_rnn(builder *b, bool *fused, const dx_io *io) {
    const seam_node_view *n = b->n;
    const ir_node *ir = dx_ir(n);
    cell cl = cell_of(n);
    int32_t nd = directions(ir);
    int64_t h = node_attr_int(ir, "hidden_size", -1), t = n->inputs[0].dims[0], bt = n->inputs[0].dims[1],
            in = n->inputs[0].dims[2];
    rnn_slots rs;
    if (!rnn_weights(b, &cl, nd, h, in, &rs) || !rnn_states(b, &cl, nd, t, bt, h, &rs)) return false;
    /* the primitive, the weights in the layout it picks */
    dnnl_primitive_desc_t pd = rnn_prim(b, &cl, nd, h, in, io->sin, &rs);
    if (!pd) return dx_fail(b, "oneDNN refuses this recurrent layer"), false;
    int32_t wl_t = dx_resident_copy(b, rs.swl, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    int32_t wi_t = wl_t >= 0 ? dx_resident_copy(b, rs.swi, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1))
                             : -1;
    if (wi_t < 0) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "could not reorder the weights"), false;
    }
    int32_t kinds[9], slots[9], na = 0;
    kinds[na] = DNNL_ARG_SRC_LAYER, slots[na++] = io->sin;
    if (rs.sh >= 0) kinds[na] = DNNL_ARG_SRC_ITER, slots[na++] = rs.sh;
    if (rs.sc >= 0) kinds[na] = DNNL_ARG_SRC_ITER_C, slots[na++] = rs.sc;
    kinds[na] = DNNL_ARG_WEIGHTS_LAYER, slots[na++] = wl_t;
    kinds[na] = DNNL_ARG_WEIGHTS_ITER, slots[na++] = wi_t;
    kinds[na] = DNNL_ARG_BIAS, slots[na++] = rs.sbias;
    kinds[na] = DNNL_ARG_DST_LAYER, slots[na++] = rs.dl;
    if (rs.dh >= 0) kinds[na] = DNNL_ARG_DST_ITER, slots[na++] = rs.dh;
    if (rs.dc >= 0) kinds[na] = DNNL_ARG_DST_ITER_C, slots[na++] = rs.dc;
    bool ok = dx_add_prim(b, pd, na, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (!ok || rs.outs[0] < 0 || nd == 1) return ok;
    return rnn_bidirectional_y(b, nd, t, bt, h, rs.dl, rs.outs[0]);
}

const dx_op dx_rnn_rows[] = {
    {"LSTM", STAGE_PLAIN, supports_rnn, compile_rnn},
    {"GRU", STAGE_PLAIN, supports_rnn, compile_rnn},
    {NULL, STAGE_VIEW, NULL, NULL},
};
