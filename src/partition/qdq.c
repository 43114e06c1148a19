/*
 * QDQ node units (issue 27): the quantized form ONNX Runtime's quantizer
 * writes, every quantized op between DequantizeLinear and QuantizeLinear,
 *
 *     x_q -> DQ -+
 *     w_q -> DQ -+-> Conv (-> Relu) -> Q -> y_q        (MatMul likewise)
 *     b   -> DQ -+
 *
 * becomes one node, QLinearConv (QLinearMatMul) reading x_q, w_q and the
 * scales and zero points directly and writing y_q: a unit that placement
 * can only put whole on one target, and that a target with int8 kernels
 * (dnnl) runs in int8, with no float round trip between units. A Relu
 * between the op and a Q whose zero point is the type's lowest value
 * clamps what the Q clamps anyway and goes with the unit.
 *
 * Conditions for a unit (anything else stays as the file has it, in
 * float): 8-bit x and w, per-tensor x, y and zero points; w constant, its
 * scale per tensor or per output channel (Conv: axis 0; MatMul: 2-D w,
 * axis 1, per column); the op's float output read by nothing but the Q
 * (or the Relu, read by nothing but the Q) and not a graph output; the
 * bias absent, a float constant, or a DQ of an int32 constant, requantized
 * to int32 at scale x_scale * w_scale[c] (QLinearConv's convention). A DQ
 * whose readers all became units goes; one still read elsewhere stays for
 * those readers.
 *
 * Then a DequantizeLinear of constants that is left (a Gemm's weights, a
 * bias) is folded into a float Constant (folded_op says what it was), so
 * a backend sees constant weights and it stops running at every run.
 *
 * Nodes a unit absorbed are removed from the graph: the plan shows the
 * unit as one node (named as its op node, its op the QLinear op), and the
 * note says how many units were made of which ops.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "ir/ir.h"
#include "ops/attr.h"
#include "ops/ops.h"
#include "partition/partition.h"
#include "seam_backend.h"

static bool is_std(const ir_node *n, const char *op) { return !n->domain[0] && !strcmp(n->op_type, op); }

/* The data of value v when it is a constant (an initializer no input
 * overrides, or a value inference knows), else NULL. */
static const ir_tensor *const_of(const ir_graph *g, int32_t v) {
    if (v < 0) return NULL;
    const ir_value *val = &g->values[v];
    if (val->flags & (IR_VALUE_INPUT | IR_VALUE_OUTER)) return NULL;
    if (val->flags & IR_VALUE_INIT) return val->init;
    return val->konst;
}

static bool is_8bit(int32_t dt) { return dt == SEAM_DTYPE_UINT8 || dt == SEAM_DTYPE_INT8; }

static int64_t attr_int(const ir_node *n, const char *name, int64_t dflt) {
    const ir_attr *a = ir_node_attr(n, name);
    return a && a->kind == IR_ATTR_INT ? a->i : dflt;
}

static int64_t zp_at(const ir_tensor *z, int64_t i) {
    if (!z) return 0;
    if (z->numel == 1) i = 0;
    return z->dtype == SEAM_DTYPE_UINT8 ? ((const uint8_t *)z->data)[i] : ((const int8_t *)z->data)[i];
}

/* A DequantizeLinear or QuantizeLinear (node index) with float32 scales
 * that are constant, finite and positive, zero points constant and of the
 * quantized type, `count` of them (1: per tensor) along `axis`. */
typedef struct qparams {
    int32_t node;
    int32_t q;                 /* the quantized value (DQ's input, Q's output) */
    int32_t scale, zp;         /* value indices (zp -1: absent) */
    const ir_tensor *s, *z;
    int32_t qtype;
    int64_t count;
} qparams;

static bool read_qparams(const ir_graph *g, int32_t node, bool dq, qparams *p) {
    if (node < 0) return false;
    const ir_node *n = &g->nodes[node];
    if (!is_std(n, dq ? "DequantizeLinear" : "QuantizeLinear") || n->n_inputs < 2 || n->n_outputs != 1 ||
        attr_int(n, "block_size", 0) != 0)
        return false;
    memset(p, 0, sizeof(*p));
    p->node = node;
    p->q = dq ? n->inputs[0] : n->outputs[0];
    p->scale = n->inputs[1];
    p->zp = n->n_inputs > 2 ? n->inputs[2] : -1;
    if (p->q < 0 || p->scale < 0) return false;
    const ir_type *qt = &g->values[p->q].type;
    if (qt->kind != IR_TYPE_TENSOR || !is_8bit(qt->elem)) return false;
    p->qtype = qt->elem;
    p->s = const_of(g, p->scale);
    p->z = p->zp >= 0 ? const_of(g, p->zp) : NULL;
    if (!p->s || p->s->dtype != SEAM_DTYPE_FLOAT32 || p->s->numel < 1 || p->s->rank > 1) return false;
    if (p->zp >= 0 && (!p->z || p->z->dtype != p->qtype || p->z->numel != p->s->numel)) return false;
    for (int64_t i = 0; i < p->s->numel; i++) {
        float s = ((const float *)p->s->data)[i];
        if (!(s > 0) || !isfinite(s)) return false; /* (the kernels say what is wrong with it) */
    }
    p->count = p->s->rank == 0 ? 1 : p->s->numel;
    return true;
}

