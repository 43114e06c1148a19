/*
 * The plan self-check (SEAM_SELF_CHECK, core/context.h): every plan the
 * partitioner returns is checked against its model before the caller sees
 * it, by rules stated here from the plan's meaning, not by the code that
 * built it:
 *   - every node that is not a constant is in exactly one subgraph, the one
 *     node_subgraph names, on the target node_target names; constants are
 *     in none;
 *   - run in the plan's order (subgraph by subgraph, each in its listed
 *     order), every node comes after the producers of what it reads;
 *   - each subgraph's inputs are exactly the values its nodes read that are
 *     made outside it at run time (not initializers, not constants), and
 *     its outputs exactly the values it makes that another subgraph reads
 *     or the graph returns, each once;
 *   - the device subgraph count is the number of subgraphs not on the CPU.
 * It walks values and their consumers, where grouping walks nodes.
 */
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "partition/partition.h"

typedef struct name_slot {
    const char *name;
    int32_t v;
} name_slot;

static int cmp_slot(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const name_slot *)a)->name, y = (uintptr_t)((const name_slot *)b)->name;
    return x < y ? -1 : x > y;
}

/* The value a boundary list names (plans keep the values' own name
 * pointers; a name from elsewhere is looked up by text); -1 if none. */
static int32_t value_of(const ir_graph *g, const name_slot *slots, const char *name) {
    name_slot key = {name, -1};
    const name_slot *hit = bsearch(&key, slots, (size_t)g->n_values, sizeof(name_slot), cmp_slot);
    if (hit) return hit->v;
    for (int32_t v = 0; v < g->n_values; v++)
        if (g->values[v].name && strcmp(g->values[v].name, name) == 0) return v;
    return -1;
}

/* Whether value v is made at run time outside subgraph s and read in it. */
static bool boundary_input(const seam_plan *p, const ir_graph *g, int32_t v, int32_t s) {
    const ir_value *val = &g->values[v];
    if (val->flags & IR_VALUE_INIT) return false;
    if (val->producer >= 0 && (p->node_target[val->producer] < 0 || p->node_subgraph[val->producer] == s)) return false;
    for (int32_t c = 0; c < val->n_consumers; c++)
        if (p->node_subgraph[val->consumers[c]] == s) return true;
    return false;
}

/* Whether value v is made in subgraph s and read elsewhere or returned. */
static bool boundary_output(const seam_plan *p, const ir_graph *g, int32_t v, int32_t s) {
    const ir_value *val = &g->values[v];
    if (val->producer < 0 || p->node_target[val->producer] < 0 || p->node_subgraph[val->producer] != s) return false;
    if (val->flags & IR_VALUE_OUTPUT) return true;
    for (int32_t c = 0; c < val->n_consumers; c++)
        if (p->node_subgraph[val->consumers[c]] != s) return true;
    return false;
}

