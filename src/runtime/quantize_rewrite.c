/*
 * The quantizer's rewrite (quantize.h): the graph rebuilt in topological
 * order, each quantized value followed by its QuantizeLinear and
 * DequantizeLinear, each quantized weight read through a DequantizeLinear
 * of its int8 (int32 for biases) initializer, each dynamic MatMul or Gemm
 * replaced by its integer chain. quantize_graph.c says what is quantized
 * and the names the nodes and values get.
 *
 * Rounding is ONNX Runtime's: scales in float32 (w_scale = max|w| / 127,
 * a bias's x_scale * w_scale[c]), values divided by them and rounded half
 * to even.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "ops/ops.h"
#include "runtime/quantize.h"

typedef struct rw {
    seam_quantizer *q;
    seam_model *m;
    ir_graph *g;
    int32_t n_values0;     /* values before the rewrite */
    int32_t *dq_of;        /* per old value: what its readers read now, or -1 */
    ir_node *nodes;        /* the new node list */
    const char **docs, **folded;
    int32_t n_nodes, cap_nodes;
    int32_t *inits;        /* initializers added */
    int32_t n_inits, cap_inits;
    bool oom;
} rw;

/* ---- building blocks ---------------------------------------------------- */

/* A fresh value name base+suffix (made unique), kept by the model. */
static const char *fresh_name(rw *R, const char *base, const char *suffix) {
    char name[512]; /* (a longer name is cut; a cut one is made unique like any other) */
    snprintf(name, sizeof(name), "%.440s%.60s", base, suffix);
    for (int32_t k = 2; ir_graph_find(R->g, name) >= 0 && k < 100000; k++)
        snprintf(name, sizeof(name), "%.440s%.60s_%d", base, suffix, k);
    const char *s = seam_arena_strdup(&R->m->arena, name);
    if (!s) R->oom = true;
    return s;
}

/* A new value of dtype with `like`'s shape (like < 0: rank 0; -2: not known). */
static int32_t new_value(rw *R, const char *base, const char *suffix, int32_t dtype, int32_t like) {
    const char *nm = fresh_name(R, base, suffix);
    int32_t v = nm ? ir_graph_add_value(R->g, nm) : -1;
    if (v < 0) {
        R->oom = true;
        return -1;
    }
    ir_type t = {IR_TYPE_TENSOR, dtype, 0, NULL, NULL, NULL};
    if (like >= 0) t.rank = R->g->values[like].type.rank, t.dims = R->g->values[like].type.dims;
    if (like == -2) t.rank = -1;
    R->g->values[v].type = t;
    return v;
}

/* A new initializer (data zeroed, returned through *data). */
static int32_t new_init(rw *R, const char *base, const char *suffix, int32_t dtype, int32_t rank, const int64_t *dims,
                        void **data) {
    seam_arena *a = &R->m->arena;
    const char *nm = fresh_name(R, base, suffix);
    int64_t numel = 1;
    for (int32_t d = 0; d < rank; d++) numel *= dims[d];
    size_t nbytes = (size_t)numel * seam_dtype_size(dtype);
    ir_tensor *t = seam_arena_calloc(a, 1, sizeof(ir_tensor));
    int64_t *td = seam_arena_calloc(a, (size_t)rank + 1, sizeof(int64_t));
    ir_dim *vd = seam_arena_calloc(a, (size_t)rank + 1, sizeof(ir_dim));
    void *buf = seam_arena_alloc_aligned(a, nbytes + 1, 64);
    int32_t v = nm && t && td && vd && buf ? ir_graph_add_value(R->g, nm) : -1;
    if (v < 0 || (R->n_inits == R->cap_inits && !(R->cap_inits = R->cap_inits ? 2 * R->cap_inits : 64,
                                                      R->inits = realloc(R->inits, sizeof(int32_t) * (size_t)R->cap_inits)))) {
        R->oom = true;
        return -1;
    }
    memset(buf, 0, nbytes + 1);
    for (int32_t d = 0; d < rank; d++) td[d] = dims[d], vd[d] = (ir_dim){dims[d], NULL};
    *t = (ir_tensor){nm, NULL, dtype, rank, td, numel, buf, nbytes, NULL};
    ir_value *val = &R->g->values[v];
    val->flags = IR_VALUE_INIT;
    val->init = t;
    val->konst = t;
    val->type = (ir_type){IR_TYPE_TENSOR, dtype, rank, vd, NULL, NULL};
    R->inits[R->n_inits++] = v;
    *data = buf;
    return v;
}

