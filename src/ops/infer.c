/* The inference driver and the helpers in infer.h. */
#include "ops/infer.h"
#include "ops/symdim.h"

#include <string.h>

#include "core/context.h"
#include "ir/ir.h"

int32_t infer_n_inputs(const seam_infer *ic) { return ic->n->n_inputs; }
int32_t infer_n_outputs(const seam_infer *ic) { return ic->n->n_outputs; }

bool infer_has_input(const seam_infer *ic, int32_t i) {
    return i >= 0 && i < ic->n->n_inputs && ic->n->inputs[i] >= 0;
}

bool infer_has_output(const seam_infer *ic, int32_t i) {
    return i >= 0 && i < ic->n->n_outputs && ic->n->outputs[i] >= 0;
}

const ir_type *infer_in(const seam_infer *ic, int32_t i) {
    if (!infer_has_input(ic, i)) return NULL;
    return &ic->g->values[ic->n->inputs[i]].type;
}

int32_t infer_in_dtype(const seam_infer *ic, int32_t i) {
    const ir_type *t = infer_in(ic, i);
    return t && t->kind == IR_TYPE_TENSOR ? t->elem : SEAM_DTYPE_UNDEFINED;
}

int32_t infer_in_rank(const seam_infer *ic, int32_t i) {
    const ir_type *t = infer_in(ic, i);
    return t && t->kind == IR_TYPE_TENSOR ? t->rank : -1;
}

const ir_tensor *infer_in_const(const seam_infer *ic, int32_t i) {
    if (!infer_has_input(ic, i)) return NULL;
    return ic->g->values[ic->n->inputs[i]].konst;
}

int32_t infer_in_ints(const seam_infer *ic, int32_t i, int64_t *out, int32_t max) {
    const ir_tensor *t = infer_in_const(ic, i);
    if (!t || t->numel < 0 || t->numel > max) return -1;
    for (int64_t k = 0; k < t->numel; k++) {
        if (t->dtype == SEAM_DTYPE_INT64) {
            memcpy(&out[k], (const char *)t->data + 8 * k, 8);
        } else if (t->dtype == SEAM_DTYPE_INT32) {
            int32_t v;
            memcpy(&v, (const char *)t->data + 4 * k, 4);
            out[k] = v;
        } else {
            return -1;
        }
    }
    return (int32_t)t->numel;
}

/* Fully known shapes recently given to outputs. A graph repeats a few
 * shapes over and over; values with the same fully known shape share one
 * dims array (16 bytes a dimension), which nothing writes to again: merging
 * (infer_set_tensor) only fills unknown dimensions. */
#define DIMS_CACHE 64
struct infer_dims_cache {
    const ir_dim *arr[DIMS_CACHE];
    int32_t rank[DIMS_CACHE];
};

static bool dims_known(const ir_dim *dims, int32_t rank) {
    for (int32_t k = 0; k < rank; k++)
        if (dims[k].v < 0 || dims[k].sym) return false;
    return true;
}

/* A dims array equal to dims, shared when an equal one was made lately. */
static ir_dim *dims_copy(seam_infer *ic, int32_t rank, const ir_dim *dims) {
    struct infer_dims_cache *c = ic->dims_cache;
    size_t h = 0;
    bool share = c && dims_known(dims, rank);
    if (share) {
        uint64_t x = (uint64_t)rank;
        for (int32_t k = 0; k < rank; k++) x = (x ^ (uint64_t)dims[k].v) * 0x100000001b3ull;
        h = (size_t)(x >> 32) % DIMS_CACHE;
        const ir_dim *e = c->arr[h];
        if (e && c->rank[h] == rank) {
            int32_t k = 0;
            while (k < rank && e[k].v == dims[k].v) k++;
            if (k == rank) return (ir_dim *)e;
        }
    }
    ir_dim *d = seam_arena_calloc(ic->arena, (size_t)rank + 1, sizeof(ir_dim));
    if (!d) return NULL;
    for (int32_t k = 0; k < rank; k++) d[k] = dims[k];
    if (share) {
        c->arr[h] = d;
        c->rank[h] = rank;
    }
    return d;
}

static ir_type *out_type(seam_infer *ic, int32_t i) {
    if (!infer_has_output(ic, i)) return NULL;
    return &ic->g->values[ic->n->outputs[i]].type;
}

/* Merges an inferred tensor type into t. A declared dim stays; an unknown
 * one takes the inferred dim. A declared rank that disagrees wins too:
 * inference never overrules the file. */