static float scale_at(const qparams *p, int64_t i) { return ((const float *)p->s->data)[p->count == 1 ? 0 : i]; }

/* The per-tensor parameters of value v's producer, a DequantizeLinear. */
static bool dq_per_tensor(const ir_graph *g, int32_t v, qparams *p) {
    return v >= 0 && read_qparams(g, g->values[v].producer, true, p) && p->count == 1;
}

/* ---- building ---- */

typedef struct qdq_state {
    seam_context *ctx;
    seam_model *m;
    ir_graph *g;
    bool *dead;
    int32_t n_new_inits, cap_new_inits;
    int32_t *new_inits;
    bool dry; /* count the units, change nothing */
    ir_string_pair *members; /* (member, unit) names, kept where the member leaves */
    int32_t n_members, cap_members;
    seam_qdq_stats st;
} qdq_state;

/* A new initializer named after `base` (made unique), of the given type
 * and shape; its data (nbytes, zeroed) is returned through *data. */
static int32_t new_init(qdq_state *S, const char *base, const char *suffix, int32_t dtype, int32_t rank,
                        const int64_t *dims, void **data) {
    ir_graph *g = S->g;
    seam_arena *a = &S->m->arena;
    char name[300];
    snprintf(name, sizeof(name), "%s%s", base, suffix);
    for (int32_t k = 2; ir_graph_find(g, name) >= 0 && k < 1000; k++) snprintf(name, sizeof(name), "%s%s_%d", base, suffix, k);
    int64_t numel = 1;
    for (int32_t d = 0; d < rank; d++) numel *= dims[d];
    size_t nbytes = (size_t)numel * seam_dtype_size(dtype);
    ir_tensor *t = seam_arena_calloc(a, 1, sizeof(ir_tensor));
    char *nm = seam_arena_strdup(a, name);
    int64_t *td = seam_arena_calloc(a, (size_t)rank + 1, sizeof(int64_t));
    ir_dim *vd = seam_arena_calloc(a, (size_t)rank + 1, sizeof(ir_dim));
    void *buf = seam_arena_alloc_aligned(a, nbytes + 1, 64);
    if (!t || !nm || !td || !vd || !buf) return -1;
    memset(buf, 0, nbytes + 1);
    for (int32_t d = 0; d < rank; d++) td[d] = dims[d], vd[d] = (ir_dim){dims[d], NULL};
    *t = (ir_tensor){nm, NULL, dtype, rank, td, numel, buf, nbytes, NULL};
    int32_t v = ir_graph_add_value(g, nm);
    if (v < 0) return -1;
    ir_value *val = &g->values[v];
    val->flags = IR_VALUE_INIT;
    val->init = t;
    val->konst = t;
    val->type = (ir_type){IR_TYPE_TENSOR, dtype, rank, vd, NULL, NULL};
    if (S->n_new_inits == S->cap_new_inits) {
        int32_t cap = S->cap_new_inits ? 2 * S->cap_new_inits : 16;
        int32_t *p = realloc(S->new_inits, sizeof(int32_t) * (size_t)cap);
        if (!p) return -1;
        S->new_inits = p, S->cap_new_inits = cap;
    }
    S->new_inits[S->n_new_inits++] = v;
    *data = buf;
    return v;
}

/* A scalar zero point of type dtype (for a DQ or Q that had none). */
static int32_t zero_point(qdq_state *S, const char *base, int32_t dtype) {
    void *d;
    return new_init(S, base, "_zero_point", dtype, 0, NULL, &d);
}

static int32_t zp_or_zero(qdq_state *S, const qparams *p, const char *base) {
    return p->zp >= 0 ? p->zp : zero_point(S, base, p->qtype);
}

/* The bias as int32 at scale x_scale * w_scale[c]: from a float constant,
 * or from a DQ of an int32 constant at its own scale. -2: not possible. */