static int32_t scalar_init(rw *R, const char *base, const char *suffix, int32_t dtype, const void *value) {
    void *d;
    int32_t v = new_init(R, base, suffix, dtype, 0, NULL, &d);
    if (v >= 0) memcpy(d, value, seam_dtype_size(dtype));
    return v;
}

/* Appends a node to the new list (a copy of n). */
static ir_node *emit(rw *R, const ir_node *n, const char *doc, const char *folded) {
    if (R->n_nodes == R->cap_nodes) {
        int32_t cap = R->cap_nodes ? 2 * R->cap_nodes : 256;
        ir_node *nn = realloc(R->nodes, sizeof(ir_node) * (size_t)cap);
        const char **d = nn ? realloc(R->docs, sizeof(char *) * (size_t)cap) : NULL;
        if (d) R->docs = d;
        const char **f = d ? realloc(R->folded, sizeof(char *) * (size_t)cap) : NULL;
        if (nn) R->nodes = nn;
        if (!f) {
            R->oom = true;
            return NULL;
        }
        R->folded = f, R->cap_nodes = cap;
    }
    R->nodes[R->n_nodes] = *n;
    R->docs[R->n_nodes] = doc;
    R->folded[R->n_nodes] = folded;
    return &R->nodes[R->n_nodes++];
}

/* A new standard node op(ins) -> outs, with at most one int attribute. */
static void emit_new(rw *R, const char *name, const char *op, const int32_t *ins, int32_t n_ins, const int32_t *outs,
                     int32_t n_outs, const char *attr, int64_t attr_value) {
    seam_arena *a = &R->m->arena;
    for (int32_t k = 0; k < n_ins; k++)
        if (ins[k] < 0) R->oom = true; /* (a value that could not be made) */
    for (int32_t k = 0; k < n_outs; k++)
        if (outs[k] < 0) R->oom = true;
    int32_t *in = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n_ins + 1));
    int32_t *out = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n_outs + 1));
    ir_attr *at = attr ? seam_arena_calloc(a, 1, sizeof(ir_attr)) : NULL;
    const char *nm = seam_arena_strdup(a, name); /* (unique: made of unique value names) */
    if (R->oom || !in || !out || !nm || (attr && !at)) {
        R->oom = true;
        return;
    }
    memcpy(in, ins, sizeof(int32_t) * (size_t)n_ins);
    memcpy(out, outs, sizeof(int32_t) * (size_t)n_outs);
    if (at) at->name = attr, at->kind = IR_ATTR_INT, at->i = attr_value;
    ir_node n;
    memset(&n, 0, sizeof(n));
    n.name = nm, n.op_type = op, n.domain = "", n.opset = R->q->opset;
    n.n_inputs = n_ins, n.inputs = in, n.n_outputs = n_outs, n.outputs = out;
    n.n_attrs = at ? 1 : 0, n.attrs = at;
    n.def = seam_op_find("", op, R->q->opset);
    emit(R, &n, NULL, NULL);
}

/* ---- activations ------------------------------------------------------- */

/* The QuantizeLinear + DequantizeLinear of act value v, reading src (v, or
 * v's producer's renamed output when v is a graph output) and writing dst. */
