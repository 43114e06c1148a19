/*
 * QDQ units that stay nodes (issue 27): seam_model_fuse_qdq (qdq.c) makes
 * one node of the Conv, MatMul and Gemm units it can; every other unit,
 *
 *     x_q -> DQ -+
 *                +-> Add / Mul / MaxPool / Concat / Reshape ... (-> Relu) -> Q -> y_q
 *     z_q -> DQ -+
 *
 * (and a Conv or MatMul unit the rewrite could not take) stays as the
 * file has it. Placement puts each such unit whole on one target: where
 * its op goes, unless a member is pinned (the unit follows the pin) or
 * the op's target refuses a member (the unit goes to the CPU, and each
 * member says why). A DequantizeLinear that two units read is copied
 * for each by qdq.c first, so every unit owns its DQs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "partition/partitioner.h"

static bool is_std(const ir_node *n, const char *op) { return !n->domain[0] && !strcmp(n->op_type, op); }

int32_t qdq_unit_members(const ir_graph *g, int32_t i, int32_t *out, int32_t cap) {
    const ir_node *n = &g->nodes[i];
    if (n->domain[0] || n->n_implicit || n->n_outputs < 1 || n->outputs[0] < 0 || cap < 4 ||
        is_std(n, "DequantizeLinear") || is_std(n, "QuantizeLinear") || is_std(n, "Constant"))
        return 0;
    for (int32_t k = 1; k < n->n_outputs; k++) { /* (MaxPool's indices: unused) */
        int32_t v = n->outputs[k];
        if (v >= 0 && (g->values[v].n_consumers || (g->values[v].flags & IR_VALUE_OUTPUT))) return 0;
    }
    int32_t m = 0;
    out[m++] = i;
    int32_t n_in = is_std(n, "Reshape") ? 1 : n->n_inputs, dqs = 0;
    for (int32_t k = 0; k < n_in; k++) {
        int32_t v = n->inputs[k];
        if (v < 0 || (g->values[v].flags & IR_VALUE_INIT)) continue;
        int32_t p = g->values[v].producer;
        if (p < 0) return 0; /* a float graph input */
        const ir_node *pn = &g->nodes[p];
        if (is_std(pn, "Constant")) continue;
        if (!is_std(pn, "DequantizeLinear")) return 0;
        bool seen = false;
        for (int32_t q = 1; q < m; q++) seen |= out[q] == p;
        if (seen) continue;
        if (m == cap) return 0;
        out[m++] = p, dqs++;
    }
    if (!dqs) return 0;
    int32_t y = n->outputs[0];
    if (g->values[y].flags & IR_VALUE_OUTPUT) return 0;
    if (g->values[y].n_consumers == 1) {
        int32_t r = g->values[y].consumers[0];
        const ir_node *rn = &g->nodes[r];
        if ((is_std(rn, "Relu") || is_std(rn, "Clip")) && rn->n_outputs == 1 && rn->outputs[0] >= 0 &&
            !(g->values[rn->outputs[0]].flags & IR_VALUE_OUTPUT)) {
            if (m == cap) return 0;
            out[m++] = r;
            y = rn->outputs[0];
        }
    }
    const ir_value *yv = &g->values[y];
    if (yv->n_consumers < 1) return 0;
    for (int32_t c = 0; c < yv->n_consumers; c++) {
        int32_t q = yv->consumers[c];
        if (!is_std(&g->nodes[q], "QuantizeLinear")) return 0;
        bool seen = false;
        for (int32_t k = 0; k < m; k++) seen |= out[k] == q;
        if (seen) continue;
        if (m == cap) return 0;
        out[m++] = q;
    }
    return m;
}