void infer_set_tensor(seam_infer *ic, int32_t i, int32_t dtype, int32_t rank, const ir_dim *dims) {
    ir_type *t = out_type(ic, i);
    if (!t) return;
    if (t->kind == IR_TYPE_NONE) t->kind = IR_TYPE_TENSOR;
    if (t->kind != IR_TYPE_TENSOR) return;
    if (t->elem == SEAM_DTYPE_UNDEFINED) t->elem = dtype;
    if (rank < 0 || rank > INFER_MAX_RANK) return;
    /* A dim an op computed out of [0, IR_MAX_DIM] (an attribute's size the
     * op layer let through, a sum of dims) is recorded as unknown, never
     * as a size: the kernels check the real one at run time, and no
     * product of recorded dims wraps where one of 2^62 would. */
    ir_dim fixed[INFER_MAX_RANK];
    for (int32_t k = 0; k < rank; k++) {
        if (dims[k].v >= -1 && dims[k].v <= IR_MAX_DIM) continue;
        memcpy(fixed, dims, sizeof(ir_dim) * (size_t)rank);
        for (int32_t j = k; j < rank; j++)
            if (fixed[j].v < -1 || fixed[j].v > IR_MAX_DIM) fixed[j] = (ir_dim){-1, NULL};
        dims = fixed;
        break;
    }
    if (t->rank < 0) {
        ir_dim *d = dims_copy(ic, rank, dims);
        if (!d) return;
        t->dims = d;
        t->rank = rank;
        return;
    }
    if (t->rank != rank) return;
    for (int32_t k = 0; k < rank; k++) {
        if (t->dims[k].v < 0 && dims[k].v >= 0) t->dims[k].v = dims[k].v;
        if (t->dims[k].v < 0 && !t->dims[k].sym) t->dims[k].sym = dims[k].sym;
    }
}

void infer_set_tensor_i64(seam_infer *ic, int32_t i, int32_t dtype, int32_t rank, const int64_t *dims) {
    ir_dim d[INFER_MAX_RANK];
    if (rank > INFER_MAX_RANK) rank = -1;
    for (int32_t k = 0; k < rank; k++) d[k] = (ir_dim){dims[k] >= 0 ? dims[k] : -1, NULL};
    infer_set_tensor(ic, i, dtype, rank, d);
}

void infer_set_dtype(seam_infer *ic, int32_t i, int32_t dtype) {
    infer_set_tensor(ic, i, dtype, -1, NULL);
}

void infer_copy_type(seam_infer *ic, int32_t out, int32_t in) {
    const ir_type *t = infer_in(ic, in);
    if (!t) return;
    if (t->kind == IR_TYPE_TENSOR || t->kind == IR_TYPE_NONE)
        infer_set_tensor(ic, out, t->elem, t->kind == IR_TYPE_TENSOR ? t->rank : -1, t->dims);
    else
        infer_set_type(ic, out, t);
}

static ir_type *type_dup(seam_arena *a, const ir_type *t) {
    ir_type *c = seam_arena_alloc(a, sizeof(*c));
    if (!c) return NULL;
    *c = *t;
    if (t->rank > 0) {
        c->dims = seam_arena_memdup(a, t->dims, sizeof(ir_dim) * (size_t)t->rank);
        if (!c->dims) return NULL;
    }
    if (t->inner) c->inner = type_dup(a, t->inner);
    return c;
}

void infer_set_type(seam_infer *ic, int32_t i, const ir_type *t) {
    ir_type *o = out_type(ic, i);
    if (!o || !t) return;
    if (t->kind == IR_TYPE_TENSOR) {
        infer_set_tensor(ic, i, t->elem, t->rank, t->dims);
        return;
    }
    if (o->kind != IR_TYPE_NONE) return; /* declared non-tensor types stay */
    ir_type *c = type_dup(ic->arena, t);
    if (c) *o = *c;
}

void infer_set_const(seam_infer *ic, int32_t i, int32_t dtype, int32_t rank,
                     const int64_t *dims, const void *data) {
    if (!infer_has_output(ic, i)) return;
    int64_t numel = ir_numel(dims, rank);
    size_t es = seam_dtype_size(dtype);
    if (numel < 0 || es == 0) return;
    ir_tensor *t = seam_arena_calloc(ic->arena, 1, sizeof(*t));
    if (!t) return;
    t->dtype = dtype;
    t->rank = rank;
    t->numel = numel;
    t->nbytes = (size_t)numel * es;
    t->dims = rank ? seam_arena_memdup(ic->arena, dims, sizeof(int64_t) * (size_t)rank) : NULL;
    t->data = seam_arena_memdup(ic->arena, data, t->nbytes);
    if ((rank && !t->dims) || !t->data) return;
    ir_value *v = &ic->g->values[ic->n->outputs[i]];
    t->name = v->name;
    v->konst = t;
    infer_set_tensor_i64(ic, i, dtype, rank, dims);
}