static void emit_qdq(rw *R, int32_t v, int32_t src) {
    const quant_act *a = &R->q->acts[R->q->act_of[v]];
    const char *t = R->g->values[v].name;
    bool out = (R->g->values[v].flags & IR_VALUE_OUTPUT) != 0;
    int32_t s = scalar_init(R, t, "_scale", SEAM_DTYPE_FLOAT32, &a->scale);
    int32_t z = scalar_init(R, t, "_zero_point", SEAM_DTYPE_UINT8, &a->zero_point);
    int32_t vq = new_value(R, t, "_quantized", SEAM_DTYPE_UINT8, v);
    int32_t dst = out ? v : new_value(R, t, "_DequantizeLinear_Output", SEAM_DTYPE_FLOAT32, v);
    char nm[600];
    snprintf(nm, sizeof(nm), "%s_QuantizeLinear", t);
    emit_new(R, nm, "QuantizeLinear", (int32_t[]){src, s, z}, 3, &vq, 1, NULL, 0);
    snprintf(nm, sizeof(nm), "%s_DequantizeLinear", t);
    emit_new(R, nm, "DequantizeLinear", (int32_t[]){vq, s, z}, 3, &dst, 1, NULL, 0);
    if (!out) R->dq_of[v] = dst;
}

/* ---- weights ------------------------------------------------------------ */

/* Index of element e's channel along axis of dims. */
static int64_t channel_of(int64_t e, const int64_t *dims, int32_t rank, int32_t axis) {
    int64_t inner = 1;
    for (int32_t d = axis + 1; d < rank; d++) inner *= dims[d];
    return (e / inner) % dims[axis];
}

/* w (float32) as int8 symmetric in [-qmax, qmax] (127, or 64 for 7-bit
 * weights) with its scales: one per index of `axis` (or one, axis -1).
 * scales has room for dims[axis]. */
static void int8_symmetric(const ir_tensor *w, int32_t axis, int8_t *q, float *scales, int32_t qmax) {
    const float *x = w->data;
    int64_t nc = axis >= 0 ? w->dims[axis] : 1;
    for (int64_t c = 0; c < nc; c++) scales[c] = 0;
    for (int64_t e = 0; e < w->numel; e++) {
        int64_t c = axis >= 0 ? channel_of(e, w->dims, w->rank, axis) : 0;
        scales[c] = fmaxf(scales[c], fabsf(x[e]));
    }
    float m = (float)qmax;
    for (int64_t c = 0; c < nc; c++) scales[c] = scales[c] > 0 ? scales[c] / m : 1.0f;
    for (int64_t e = 0; e < w->numel; e++) {
        float r = nearbyintf(x[e] / scales[axis >= 0 ? channel_of(e, w->dims, w->rank, axis) : 0]);
        q[e] = (int8_t)(r < -m ? -m : r > m ? m : r);
    }
}

/* The DequantizeLinear of a quantized weight: base_quantized (dtype, w's
 * shape, data from fill), base_scale and base_zero_point (n_scales of
 * them: per tensor when 1 and !axis_given). Returns the DQ's output. */
typedef struct qweight {
    int32_t q, scale, zp;
    void *qdata;
    float *sdata;
} qweight;

static bool new_qweight(rw *R, const char *base, int32_t dtype, const ir_tensor *w, int64_t n_scales, bool per_channel,
                        qweight *out) {
    void *zd;
    int64_t sd[1] = {n_scales};
    out->q = new_init(R, base, "_quantized", dtype, w->rank, w->dims, &out->qdata);
    out->scale = new_init(R, base, "_scale", SEAM_DTYPE_FLOAT32, per_channel ? 1 : 0, sd, (void **)&out->sdata);
    out->zp = new_init(R, base, "_zero_point", dtype == SEAM_DTYPE_INT32 ? SEAM_DTYPE_INT32 : SEAM_DTYPE_INT8,
                       per_channel ? 1 : 0, sd, &zd);
    return out->q >= 0 && out->scale >= 0 && out->zp >= 0;
}

static int32_t emit_weight_dq(rw *R, const char *base, const qweight *w, bool per_channel, int32_t axis) {
    int32_t y = new_value(R, base, "_DequantizeLinear_Output", SEAM_DTYPE_FLOAT32, -2);
    char nm[600];
    snprintf(nm, sizeof(nm), "%s_DequantizeLinear", base);
    emit_new(R, nm, "DequantizeLinear", (int32_t[]){w->q, w->scale, w->zp}, 3, &y, 1, per_channel ? "axis" : NULL, axis);
    R->q->st.weights++;
    return y;
}

/* Weight input 1 of a Conv, MatMul or Gemm as int8; its scales through
 * *scales (malloc'd; n through *n_scales). -1 when it stays float. */