static int32_t int_bias(qdq_state *S, const ir_node *op, int32_t bv, const qparams *x, const qparams *w, int64_t m) {
    const ir_graph *g = S->g;
    const ir_tensor *f = const_of(g, bv);
    qparams bq;
    bool from_dq = false;
    const ir_node *dq = g->values[bv].producer >= 0 ? &g->nodes[g->values[bv].producer] : NULL;
    if (!f && dq && is_std(dq, "DequantizeLinear") && dq->n_inputs >= 2) {
        /* read_qparams takes 8-bit types; the bias is int32 */
        const ir_tensor *b = const_of(g, dq->inputs[0]);
        const ir_tensor *s = const_of(g, dq->inputs[1]);
        const ir_tensor *z = dq->n_inputs > 2 ? const_of(g, dq->inputs[2]) : NULL;
        if (!b || b->dtype != SEAM_DTYPE_INT32 || !s || s->dtype != SEAM_DTYPE_FLOAT32 || (dq->n_inputs > 2 && dq->inputs[2] >= 0 && !z))
            return -2;
        if (s->numel != 1 && s->numel != m) return -2;
        if (z && (z->dtype != SEAM_DTYPE_INT32 || z->numel != s->numel)) return -2;
        memset(&bq, 0, sizeof(bq));
        bq.s = s, bq.count = s->numel;
        f = b, from_dq = true;
        for (int64_t i = 0; z && i < z->numel; i++)
            if (((const int32_t *)z->data)[i] != 0) return -2;
    }
    if (!f || f->numel != m || (!from_dq && f->dtype != SEAM_DTYPE_FLOAT32)) return -2;
    if (S->dry) return 0;
    int32_t *out;
    int64_t dims[1] = {m};
    int32_t v = new_init(S, op->name ? op->name : "qdq", "_bias_int32", SEAM_DTYPE_INT32, 1, dims, (void **)&out);
    if (v < 0) return -1;
    for (int64_t c = 0; c < m; c++) {
        double val = from_dq ? (double)((const int32_t *)f->data)[c] * scale_at(&bq, c) : ((const float *)f->data)[c];
        double q = nearbyint(val / ((double)scale_at(x, 0) * scale_at(w, c)));
        if (!(fabs(q) < 2147483647.0)) return -2;
        out[c] = (int32_t)q;
    }
    return v;
}

/* The op node's float output goes (through a redundant Relu) to one
 * QuantizeLinear and nowhere else: its parameters in *y, the Relu's node
 * index in *relu (or -1). */
static bool find_q(const ir_graph *g, const ir_node *op, qparams *y, int32_t *relu) {
    *relu = -1;
    int32_t v = op->outputs[0];
    if (op->n_outputs != 1 || v < 0 || (g->values[v].flags & IR_VALUE_OUTPUT) || g->values[v].n_consumers != 1) return false;
    int32_t c = g->values[v].consumers[0];
    if (is_std(&g->nodes[c], "Relu")) {
        int32_t rv = g->nodes[c].outputs[0];
        if (g->nodes[c].n_outputs != 1 || rv < 0 || (g->values[rv].flags & IR_VALUE_OUTPUT) || g->values[rv].n_consumers != 1)
            return false;
        *relu = c;
        c = g->values[rv].consumers[0];
    }
    if (!read_qparams(g, c, false, y) || y->count != 1) return false;
    if (g->nodes[c].inputs[0] != (*relu >= 0 ? g->nodes[*relu].outputs[0] : v)) return false;
    /* the Relu is redundant when the Q's zero point is its type's lowest */
    if (*relu >= 0 && zp_at(y->z, 0) != (y->qtype == SEAM_DTYPE_UINT8 ? 0 : -128)) return false;
    return true;
}

static void note_member(qdq_state *S, int32_t member, const ir_node *unit) {
    if (member < 0 || !S->g->nodes[member].name || !unit->name) return;
    if (S->n_members == S->cap_members) {
        int32_t cap = S->cap_members ? 2 * S->cap_members : 32;
        ir_string_pair *p = realloc(S->members, sizeof(*p) * (size_t)cap);
        if (!p) return; /* (only pins by a member's name are lost) */
        S->members = p, S->cap_members = cap;
    }
    S->members[S->n_members++] = (ir_string_pair){S->g->nodes[member].name, unit->name};
}

/* Node i rewritten in place as a QLinear node with the given inputs,
 * writing the Q's output. */
static bool become(qdq_state *S, int32_t i, const char *op, const int32_t *ins, int32_t n_ins, const qparams *y) {
    ir_node *n = &S->g->nodes[i];
    int32_t *in = seam_arena_alloc(&S->m->arena, sizeof(int32_t) * (size_t)(n_ins + 1));
    int32_t *out = seam_arena_alloc(&S->m->arena, sizeof(int32_t) * 2);
    const seam_op_def *def = seam_op_find("", op, seam_op_opset(S->m, ""));
    if (!in || !out) return false;
    memcpy(in, ins, sizeof(int32_t) * (size_t)n_ins);
    out[0] = y->q;
    n->op_type = op;
    n->inputs = in, n->n_inputs = n_ins, n->n_implicit = 0;
    n->outputs = out, n->n_outputs = 1;
    n->def = def;
    if (!strcmp(op, "QLinearMatMul")) n->n_attrs = 0; /* (MatMul has none) */
    return true;
}

/* Node i, a Conv or MatMul, made a QLinearConv or QLinearMatMul with its
 * DQs and Q when it is the middle of a unit (see the top of the file);
 * its Q (and Relu) are marked dead, its DQs go later if nothing else
 * reads them. With S->dry, only counted. */
