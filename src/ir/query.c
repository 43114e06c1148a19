/* The introspection calls of seam.h. */
#include <string.h>

#include "core/context.h"
#include "ir/ir.h"

int32_t seam_model_node_count(const seam_model *m) { return m ? m->graph->n_nodes : 0; }

seam_status seam_model_node(const seam_model *m, int32_t index, seam_node_info *info) {
    if (!m || !info) return SEAM_STATUS_INVALID_ARGUMENT;
    if (index < 0 || index >= m->graph->n_nodes)
        return seam_error(m->ctx, SEAM_STATUS_INVALID_ARGUMENT, "node index %d is out of range (the model has %d nodes)",
                          index, m->graph->n_nodes);
    const ir_node *n = &m->graph->nodes[index];
    *info = (seam_node_info){index, n->name, n->op_type, n->domain, n->n_inputs, n->n_outputs};
    return SEAM_STATUS_OK;
}

/* Graph inputs that are not initializers: what a caller must feed. */
static int32_t real_input(const ir_graph *g, int32_t k) {
    for (int32_t i = 0; i < g->n_inputs; i++) {
        if (g->values[g->inputs[i]].flags & IR_VALUE_INIT) continue;
        if (k-- == 0) return g->inputs[i];
    }
    return -1;
}

int32_t seam_model_input_count(const seam_model *m) {
    if (!m) return 0;
    int32_t n = 0;
    for (int32_t i = 0; i < m->graph->n_inputs; i++)
        if (!(m->graph->values[m->graph->inputs[i]].flags & IR_VALUE_INIT)) n++;
    return n;
}

int32_t seam_model_output_count(const seam_model *m) { return m ? m->graph->n_outputs : 0; }

/* dims and symbols are copied into the model's arena: the IR keeps them
 * as ir_dim pairs, the public view as two flat arrays. The arrays handed
 * out for a value are kept (model->info_cache) and handed out again while
 * its shape is the same, so a caller asking at every run (a serving loop
 * reading the inputs' names) does not grow the arena. */
struct ir_info_cache {
    int32_t rank;
    int64_t *dims;
    const char **syms;
};

static bool cache_matches(const struct ir_info_cache *c, const ir_value *v) {
    if (!c->dims || c->rank != v->type.rank) return false;
    for (int32_t k = 0; k < c->rank; k++) {
        int64_t d = v->type.dims[k].v >= 0 ? v->type.dims[k].v : -1;
        const char *s = v->type.dims[k].sym;
        if (c->dims[k] != d || c->syms[k] != s) return false;
    }
    return true;
}

static seam_status fill_info(const seam_model *mc, const ir_value *v, seam_value_info *info) {
    seam_model *m = (seam_model *)mc;
    info->name = v->name;
    info->dtype = v->type.kind == IR_TYPE_TENSOR ? (seam_dtype)v->type.elem : SEAM_DTYPE_UNDEFINED;
    info->rank = v->type.kind == IR_TYPE_TENSOR ? v->type.rank : -1;
    info->dims = NULL;
    info->dim_params = NULL;
    if (info->rank <= 0) return SEAM_STATUS_OK;
    int32_t n = m->graph->n_values, idx = (int32_t)(v - m->graph->values);
    if (m->n_info_cache < n) { /* the graph grew (or first use): a larger table, the old one left in the arena */
        struct ir_info_cache *t = seam_arena_alloc(&m->arena, sizeof(*t) * (size_t)n);
        if (!t) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        memset(t, 0, sizeof(*t) * (size_t)n);
        if (m->info_cache) memcpy(t, m->info_cache, sizeof(*t) * (size_t)m->n_info_cache);
        m->info_cache = t;
        m->n_info_cache = n;
    }
    struct ir_info_cache *c = &m->info_cache[idx];
    if (!cache_matches(c, v)) {
        int64_t *dims = seam_arena_alloc(&m->arena, sizeof(int64_t) * (size_t)info->rank);
        const char **syms = seam_arena_alloc(&m->arena, sizeof(char *) * (size_t)info->rank);
        if (!dims || !syms) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int32_t k = 0; k < info->rank; k++) {
            dims[k] = v->type.dims[k].v >= 0 ? v->type.dims[k].v : -1;
            syms[k] = v->type.dims[k].sym;
        }
        *c = (struct ir_info_cache){info->rank, dims, syms};
    }
    info->dims = c->dims;
    info->dim_params = c->syms;
    return SEAM_STATUS_OK;
}

