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
 * as ir_dim pairs, the public view as two flat arrays. */
static seam_status fill_info(const seam_model *mc, const ir_value *v, seam_value_info *info) {
    seam_model *m = (seam_model *)mc;
    info->name = v->name;
    info->dtype = v->type.kind == IR_TYPE_TENSOR ? (seam_dtype)v->type.elem : SEAM_DTYPE_UNDEFINED;
    info->rank = v->type.kind == IR_TYPE_TENSOR ? v->type.rank : -1;
    info->dims = NULL;
    info->dim_params = NULL;
    if (info->rank <= 0) return SEAM_STATUS_OK;
    int64_t *dims = seam_arena_alloc(&m->arena, sizeof(int64_t) * (size_t)info->rank);
    const char **syms = seam_arena_alloc(&m->arena, sizeof(char *) * (size_t)info->rank);
    if (!dims || !syms) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t k = 0; k < info->rank; k++) {
        dims[k] = v->type.dims[k].v >= 0 ? v->type.dims[k].v : -1;
        syms[k] = v->type.dims[k].sym;
    }
    info->dims = dims;
    info->dim_params = syms;
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

seam_status seam_model_metadata(const seam_model *mc, seam_model_meta *out) {
    if (!mc || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_model *m = (seam_model *)mc;
    const char **keys = NULL, **vals = NULL;
    if (m->n_metadata > 0) { /* the IR keeps pairs, the public view two flat arrays */
        keys = seam_arena_alloc(&m->arena, sizeof(char *) * (size_t)m->n_metadata);
        vals = seam_arena_alloc(&m->arena, sizeof(char *) * (size_t)m->n_metadata);
        if (!keys || !vals) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int32_t k = 0; k < m->n_metadata; k++) {
            keys[k] = m->metadata[k].key ? m->metadata[k].key : "";
            vals[k] = m->metadata[k].value ? m->metadata[k].value : "";
        }
    }
#define OR_EMPTY(s) ((s) ? (s) : "")
    *out = (seam_model_meta){OR_EMPTY(m->producer_name), OR_EMPTY(m->producer_version), OR_EMPTY(m->domain),
                             OR_EMPTY(m->doc), OR_EMPTY(m->graph->name), OR_EMPTY(m->graph->doc), m->model_version,
                             m->ir_version, m->n_metadata, keys, vals};
#undef OR_EMPTY
    return SEAM_STATUS_OK;
}