static bool try_unit(qdq_state *S, int32_t i) {
    ir_graph *g = S->g;
    const ir_node *n = &g->nodes[i];
    bool conv = is_std(n, "Conv"), mm = is_std(n, "MatMul");
    if ((!conv && !mm) || n->n_inputs < 2 || n->n_implicit) return false;
    qparams x, w, y;
    int32_t relu;
    if (!dq_per_tensor(g, n->inputs[0], &x) || !read_qparams(g, g->values[n->inputs[1]].producer, true, &w) ||
        !const_of(g, w.q) || !find_q(g, n, &y, &relu))
        return false;
    const ir_tensor *wt = const_of(g, w.q);
    const ir_node *wdq = &g->nodes[w.node];
    int64_t m;
    if (conv) {
        if (wt->rank < 3) return false;
        m = wt->dims[0];
        if (w.count != 1 && (w.count != m || attr_int(wdq, "axis", 1) != 0)) return false;
    } else {
        if (wt->rank != 2) return false;
        m = wt->dims[1];
        int64_t ax = attr_int(wdq, "axis", 1);
        if (w.count != 1 && (w.count != m || (ax != 1 && ax != -1))) return false;
    }
    int32_t bias = -1;
    if (conv && n->n_inputs > 2 && n->inputs[2] >= 0) {
        bias = int_bias(S, n, n->inputs[2], &x, &w, m);
        if (bias < 0) return false; /* (-2: not a unit; -1: out of memory) */
    }
    if (S->dry) {
        if (conv) S->st.conv_units++;
        else S->st.matmul_units++;
        if (relu >= 0) S->st.relus++;
        return true;
    }
    const char *base = n->name ? n->name : "qdq";
    int32_t xzp = zp_or_zero(S, &x, base), wzp = xzp >= 0 ? zp_or_zero(S, &w, base) : -1;
    int32_t yzp = wzp >= 0 ? zp_or_zero(S, &y, base) : -1;
    if (yzp < 0) return false;
    int32_t ins[9] = {x.q, x.scale, xzp, w.q, w.scale, wzp, y.scale, yzp, bias};
    note_member(S, y.node, n);
    note_member(S, relu, n);
    note_member(S, x.node, n);
    note_member(S, w.node, n);
    if (conv && n->n_inputs > 2 && n->inputs[2] >= 0) note_member(S, g->values[n->inputs[2]].producer, n);
    if (!become(S, i, conv ? "QLinearConv" : "QLinearMatMul", ins, bias >= 0 ? 9 : 8, &y)) return false;
    S->dead[y.node] = true;
    if (relu >= 0) S->dead[relu] = true, S->st.relus++;
    if (conv) S->st.conv_units++;
    else S->st.matmul_units++;
    return true;
}

/* ---- Gemm units: a 1x1 QLinearConv between two Reshapes ----
 * ONNX has no quantized Gemm with a bias; a Gemm of x [M, K] by W (with
 * transB [N, K]) plus a bias is a 1x1 convolution of x seen as [M, K, 1,
 * 1] by W seen as [N, K, 1, 1]: Reshape (a view) -> QLinearConv ->
 * Reshape, all of the standard op set. */

static int32_t new_value(qdq_state *S, const char *base, const char *suffix, int32_t dtype, int32_t rank, const ir_dim *dims) {
    char name[300];
    snprintf(name, sizeof(name), "%s%s", base, suffix);
    for (int32_t k = 2; ir_graph_find(S->g, name) >= 0 && k < 1000; k++) snprintf(name, sizeof(name), "%s%s_%d", base, suffix, k);
    char *nm = seam_arena_strdup(&S->m->arena, name);
    ir_dim *d = seam_arena_calloc(&S->m->arena, (size_t)rank + 1, sizeof(ir_dim));
    if (!nm || !d) return -1;
    memcpy(d, dims, sizeof(ir_dim) * (size_t)rank);
    int32_t v = ir_graph_add_value(S->g, nm);
    if (v < 0) return -1;
    S->g->values[v].type = (ir_type){IR_TYPE_TENSOR, dtype, rank, d, NULL, NULL};
    return v;
}

static int32_t int64_init(qdq_state *S, const char *base, const char *suffix, int32_t n, const int64_t *vals) {
    int64_t *d;
    int64_t dims[1] = {n};
    int32_t v = new_init(S, base, suffix, SEAM_DTYPE_INT64, 1, dims, (void **)&d);
    if (v >= 0) memcpy(d, vals, sizeof(int64_t) * (size_t)n);
    return v;
}

/* A Reshape node reading `in` and `shape`, writing `out` (appended). */
static bool add_reshape(qdq_state *S, const char *name, int32_t in, int32_t shape, int32_t out) {
    int32_t i = ir_graph_add_node(S->g);
    int32_t *ins = seam_arena_alloc(&S->m->arena, sizeof(int32_t) * 3), *outs = seam_arena_alloc(&S->m->arena, sizeof(int32_t) * 2);
    char *nm = seam_arena_strdup(&S->m->arena, name);
    if (i < 0 || !ins || !outs || !nm) return false;
    int64_t opset = seam_op_opset(S->m, "");
    ins[0] = in, ins[1] = shape, outs[0] = out;
    ir_node *n = &S->g->nodes[i];
    n->name = nm, n->op_type = "Reshape", n->domain = "", n->opset = (int32_t)opset;
    n->n_inputs = 2, n->inputs = ins, n->n_outputs = 1, n->outputs = outs;
    n->def = seam_op_find("", "Reshape", opset);
    return n->def != NULL;
}