seam_status partition_units_find(partitioner *pr) {
    const ir_graph *g = pr->m->graph;
    int32_t nn = g->n_nodes, tmp[QDQ_UNIT_MAX];
    pr->n_units = 0;
    int32_t total = 0;
    for (int32_t i = 0; i < nn; i++) total += qdq_unit_members(g, i, tmp, QDQ_UNIT_MAX) > 0;
    if (!total) return SEAM_STATUS_OK;
    pr->unit_start = malloc(sizeof(int32_t) * ((size_t)total + 1));
    pr->unit_member = malloc(sizeof(int32_t) * ((size_t)total * QDQ_UNIT_MAX + 1));
    if (!pr->unit_start || !pr->unit_member) return seam_error(pr->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    int32_t at = 0;
    for (int32_t q = 0; q < nn; q++) {
        int32_t i = g->topo ? g->topo[q] : q;
        int32_t m = qdq_unit_members(g, i, pr->unit_member + at, QDQ_UNIT_MAX);
        if (!m) continue;
        pr->unit_start[pr->n_units++] = at;
        at += m;
    }
    pr->unit_start[pr->n_units] = at;
    seam_plan *p = pr->p;
    p->node_unit = seam_arena_alloc(&p->arena, sizeof(int32_t) * ((size_t)nn + 1));
    if (!p->node_unit) return seam_error(pr->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t i = 0; i < nn; i++) p->node_unit[i] = -1;
    for (int32_t u = 0; u < pr->n_units; u++)
        for (int32_t k = pr->unit_start[u]; k < pr->unit_start[u + 1]; k++)
            p->node_unit[pr->unit_member[k]] = pr->unit_member[pr->unit_start[u]];
    return SEAM_STATUS_OK;
}

/* Where unit u must go under targets t: its op's target, a pinned
 * member's, or the CPU when that target refuses a member (*refuser set to
 * it; -1 otherwise). */
static int32_t unit_target(const partitioner *pr, int32_t u, const int32_t *t, int32_t *refuser, int32_t *wanted) {
    const int32_t *mem = pr->unit_member + pr->unit_start[u];
    int32_t n = pr->unit_start[u + 1] - pr->unit_start[u], cpu = pr->n_targets;
    int32_t T = t[mem[0]];
    *refuser = -1;
    for (int32_t k = 0; k < n; k++)
        if (pr->pinned[mem[k]] && t[mem[k]] >= 0) {
            T = t[mem[k]];
            break;
        }
    *wanted = T;
    if (T < 0 || T == cpu) return T;
    for (int32_t k = 0; k < n; k++)
        if (t[mem[k]] >= 0 && !pr->pinned[mem[k]] && !(pr->supported_by[mem[k]] >> T & 1)) {
            *refuser = mem[k];
            return cpu;
        }
    return T;
}

int32_t partition_units_close(const partitioner *pr, int32_t *t) {
    int32_t changed = 0;
    for (int32_t u = 0; u < pr->n_units; u++) {
        int32_t refuser, wanted, T = unit_target(pr, u, t, &refuser, &wanted);
        if (T < 0) continue;
        for (int32_t k = pr->unit_start[u]; k < pr->unit_start[u + 1]; k++) {
            int32_t i = pr->unit_member[k];
            if (t[i] >= 0 && !pr->pinned[i] && t[i] != T) t[i] = T, changed++;
        }
    }
    return changed;
}

void partition_units_assign(partitioner *pr) {
    seam_plan *p = pr->p;
    const ir_graph *g = pr->m->graph;
    char buf[600], a[300], b[300];
    for (int32_t u = 0; u < pr->n_units; u++) {
        int32_t refuser, wanted, T = unit_target(pr, u, p->node_target, &refuser, &wanted);
        if (T < 0) continue;
        const int32_t *mem = pr->unit_member + pr->unit_start[u];
        int32_t n = pr->unit_start[u + 1] - pr->unit_start[u], pin = -1;
        for (int32_t k = 0; k < n && pin < 0; k++)
            if (pr->pinned[mem[k]]) pin = mem[k];
        const char *d = NULL;
        for (int32_t k = 0; k < n; k++) {
            int32_t i = mem[k];
            if (p->node_target[i] < 0 || pr->pinned[i] || p->node_target[i] == T) continue;
            if (!d) {
                ir_node_label(g, mem[0], a, sizeof(a));
                if (refuser >= 0)
                    snprintf(buf, sizeof(buf), "a member of the QDQ unit of %s, which runs whole on the CPU: %s does not "
                             "support its member %s (%s)", a, p->target_names[wanted], ir_node_label(g, refuser, b, sizeof(b)),
                             p->detail[refuser] ? p->detail[refuser] : "refused");
                else if (pin >= 0)
                    snprintf(buf, sizeof(buf), "a member of the QDQ unit of %s, which follows its pinned member %s to %s", a,
                             ir_node_label(g, pin, b, sizeof(b)), T == pr->n_targets ? "cpu" : p->target_names[T]);
                else
                    snprintf(buf, sizeof(buf), "a member of the QDQ unit of %s, which runs whole on %s", a,
                             T == pr->n_targets ? "cpu" : p->target_names[T]);
                d = plan_strdup(p, buf);
            }
            p->node_target[i] = T;
            p->reason[i] = SEAM_REASON_UNIT;
            p->detail[i] = d;
        }
    }
}

int32_t seam_plan_node_unit(const seam_plan *plan, int32_t node) {
    if (!plan || !plan->node_unit || node < 0 || node >= plan->n_nodes) return -1;
    return plan->node_unit[node];
}