static seam_status check_lists(seam_context *ctx, const seam_plan *p, const ir_graph *g, const name_slot *slots,
                               int32_t *stamp) {
    int32_t *want_in = calloc((size_t)p->n_subgraphs + 1, sizeof(int32_t));
    int32_t *want_out = calloc((size_t)p->n_subgraphs + 1, sizeof(int32_t));
    if (!want_in || !want_out) {
        free(want_in), free(want_out);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    /* how many inputs and outputs each subgraph should list, value by value */
    for (int32_t v = 0; v < g->n_values; v++) {
        const ir_value *val = &g->values[v];
        int32_t made = val->producer >= 0 && p->node_target[val->producer] >= 0 ? p->node_subgraph[val->producer] : -1;
        for (int32_t c = 0; c < val->n_consumers; c++) {
            int32_t s = p->node_subgraph[val->consumers[c]];
            if (s < 0 || s == made || stamp[s] == v) continue;
            stamp[s] = v;
            if (boundary_input(p, g, v, s)) want_in[s]++;
        }
        if (made >= 0 && boundary_output(p, g, v, made)) want_out[made]++;
    }
    for (int32_t s = 0; s <= p->n_subgraphs; s++) stamp[s] = -1;
    seam_status st = SEAM_STATUS_OK;
    for (int32_t s = 0; s < p->n_subgraphs && !st; s++) {
        const plan_subgraph *sg = &p->subgraphs[s];
        for (int32_t io = 0; io < 2 && !st; io++) {
            int32_t n = io ? sg->n_outputs : sg->n_inputs, want = io ? want_out[s] : want_in[s];
            const char *const *names = io ? sg->outputs : sg->inputs;
            const char *what = io ? "output" : "input";
            for (int32_t k = 0; k < n && !st; k++) {
                int32_t v = value_of(g, slots, names[k]);
                if (v < 0) {
                    st = seam_error(ctx, SEAM_STATUS_INTERNAL, "plan self-check: subgraph %d lists %s '%s', which the model "
                                    "does not have", s, what, names[k]);
                } else if (!(io ? boundary_output(p, g, v, s) : boundary_input(p, g, v, s))) {
                    st = seam_error(ctx, SEAM_STATUS_INTERNAL, "plan self-check: subgraph %d lists '%s' as an %s; it is not "
                                    "one", s, names[k], what);
                }
            }
            if (!st && n != want)
                st = seam_error(ctx, SEAM_STATUS_INTERNAL, "plan self-check: subgraph %d lists %d %ss where %d values cross "
                                "its boundary that way (one missing or listed twice)", s, n, what, want);
        }
    }
    free(want_in);
    free(want_out);
    return st;
}

seam_status plan_self_check(seam_plan *p) {
    const ir_graph *g = p->model->graph;
    seam_context *ctx = p->model->ctx;
    int32_t nn = g->n_nodes;
    int32_t *pos = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    int32_t *stamp = malloc(sizeof(int32_t) * ((size_t)p->n_subgraphs + 1));
    name_slot *slots = malloc(sizeof(name_slot) * ((size_t)g->n_values + 1));
    if (!pos || !stamp || !slots) {
        free(pos), free(stamp), free(slots);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    char lab[300], lab2[300];
    seam_status st = SEAM_STATUS_OK;
    for (int32_t i = 0; i < nn; i++) pos[i] = -1;
    int32_t at = 0, n_dev = 0;
    for (int32_t s = 0; s < p->n_subgraphs && !st; s++) {
        const plan_subgraph *sg = &p->subgraphs[s];
        n_dev += sg->target < p->n_targets;
        for (int32_t k = 0; k < sg->n_nodes && !st; k++) {
            int32_t i = sg->nodes[k];
            if (i < 0 || i >= nn)
                st = seam_error(ctx, SEAM_STATUS_INTERNAL, "plan self-check: subgraph %d lists node %d of %d", s, i, nn);
            else if (pos[i] >= 0 || p->node_target[i] < 0 || p->node_subgraph[i] != s || p->node_target[i] != sg->target)
                st = seam_error(ctx, SEAM_STATUS_INTERNAL, "plan self-check: %s is in subgraph %d, but %s",
                                ir_node_label(g, i, lab, sizeof(lab)), s,
                                pos[i] >= 0 ? "also in an earlier one"
                                : p->node_target[i] < 0 ? "it is marked a constant"
                                                        : "its node_subgraph or node_target says otherwise");
            else
                pos[i] = at++;
        }
    }
    for (int32_t i = 0; i < nn && !st; i++) {
        if ((p->node_target[i] >= 0) != (pos[i] >= 0))
            st = seam_error(ctx, SEAM_STATUS_INTERNAL, "plan self-check: %s is in no subgraph",
                            ir_node_label(g, i, lab, sizeof(lab)));
        const ir_node *n = &g->nodes[i];
        for (int32_t k = 0; k < n->n_inputs + n->n_implicit && !st && pos[i] >= 0; k++) {
            int32_t v = n->inputs[k], pr = v >= 0 ? g->values[v].producer : -1;
            if (pr >= 0 && p->node_target[pr] >= 0 && pos[pr] >= pos[i])
                st = seam_error(ctx, SEAM_STATUS_INTERNAL,
                                "plan self-check: %s (subgraph %d) runs before %s (subgraph %d), which makes its input '%s'",
                                ir_node_label(g, i, lab, sizeof(lab)), p->node_subgraph[i],
                                ir_node_label(g, pr, lab2, sizeof(lab2)), p->node_subgraph[pr], g->values[v].name);
        }
    }
    if (!st && n_dev != p->n_device_subgraphs)
        st = seam_error(ctx, SEAM_STATUS_INTERNAL, "plan self-check: %d device subgraphs counted, %d listed",
                        p->n_device_subgraphs, n_dev);
    if (!st) {
        for (int32_t v = 0; v < g->n_values; v++) slots[v] = (name_slot){g->values[v].name, v};
        qsort(slots, (size_t)g->n_values, sizeof(name_slot), cmp_slot);
        for (int32_t s = 0; s <= p->n_subgraphs; s++) stamp[s] = -1;
        st = check_lists(ctx, p, g, slots, stamp);
    }
    free(pos);
    free(stamp);
    free(slots);
    return st;
}