static bool try_gemm_unit(qdq_state *S, int32_t i) {
    ir_graph *g = S->g;
    const ir_node *n = &g->nodes[i];
    if (!is_std(n, "Gemm") || n->n_inputs < 2 || n->n_implicit || n->inputs[0] < 0 || n->inputs[1] < 0) return false;
    bool has_c = n->n_inputs > 2 && n->inputs[2] >= 0;
    if (attr_int(n, "transA", 0) != 0 || node_attr_float(n, "alpha", 1.0f) != 1.0f ||
        (has_c && node_attr_float(n, "beta", 1.0f) != 1.0f))
        return false;
    bool tb = attr_int(n, "transB", 0) != 0;
    qparams x, w, y;
    int32_t relu;
    if (!dq_per_tensor(g, n->inputs[0], &x) || !read_qparams(g, g->values[n->inputs[1]].producer, true, &w) ||
        !const_of(g, w.q) || !find_q(g, n, &y, &relu))
        return false;
    const ir_type *xt = &g->values[x.q].type;
    const ir_tensor *wt = const_of(g, w.q);
    if (xt->kind != IR_TYPE_TENSOR || xt->rank != 2 || wt->rank != 2 || wt->dtype != SEAM_DTYPE_INT8) return false;
    int64_t nn = tb ? wt->dims[0] : wt->dims[1], kk = tb ? wt->dims[1] : wt->dims[0];
    int64_t axis = attr_int(&g->nodes[w.node], "axis", 1);
    if (axis < 0) axis += 2;
    if (w.count != 1 && (w.count != nn || axis != (tb ? 0 : 1))) return false;
    if (xt->dims[1].v >= 0 && xt->dims[1].v != kk) return false;
    int32_t bias = -1;
    if (has_c && (bias = int_bias(S, n, n->inputs[2], &x, &w, nn)) < 0) return false; /* (-2: no; -1: out of memory) */
    if (S->dry) {
        S->st.gemm_units++;
        if (relu >= 0) S->st.relus++;
        return true;
    }
    const char *base = n->name ? n->name : "qdq";
    /* W as [N, K, 1, 1] int8, transposed when it was [K, N] */
    int8_t *w4;
    int64_t wd[4] = {nn, kk, 1, 1};
    int32_t wv = new_init(S, base, "_weight_nk11", SEAM_DTYPE_INT8, 4, wd, (void **)&w4);
    if (wv < 0) return false;
    const int8_t *src = wt->data;
    for (int64_t r = 0; r < nn; r++)
        for (int64_t c = 0; c < kk; c++) w4[r * kk + c] = tb ? src[r * kk + c] : src[c * nn + r];
    ir_dim xd[4] = {xt->dims[0], {kk, NULL}, {1, NULL}, {1, NULL}}, yd[4] = {xt->dims[0], {nn, NULL}, {1, NULL}, {1, NULL}};
    int64_t s_in[4] = {0, kk, 1, 1}, s_out[2] = {0, nn};
    int32_t xr = new_value(S, base, "_x_nk11", x.qtype, 4, xd), yr = xr < 0 ? -1 : new_value(S, base, "_y_nk11", y.qtype, 4, yd);
    int32_t sh_in = yr < 0 ? -1 : int64_init(S, base, "_shape_in", 4, s_in);
    int32_t sh_out = sh_in < 0 ? -1 : int64_init(S, base, "_shape_out", 2, s_out);
    int32_t xzp = sh_out < 0 ? -1 : zp_or_zero(S, &x, base), wzp = xzp >= 0 ? zp_or_zero(S, &w, base) : -1;
    int32_t yzp = wzp >= 0 ? zp_or_zero(S, &y, base) : -1;
    if (yzp < 0) return false;
    note_member(S, y.node, n);
    note_member(S, relu, n);
    note_member(S, x.node, n);
    note_member(S, w.node, n);
    if (has_c) note_member(S, g->values[n->inputs[2]].producer, n);
    int32_t ins[9] = {xr, x.scale, xzp, wv, w.scale, wzp, y.scale, yzp, bias};
    qparams yr_q = y;
    yr_q.q = yr;
    if (!become(S, i, "QLinearConv", ins, bias >= 0 ? 9 : 8, &yr_q)) return false;
    g->nodes[i].n_attrs = 0; /* (the Gemm's attributes; a 1x1 convolution's are the defaults) */
    char nm[300];
    snprintf(nm, sizeof(nm), "%s_reshape_x", base);
    const char *kept = g->nodes[i].name;
    if (!add_reshape(S, nm, x.q, sh_in, xr)) return false;
    snprintf(nm, sizeof(nm), "%s_reshape_y", kept ? kept : "qdq");
    if (!add_reshape(S, nm, yr, sh_out, y.q)) return false;
    S->dead[y.node] = true;
    if (relu >= 0) S->dead[relu] = true, S->st.relus++;
    S->st.gemm_units++;
    return true;
}

/* A DequantizeLinear all of whose inputs are constants becomes a Constant
 * holding the float values. */