int32_t infer_broadcast(const ir_type *const *ts, int32_t n, ir_dim *out) {
    int32_t r = 0;
    for (int32_t k = 0; k < n; k++) {
        if (!ts[k] || ts[k]->kind != IR_TYPE_TENSOR || ts[k]->rank < 0) return -1;
        if (ts[k]->rank > r) r = ts[k]->rank;
    }
    if (r > INFER_MAX_RANK) return -1;
    for (int32_t d = 0; d < r; d++) {
        ir_dim acc = {1, NULL};
        bool unknown = false;
        for (int32_t k = 0; k < n; k++) {
            int32_t off = d - (r - ts[k]->rank);
            if (off < 0) continue;
            ir_dim x = ts[k]->dims[off];
            if (x.v == 1) continue;
            if (x.v > 1 || x.v == 0) {
                if (acc.v < 0 || acc.v == 1) {
                    acc = (ir_dim){x.v, NULL};
                    unknown = false;
                }
                continue;
            }
            /* x unknown */
            if (acc.v == 1) {
                acc = x;
                unknown = true;
            } else if (unknown && !(x.sym && acc.sym && strcmp(x.sym, acc.sym) == 0)) {
                acc.sym = NULL;
            }
        }
        out[d] = acc;
    }
    return r;
}

void infer_same_as_input(seam_infer *ic) { infer_copy_type(ic, 0, 0); }

/* ---- the driver ---- */

static bool infer_graph(struct seam_model *m, ir_graph *g);

void infer_subgraph(seam_infer *ic, ir_graph *body) {
    if (body && !infer_graph(ic->model, body) && ic->failed) *ic->failed = true;
}

int64_t seam_op_opset(const struct seam_model *m, const char *domain) {
    if (strcmp(domain, "ai.onnx") == 0) domain = "";
    for (int32_t k = 0; k < m->n_opsets; k++) {
        const char *d = m->opsets[k].domain;
        if (strcmp(d, "ai.onnx") == 0) d = "";
        if (strcmp(d, domain) == 0) return m->opsets[k].version;
    }
    return -1;
}

/* Values defined outside a body take their type from the enclosing graph. */
static void infer_outer_values(ir_graph *g) {
    if (!g->parent) return;
    for (int32_t k = 0; k < g->n_values; k++) {
        ir_value *v = &g->values[k];
        if (!(v->flags & IR_VALUE_OUTER) || v->outer < 0) continue;
        const ir_value *o = &g->parent->values[v->outer];
        if (v->type.kind == IR_TYPE_NONE) v->type = o->type;
        if (!v->konst) v->konst = o->konst;
    }
}

/* Validates and infers every node of g in topological order; false (the
 * error set on the model's context) at the first node op_validate refuses. */
static bool infer_graph(struct seam_model *m, ir_graph *g) {
    infer_outer_values(g);
    for (int32_t k = 0; k < g->n_values; k++) {
        ir_value *v = &g->values[k];
        if (v->init && !v->konst) v->konst = v->init;
    }
    /* The op's opset, registry entry and checks, by the (domain, op type)
     * pointers: the loader keeps one copy of each op type's name, so a
     * graph has few distinct pairs. */
    struct {
        const char *domain, *op_type;
        int32_t opset;
        const seam_op_def *def;
        op_checks checks;
    } cache[64];
    memset(cache, 0, sizeof(cache));
    struct infer_dims_cache dims_cache;
    memset(&dims_cache, 0, sizeof(dims_cache));
    /* the top graph's symbolic dims as expressions (symdim.c) */
    sym_state *sym = g == m->graph ? sym_begin(m, g) : NULL;
    for (int32_t t = 0; t < g->n_nodes; t++) {
        int32_t idx = g->topo[t];
        ir_node *n = &g->nodes[idx];
        size_t h = (((uintptr_t)n->op_type >> 3) ^ ((uintptr_t)n->domain >> 7)) & 63;
        if (cache[h].op_type != n->op_type || cache[h].domain != n->domain) {
            cache[h].domain = n->domain;
            cache[h].op_type = n->op_type;
            cache[h].opset = (int32_t)seam_op_opset(m, n->domain);
            cache[h].def = seam_op_find(n->domain, n->op_type, cache[h].opset);
            op_checks_find(n->domain, n->op_type, &cache[h].checks);
        }
        n->opset = cache[h].opset;
        if (!n->def) n->def = cache[h].def;
        char why[256], lab[300];
        if (!op_validate_with(g, n, &cache[h].checks, why, sizeof(why))) {
            seam_error(m->ctx, SEAM_STATUS_INVALID_MODEL, "%s: %s", ir_node_label(g, idx, lab, sizeof(lab)), why);
            return false;
        }
        if (!n->def || !n->def->infer) continue;
        bool failed = false;
        seam_infer ic = {m, g, n, idx, &m->arena, &failed, &dims_cache};
        n->def->infer(&ic);
        if (failed) return false;
        if (sym) sym_node(sym, &ic);
    }
    return true;
}

