/*
 * Fusion and aliases. Many nodes of an exported model compute nothing
 * (Constant, Identity), or little: the activation after each Conv is a
 * separate pass over a tensor that has left the cache. Before planning:
 *
 *   Constant(value=T)          the output is bound to T, like an
 *                              initializer; the node does not run
 *   Identity(x)                the output is an alias of x: the same
 *                              tensor, set when the node's turn comes
 *   Conv -> v -> Relu -> y     when v has no other reader and the Conv's
 *                              kernel takes post-ops (its check set
 *                              post_ops: Conv, Gemm, MatMul), the Conv
 *                              applies the Relu as it writes v, and y is
 *                              an alias of v (any act_is_post_op kind:
 *                              also Clip with constant bounds, LeakyRelu,
 *                              HardSigmoid, HardSwish)
 *   DQ(a) -> u, DQ(b) -> v, Add(u, v) -> w, Q(w) -> y
 *                              a quantized residual add (the QDQ form of a
 *                              QLinearAdd): when u, v and w have no other
 *                              reader, a and b are 8-bit of one shape and
 *                              every scale and zero point is a constant
 *                              scalar, the QuantizeLinear's kernel (its
 *                              check set qadd) computes all three from a
 *                              and b (seam_kernel.qadd) and the DQs and
 *                              the Add do not run; SEAM_CPU_QADD=0 turns
 *                              this off (the tests compare both)
 *   Conv -> v -> Sigmoid -> s, Mul(v, s) -> y
 *                              when v has only those two readers and s
 *                              only the Mul: the Conv applies SiLU
 *                              (v * sigmoid(v)) as it writes v, the
 *                              Sigmoid does not run and y is an alias of
 *                              v; likewise HardSigmoid(1/6, 1/2) and Mul,
 *                              which is HardSwish (how torch exports SiLU
 *                              and Hardswish at opset 13)
 *
 * An alias shares its root's bytes, so the root's lifetime is stretched to
 * the alias's last reader. Graph outputs are never aliases or bound (the
 * caller may hand in their buffers).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/exec_impl.h"

static bool is_std(const ir_node *n, const char *op) { return n->domain[0] == 0 && strcmp(n->op_type, op) == 0; }

static bool is_float32(const ir_value *v) { return v->type.kind == IR_TYPE_TENSOR && v->type.elem == SEAM_DTYPE_FLOAT32; }

/* Input i of n as a constant float32 scalar (an initializer or a bound
 * Constant). Absent inputs give def. */
static bool const_scalar(const seam_exec *e, const ir_node *n, int32_t i, float def, float *out) {
    *out = def;
    if (i >= n->n_inputs || n->inputs[i] < 0) return true;
    const exec_value *ev = &e->vals[n->inputs[i]];
    if (!ev->fixed || (e->g->values[n->inputs[i]].flags & IR_VALUE_OUTER) || !ev->t.data) return false;
    if (ev->t.dtype != SEAM_DTYPE_FLOAT32 || ev->t.numel != 1) return false;
    *out = *(const float *)ev->t.data;
    return true;
}

/* The post-op an activation node stands for, or false. Clip from opset 11
 * takes its bounds from inputs 1 and 2, which must be constants here. */
static bool post_op_of(const seam_exec *e, const ir_node *n, act_params *op) {
    if (!act_of_node(n, op) || !act_is_post_op(op->kind)) return false;
    if (op->kind == ACT_CLIP && n->opset >= 11)
        return const_scalar(e, n, 1, -INFINITY, &op->lo) && const_scalar(e, n, 2, INFINITY, &op->hi);
    return true;
}

static bool is_8bit_tensor(const ir_value *v) {
    return v->type.kind == IR_TYPE_TENSOR && (v->type.elem == SEAM_DTYPE_UINT8 || v->type.elem == SEAM_DTYPE_INT8);
}

/* Input i of n, when present, as a constant scalar of dtype dt (any
 * 8-bit type when dt is 0; float32: a scale, finite and positive); absent
 * passes when optional. */
static bool const_scalar_of(const seam_exec *e, const ir_node *n, int32_t i, int32_t dt, bool optional) {
    if (i >= n->n_inputs || n->inputs[i] < 0) return optional;
    const exec_value *ev = &e->vals[n->inputs[i]];
    if (!ev->fixed || (e->g->values[n->inputs[i]].flags & IR_VALUE_OUTER) || !ev->t.data || ev->t.numel != 1) return false;
    if (dt == SEAM_DTYPE_FLOAT32) { /* a scale: one the node's own kernel accepts (else it fails there, named) */
        float v = ev->t.dtype == dt ? *(const float *)ev->t.data : 0;
        return v > 0 && isfinite(v);
    }
    return dt ? ev->t.dtype == dt : ev->t.dtype == SEAM_DTYPE_UINT8 || ev->t.dtype == SEAM_DTYPE_INT8;
}