static bool fold_dq(qdq_state *S, int32_t i) {
    ir_graph *g = S->g;
    ir_node *n = &g->nodes[i];
    if (!is_std(n, "DequantizeLinear") || n->n_inputs < 2 || n->n_outputs != 1 || n->outputs[0] < 0 ||
        (g->values[n->outputs[0]].flags & IR_VALUE_OUTPUT) || attr_int(n, "block_size", 0) != 0)
        return false;
    const ir_tensor *x = const_of(g, n->inputs[0]), *s = const_of(g, n->inputs[1]);
    const ir_tensor *z = n->n_inputs > 2 && n->inputs[2] >= 0 ? const_of(g, n->inputs[2]) : NULL;
    if (!x || !s || (n->n_inputs > 2 && n->inputs[2] >= 0 && !z) || s->dtype != SEAM_DTYPE_FLOAT32) return false;
    if (x->dtype != SEAM_DTYPE_UINT8 && x->dtype != SEAM_DTYPE_INT8 && x->dtype != SEAM_DTYPE_INT32) return false;
    if (z && (z->dtype != x->dtype || z->numel != s->numel)) return false;
    /* an int32 zero point is "supposed to be 0": the kernel says what else is */
    for (int64_t k = 0; z && x->dtype == SEAM_DTYPE_INT32 && k < z->numel; k++)
        if (((const int32_t *)z->data)[k] != 0) return false;
    /* the axis the scales run along: per tensor, or dims[axis] of them */
    int64_t axis = attr_int(n, "axis", 1), inner = 1, len = 1;
    if (s->numel != 1 || s->rank != 0) {
        if (s->rank != 1) return false;
        if (axis < 0) axis += x->rank;
        if (axis < 0 || axis >= x->rank || x->dims[axis] != s->numel) return false;
        len = s->numel;
        for (int32_t d = (int32_t)axis + 1; d < x->rank; d++) inner *= x->dims[d];
    }
    for (int64_t k = 0; k < s->numel; k++) {
        float f = ((const float *)s->data)[k];
        if (!(f > 0) || !isfinite(f)) return false; /* (the kernel says what is wrong with it) */
    }
    float *out;
    int32_t v = new_init(S, g->values[n->outputs[0]].name, "_dequantized", SEAM_DTYPE_FLOAT32, x->rank, x->dims, (void **)&out);
    if (v < 0) return false;
    S->n_new_inits--; /* (held by the Constant, not an initializer) */
    for (int64_t e = 0; e < x->numel; e++) {
        int64_t c = len == 1 ? 0 : (e / inner) % len;
        int64_t q = x->dtype == SEAM_DTYPE_UINT8 ? ((const uint8_t *)x->data)[e]
                    : x->dtype == SEAM_DTYPE_INT8 ? ((const int8_t *)x->data)[e]
                                                  : ((const int32_t *)x->data)[e];
        int64_t zz = !z ? 0 : z->dtype == SEAM_DTYPE_INT32 ? ((const int32_t *)z->data)[c] : zp_at(z, c);
        out[e] = (float)(q - zz) * ((const float *)s->data)[c];
    }
    ir_attr *at = seam_arena_calloc(&S->m->arena, 1, sizeof(ir_attr));
    if (!at || !ir_node_set_folded_op(g, i, n->op_type)) return false;
    at->name = "value", at->kind = IR_ATTR_TENSOR, at->t = g->values[v].init;
    g->values[v].flags = 0, g->values[v].init = NULL, g->values[v].konst = NULL;
    g->values[n->outputs[0]].konst = at->t;
    n->op_type = "Constant", n->domain = "", n->n_inputs = 0, n->attrs = at, n->n_attrs = 1;
    n->def = seam_op_find("", "Constant", seam_op_opset(S->m, ""));
    S->st.dq_folded++;
    return true;
}