seam_status seam_model_input(const seam_model *m, int32_t index, seam_value_info *info) {
    if (!m || !info) return SEAM_STATUS_INVALID_ARGUMENT;
    int32_t v = index >= 0 ? real_input(m->graph, index) : -1;
    if (v < 0) return seam_error(m->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input index %d is out of range", index);
    return fill_info(m, &m->graph->values[v], info);
}

seam_status seam_model_output(const seam_model *m, int32_t index, seam_value_info *info) {
    if (!m || !info) return SEAM_STATUS_INVALID_ARGUMENT;
    if (index < 0 || index >= m->graph->n_outputs)
        return seam_error(m->ctx, SEAM_STATUS_INVALID_ARGUMENT, "output index %d is out of range", index);
    return fill_info(m, &m->graph->values[m->graph->outputs[index]], info);
}

seam_status seam_model_value_type(const seam_model *m, const char *name, seam_type_info *info) {
    if (!m || !name || !info) return SEAM_STATUS_INVALID_ARGUMENT;
    const ir_graph *g = m->graph;
    const ir_value *v = NULL;
    for (int32_t k = 0; k < g->n_inputs && !v; k++)
        if (strcmp(g->values[g->inputs[k]].name, name) == 0) v = &g->values[g->inputs[k]];
    for (int32_t k = 0; k < g->n_outputs && !v; k++)
        if (strcmp(g->values[g->outputs[k]].name, name) == 0) v = &g->values[g->outputs[k]];
    if (!v) return seam_error(m->ctx, SEAM_STATUS_INVALID_ARGUMENT, "the model has no input or output '%s'", name);
    const ir_type *t = &v->type;
    *info = (seam_type_info){SEAM_KIND_TENSOR, false, SEAM_DTYPE_UNDEFINED, SEAM_DTYPE_UNDEFINED};
    if (t->kind == IR_TYPE_OPTIONAL) {
        info->optional = true;
        t = t->inner;
        if (!t) return SEAM_STATUS_OK;
    }
    if (t->kind == IR_TYPE_SEQUENCE) {
        info->kind = SEAM_KIND_SEQUENCE;
        if (t->inner && t->inner->kind == IR_TYPE_TENSOR) info->elem_dtype = (seam_dtype)t->inner->elem;
    } else if (t->kind == IR_TYPE_MAP) {
        info->kind = SEAM_KIND_MAP;
        info->key_dtype = (seam_dtype)t->elem;
        if (t->inner && t->inner->kind == IR_TYPE_TENSOR) info->elem_dtype = (seam_dtype)t->inner->elem;
    } else {
        info->elem_dtype = (seam_dtype)t->elem;
    }
    return SEAM_STATUS_OK;
}

seam_status seam_model_metadata(const seam_model *mc, seam_model_meta *out) {
    if (!mc || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_model *m = (seam_model *)mc;
    if (m->n_metadata > 0 && m->n_meta_cached != m->n_metadata) { /* the IR keeps pairs, the public view two flat arrays, made once */
        const char **keys = seam_arena_alloc(&m->arena, sizeof(char *) * (size_t)m->n_metadata);
        const char **vals = seam_arena_alloc(&m->arena, sizeof(char *) * (size_t)m->n_metadata);
        if (!keys || !vals) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int32_t k = 0; k < m->n_metadata; k++) {
            keys[k] = m->metadata[k].key ? m->metadata[k].key : "";
            vals[k] = m->metadata[k].value ? m->metadata[k].value : "";
        }
        m->meta_keys = keys, m->meta_values = vals, m->n_meta_cached = m->n_metadata;
    }
#define OR_EMPTY(s) ((s) ? (s) : "")
    *out = (seam_model_meta){OR_EMPTY(m->producer_name), OR_EMPTY(m->producer_version), OR_EMPTY(m->domain),
                             OR_EMPTY(m->doc), OR_EMPTY(m->graph->name), OR_EMPTY(m->graph->doc), m->model_version,
                             m->ir_version, m->n_metadata, m->meta_keys, m->meta_values};
#undef OR_EMPTY
    return SEAM_STATUS_OK;
}