static int32_t quantize_weight(rw *R, const ir_node *n, const ir_tensor *w, float **scales, int64_t *n_scales) {
    bool conv = !strcmp(n->op_type, "Conv"), gemm = !strcmp(n->op_type, "Gemm");
    if (w->dtype != SEAM_DTYPE_FLOAT32 || (conv ? w->rank < 3 : w->rank != 2)) return -1;
    int32_t axis = conv ? 0 : gemm && ir_node_attr(n, "transB") && ir_node_attr(n, "transB")->i ? 0 : 1;
    bool pc = R->q->per_channel;
    *n_scales = pc ? w->dims[axis] : 1;
    char base[520];
    snprintf(base, sizeof(base), "%s.w", n->name);
    qweight qw;
    if (!new_qweight(R, base, SEAM_DTYPE_INT8, w, *n_scales, pc, &qw)) return -1;
    int8_symmetric(w, pc ? axis : -1, qw.qdata, qw.sdata, R->q->o.reduce_range ? 64 : 127);
    *scales = malloc(sizeof(float) * (size_t)*n_scales);
    if (!*scales) {
        R->oom = true;
        return -1;
    }
    memcpy(*scales, qw.sdata, sizeof(float) * (size_t)*n_scales);
    return emit_weight_dq(R, base, &qw, pc, axis);
}

/* A 1-D bias as int32 at scale x_scale * w_scale[c]; -1 when it stays float. */
static int32_t quantize_bias(rw *R, const ir_node *n, const ir_tensor *b, float x_scale, const float *ws, int64_t n_ws) {
    if (b->dtype != SEAM_DTYPE_FLOAT32 || b->rank != 1 || (n_ws != 1 && n_ws != b->dims[0])) return -1;
    char base[520];
    snprintf(base, sizeof(base), "%s.bias", n->name);
    qweight qb;
    if (!new_qweight(R, base, SEAM_DTYPE_INT32, b, n_ws, n_ws > 1 || R->q->per_channel, &qb)) return -1;
    for (int64_t c = 0; c < n_ws; c++) qb.sdata[c] = x_scale * ws[c];
    for (int64_t e = 0; e < b->numel; e++) {
        double r = nearbyint((double)((const float *)b->data)[e] / (double)qb.sdata[n_ws == 1 ? 0 : e]);
        ((int32_t *)qb.qdata)[e] = (int32_t)(r < INT32_MIN ? INT32_MIN : r > INT32_MAX ? INT32_MAX : r);
    }
    return emit_weight_dq(R, base, &qb, n_ws > 1 || R->q->per_channel, 0);
}

/* Any other float constant input k of a quantized op: int8 per tensor. */
static int32_t quantize_const(rw *R, const ir_node *n, int32_t k, const ir_tensor *c) {
    if (c->dtype != SEAM_DTYPE_FLOAT32) return -1;
    char base[520];
    snprintf(base, sizeof(base), "%s.in%d", n->name, k);
    qweight qc;
    if (!new_qweight(R, base, SEAM_DTYPE_INT8, c, 1, false, &qc)) return -1;
    int8_symmetric(c, -1, qc.qdata, qc.sdata, R->q->o.reduce_range ? 64 : 127);
    return emit_weight_dq(R, base, &qc, false, 0);
}

/* ---- nodes ---------------------------------------------------------------- */

static const ir_tensor *const_of(const ir_graph *g, int32_t v) {
    if (v < 0) return NULL;
    const ir_value *val = &g->values[v];
    if (val->flags & (IR_VALUE_INPUT | IR_VALUE_OUTER)) return NULL;
    return (val->flags & IR_VALUE_INIT) ? val->init : val->konst;
}

/* Node i of a quantized op, its constant inputs quantized, its activations
 * read through their DequantizeLinear, its output followed by its Q/DQ. */
