/*
 * Folding before partitioning. Inference computes the content of the small
 * values that depend only on initializers and statically known shapes
 * (Shape -> Gather -> Unsqueeze -> Concat chains, ConstantOfShape, casts
 * and integer arithmetic on them), and seam_model_fold
 * (runtime/fold_eval.c) computes every other node whose inputs are known
 * with the CPU backend's kernels before it calls this. Each node all
 * of whose outputs are known that way becomes a Constant node holding the
 * value: it keeps its index, name and outputs, loses its inputs, and so no
 * longer ties a device subgraph's output (say, the input of a Shape) to a
 * CPU node. The partitioner then puts it in no subgraph (target
 * "constant"), and device bodies read it as a resident value.
 *
 * Plans describe the model the user passed: a folded node keeps its index
 * and name, and folded_op keeps its op type, so the plan can report it as
 * the model has it, with target "constant" and what replaced it.
 */
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "ir/ir.h"
#include "ops/ops.h"
#include "partition/fold.h"
#include "seam_backend.h"

static bool foldable(const ir_graph *g, const ir_node *n) {
    if (n->n_outputs != 1 || n->outputs[0] < 0 || n->n_implicit > 0) return false;
    /* most nodes of a big graph stop here, before the op name is compared */
    const ir_value *v = &g->values[n->outputs[0]];
    if (!v->konst || (v->flags & IR_VALUE_OUTPUT) || v->konst->dtype == SEAM_DTYPE_STRING) return false;
    if (strcmp(n->op_type, "Constant") == 0 && !n->domain[0]) return false;
    if (ir_node_has_body(n)) return false;
    /* random generators are not constants, whatever inference says */
    return strncmp(n->op_type, "Random", 6) != 0 && strcmp(n->op_type, "Bernoulli") != 0;
}

seam_status partition_fold_known(seam_model *m, int32_t *folded_out) {
    if (folded_out) *folded_out = 0;
    if (!m) return SEAM_STATUS_INVALID_ARGUMENT;
    ir_graph *g = m->graph;
    seam_arena *a = &m->arena;
    int32_t folded = 0;
    const seam_op_def *constant = seam_op_find("", "Constant", seam_op_opset(m, ""));
    /* An Identity of an initializer (exporters write one for each shared
     * weight): its readers read the initializer itself, so that a backend
     * sees a constant it can lay out once at compile time, and
     * replace-weights reaches them. The Identity stays, unread, and is
     * reported as a constant. */
    int32_t *alias = malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    if (!alias) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    bool rewired = false;
    for (int32_t v = 0; v < g->n_values; v++) alias[v] = -1;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->op_type[0] != 'I' || strcmp(n->op_type, "Identity") || n->domain[0] || n->n_inputs != 1 || n->n_outputs != 1 || n->inputs[0] < 0 ||
            n->outputs[0] < 0)
            continue;
        int32_t from = n->inputs[0], to = n->outputs[0];
        if ((g->values[from].flags & IR_VALUE_INIT) && !(g->values[to].flags & IR_VALUE_OUTPUT)) alias[to] = from;
    }
    /* a body that reads the Identity's output by name (If/Loop/Scan) still
     * needs the Identity: it is not bypassed */
    for (int32_t j = 0; j < g->n_nodes; j++)
        for (int32_t k = 0; k < g->nodes[j].n_implicit; k++) {
            int32_t v = ir_node_implicit(&g->nodes[j])[k];
            if (v >= 0) alias[v] = -1;
        }
    for (int32_t j = 0; j < g->n_nodes; j++)
        for (int32_t k = 0; k < g->nodes[j].n_inputs; k++) {
            int32_t v = g->nodes[j].inputs[k];
            if (v >= 0 && alias[v] >= 0) g->nodes[j].inputs[k] = alias[v], rewired = true;
        }
    for (int32_t v = 0; v < g->n_values; v++)
        if (alias[v] >= 0) {
            int32_t id = g->values[v].producer;
            if (!ir_node_folded_op(g, id) && !ir_node_set_folded_op(g, id, g->nodes[id].op_type)) {
                free(alias);
                return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
            }
        }
    free(alias);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (!foldable(g, n)) continue;
        ir_attr *at = seam_arena_calloc(a, 1, sizeof(ir_attr));
        if (!at) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        at->name = "value";
        at->kind = IR_ATTR_TENSOR;
        at->t = (ir_tensor *)g->values[n->outputs[0]].konst;
        if (!ir_node_set_folded_op(g, i, n->op_type)) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        n->op_type = "Constant";
        n->domain = "";
        n->n_inputs = 0;
        n->attrs = at;
        n->n_attrs = 1;
        n->def = constant;
        folded++;
    }
    if (folded || rewired) {
        seam_status st = ir_graph_link(m->ctx, g);
        if (st) return st;
    }
    if (folded_out) *folded_out = folded;
    seam_phase(m->ctx, "fold");
    return SEAM_STATUS_OK;
}
