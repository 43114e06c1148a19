/* Node views handed to backends' supports(), and attribute access on them. */
#include <stdlib.h>
#include <string.h>

#include "ops/attr.h"
#include "ops/ops.h"
#include "backends/view.h"

/* In front of every view's input_constant flags: the builder, so that
 * seam_node_input_data can reach the graph from a view alone. */
typedef struct view_header {
    uint64_t magic;
    const view_builder *vb;
} view_header;
#define VIEW_MAGIC 0x7365616d76696577ull /* "seamview" */

void view_init(view_builder *vb, const struct seam_model *m) {
    memset(vb, 0, sizeof(*vb));
    vb->m = m;
    vb->g = m->graph;
}

void view_free(view_builder *vb) {
    free(vb->infos);
    free(vb->producers);
    if (vb->constant) free(vb->constant - sizeof(view_header));
    free(vb->dims);
    free(vb->syms);
    memset(vb, 0, sizeof(*vb));
}

/* Whether value v of g is known before any run: an initializer, the output
 * of a Constant node (folding makes more of them), or such a value of an
 * enclosing graph (a device subgraph's body reads weights that way). */
static uint8_t value_constant(const ir_graph *g, int32_t v) {
    for (int32_t depth = 0; g && v >= 0 && depth < 64; depth++) {
        const ir_value *val = &g->values[v];
        if (val->flags & IR_VALUE_INIT) return 1;
        if (val->producer >= 0) {
            const ir_node *p = &g->nodes[val->producer];
            return p->op_type[0] == 'C' && strcmp(p->op_type, "Constant") == 0 && !p->domain[0] && p->n_inputs == 0;
        }
        if (!(val->flags & IR_VALUE_OUTER)) return 0;
        v = val->outer;
        g = g->parent;
    }
    return 0;
}

/* Whether output k of n is an optional side output (Dropout's mask,
 * MaxPool's indices, LayerNormalization's mean and inverse deviation) that
 * nothing reads. (Not every output: a Split's are all the op's own.) */
static bool unread_side_output(const ir_graph *g, const ir_node *n, int32_t k) {
    int32_t v = n->outputs[k];
    if (k < 1 || n->domain[0] || g->values[v].n_consumers || (g->values[v].flags & IR_VALUE_OUTPUT)) return false;
    return !strcmp(n->op_type, "Dropout") || !strcmp(n->op_type, "MaxPool") || !strcmp(n->op_type, "LayerNormalization");
}

const seam_node_view *view_node(view_builder *vb, int32_t i, seam_node_view *out) {
    const ir_graph *g = vb->g;
    const ir_node *n = &g->nodes[i];
    int32_t nv = n->n_inputs + n->n_outputs;
    if (nv > vb->cap_infos) {
        int32_t cap = nv * 2 + 8;
        seam_value_info *infos = realloc(vb->infos, sizeof(*infos) * (size_t)cap);
        if (infos) vb->infos = infos;
        const char **prods = realloc(vb->producers, sizeof(char *) * (size_t)cap);
        if (prods) vb->producers = prods;
        uint8_t *base = realloc(vb->constant ? vb->constant - sizeof(view_header) : NULL, sizeof(view_header) + (size_t)cap);
        uint8_t *konst = base ? base + sizeof(view_header) : NULL;
        if (konst) {
            vb->constant = konst;
            *(view_header *)(void *)base = (view_header){VIEW_MAGIC, vb};
        }
        if (!infos || !prods || !konst) return NULL;
        vb->cap_infos = cap;
    }
    int32_t nd = 0;
    for (int32_t k = 0; k < nv; k++) {
        int32_t v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (v >= 0 && g->values[v].type.kind == IR_TYPE_TENSOR && g->values[v].type.rank > 0)
            nd += g->values[v].type.rank;
    }
    if (nd > vb->cap_dims) {
        int32_t cap = nd * 2 + 16;
        int64_t *dims = realloc(vb->dims, sizeof(int64_t) * (size_t)cap);
        if (dims) vb->dims = dims;
        const char **syms = realloc(vb->syms, sizeof(char *) * (size_t)cap);
        if (syms) vb->syms = syms;
        if (!dims || !syms) return NULL;
        vb->cap_dims = cap;
    }
    nd = 0;
    for (int32_t k = 0; k < nv; k++) {
        int32_t v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        seam_value_info *vi = &vb->infos[k];
        memset(vi, 0, sizeof(*vi));
        vi->rank = -1;
        if (k < n->n_inputs) vb->producers[k] = NULL, vb->constant[k] = 0;
        if (v < 0) continue;
        /* a side output nothing reads (no reader, not a graph output: an
         * exporter's Dropout mask) is shown as absent, as if the node had
         * not asked for it: a backend need not make it */
        if (k > n->n_inputs && unread_side_output(g, n, k - n->n_inputs)) continue;
        if (k < n->n_inputs) vb->constant[k] = value_constant(g, v);
        const ir_value *val = &g->values[v];
        vi->name = val->name;
        if (k < n->n_inputs && val->producer >= 0) vb->producers[k] = g->nodes[val->producer].op_type;
        if (val->type.kind != IR_TYPE_TENSOR) continue;
        vi->dtype = (seam_dtype)val->type.elem;
        vi->rank = val->type.rank;
        if (vi->rank > 0) {
            for (int32_t d = 0; d < vi->rank; d++) {
                vb->dims[nd + d] = val->type.dims[d].v >= 0 ? val->type.dims[d].v : -1;
                vb->syms[nd + d] = val->type.dims[d].sym;
            }
            vi->dims = &vb->dims[nd];
            vi->dim_params = &vb->syms[nd];
            nd += vi->rank;
        }
    }
    /* inference stored the opset on the node (a positive version) */
    int64_t opset = n->opset > 0 ? n->opset : seam_op_opset(vb->m, n->domain);
    *out = (seam_node_view){i, n->name, n->op_type, n->domain, opset, n->n_inputs, n->n_outputs,
                            vb->infos, vb->infos + n->n_inputs, vb->producers, n, vb->constant};
    return out;
}