/* Whether two values' shapes are known to be equal: one rank, each dim
 * the same number or the same symbol. */
static bool same_shape(const ir_type *a, const ir_type *b) {
    if (a->rank != b->rank || a->rank < 0 || (a->rank > 0 && (!a->dims || !b->dims))) return false;
    for (int32_t d = 0; d < a->rank; d++) {
        ir_dim x = a->dims[d], y = b->dims[d];
        if (x.v >= 0 ? x.v != y.v : !x.sym || !y.sym || strcmp(x.sym, y.sym)) return false;
    }
    return true;
}

/* Value w (float32), read once (by the node being fused) and no output:
 * its producer, else -1. */
static int32_t sole_producer(const seam_exec *e, int32_t w) {
    if (w < 0) return -1;
    const ir_value *wv = &e->g->values[w];
    if (!is_float32(wv) || wv->producer < 0 || wv->n_consumers != 1 || (wv->flags & (IR_VALUE_OUTPUT | IR_VALUE_OUTER)))
        return -1;
    int32_t p = wv->producer;
    return e->how[p] == EXEC_RUN && e->g->nodes[p].n_outputs == 1 ? p : -1;
}

static bool qadd_on(void) {
    static int on = -1;
    if (__atomic_load_n(&on, __ATOMIC_RELAXED) < 0) {
        const char *s = getenv("SEAM_CPU_QADD");
        __atomic_store_n(&on, !(s && strcmp(s, "0") == 0), __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&on, __ATOMIC_RELAXED) != 0;
}

/* QuantizeLinear node qi of Add(DQ(a), DQ(b)): see the top of the file. */
static bool fuse_qadd(seam_exec *e, int32_t qi) {
    const ir_graph *g = e->g;
    const ir_node *q = &g->nodes[qi];
    if (!e->qadd_ok[qi] || e->how[qi] != EXEC_RUN || !qadd_on() || q->n_inputs < 2 ||
        !const_scalar_of(e, q, 1, SEAM_DTYPE_FLOAT32, false) || !const_scalar_of(e, q, 2, 0, false))
        return false;
    int32_t ai = sole_producer(e, q->inputs[0]);
    if (ai < 0) return false;
    const ir_node *add = &g->nodes[ai];
    if (!is_std(add, "Add") || add->n_inputs != 2 || e->kernels[ai].post.kind != ACT_NONE) return false;
    int32_t dq[2];
    for (int32_t side = 0; side < 2; side++) {
        int32_t d = sole_producer(e, add->inputs[side]);
        if (d < 0 || (side == 1 && d == dq[0])) return false;
        const ir_node *n = &g->nodes[d];
        if (!is_std(n, "DequantizeLinear") || n->n_inputs < 2 || n->inputs[0] < 0 || !is_8bit_tensor(&g->values[n->inputs[0]]) ||
            !const_scalar_of(e, n, 1, SEAM_DTYPE_FLOAT32, false) || !const_scalar_of(e, n, 2, g->values[n->inputs[0]].type.elem, true))
            return false;
        dq[side] = d;
    }
    if (!same_shape(&g->values[g->nodes[dq[0]].inputs[0]].type, &g->values[g->nodes[dq[1]].inputs[0]].type)) return false;
    seam_kernel *k = &e->kernels[qi];
    k->qadd = true, k->qadd_dq[0] = dq[0], k->qadd_dq[1] = dq[1];
    e->how[dq[0]] = e->how[dq[1]] = e->how[ai] = EXEC_SKIP;
    /* the DQs' inputs are read when the Q runs */
    for (int32_t side = 0; side < 2; side++) {
        const ir_node *n = &g->nodes[dq[side]];
        for (int32_t i = 0; i < n->n_inputs && i < 3; i++)
            if (n->inputs[i] >= 0 && e->vals[n->inputs[i]].last_use < e->pos[qi]) e->vals[n->inputs[i]].last_use = e->pos[qi];
    }
    return true;
}

/* Follows aliases to the value that owns the bytes. */
static int32_t alias_root(const seam_exec *e, int32_t v) {
    while (e->vals[v].alias) v = e->how[e->g->values[v].producer];
    return v;
}

/* Whether value x is output 0 of a node whose kernel takes post-ops, has
 * none yet, runs, and x has exactly n_readers readers and is no output. */
static bool post_op_target(const seam_exec *e, int32_t x, int32_t n_readers) {
    const ir_graph *g = e->g;
    const ir_value *xv = &g->values[x];
    if (!is_float32(xv) || xv->producer < 0 || xv->n_consumers != n_readers ||
        (xv->flags & (IR_VALUE_OUTPUT | IR_VALUE_OUTER)))
        return false;
    int32_t pi = xv->producer;
    return e->post_ok[pi] && e->how[pi] == EXEC_RUN && e->kernels[pi].post.kind == ACT_NONE &&
           g->nodes[pi].outputs[0] == x;
}

/* Mul node m of v and Sigmoid(v) (or HardSigmoid(v) with alpha 1/6 and
 * beta 1/2): v's producer applies SiLU (HardSwish) as it writes v; the
 * gate does not run and the Mul's output is an alias of v. */
static bool fuse_gated(seam_exec *e, int32_t m) {
    const ir_graph *g = e->g;
    const ir_node *n = &g->nodes[m];
    int32_t y = n->outputs[0];
    if (y < 0 || !is_float32(&g->values[y])) return false;
    for (int32_t side = 0; side < 2; side++) {
        int32_t v = n->inputs[side], s = n->inputs[1 - side];
        if (v < 0 || s < 0 || v == s || g->values[s].producer < 0) continue;
        int32_t gi = g->values[s].producer;
        const ir_node *gate = &g->nodes[gi];
        act_params a;
        if (gate->n_inputs != 1 || gate->inputs[0] != v || g->values[s].n_consumers != 1 ||
            (g->values[s].flags & (IR_VALUE_OUTPUT | IR_VALUE_OUTER)) || e->how[gi] != EXEC_RUN ||
            !act_of_node(gate, &a) || !is_float32(&g->values[s]))
            continue;
        act_kind kind = a.kind == ACT_SIGMOID                                                     ? ACT_SILU
                        : a.kind == ACT_HARD_SIGMOID && a.alpha == 1.0f / 6 && a.beta == 0.5f ? ACT_HARD_SWISH
                                                                                              : ACT_NONE;
        if (kind == ACT_NONE || !post_op_target(e, v, 2)) continue;
        e->kernels[g->values[v].producer].post = (act_params){.kind = kind, .lo = -INFINITY, .hi = INFINITY};
        e->how[gi] = EXEC_SKIP;
        e->how[m] = v;
        e->vals[y].alias = true;
        return true;
    }
    return false;
}

void exec_fuse(seam_exec *e) {
    const ir_graph *g = e->g;
    for (int32_t p = 0; p < g->n_nodes; p++) {
        int32_t i = g->topo[p];
        const ir_node *n = &g->nodes[i];
        if (n->n_outputs < 1 || n->outputs[0] < 0) continue;
        int32_t y = n->outputs[0];
        if (is_std(n, "QuantizeLinear") && fuse_qadd(e, i)) continue;
        if (g->values[y].flags & IR_VALUE_OUTPUT) continue;
        /* shape arithmetic as DimExpr (ops/symdim.c) that nothing reads any
         * more: the DimExpr its reader became computes what it needs */
        if (!strcmp(n->domain, "ai.seam") && !strcmp(n->op_type, "DimExpr") && n->n_outputs == 1 &&
            !g->values[y].n_consumers && !(g->values[y].flags & IR_VALUE_OUTER)) {
            e->how[i] = EXEC_SKIP;
            continue;
        }
        if (is_std(n, "Constant") && n->n_outputs == 1) {
            const ir_attr *a = node_attr(n, "value");
            if (!a || a->kind != IR_ATTR_TENSOR || !a->t) continue;
            exec_tensor_from_ir(&e->vals[y].t, a->t);
            e->vals[y].fixed = true;
            e->how[i] = EXEC_SKIP;
            continue;
        }
        if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs != 1) continue;
        int32_t x = n->inputs[0];
        const ir_value *xv = &g->values[x];
        if (is_std(n, "Identity")) {
            /* (sequences and optionals keep the copying kernel, which owns
             * its copy) */
            if (xv->type.kind != IR_TYPE_TENSOR) continue;
            e->how[i] = x;
            e->vals[y].alias = true;
            continue;
        }
        if (is_std(n, "Mul") && n->n_inputs == 2 && fuse_gated(e, i)) continue;
        act_params op;
        if (!post_op_of(e, n, &op) || !is_float32(xv) || !is_float32(&g->values[y])) continue;
        /* x: output 0 of a kernel that takes post-ops, read by this node only */
        if (xv->producer < 0 || xv->n_consumers != 1 || (xv->flags & (IR_VALUE_OUTPUT | IR_VALUE_OUTER))) continue;
        int32_t pi = xv->producer;
        seam_kernel *pk = &e->kernels[pi];
        if (!e->post_ok[pi] || e->how[pi] != EXEC_RUN || pk->post.kind != ACT_NONE ||
            g->nodes[pi].outputs[0] != x)
            continue;
        pk->post = op;
        e->how[i] = x;
        e->vals[y].alias = true;
    }
    /* each root lives until the last reader of any of its aliases */
    for (int32_t v = 0; v < g->n_values; v++) {
        if (!e->vals[v].alias) continue;
        int32_t r = alias_root(e, v);
        if (e->vals[v].last_use > e->vals[r].last_use) e->vals[r].last_use = e->vals[v].last_use;
    }
}
