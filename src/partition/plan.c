/* The plan: its lifecycle (made by seam_partition, seam_partition_by_callback
 * and seam_partition_measured, freed with seam_plan_free), the nodes it
 * places nowhere (constants), and the public accessors. Its JSON is
 * plan_json.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "partition/partition.h"

seam_plan *plan_new(const struct seam_model *m, int32_t n_targets) {
    seam_plan *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    seam_arena_init(&p->arena, 1 << 16);
    p->model = m;
    p->n_targets = n_targets;
    int32_t nn = m->graph->n_nodes;
    p->n_nodes = nn;
    p->node_target = seam_arena_calloc(&p->arena, (size_t)nn + 1, sizeof(int32_t));
    p->node_subgraph = seam_arena_calloc(&p->arena, (size_t)nn + 1, sizeof(int32_t));
    p->reason = seam_arena_calloc(&p->arena, (size_t)nn + 1, 1);
    p->detail = seam_arena_calloc(&p->arena, (size_t)nn + 1, sizeof(char *));
    p->target_names = seam_arena_calloc(&p->arena, (size_t)n_targets + 2, sizeof(char *));
    if (!p->node_target || !p->node_subgraph || !p->reason || !p->detail || !p->target_names) {
        seam_plan_free(p);
        return NULL;
    }
    p->target_names[n_targets] = "cpu";
    return p;
}

void plan_json_drop(seam_plan *p) {
    free(p->json);
    free(p->json_model);
    p->json = p->json_model = NULL;
    p->json_len = 0;
}

void seam_plan_free(seam_plan *p) {
    if (!p) return;
    plan_json_drop(p);
    seam_arena_free(&p->arena);
    free(p->notes);
    free(p);
}

static const char *plan_strdup(seam_plan *p, const char *s) { return seam_arena_strdup(&p->arena, s); }

bool plan_is_constant_node(const ir_graph *g, int32_t i) {
    const ir_node *n = &g->nodes[i];
    /* (a DimExpr keeps the op it was, and runs: ops/symdim.c) */
    return (ir_node_folded_op(g, i) && strcmp(n->op_type, "DimExpr")) ||
           (n->op_type[0] == 'C' && strcmp(n->op_type, "Constant") == 0 && !n->domain[0] && n->n_inputs == 0);
}

void plan_set_constant(seam_plan *p, int32_t i) {
    const ir_graph *g = p->model->graph;
    const ir_node *n = &g->nodes[i];
    p->node_target[i] = -1;
    p->reason[i] = SEAM_REASON_CONSTANT;
    if (!ir_node_folded_op(g, i)) return;
    char detail[600];
    if (strcmp(n->op_type, "Constant") == 0)
        snprintf(detail, sizeof(detail), "folded: computed from initializers and static shapes before partitioning; "
                 "a Constant holds its value");
    else if (n->n_inputs == 1 && n->inputs[0] >= 0)
        snprintf(detail, sizeof(detail), "bypassed: an Identity of the initializer '%s', which its readers read directly",
                 g->values[n->inputs[0]].name);
    else
        snprintf(detail, sizeof(detail), "folded");
    p->detail[i] = plan_strdup(p, detail);
}

/* ---- accessors ---- */

int32_t seam_plan_node_count(const seam_plan *p) { return p ? p->n_nodes : 0; }
int32_t seam_plan_subgraph_count(const seam_plan *p) { return p ? p->n_subgraphs : 0; }
int32_t seam_plan_device_subgraph_count(const seam_plan *p) { return p ? p->n_device_subgraphs : 0; }
const char *seam_plan_notes(const seam_plan *p) { return p && p->notes ? p->notes : ""; }

const seam_model *seam_plan_model(const seam_plan *p) { return p ? p->model : NULL; }

void seam_plan_support(const seam_plan *p, int32_t *supported, int32_t *counted) {
    if (supported) *supported = p ? p->supported : 0;
    if (counted) *counted = p ? p->counted : 0;
}

seam_status seam_plan_node(const seam_plan *p, int32_t i, seam_plan_node_info *out) {
    if (!p || !out || i < 0 || i >= p->n_nodes) return SEAM_STATUS_INVALID_ARGUMENT;
    const ir_node *n = &p->model->graph->nodes[i];
    const char *folded_op = ir_node_folded_op(p->model->graph, i);
    int32_t t = p->node_target[i];
    *out = (seam_plan_node_info){i, n->name, folded_op ? folded_op : n->op_type, t < 0 ? "constant" : p->target_names[t], p->node_subgraph[i],
                            (seam_reason)p->reason[i], p->detail[i] ? p->detail[i] : ""};
    return SEAM_STATUS_OK;
}

seam_status seam_plan_subgraph(const seam_plan *p, int32_t id, seam_plan_subgraph_info *out) {
    if (!p || !out || id < 0 || id >= p->n_subgraphs) return SEAM_STATUS_INVALID_ARGUMENT;
    const plan_subgraph *sg = &p->subgraphs[id];
    *out = (seam_plan_subgraph_info){id, p->target_names[sg->target], sg->n_nodes, sg->n_inputs, sg->n_outputs,
                                sg->nodes, sg->inputs, sg->outputs, sg->est_us, sg->boundary_bytes, sg->need_bytes};
    return SEAM_STATUS_OK;
}

int32_t seam_plan_estimate_guessed(const seam_plan *p) { return p ? p->est_guessed : 0; }

seam_status seam_plan_estimate_get(const seam_plan *p, seam_plan_estimate *out) {
    if (!p || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = p->est;
    return SEAM_STATUS_OK;
}

const char *seam_reason_name(seam_reason r) {
    switch (r) {
    case SEAM_REASON_SUPPORTED: return "supported";
    case SEAM_REASON_UNSUPPORTED: return "unsupported";
    case SEAM_REASON_CPU_OPS: return "cpu_ops";
    case SEAM_REASON_PINNED: return "pinned";
    case SEAM_REASON_MIN_SIZE: return "min_subgraph_size";
    case SEAM_REASON_MAX_COUNT: return "max_subgraph_count";
    case SEAM_REASON_CONSTANT: return "constant";
    case SEAM_REASON_USER: return "user";
    case SEAM_REASON_COST: return "cost";
    case SEAM_REASON_UNIT: return "qdq_unit";
    case SEAM_REASON_MEMORY: return "memory";
    }
    return "?";
}