static void rewrite_op(rw *R, int32_t i) {
    ir_graph *g = R->g;
    const ir_node *n = &g->nodes[i];
    int32_t *in = seam_arena_alloc(&R->m->arena, sizeof(int32_t) * (size_t)(n->n_inputs + 1));
    int32_t *out = seam_arena_alloc(&R->m->arena, sizeof(int32_t) * (size_t)(n->n_outputs + 1));
    if (!in || !out) {
        R->oom = true;
        return;
    }
    memcpy(in, n->inputs, sizeof(int32_t) * (size_t)n->n_inputs);
    memcpy(out, n->outputs, sizeof(int32_t) * (size_t)n->n_outputs);
    bool weighted = !strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "Gemm") || !strcmp(n->op_type, "MatMul");
    bool shared = R->q->role[i] == QN_SHARED;
    float *ws = NULL;
    int64_t n_ws = 0;
    for (int32_t k = 0; k < n->n_inputs && !shared; k++) {
        const ir_tensor *c = const_of(g, in[k]);
        if (!c || (k >= 3 && weighted) || (k >= 1 && strcmp(n->op_type, "Reshape") == 0)) continue;
        int32_t dq = -1;
        if (weighted && k == 1) dq = quantize_weight(R, n, c, &ws, &n_ws);
        else if (weighted && k == 2) {
            int32_t x = n->inputs[0];
            if (!strcmp(n->op_type, "MatMul") || !ws || x < 0 || R->q->act_of[x] < 0) continue;
            dq = quantize_bias(R, n, c, R->q->acts[R->q->act_of[x]].scale, ws, n_ws);
        } else dq = quantize_const(R, n, k, c);
        if (dq >= 0) in[k] = dq;
    }
    free(ws);
    for (int32_t k = 0; k < n->n_inputs; k++)
        if (in[k] >= 0 && in[k] < R->n_values0 && R->dq_of[in[k]] >= 0) in[k] = R->dq_of[in[k]];
    /* the output: a removed activation's, renamed when it is a graph output */
    int32_t y = out[0];
    if (g->values[y].n_consumers == 1 && R->q->role[g->values[y].consumers[0]] == QN_REMOVED)
        y = g->nodes[g->values[y].consumers[0]].outputs[0];
    int32_t src = y;
    if (R->q->act_of[y] >= 0 && (g->values[y].flags & IR_VALUE_OUTPUT))
        src = new_value(R, g->values[y].name, "_float", SEAM_DTYPE_FLOAT32, y);
    out[0] = src;
    ir_node *e = emit(R, n, ir_node_doc(g, i), ir_node_folded_op(g, i));
    if (!e || src < 0) {
        R->oom = true;
        return;
    }
    e->inputs = in, e->outputs = out;
    if (R->q->act_of[y] >= 0) emit_qdq(R, y, src);
}

/* Node i, a MatMul or Gemm, as DynamicQuantizeLinear -> MatMulInteger ->
 * Cast -> Mul (-> Add of a Gemm's C). */