static const ir_node *view_ir_node(const seam_node_view *v) { return v ? (const ir_node *)v->impl : NULL; }

/* The public attribute calls: node_attr (ops/attr.h) on the viewed node. */
bool seam_node_attr_int(const seam_node_view *v, const char *name, int64_t *out) {
    const ir_attr *a = node_attr(view_ir_node(v), name);
    if (!a || a->kind != IR_ATTR_INT) return false;
    *out = a->i;
    return true;
}

bool seam_node_attr_float(const seam_node_view *v, const char *name, float *out) {
    const ir_attr *a = node_attr(view_ir_node(v), name);
    if (!a || a->kind != IR_ATTR_FLOAT) return false;
    *out = a->f;
    return true;
}

bool seam_node_attr_string(const seam_node_view *v, const char *name, const char **out) {
    const ir_attr *a = node_attr(view_ir_node(v), name);
    if (!a || a->kind != IR_ATTR_STRING) return false;
    *out = node_attr_string(view_ir_node(v), name, "");
    return true;
}

bool seam_node_attr_ints(const seam_node_view *v, const char *name, const int64_t **out, int32_t *n) {
    int32_t count = node_attr_ints(view_ir_node(v), name, out);
    if (count < 0) return false;
    *n = count;
    return true;
}

bool seam_node_input_data(const seam_node_view *v, int32_t k, seam_tensor_view *out) {
    if (!v || !v->impl || !v->input_constant || k < 0 || k >= v->n_inputs || !v->input_constant[k]) return false;
    const view_header *h = (const view_header *)(const void *)(v->input_constant - sizeof(view_header));
    if (h->magic != VIEW_MAGIC || !h->vb || !h->vb->g) return false;
    const ir_graph *g = h->vb->g;
    const ir_node *n = view_ir_node(v);
    int32_t vi = k < n->n_inputs ? n->inputs[k] : -1;
    if (vi < 0) return false;
    const ir_value *val = &g->values[vi];
    for (int32_t depth = 0; (val->flags & IR_VALUE_OUTER) && g->parent && val->outer >= 0 && depth < 64; depth++) {
        g = g->parent;
        val = &g->values[val->outer];
    }
    const ir_tensor *t = val->init ? val->init : val->konst;
    if (!t && val->producer >= 0) { /* a Constant's value attribute */
        const ir_attr *a = node_attr(&g->nodes[val->producer], "value");
        if (a && a->kind == IR_ATTR_TENSOR) t = a->t;
    }
    if (!t || t->dtype == SEAM_DTYPE_STRING || !t->data) return false;
    *out = (seam_tensor_view){val->name, (seam_dtype)t->dtype, t->rank, t->dims, t->data, t->nbytes};
    return true;
}

bool seam_node_attr_floats(const seam_node_view *v, const char *name, const float **out, int32_t *n) {
    int32_t count = node_attr_floats(view_ir_node(v), name, out);
    if (count < 0) return false;
    *n = count;
    return true;
}

bool seam_node_attr_string_at(const seam_node_view *v, const char *name, int32_t k, const char **out, int32_t *n) {
    const ir_attr *a = node_attr(view_ir_node(v), name);
    if (!a || a->kind != IR_ATTR_STRINGS) return false;
    *n = a->n;
    if (k < 0 || k >= a->n) return false;
    *out = a->strings[k].data ? (const char *)a->strings[k].data : "";
    return true;
}

/* ---- subgraph views, for backends' compile ---- */

typedef struct subgraph_impl {
    const ir_graph *body;
    view_builder vb;
} subgraph_impl;

const seam_node_view *seam_subgraph_node(const seam_subgraph_view *sg, int32_t i, seam_node_view *storage) {
    subgraph_impl *impl = (subgraph_impl *)sg->impl;
    if (!impl || i < 0 || i >= impl->body->n_nodes) return NULL;
    return view_node(&impl->vb, impl->body->topo[i], storage);
}

bool seam_subgraph_constant(const seam_subgraph_view *sg, const char *name, seam_tensor_view *out) {
    const subgraph_impl *impl = sg->impl;
    if (!impl || !name) return false;
    const ir_graph *g = impl->body;
    int32_t v = ir_graph_find(g, name);
    if (v < 0) return false;
    const ir_value *val = &g->values[v];
    while ((val->flags & IR_VALUE_OUTER) && g->parent && val->outer >= 0) {
        g = g->parent;
        val = &g->values[val->outer];
    }
    const ir_tensor *t = val->init ? val->init : val->konst;
    if (!t || t->dtype == SEAM_DTYPE_STRING) return false;
    *out = (seam_tensor_view){val->name, (seam_dtype)t->dtype, t->rank, t->dims, t->data, t->nbytes};
    return true;
}

void *subgraph_impl_new(const struct seam_model *m, const ir_graph *body) {
    subgraph_impl *impl = calloc(1, sizeof(*impl));
    if (!impl) return NULL;
    impl->body = body;
    view_init(&impl->vb, m);
    impl->vb.g = body;
    return impl;
}

void subgraph_impl_free(void *p) {
    subgraph_impl *impl = p;
    if (!impl) return;
    view_free(&impl->vb);
    free(impl);
}