static seam_status append_inits(qdq_state *S) {
    ir_graph *g = S->g;
    if (!S->n_new_inits) return SEAM_STATUS_OK;
    int32_t *inits = seam_arena_alloc(&S->m->arena, sizeof(int32_t) * (size_t)(g->n_inits + S->n_new_inits + 1));
    if (!inits) return seam_error(S->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    memcpy(inits, g->inits, sizeof(int32_t) * (size_t)g->n_inits);
    memcpy(inits + g->n_inits, S->new_inits, sizeof(int32_t) * (size_t)S->n_new_inits);
    g->inits = inits;
    g->n_inits += S->n_new_inits;
    return SEAM_STATUS_OK;
}

/* A constant weight zero point per channel whose values are all equal
 * (symmetric weights: all 0) becomes one scalar: int8 kernels that take a
 * single weight zero point (oneDNN's) then see it in the node's shapes. */
static bool scalar_zero_point(qdq_state *S, int32_t i) {
    ir_graph *g = S->g;
    ir_node *n = &g->nodes[i];
    int32_t k = is_std(n, "MatMulInteger") ? 3 : is_std(n, "QLinearMatMul") || is_std(n, "QLinearConv") ? 5 : -1;
    if (k < 0 || k >= n->n_inputs || n->inputs[k] < 0) return false;
    const ir_tensor *z = const_of(g, n->inputs[k]);
    if (!z || z->numel < 2 || !is_8bit(z->dtype) || z->rank != 1) return false;
    /* only a zero point the node's shapes make valid (one per output
     * channel or column): a wrong one is the kernels' to report */
    const ir_type *w = &g->values[n->inputs[k == 3 ? 1 : 3]].type;
    bool conv = is_std(n, "QLinearConv");
    if (w->kind != IR_TYPE_TENSOR || w->rank < 2 || w->dims[conv ? 0 : w->rank - 1].v != z->numel) return false;
    if (k == 5) {
        const ir_tensor *sc = const_of(g, n->inputs[4]);
        if (!sc || sc->numel != z->numel) return false;
    }
    for (int64_t e = 1; e < z->numel; e++)
        if (zp_at(z, e) != zp_at(z, 0)) return false;
    uint8_t *d;
    int32_t v = new_init(S, n->name ? n->name : "qdq", "_weight_zero_point", z->dtype, 0, NULL, (void **)&d);
    if (v < 0) return false;
    d[0] = ((const uint8_t *)z->data)[0];
    int32_t *in = seam_arena_alloc(&S->m->arena, sizeof(int32_t) * (size_t)(n->n_inputs + n->n_implicit + 1));
    if (!in) return false;
    memcpy(in, n->inputs, sizeof(int32_t) * (size_t)(n->n_inputs + n->n_implicit));
    in[k] = v;
    n->inputs = in;
    return true;
}

/* A DequantizeLinear of a computed value read by a QDQ unit left as nodes
 * (partition/units.c) and by other nodes too gets a copy for each such
 * unit (named after it, "<dq>_copy<k>"), so that every unit owns its DQs
 * and placement can put the unit whole wherever it goes, with the 8-bit
 * value crossing between subgraphs instead of the float one (issue 27). A
 * non-unit reader, or the first reader when all are units, keeps the
 * original. Returns the copies made, or -1 when out of memory. */
static int32_t split_shared_dqs(qdq_state *S) {
    ir_graph *g = S->g;
    seam_arena *a = &S->m->arena;
    int32_t n0 = g->n_nodes, made = 0, mem[QDQ_UNIT_MAX];
    for (int32_t i = 0; i < n0; i++) {
        const ir_node *d = &g->nodes[i];
        if (!is_std(d, "DequantizeLinear") || d->n_inputs < 1 || d->inputs[0] < 0 || d->n_outputs != 1 ||
            d->outputs[0] < 0 || (g->values[d->inputs[0]].flags & IR_VALUE_INIT))
            continue;
        int32_t y = d->outputs[0], nc = g->values[y].n_consumers;
        if (nc < 2) continue;
        int32_t keep = -1, units = 0;
        for (int32_t c = 0; c < nc; c++) {
            int32_t r = g->values[y].consumers[c];
            bool unit = qdq_unit_members(g, r, mem, QDQ_UNIT_MAX) > 0;
            units += unit;
            if (!unit && keep < 0) keep = r;
        }
        if (!units || (units == 1 && keep < 0)) continue;
        if (keep < 0) keep = g->values[y].consumers[0];
        for (int32_t c = 0; c < g->values[y].n_consumers; c++) {
            int32_t r = g->values[y].consumers[c];
            bool done = r == keep;
            for (int32_t e = 0; e < c && !done; e++) done = g->values[y].consumers[e] == r; /* (one node, two inputs) */
            if (done || !qdq_unit_members(g, r, mem, QDQ_UNIT_MAX)) continue;
            const ir_value *yv = &g->values[y];
            int32_t nv = new_value(S, yv->name, "_copy", yv->type.elem, yv->type.rank, yv->type.dims);
            if (nv < 0) return -1;
            g->values[nv].type.kind = g->values[y].type.kind;
            int32_t j = ir_graph_add_node(g);
            if (j < 0) return -1;
            d = &g->nodes[i]; /* (the node array may have moved) */
            char name[300];
            snprintf(name, sizeof(name), "%s_copy%d", d->name ? d->name : "DequantizeLinear", ++made);
            int32_t *ins = seam_arena_memdup(a, d->inputs, sizeof(int32_t) * (size_t)(d->n_inputs + d->n_implicit));
            int32_t *outs = seam_arena_alloc(a, sizeof(int32_t) * 2);
            char *nm = seam_arena_strdup(a, name);
            ir_node *r_node = &g->nodes[r];
            int32_t *rin = seam_arena_memdup(a, r_node->inputs, sizeof(int32_t) * (size_t)(r_node->n_inputs + r_node->n_implicit));
            if (!ins || !outs || !nm || !rin) return -1;
            g->nodes[j] = *d;
            g->nodes[j].name = nm, g->nodes[j].inputs = ins, g->nodes[j].outputs = outs;
            outs[0] = nv;
            for (int32_t k = 0; k < r_node->n_inputs; k++)
                if (rin[k] == y) rin[k] = nv;
            r_node->inputs = rin;
        }
    }
    return made;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The members that left the graph, for pins that name them. */
static seam_status keep_members(qdq_state *S) {
    ir_graph *g = S->g;
    seam_model *m = S->m;
    if (!S->n_members) return SEAM_STATUS_OK;
    ir_string_pair *all = seam_arena_alloc(&m->arena, sizeof(ir_string_pair) * (size_t)(m->n_absorbed + S->n_members + 1));
    if (!all) return seam_error(S->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    if (m->n_absorbed) memcpy(all, m->absorbed, sizeof(ir_string_pair) * (size_t)m->n_absorbed);
    /* the names still in the graph, sorted: one search per member */
    const char **names = malloc(sizeof(char *) * ((size_t)g->n_nodes + 1));
    if (!names) return seam_error(S->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    int32_t nn = 0, n = m->n_absorbed;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].name) names[nn++] = g->nodes[i].name;
    qsort(names, (size_t)nn, sizeof(char *), cmp_name);
    for (int32_t k = 0; k < S->n_members; k++)
        if (!bsearch(&S->members[k].key, names, (size_t)nn, sizeof(char *), cmp_name)) all[n++] = S->members[k];
    free(names);
    m->absorbed = all, m->n_absorbed = n;
    return SEAM_STATUS_OK;
}

/* What is left quantized in float: the DequantizeLinear and
 * QuantizeLinear nodes on activations. */
static void count_left(const ir_graph *g, seam_qdq_stats *st) {
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (is_std(n, "DequantizeLinear")) st->dq_left++;
        else if (is_std(n, "QuantizeLinear")) st->q_left++;
    }
}

seam_status seam_model_fuse_qdq(seam_model *m, uint32_t flags, seam_qdq_stats *stats_out) {
    if (stats_out) memset(stats_out, 0, sizeof(*stats_out));
    if (!m || (flags & ~(uint32_t)(SEAM_QDQ_UNITS | SEAM_QDQ_FOLD | SEAM_QDQ_COUNT))) return SEAM_STATUS_INVALID_ARGUMENT;
    ir_graph *g = m->graph;
    qdq_state S;
    memset(&S, 0, sizeof(S));
    S.ctx = m->ctx, S.m = m, S.g = g, S.dry = (flags & SEAM_QDQ_COUNT) != 0;
    S.dead = calloc(3 * (size_t)g->n_nodes + 1, sizeof(bool)); /* (a Gemm unit adds two Reshapes) */
    if (!S.dead) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    bool any = false;
    for (int32_t i = 0; i < g->n_nodes && !any; i++)
        any = is_std(&g->nodes[i], "DequantizeLinear") || is_std(&g->nodes[i], "MatMulInteger") ||
              is_std(&g->nodes[i], "QLinearMatMul") || is_std(&g->nodes[i], "QLinearConv");
    seam_status st = SEAM_STATUS_OK;
    if (!any) goto done;
    if (S.dry || (flags & SEAM_QDQ_UNITS))
        for (int32_t k = 0, n0 = g->n_nodes; k < n0; k++) {
            int32_t i = g->topo ? g->topo[k] : k;
            if (!S.dead[i] && !try_unit(&S, i)) try_gemm_unit(&S, i);
        }
    if (S.dry) goto done;
    /* relink so that consumers are current, then drop the DQs no node reads */
    if (S.st.conv_units + S.st.matmul_units + S.st.gemm_units) {
        if ((st = append_inits(&S))) goto done;
        S.n_new_inits = 0;
        ir_graph_remove_nodes(g, S.dead);
        if ((st = ir_graph_link(m->ctx, g))) goto done;
        memset(S.dead, 0, sizeof(bool) * (size_t)g->n_nodes);
        bool removed = false;
        for (int32_t i = 0; i < g->n_nodes; i++) {
            const ir_node *n = &g->nodes[i];
            if (is_std(n, "DequantizeLinear") && n->n_outputs == 1 && n->outputs[0] >= 0 &&
                g->values[n->outputs[0]].n_consumers == 0 && !(g->values[n->outputs[0]].flags & IR_VALUE_OUTPUT))
                S.dead[i] = true, removed = true;
        }
        if (removed) ir_graph_remove_nodes(g, S.dead);
    }
    if (flags & SEAM_QDQ_FOLD)
        for (int32_t i = 0; i < g->n_nodes; i++) fold_dq(&S, i);
    int32_t scalars = 0;
    for (int32_t i = 0; (flags & SEAM_QDQ_UNITS) && i < g->n_nodes; i++) scalars += scalar_zero_point(&S, i);
    if ((st = append_inits(&S))) goto done;
    if (S.st.conv_units + S.st.matmul_units + S.st.gemm_units + S.st.dq_folded + scalars && (st = ir_graph_link(m->ctx, g)))
        goto done;
    if (flags & SEAM_QDQ_UNITS) {
        int32_t copies = split_shared_dqs(&S);
        if (copies < 0) st = seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        else if (copies) st = ir_graph_link(m->ctx, g);
        if (st) goto done;
    }
    if ((st = keep_members(&S))) goto done;
done:
    free(S.dead);
    free(S.new_inits);
    free(S.members);
    if (!st && any) count_left(g, &S.st);
    if (!st && stats_out) *stats_out = S.st;
    seam_phase(m->ctx, "qdq units");
    return st;
}