/* Forgets what inference found (declared types stay), so it can run again
 * after an input's shape was fixed. */
static void forget_inferred(ir_graph *g) {
    for (int32_t v = 0; v < g->n_values; v++) {
        ir_value *val = &g->values[v];
        if (val->producer < 0 && !(val->flags & IR_VALUE_OUTER)) continue;
        val->konst = NULL;
        if (!(val->flags & IR_VALUE_DECLARED)) val->type = (ir_type){IR_TYPE_NONE, 0, -1, NULL, NULL, NULL};
    }
    for (int32_t i = 0; i < g->n_nodes; i++)
        for (int32_t a = 0; a < g->nodes[i].n_attrs; a++) {
            const ir_attr *at = &g->nodes[i].attrs[a];
            if (at->kind == IR_ATTR_GRAPH) forget_inferred(at->g);
            for (int32_t b = 0; at->kind == IR_ATTR_GRAPHS && b < at->n; b++) forget_inferred(at->graphs[b]);
        }
}

seam_status seam_model_set_input_shape(seam_model *m, const char *name, int32_t rank, const int64_t *dims) {
    if (!m || !name || (rank > 0 && !dims)) return SEAM_STATUS_INVALID_ARGUMENT;
    ir_graph *g = m->graph;
    int32_t v = -1;
    for (int32_t k = 0; k < g->n_inputs && v < 0; k++)
        if (strcmp(g->values[g->inputs[k]].name, name) == 0 && !(g->values[g->inputs[k]].flags & IR_VALUE_INIT))
            v = g->inputs[k];
    if (v < 0) return seam_error(m->ctx, SEAM_STATUS_INVALID_ARGUMENT, "the model has no input '%s'", name);
    ir_type *t = &g->values[v].type;
    if (rank < 0 || rank > INFER_MAX_RANK || (t->kind == IR_TYPE_TENSOR && t->rank >= 0 && t->rank != rank))
        return seam_error(m->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s' has rank %d; a shape of rank %d was given",
                          name, t->rank, rank);
    for (int32_t k = 0; k < rank; k++) {
        if (dims[k] < 0 || dims[k] > IR_MAX_DIM)
            return seam_error(m->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s': dimension %d = %lld is not valid",
                              name, k, (long long)dims[k]);
        if (t->rank >= 0 && t->dims[k].v >= 0 && t->dims[k].v != dims[k])
            return seam_error(m->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                              "input '%s': dimension %d is fixed at %lld in the model; %lld was given", name, k,
                              (long long)t->dims[k].v, (long long)dims[k]);
    }
    ir_dim *d = seam_arena_calloc(&m->arena, (size_t)rank + 1, sizeof(ir_dim));
    if (!d) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t k = 0; k < rank; k++) d[k] = (ir_dim){dims[k], t->rank >= 0 ? t->dims[k].sym : NULL};
    t->kind = IR_TYPE_TENSOR;
    t->rank = rank;
    t->dims = d;
    forget_inferred(g);
    return ir_infer_model(m);
}

seam_status ir_infer_model(struct seam_model *m) {
    for (;;) { /* each round reads at least one contrib op as standard nodes, or ends */
        if (!infer_graph(m, m->graph)) return SEAM_STATUS_INVALID_MODEL;
        bool changed = false;
        seam_status st = op_lower_contrib_quant(m, &changed);
        if (st || !changed) return st;
    }
}