static void rewrite_dynamic(rw *R, int32_t i) {
    ir_graph *g = R->g;
    const ir_node *n = &g->nodes[i];
    const ir_tensor *w = const_of(g, n->inputs[1]);
    bool trans = !strcmp(n->op_type, "Gemm") && ir_node_attr(n, "transB") && ir_node_attr(n, "transB")->i;
    int64_t k = w->dims[trans ? 1 : 0], cols = w->dims[trans ? 0 : 1];
    bool pc = R->q->per_channel;
    /* the weight as [K, N] (a transB Gemm's transposed) */
    float *wt = malloc(sizeof(float) * (size_t)(k * cols) + 1);
    if (!wt) {
        R->oom = true;
        return;
    }
    const float *src = w->data;
    for (int64_t r = 0; r < k; r++)
        for (int64_t c = 0; c < cols; c++) wt[r * cols + c] = trans ? src[c * k + r] : src[r * cols + c];
    int64_t dims[2] = {k, cols};
    ir_tensor kn = {w->name, NULL, SEAM_DTYPE_FLOAT32, 2, dims, k * cols, wt, sizeof(float) * (size_t)(k * cols), NULL};
    char p[520];
    snprintf(p, sizeof(p), "%s", n->name);
    qweight qw;
    bool ok = new_qweight(R, p, SEAM_DTYPE_INT8, &kn, pc ? cols : 1, pc, &qw);
    if (ok) int8_symmetric(&kn, pc ? 1 : -1, qw.qdata, qw.sdata, R->q->o.reduce_range ? 64 : 127);
    free(wt);
    if (!ok) return;
    R->q->st.weights++;
    int32_t a = n->inputs[0] < R->n_values0 && R->dq_of[n->inputs[0]] >= 0 ? R->dq_of[n->inputs[0]] : n->inputs[0];
    int32_t y = n->outputs[0];
    int32_t aq = new_value(R, p, ".a_quantized", SEAM_DTYPE_UINT8, n->inputs[0]);
    int32_t as = new_value(R, p, ".a_scale", SEAM_DTYPE_FLOAT32, -1), az = new_value(R, p, ".a_zero_point", SEAM_DTYPE_UINT8, -1);
    int32_t i32 = new_value(R, p, ".int32", SEAM_DTYPE_INT32, y), f = new_value(R, p, ".float", SEAM_DTYPE_FLOAT32, y);
    int32_t sc = new_value(R, p, ".scale", SEAM_DTYPE_FLOAT32, -2);
    bool c = n->n_inputs > 2 && n->inputs[2] >= 0;
    int32_t prod = c ? new_value(R, p, ".product", SEAM_DTYPE_FLOAT32, y) : y;
    char nm[600];
    snprintf(nm, sizeof(nm), "%s_DynamicQuantizeLinear", p);
    emit_new(R, nm, "DynamicQuantizeLinear", &a, 1, (int32_t[]){aq, as, az}, 3, NULL, 0);
    snprintf(nm, sizeof(nm), "%s_MatMulInteger", p);
    emit_new(R, nm, "MatMulInteger", (int32_t[]){aq, qw.q, az, qw.zp}, 4, &i32, 1, NULL, 0);
    snprintf(nm, sizeof(nm), "%s_Cast", p);
    emit_new(R, nm, "Cast", &i32, 1, &f, 1, "to", SEAM_DTYPE_FLOAT32);
    snprintf(nm, sizeof(nm), "%s_ScaleMul", p);
    emit_new(R, nm, "Mul", (int32_t[]){as, qw.scale}, 2, &sc, 1, NULL, 0);
    snprintf(nm, sizeof(nm), "%s_OutputMul", p);
    emit_new(R, nm, "Mul", (int32_t[]){f, sc}, 2, &prod, 1, NULL, 0);
    if (c) {
        int32_t cv = n->inputs[2] < R->n_values0 && R->dq_of[n->inputs[2]] >= 0 ? R->dq_of[n->inputs[2]] : n->inputs[2];
        snprintf(nm, sizeof(nm), "%s_BiasAdd", p);
        emit_new(R, nm, "Add", (int32_t[]){prod, cv}, 2, &y, 1, NULL, 0);
    }
}

/* Any other node, reading quantized values through their DequantizeLinear. */
static void rewrite_plain(rw *R, int32_t i) {
    ir_graph *g = R->g;
    const ir_node *n = &g->nodes[i];
    int32_t total = n->n_inputs + n->n_implicit;
    bool moved = false;
    for (int32_t k = 0; k < n->n_inputs && !moved; k++)
        moved = n->inputs[k] >= 0 && R->dq_of[n->inputs[k]] >= 0;
    ir_node *e = emit(R, n, ir_node_doc(g, i), ir_node_folded_op(g, i));
    if (!e || !moved) return;
    int32_t *in = seam_arena_alloc(&R->m->arena, sizeof(int32_t) * (size_t)(total + 1));
    if (!in) {
        R->oom = true;
        return;
    }
    memcpy(in, n->inputs, sizeof(int32_t) * (size_t)total);
    for (int32_t k = 0; k < n->n_inputs; k++)
        if (in[k] >= 0 && R->dq_of[in[k]] >= 0) in[k] = R->dq_of[in[k]];
    e->inputs = in;
}

/* ---- the graph ------------------------------------------------------------ */

static bool is_constant_node(const ir_node *n) { return !n->domain[0] && !strcmp(n->op_type, "Constant"); }

/* Drops the initializers and Constant nodes that were read before the
 * rewrite and are read no more (the float weights now stored quantized). */
