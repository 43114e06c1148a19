/* Adding values, initializers and nodes of the standard domain to a graph
 * (ops.h): fresh names, data in the model's arena, the registry's entry.
 * The caller links the graph (ir_graph_link) and infers it again
 * (ir_infer_model) afterwards. */
#include <stdio.h>
#include <string.h>

#include "core/context.h"
#include "ir/ir.h"
#include "ops/ops.h"

const char *ir_fresh_name(struct seam_model *m, const ir_graph *g, const char *base, const char *suffix) {
    char name[512]; /* (a longer name is cut; a cut one is made unique like any other) */
    snprintf(name, sizeof(name), "%.440s%.60s", base, suffix);
    for (int32_t k = 2; ir_graph_find(g, name) >= 0 && k < 100000; k++)
        snprintf(name, sizeof(name), "%.440s%.60s_%d", base, suffix, k);
    return seam_arena_strdup(&m->arena, name);
}

int32_t ir_new_value(struct seam_model *m, ir_graph *g, const char *base, const char *suffix) {
    const char *nm = ir_fresh_name(m, g, base, suffix);
    int32_t v = nm ? ir_graph_add_value(g, nm) : -1;
    if (v >= 0) g->values[v].type = (ir_type){IR_TYPE_NONE, 0, -1, NULL, NULL, NULL};
    return v;
}

int32_t ir_new_init(struct seam_model *m, ir_graph *g, const char *base, const char *suffix, int32_t dtype, int32_t rank,
                    const int64_t *dims, const void *data) {
    seam_arena *a = &m->arena;
    const char *nm = ir_fresh_name(m, g, base, suffix);
    int64_t numel = seam_shape_numel(dims, rank);
    if (numel < 0) return -1;
    size_t nbytes = (size_t)numel * seam_dtype_size(dtype);
    ir_tensor *t = seam_arena_calloc(a, 1, sizeof(ir_tensor));
    int64_t *td = seam_arena_calloc(a, (size_t)rank + 1, sizeof(int64_t));
    ir_dim *vd = seam_arena_calloc(a, (size_t)rank + 1, sizeof(ir_dim));
    void *buf = seam_arena_alloc_aligned(a, nbytes + 1, 64);
    int32_t *inits = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(g->n_inits + 2));
    int32_t v = nm && t && td && vd && buf && inits ? ir_graph_add_value(g, nm) : -1;
    if (v < 0) return -1;
    if (nbytes) memcpy(buf, data, nbytes);
    for (int32_t d = 0; d < rank; d++) td[d] = dims[d], vd[d] = (ir_dim){dims[d], NULL};
    *t = (ir_tensor){nm, NULL, dtype, rank, td, numel, buf, nbytes, NULL};
    ir_value *val = &g->values[v];
    val->flags = IR_VALUE_INIT;
    val->init = t;
    val->konst = t;
    val->type = (ir_type){IR_TYPE_TENSOR, dtype, rank, vd, NULL, NULL};
    if (g->n_inits) memcpy(inits, g->inits, sizeof(int32_t) * (size_t)g->n_inits);
    inits[g->n_inits++] = v;
    g->inits = inits;
    return v;
}

int32_t ir_new_node(struct seam_model *m, ir_graph *g, const char *name, const char *op, const int32_t *ins,
                    int32_t n_ins, const int32_t *outs, int32_t n_outs, const ir_attr *attrs, int32_t n_attrs) {
    seam_arena *a = &m->arena;
    for (int32_t k = 0; k < n_ins; k++)
        if (ins[k] < -1) return -1; /* (a value that could not be made; -1 is an absent optional input) */
    for (int32_t k = 0; k < n_outs; k++)
        if (outs[k] < 0) return -1;
    int32_t *in = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n_ins + 1));
    int32_t *out = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n_outs + 1));
    ir_attr *at = n_attrs ? seam_arena_calloc(a, (size_t)n_attrs, sizeof(ir_attr)) : NULL;
    const char *nm = ir_fresh_name(m, g, name, "");
    int64_t opset = seam_op_opset(m, "");
    const seam_op_def *def = seam_op_find("", op, opset);
    int32_t i = in && out && nm && def && (!n_attrs || at) ? ir_graph_add_node(g) : -1;
    if (i < 0) return -1;
    memcpy(in, ins, sizeof(int32_t) * (size_t)n_ins);
    memcpy(out, outs, sizeof(int32_t) * (size_t)n_outs);
    if (n_attrs) memcpy(at, attrs, sizeof(ir_attr) * (size_t)n_attrs);
    ir_node *n = &g->nodes[i];
    memset(n, 0, sizeof(*n));
    n->name = nm, n->op_type = op, n->domain = "", n->opset = (int32_t)opset, n->def = def;
    n->n_inputs = n_ins, n->inputs = in, n->n_outputs = n_outs, n->outputs = out;
    n->n_attrs = n_attrs, n->attrs = at;
    return i;
}