static seam_status drop_unread(rw *R, const bool *read_before) {
    ir_graph *g = R->g;
    bool *dead = calloc((size_t)g->n_nodes + 1, sizeof(bool));
    if (!dead) return seam_error(R->q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    int32_t o = 0, removed = 0;
    for (int32_t k = 0; k < g->n_inits; k++) {
        int32_t v = g->inits[k];
        ir_value *val = &g->values[v];
        if (v < R->n_values0 && read_before[v] && !val->n_consumers && !(val->flags & IR_VALUE_OUTPUT)) {
            val->flags &= ~(uint32_t)IR_VALUE_INIT;
            val->init = NULL, val->konst = NULL;
            int32_t j = 0;
            for (int32_t m = 0; m < g->n_inputs; m++)
                if (g->inputs[m] != v) g->inputs[j++] = g->inputs[m];
            g->n_inputs = j;
            continue;
        }
        g->inits[o++] = v;
    }
    g->n_inits = o;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        int32_t y = n->n_outputs == 1 ? n->outputs[0] : -1;
        if (is_constant_node(n) && y >= 0 && y < R->n_values0 && read_before[y] && !g->values[y].n_consumers &&
            !(g->values[y].flags & IR_VALUE_OUTPUT))
            dead[i] = true, removed++;
    }
    ir_graph_remove_nodes(g, dead);
    free(dead);
    return removed ? ir_graph_link(R->q->ctx, g) : SEAM_STATUS_OK;
}

static seam_status install(rw *R) {
    ir_graph *g = R->g;
    g->n_nodes = 0;
    for (int32_t k = 0; k < R->n_nodes; k++) {
        int32_t i = ir_graph_add_node(g);
        if (i < 0 || !ir_node_set_doc(g, i, R->docs[k]) || (R->folded[k] && !ir_node_set_folded_op(g, i, R->folded[k])))
            return seam_error(R->q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        g->nodes[i] = R->nodes[k];
    }
    int32_t *inits = seam_arena_alloc(&R->m->arena, sizeof(int32_t) * (size_t)(g->n_inits + R->n_inits + 1));
    if (!inits) return seam_error(R->q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    if (g->n_inits) memcpy(inits, g->inits, sizeof(int32_t) * (size_t)g->n_inits);
    if (R->n_inits) memcpy(inits + g->n_inits, R->inits, sizeof(int32_t) * (size_t)R->n_inits);
    g->inits = inits;
    g->n_inits += R->n_inits;
    return SEAM_STATUS_OK;
}

seam_status quant_rewrite(seam_quantizer *q) {
    seam_model *m = q->m;
    ir_graph *g = m->graph;
    rw R;
    memset(&R, 0, sizeof(R));
    R.q = q, R.m = m, R.g = g, R.n_values0 = g->n_values;
    R.dq_of = malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    bool *read_before = malloc((size_t)g->n_values + 1);
    if (!R.dq_of || !read_before || !ir_graph_index_names(g)) {
        free(R.dq_of);
        free(read_before);
        return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int32_t v = 0; v < g->n_values; v++) R.dq_of[v] = -1, read_before[v] = g->values[v].n_consumers > 0;
    for (int32_t k = 0; k < g->n_inputs; k++) {
        int32_t v = g->inputs[k];
        if (!(g->values[v].flags & IR_VALUE_INIT) && q->act_of[v] >= 0) emit_qdq(&R, v, v);
    }
    for (int32_t k = 0; k < g->n_nodes && !R.oom; k++) {
        int32_t i = g->topo[k];
        switch (q->role[i]) {
        case QN_REMOVED: break;
        case QN_OP:
        case QN_SHARED: rewrite_op(&R, i); break;
        case QN_DYNAMIC: rewrite_dynamic(&R, i); break;
        default: rewrite_plain(&R, i); break;
        }
    }
    seam_status st = R.oom ? seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory") : install(&R);
    if (!st) st = ir_graph_link(q->ctx, g);
    if (!st) st = drop_unread(&R, read_before);
    if (!st) st = ir_infer_model(m);
    free(R.dq_of);
    free(R.nodes);
    free(R.docs);
    free(R.folded);
    free(R.inits);
    free(read_before);
    return st;
}
