/* Placement, steps 2 and 3b of seam_partition: pins, cpu_ops, then the
 * first target by priority that supports a node (smoothed between targets
 * by its neighbours); then, under SEAM_PLACEMENT_COST, the search that
 * keeps on the CPU the supported nodes whose offload costs more than it
 * saves (the cost model is cost.c's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "partition/partitioner.h"


static int32_t target_index(const partitioner *pr, const char *name) {
    if (strcmp(name, "cpu") == 0) return pr->n_targets;
    for (int32_t t = 0; t < pr->n_targets; t++)
        if (strcmp(pr->targets[t]->name, name) == 0) return t;
    return -1;
}

/* Step 2: pins, cpu_ops, then priority order. */
seam_status partition_assign(partitioner *pr) {
    const ir_graph *g = pr->m->graph;
    seam_plan *p = pr->p;
    char buf[512], lab[300];
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (p->node_target[i] < 0 && p->reason[i] == SEAM_REASON_CONSTANT) continue;
        const ir_node *n = &g->nodes[i];
        bool forced = false;
        for (int32_t k = 0; k < pr->o->n_cpu_ops && !forced; k++) forced = strcmp(pr->o->cpu_ops[k], n->op_type) == 0;
        int32_t t = 0;
        while (t < pr->n_targets && !(pr->supported_by[i] >> t & 1)) t++;
        if (forced && pr->supported_by[i]) {
            p->node_target[i] = pr->n_targets;
            p->reason[i] = SEAM_REASON_CPU_OPS;
            snprintf(buf, sizeof(buf), "%s is in cpu_ops", n->op_type);
            p->detail[i] = plan_strdup(p, buf);
        } else {
            p->node_target[i] = t;
            p->reason[i] = t < pr->n_targets ? SEAM_REASON_SUPPORTED : SEAM_REASON_UNSUPPORTED;
        }
    }
    /* pins: the node names are looked up once, through a map */
    for (int32_t k = 0; k < pr->o->n_pins; k++) {
        const seam_pin *pin = &pr->o->pins[k];
        if (!pin->node_name || !pin->target)
            return seam_error(pr->ctx, SEAM_STATUS_INVALID_ARGUMENT, "pin %d has no node name or target", k);
        int32_t t = target_index(pr, pin->target);
        if (t < 0)
            return seam_error(pr->ctx, SEAM_STATUS_INVALID_ARGUMENT, "pin '%s=%s': there is no target '%s'",
                              pin->node_name, pin->target, pin->target);
        int32_t i = -1;
        const char *name = pin->node_name;
        for (int32_t j = 0; j < g->n_nodes && i < 0; j++)
            if (strcmp(g->nodes[j].name, name) == 0) i = j;
        /* a node a QDQ unit absorbed (partition/qdq.c): the pin is the unit's */
        for (int32_t a = 0; i < 0 && a < pr->m->n_absorbed; a++)
            if (!strcmp(pr->m->absorbed[a].key, pin->node_name)) name = pr->m->absorbed[a].value, a = pr->m->n_absorbed;
        for (int32_t j = 0; j < g->n_nodes && i < 0 && name != pin->node_name; j++)
            if (strcmp(g->nodes[j].name, name) == 0) i = j;
        if (i < 0)
            return seam_error(pr->ctx, SEAM_STATUS_INVALID_ARGUMENT, "pin '%s=%s': the model has no node named '%s'",
                              pin->node_name, pin->target, pin->node_name);
        if (p->reason[i] == SEAM_REASON_CONSTANT) continue;
        if (t < pr->n_targets && !(pr->supported_by[i] >> t & 1))
            return seam_error(pr->ctx, SEAM_STATUS_INVALID_ARGUMENT, "pin '%s=%s': %s does not support %s: %s",
                              pin->node_name, pin->target, pin->target, ir_node_label(g, i, lab, sizeof(lab)),
                              p->detail[i] ? p->detail[i] : "refused");
        p->node_target[i] = t;
        p->reason[i] = SEAM_REASON_PINNED;
        snprintf(buf, sizeof(buf), "pinned to %s", pin->target);
        p->detail[i] = plan_strdup(p, buf);
        pr->pinned[i] = true;
    }
    return SEAM_STATUS_OK;
}

/* With several targets, a node two targets support joins the one its
 * neighbours use, so that subgraphs are not cut between targets for
 * nothing. Returns whether anything changed. */
static bool smooth(partitioner *pr) {
    const ir_graph *g = pr->m->graph;
    seam_plan *p = pr->p;
    bool changed = false;
    int32_t votes[64];
    for (int32_t pass = 0; pass < 2; pass++) {
        for (int32_t q = 0; q < g->n_nodes; q++) {
            int32_t i = g->topo[q];
            if (p->reason[i] != SEAM_REASON_SUPPORTED || __builtin_popcountll(pr->supported_by[i]) < 2) continue;
            memset(votes, 0, sizeof(int32_t) * (size_t)pr->n_targets);
            const ir_node *n = &g->nodes[i];
            for (int32_t k = 0; k < n->n_inputs; k++) {
                int32_t v = n->inputs[k];
                if (v < 0 || g->values[v].producer < 0) continue;
                int32_t t = p->node_target[g->values[v].producer];
                if (t >= 0 && t < pr->n_targets) votes[t]++;
            }
            for (int32_t k = 0; k < n->n_outputs; k++) {
                int32_t v = n->outputs[k];
                if (v < 0) continue;
                for (int32_t c = 0; c < g->values[v].n_consumers; c++) {
                    int32_t t = p->node_target[g->values[v].consumers[c]];
                    if (t >= 0 && t < pr->n_targets) votes[t]++;
                }
            }
            int32_t best = p->node_target[i];
            for (int32_t t = 0; t < pr->n_targets; t++)
                if ((pr->supported_by[i] >> t & 1) && votes[t] > votes[best]) best = t;
            if (best != p->node_target[i]) {
                p->node_target[i] = best;
                changed = true;
            }
        }
    }
    if (changed) partition_units_close(pr, p->node_target); /* a unit goes whole */
    return changed;
}

/* Several targets: the neighbour-aware choice is kept only if it gives
 * fewer device subgraphs. */
seam_status partition_smooth(partitioner *pr) {
    const ir_graph *g = pr->m->graph;
    seam_plan *p = pr->p;
    seam_status st = SEAM_STATUS_OK;
    int32_t *first_fit = malloc(sizeof(int32_t) * ((size_t)g->n_nodes + 1));
    if (!first_fit) return SEAM_STATUS_OK;
    memcpy(first_fit, p->node_target, sizeof(int32_t) * (size_t)g->n_nodes);
    int32_t before = p->n_device_subgraphs, before_all = p->n_subgraphs;
    if (smooth(pr)) {
        if ((st = plan_group(pr->ctx, p))) {
            free(first_fit);
            return st;
        }
        if (p->n_device_subgraphs > before || (p->n_device_subgraphs == before && p->n_subgraphs >= before_all)) {
            memcpy(p->node_target, first_fit, sizeof(int32_t) * (size_t)g->n_nodes);
            st = plan_group(pr->ctx, p);
        } else {
            plan_note(p, "joint placement across targets: %d device subgraphs instead of %d with first-fit",
                      p->n_device_subgraphs, before);
        }
    }
    free(first_fit);
    return st;
}


/* Whether the cost search may move node i: supported by some target, not
 * pinned, not forced to the CPU by cpu_ops. */
static bool movable(const partitioner *pr, int32_t i) {
    uint8_t r = pr->p->reason[i];
    return pr->supported_by[i] && !pr->pinned[i] && pr->p->node_target[i] >= 0 &&
           (r == SEAM_REASON_SUPPORTED || r == SEAM_REASON_COST);
}

static void set_cpu_by_cost(partitioner *pr, int32_t i, const char *detail) {
    pr->p->node_target[i] = pr->n_targets;
    pr->p->reason[i] = SEAM_REASON_COST;
    pr->p->detail[i] = detail;
}

/* A plan as the search weighs it: the bytes it puts past the targets'
 * memory (none first), its estimate, then (between plans estimated alike,
 * such as every plan of targets that declare no costs) less supported work
 * left on the CPU, fewer device subgraphs, fewer subgraphs. us < 0: out
 * of memory. */
typedef struct score {
    double us;
    int32_t dev, all;
    int64_t over;
    double cpu_us; /* the CPU estimate of the supported nodes it leaves on the CPU */
} score;

static bool better(score a, score b) {
    if (a.over != b.over) return a.over < b.over;
    if (a.us < b.us - 1e-9) return true;
    if (a.us > b.us + 1e-9) return false;
    if (a.cpu_us < b.cpu_us - 1e-9) return true;
    if (a.cpu_us > b.cpu_us + 1e-9) return false;
    return a.dev < b.dev || (a.dev == b.dev && a.all < b.all);
}

static double supported_on_cpu(const partitioner *pr, const int32_t *targets) {
    double us = 0;
    for (int32_t i = 0; i < pr->p->n_nodes; i++)
        if (targets[i] == pr->n_targets && pr->supported_by[i]) us += pr->cm.cpu_us[i];
    return us;
}

/* Applies targets (a place per movable node), each QDQ unit made whole in
 * them first, and regroups; returns the plan's score (us -1 when out of
 * memory or when the search spent its evaluations). */
static score try_targets(partitioner *pr, const cost_model *cm, int32_t *targets) {
    seam_plan *p = pr->p;
    if (pr->evals_left-- <= 0) return (score){-1, 0, 0, 0, 0};
    partition_units_close(pr, targets);
    memcpy(p->node_target, targets, sizeof(int32_t) * (size_t)p->n_nodes);
    if (plan_group(pr->ctx, p)) return (score){-1, 0, 0, 0, 0};
    double us = cost_plan(cm, p, false);
    return (score){us, p->n_device_subgraphs, p->n_subgraphs, *cm->over, supported_on_cpu(pr, p->node_target)};
}

/* The places the search may give node i: a bit per device target that
 * supports it, and bit n_targets for the CPU (63 targets at most, so the
 * CPU's bit fits). */
static uint64_t options_of(const partitioner *pr, int32_t i) {
    return movable(pr, i) ? pr->supported_by[i] | (pr->devices_only ? 0 : 1ull << pr->n_targets) : 0;
}

/* Graphs with at most this many movable nodes are searched exhaustively
 * (with one target; with several, as long as the node's choices
 * multiplied stay under 2^this); the unit tests set it to 0 to measure
 * the local search against brute force. */
int32_t partition_exhaustive_limit = 12;

/* Every assignment of the movable nodes to their options (a mixed-radix
 * count); the best is left in best. */
static void exhaustive(partitioner *pr, const cost_model *cm, const int32_t *cap, int32_t *best, score *best_cost,
                       const int32_t *mov, int32_t n_mov, double combos) {
    int32_t nn = pr->p->n_nodes;
    int32_t *t = malloc(sizeof(int32_t) * ((size_t)nn + 1)), *digit = calloc((size_t)n_mov + 1, sizeof(int32_t));
    int32_t(*opt)[64] = malloc(sizeof(*opt) * ((size_t)n_mov + 1));
    int32_t *n_opt = malloc(sizeof(int32_t) * ((size_t)n_mov + 1));
    if (!t || !digit || !opt || !n_opt) goto done;
    for (int32_t k = 0; k < n_mov; k++) { /* the CPU first, then the targets in their order */
        uint64_t o = options_of(pr, mov[k]);
        n_opt[k] = 0;
        if (o >> pr->n_targets & 1) opt[k][n_opt[k]++] = pr->n_targets;
        for (int32_t x = 0; x < pr->n_targets; x++)
            if (o >> x & 1) opt[k][n_opt[k]++] = x;
    }
    for (double c = 0; c < combos; c++) {
        memcpy(t, cap, sizeof(int32_t) * (size_t)nn);
        for (int32_t k = 0; k < n_mov; k++) t[mov[k]] = opt[k][digit[k]];
        score cost = try_targets(pr, cm, t);
        if (cost.us >= 0 && better(cost, *best_cost)) {
            *best_cost = cost;
            memcpy(best, t, sizeof(int32_t) * (size_t)nn);
        }
        for (int32_t k = 0; k < n_mov && ++digit[k] == n_opt[k]; k++) digit[k] = 0;
    }
done:
    free(t);
    free(digit);
    free(opt);
    free(n_opt);
}

/* Moves node i, and j too when j >= 0 is a movable node where i is, to
 * place T (a target or the CPU) when both may go there; keeps the move in
 * best when it lowers the cost. */
static bool try_move(partitioner *pr, const cost_model *cm, int32_t *best, score *best_cost, int32_t *t, int32_t i,
                     int32_t j, int32_t T, int32_t *budget) {
    int32_t nn = pr->p->n_nodes;
    if (best[i] == T || !(options_of(pr, i) >> T & 1)) return false;
    if (j >= 0 && (j == i || best[j] != best[i] || !(options_of(pr, j) >> T & 1))) return false;
    if (*budget <= 0) return false;
    --*budget;
    memcpy(t, best, sizeof(int32_t) * (size_t)nn);
    t[i] = T;
    if (j >= 0) t[j] = T;
    score c = try_targets(pr, cm, t);
    if (c.us < 0 || !better(c, *best_cost)) return false;
    *best_cost = c;
    memcpy(best, t, sizeof(int32_t) * (size_t)nn);
    return true;
}

/* Moves node i with every movable neighbour where it is (its producers and
 * its outputs' readers) to T at once: a star of nodes that only pays off
 * together. */
static bool try_move_star(partitioner *pr, const cost_model *cm, int32_t *best, score *best_cost, int32_t *t, int32_t i,
                          int32_t T, int32_t *budget) {
    const ir_graph *g = pr->m->graph;
    int32_t nn = pr->p->n_nodes;
    if (*budget <= 0 || best[i] == T || !(options_of(pr, i) >> T & 1)) return false;
    --*budget;
    memcpy(t, best, sizeof(int32_t) * (size_t)nn);
    const ir_node *n = &g->nodes[i];
    int32_t moved = 0;
    for (int32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int32_t v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (v < 0) continue;
        if (k < n->n_inputs) {
            int32_t j = g->values[v].producer;
            if (j >= 0 && best[j] == best[i] && options_of(pr, j) >> T & 1) t[j] = T, moved++;
        } else {
            for (int32_t q = 0; q < g->values[v].n_consumers; q++) {
                int32_t j = g->values[v].consumers[q];
                if (best[j] == best[i] && options_of(pr, j) >> T & 1) t[j] = T, moved++;
            }
        }
    }
    if (moved < 2) return false; /* a single neighbour is a pair, tried already */
    t[i] = T;
    score c = try_targets(pr, cm, t);
    if (c.us < 0 || !better(c, *best_cost)) return false;
    *best_cost = c;
    memcpy(best, t, sizeof(int32_t) * (size_t)nn);
    return true;
}

/* Each device subgraph moved whole to another target that takes every
 * node of it; the first move that lowers the cost is kept. */
static bool try_retarget(partitioner *pr, const cost_model *cm, int32_t *best, score *best_cost, int32_t *t,
                         int32_t *budget) {
    seam_plan *p = pr->p;
    int32_t nn = p->n_nodes;
    if (pr->n_targets < 2 || try_targets(pr, cm, best).us < 0) return false;
    /* the subgraphs as best groups them, copied: each try regroups */
    int32_t n_sg = p->n_subgraphs, *first = malloc(sizeof(int32_t) * ((size_t)n_sg + 2));
    int32_t *nodes = malloc(sizeof(int32_t) * ((size_t)nn + 1)), *tgt = malloc(sizeof(int32_t) * ((size_t)n_sg + 1));
    bool done = false;
    if (!first || !nodes || !tgt) goto out;
    first[0] = 0;
    for (int32_t s = 0; s < n_sg; s++) {
        const plan_subgraph *sg = &p->subgraphs[s];
        memcpy(nodes + first[s], sg->nodes, sizeof(int32_t) * (size_t)sg->n_nodes);
        first[s + 1] = first[s] + sg->n_nodes;
        tgt[s] = sg->target;
    }
    for (int32_t s = 0; s < n_sg && !done; s++) {
        if (tgt[s] == pr->n_targets) continue;
        uint64_t all = ~0ull;
        for (int32_t k = first[s]; k < first[s + 1]; k++) all &= options_of(pr, nodes[k]);
        for (int32_t T = 0; T < pr->n_targets && !done && *budget > 0; T++) {
            if (T == tgt[s] || !(all >> T & 1)) continue;
            --*budget;
            memcpy(t, best, sizeof(int32_t) * (size_t)nn);
            for (int32_t k = first[s]; k < first[s + 1]; k++) t[nodes[k]] = T;
            score c = try_targets(pr, cm, t);
            if (c.us >= 0 && better(c, *best_cost)) {
                *best_cost = c;
                memcpy(best, t, sizeof(int32_t) * (size_t)nn);
                done = true;
            }
        }
    }
out:
    free(first);
    free(nodes);
    free(tgt);
    return done;
}

/* Local search: moves whole device subgraphs to the CPU where that saves
 * time, or to another target; then single nodes at subgraph borders, with
 * a neighbour, or with all their neighbours, to each place they may take,
 * while the plan's cost falls. */
static void local_search(partitioner *pr, const cost_model *cm, int32_t *best, score *best_cost, bool subgraph_moves) {
    seam_plan *p = pr->p;
    int32_t nn = p->n_nodes;
    int32_t *t = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    bool *border = malloc((size_t)nn + 1);
    if (!t || !border) {
        free(t);
        free(border);
        return;
    }
    /* moves regroup the whole graph: a bounded number of them (all of them
     * for small graphs, which are searched well) */
    int32_t budget = nn <= 200 ? INT32_MAX : 400;
    for (int32_t round = 0; round < 64; round++) {
        if (try_targets(pr, cm, best).us < 0) break;
        cost_plan(cm, p, true);
        memcpy(t, best, sizeof(int32_t) * (size_t)nn);
        bool moved = false;
        for (int32_t s = 0; s < p->n_subgraphs; s++) {
            const plan_subgraph *sg = &p->subgraphs[s];
            if (sg->target == pr->n_targets) continue;
            double cpu = 0;
            bool all = true;
            for (int32_t k = 0; k < sg->n_nodes; k++) {
                cpu += cm->cpu_us[sg->nodes[k]];
                all &= movable(pr, sg->nodes[k]);
            }
            if (!all || cpu >= sg->est_us) continue;
            for (int32_t k = 0; k < sg->n_nodes; k++) t[sg->nodes[k]] = pr->n_targets;
            moved = true;
        }
        if (!subgraph_moves || pr->devices_only) moved = false;
        score c = moved ? try_targets(pr, cm, t) : (score){-1, 0, 0, 0, 0};
        if (c.us >= 0 && better(c, *best_cost)) {
            *best_cost = c;
            memcpy(best, t, sizeof(int32_t) * (size_t)nn);
            continue;
        }
        if (try_retarget(pr, cm, best, best_cost, t, &budget)) continue;
        /* single nodes, and a node with a neighbour (a producer, or another
         * reader of one of its inputs), moved: a lone node pays a launch,
         * so pairs get past that */
        if (nn > 20000) break;
        bool improved = false;
        const ir_graph *g = pr->m->graph;
        /* only nodes at a subgraph's border (a neighbour in another one), and
         * nodes inside a device subgraph that cost more there than on the CPU
         * (a transformer's FFN MatMul in the middle of one dnnl subgraph) */
        if (try_targets(pr, cm, best).us < 0) break;
        for (int32_t i = 0; i < nn; i++) {
            const ir_node *n = &g->nodes[i];
            int32_t on = p->node_target[i];
            border[i] = on >= 0 && on < pr->n_targets && cost_node_us(cm, i, on) > cm->cpu_us[i];
            for (int32_t k = 0; k < n->n_inputs && !border[i]; k++) {
                int32_t v = n->inputs[k], pv = v >= 0 ? g->values[v].producer : -1;
                border[i] = pv >= 0 && p->node_target[pv] >= 0 && p->node_subgraph[pv] != p->node_subgraph[i];
            }
            for (int32_t o = 0; o < n->n_outputs && !border[i]; o++) {
                int32_t v = n->outputs[o];
                for (int32_t q = 0; v >= 0 && q < g->values[v].n_consumers && !border[i]; q++) {
                    int32_t j = g->values[v].consumers[q];
                    border[i] = p->node_target[j] >= 0 && p->node_subgraph[j] != p->node_subgraph[i];
                }
            }
        }
        for (int32_t i = 0; i < nn && !improved; i++) {
            if ((nn > 200 && !border[i]) || !movable(pr, i)) continue;
            uint64_t opts = options_of(pr, i);
            /* the places i may go: the CPU first, then the targets in their order */
            for (int32_t x = 0; x <= pr->n_targets && !improved; x++) {
                int32_t T = x == 0 ? pr->n_targets : x - 1;
                if (!(opts >> T & 1) || T == best[i]) continue;
                improved = try_move(pr, cm, best, best_cost, t, i, -1, T, &budget);
                const ir_node *n = &g->nodes[i];
                for (int32_t k = 0; k < n->n_inputs && !improved; k++) {
                    int32_t v = n->inputs[k];
                    if (v < 0) continue;
                    if (g->values[v].producer >= 0)
                        improved = try_move(pr, cm, best, best_cost, t, i, g->values[v].producer, T, &budget);
                    for (int32_t q = 0; q < g->values[v].n_consumers && !improved; q++)
                        improved = try_move(pr, cm, best, best_cost, t, i, g->values[v].consumers[q], T, &budget);
                }
                if (!improved) improved = try_move_star(pr, cm, best, best_cost, t, i, T, &budget);
            }
        }
        if (!improved) break;
    }
    free(t);
    free(border);
}

typedef struct cap_subgraph {
    int32_t n_nodes;
    double nodes_us, extra_us, cpu_us;
    int64_t bytes;
    int32_t stayed; /* its nodes the search left on the device */
} cap_subgraph;

/* Each node the search kept off its target, with the numbers: its
 * capability subgraph's when the whole of it moved, else the node's. cap:
 * the capability plan's targets, best: the search's; cap_of: each node's
 * capability subgraph; to_cpu: the CPU alone won. */
static void explain_moves(partitioner *pr, const int32_t *cap, const int32_t *best, const int32_t *cap_of,
                          cap_subgraph *cap_sg, bool to_cpu, double all_cpu, double cap_cost) {
    seam_plan *p = pr->p;
    const cost_model *cm = &pr->cm;
    int32_t nn = p->n_nodes;
    for (int32_t i = 0; i < nn; i++)
        if (cap_of[i] >= 0 && best[i] != pr->n_targets) cap_sg[cap_of[i]].stayed++;
    for (int32_t s = 0; s < p->n_subgraphs; s++) {
        const plan_subgraph *sg = &p->subgraphs[s];
        if (sg->target != pr->n_targets) continue;
        for (int32_t k = 0; k < sg->n_nodes; k++) {
            int32_t i = sg->nodes[k], t = cap[i];
            if (t == pr->n_targets || best[i] != pr->n_targets) continue;
            char buf[400];
            if (to_cpu)
                snprintf(buf, sizeof(buf), "the CPU alone is estimated faster (%.1f us) than offloading (%.1f us)", all_cpu,
                         cap_cost);
            else if (cap_sg[cap_of[i]].stayed == 0) {
                const cap_subgraph *c = &cap_sg[cap_of[i]];
                snprintf(buf, sizeof(buf), "its %s subgraph (%d node%s) %.3g us + %.3g us launch and transfer (%lld bytes) > "
                         "%.3g us on cpu", p->target_names[t], c->n_nodes, c->n_nodes == 1 ? "" : "s", c->nodes_us,
                         c->extra_us, (long long)c->bytes, c->cpu_us);
            } else if (cost_node_us(cm, i, t) > cm->cpu_us[i]) {
                snprintf(buf, sizeof(buf), "%.3g us on %s, %.3g on cpu (the backend's cost for this node), the "
                         "boundary values it adds included", cost_node_us(cm, i, t), p->target_names[t], cm->cpu_us[i]);
            } else {
                snprintf(buf, sizeof(buf), "%.3g us on %s (%.3g on cpu), but on %s it would add boundary values "
                         "whose transfers cost more",
                         cost_node_us(cm, i, t), p->target_names[t], cm->cpu_us[i], p->target_names[t]);
            }
            set_cpu_by_cost(pr, i, plan_strdup(p, buf));
        }
    }
}

/* Each node the search put on another target than the targets' order
 * gave it, with the plan's numbers; and one note counting them. */
static void explain_retargets(partitioner *pr, const int32_t *cap, const int32_t *best, double best_cost, double cap_cost,
                              int32_t cap_dev) {
    seam_plan *p = pr->p;
    int32_t moved = 0;
    bool alike = best_cost > cap_cost - 1e-9; /* as fast: chosen for fewer subgraphs */
    for (int32_t i = 0; i < p->n_nodes; i++) {
        if (best[i] == cap[i] || best[i] >= pr->n_targets || cap[i] >= pr->n_targets || p->reason[i] != SEAM_REASON_SUPPORTED)
            continue;
        char buf[400];
        if (alike)
            snprintf(buf, sizeof(buf), "on %s, not %s (the first by --target order that takes it): %d device subgraph%s "
                     "this way, %d with every node on its first target", p->target_names[best[i]], p->target_names[cap[i]],
                     p->n_device_subgraphs, p->n_device_subgraphs == 1 ? "" : "s", cap_dev);
        else
            snprintf(buf, sizeof(buf), "on %s, not %s (the first by --target order that takes it): the plan is estimated "
                     "%.1f us this way, %.1f us with every node on its first target", p->target_names[best[i]],
                     p->target_names[cap[i]], best_cost, cap_cost);
        p->detail[i] = plan_strdup(p, buf);
        moved++;
    }
    if (moved && alike)
        plan_note(p, "placement across targets: %d node%s on another target than the --target order gives, for %d device "
                  "subgraph%s instead of %d; the order only breaks ties", moved, moved == 1 ? "" : "s",
                  p->n_device_subgraphs, p->n_device_subgraphs == 1 ? "" : "s", cap_dev);
    else if (moved)
        plan_note(p, "placement by cost across targets: %d node%s on another target than the --target order gives "
                  "(estimated %.1f us against %.1f us); the order only breaks ties", moved, moved == 1 ? "" : "s",
                  best_cost, cap_cost);
}

/* Moves to the CPU, one at a time, the movable node whose move leaves the
 * best plan (fewest bytes past the memories first), until targets fits;
 * then a local search from there; the result replaces best when better. */
static void fit_greedily(partitioner *pr, const cost_model *cm, int32_t *targets, const int32_t *mov, int32_t n_mov,
                         score *best_cost, int32_t *best) {
    int32_t nn = pr->p->n_nodes;
    score cur = try_targets(pr, cm, targets);
    for (int32_t round = 0; cur.us >= 0 && cur.over > 0 && round < n_mov; round++) {
        int32_t pick = -1;
        score pick_score = {0};
        for (int32_t k = 0; k < n_mov; k++) {
            int32_t i = mov[k], was = targets[i];
            if (was == pr->n_targets) continue;
            targets[i] = pr->n_targets;
            score sc = try_targets(pr, cm, targets);
            targets[i] = was;
            if (sc.us >= 0 && (pick < 0 || better(sc, pick_score))) pick = i, pick_score = sc;
        }
        if (pick < 0) break;
        targets[pick] = pr->n_targets;
        cur = pick_score;
    }
    if (cur.us < 0) return;
    local_search(pr, cm, targets, &cur, true);
    if (better(cur, *best_cost)) {
        *best_cost = cur;
        memcpy(best, targets, sizeof(int32_t) * (size_t)nn);
    }
}

/* From targets (the movable nodes on the CPU), moves onto its first-fit
 * target, one at a time, the node whose move leaves the best plan, while
 * that plan is better; then a local search; the result replaces best when
 * better. */
static void grow_greedily(partitioner *pr, const cost_model *cm, int32_t *targets, const int32_t *mov, int32_t n_mov,
                          score *best_cost, int32_t *best) {
    int32_t nn = pr->p->n_nodes;
    score cur = try_targets(pr, cm, targets);
    for (int32_t round = 0; cur.us >= 0 && round < n_mov; round++) {
        int32_t pick = -1, pick_t = -1;
        score pick_score = cur;
        for (int32_t k = 0; k < n_mov; k++) {
            int32_t i = mov[k];
            if (targets[i] != pr->n_targets) continue;
            for (int32_t t = 0; t < pr->n_targets; t++) {
                if (!(options_of(pr, i) >> t & 1)) continue;
                targets[i] = t;
                score sc = try_targets(pr, cm, targets);
                targets[i] = pr->n_targets;
                if (sc.us >= 0 && better(sc, pick_score)) pick = i, pick_t = t, pick_score = sc;
            }
        }
        if (pick < 0) break;
        targets[pick] = pick_t;
        cur = pick_score;
    }
    if (cur.us < 0) return;
    local_search(pr, cm, targets, &cur, true);
    if (better(cur, *best_cost)) {
        *best_cost = cur;
        memcpy(best, targets, sizeof(int32_t) * (size_t)nn);
    }
}

/* Nodes the search kept off a target whose memory their capability
 * subgraph did not fit: reason "memory", with the numbers. */
static void explain_memory(partitioner *pr, const int32_t *cap, const int32_t *best, const int64_t *cap_need) {
    seam_plan *p = pr->p;
    const int64_t *c = pr->cm.capacity;
    int32_t moved = 0;
    for (int32_t i = 0; i < p->n_nodes; i++) {
        int32_t t = cap[i];
        if (t >= pr->n_targets || best[i] != pr->n_targets || p->node_target[i] < 0 || c[t] <= 0 || cap_need[t] <= c[t])
            continue;
        char buf[300];
        snprintf(buf, sizeof(buf), "with every supported node offloaded %s would hold %lld bytes (its subgraphs' weights, "
                 "and the largest one's values); it holds %lld (memory_bytes)", p->target_names[t],
                 (long long)cap_need[t], (long long)c[t]);
        p->reason[i] = SEAM_REASON_MEMORY;
        p->detail[i] = plan_strdup(p, buf);
        moved++;
    }
    if (moved)
        plan_note(p, "memory: %d supported node%s kept on the CPU so that no target holds more than its memory_bytes",
                  moved, moved == 1 ? "" : "s");
}

/* The plan still puts more on a target than it holds: only pins can do
 * that (the CPU takes every other node). The error names the subgraph, its
 * need and the pinned nodes in it. */
static seam_status memory_error(partitioner *pr) {
    seam_plan *p = pr->p;
    const ir_graph *g = pr->m->graph;
    for (int32_t t = 0; t < pr->n_targets; t++) {
        int64_t cap = pr->cm.capacity[t], need = cap > 0 ? cost_target_need(&pr->cm, p, t) : 0;
        if (cap <= 0 || need <= cap) continue;
        char pins[300] = "";
        size_t off = 0;
        for (int32_t i = 0; i < p->n_nodes && off < sizeof(pins); i++)
            if (pr->pinned[i] && p->node_target[i] == t)
                off += (size_t)snprintf(pins + off, sizeof(pins) - off, "%s'%s'", off ? ", " : "", g->nodes[i].name);
        return seam_error(pr->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "no plan fits target '%s' (memory_bytes %lld): the nodes pinned there (%s) need %lld bytes",
                          p->target_names[t], (long long)cap, off ? pins : "none", (long long)need);
    }
    return SEAM_STATUS_OK;
}

/* The local searches from every start (see inside); the best plan found
 * replaces best when better. */
static void search_from_starts(partitioner *pr, const cost_model *cm, const int32_t *cap, const int32_t *mov, int32_t n_mov,
                               bool limited, int32_t *best, score *best_cost_out) {
    int32_t nn = pr->p->n_nodes;
    score best_cost = *best_cost_out;
    /* starts: every supported node offloaded as the target order and
     * its smoothing gave (whole subgraphs moved first, or single nodes
     * only), every movable node on the CPU, and with several targets
     * each target alone (the nodes it supports on it, the rest on the
     * CPU); the best local optimum wins, so the order of the targets
     * only breaks ties */
    int32_t *alt = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    local_search(pr, cm, best, &best_cost, true);
    int32_t starts = 2 + (pr->n_targets > 1 ? pr->n_targets + 1 : 0);
    if (alt && limited && best_cost.over > 0) { /* and the first fit made to fit, the costliest node out first */
        memcpy(alt, cap, sizeof(int32_t) * (size_t)nn);
        fit_greedily(pr, cm, alt, mov, n_mov, &best_cost, best);
    }
    if (alt && limited) { /* and grown from the CPU alone, the best node in first, while it fits */
        memcpy(alt, cap, sizeof(int32_t) * (size_t)nn);
        for (int32_t k = 0; k < n_mov; k++) alt[mov[k]] = pr->n_targets;
        grow_greedily(pr, cm, alt, mov, n_mov, &best_cost, best);
    }
    for (int32_t start = 0; alt && start < starts; start++) {
        memcpy(alt, cap, sizeof(int32_t) * (size_t)nn);
        if (start == 1 && pr->devices_only) continue;
        if (start == 1)
            for (int32_t k = 0; k < n_mov; k++) alt[mov[k]] = pr->n_targets;
        for (int32_t k = 0; start >= 2 && start < 2 + pr->n_targets && k < n_mov; k++)
            alt[mov[k]] = pr->supported_by[mov[k]] >> (start - 2) & 1 ? start - 2
                          : pr->devices_only                       ? cap[mov[k]]
                                                                   : pr->n_targets;
        /* and each node where it alone runs fastest (launches and transfers aside) */
        for (int32_t k = 0; start == 2 + pr->n_targets && k < n_mov; k++) {
            int32_t i = mov[k], T = pr->devices_only ? cap[i] : pr->n_targets;
            for (int32_t x = 0; x < pr->n_targets; x++)
                if (pr->supported_by[i] >> x & 1 && cost_node_us(cm, i, x) < (T == pr->n_targets ? cm->cpu_us[i]
                                                                              : cost_node_us(cm, i, T)))
                    T = x;
            alt[i] = T;
        }
        score alt_cost = try_targets(pr, cm, alt);
        if (alt_cost.us < 0) continue;
        local_search(pr, cm, alt, &alt_cost, start != 0);
        if (better(alt_cost, best_cost)) {
            best_cost = alt_cost;
            memcpy(best, alt, sizeof(int32_t) * (size_t)nn);
        }
    }
    free(alt);
    *best_cost_out = best_cost;
}

seam_status partition_place_by_cost(partitioner *pr) {
    seam_plan *p = pr->p;
    const ir_graph *g = pr->m->graph;
    int32_t nn = g->n_nodes;
    const cost_model *cm = &pr->cm;
    seam_status st = SEAM_STATUS_OK;
    double cap_cost = cost_plan(cm, p, true), all_cpu = 0;
    bool cpu_allowed = true; /* no pin holds a node on a device */
    for (int32_t i = 0; i < nn; i++) {
        if (p->node_target[i] >= 0) all_cpu += cm->cpu_us[i];
        cpu_allowed &= !(pr->pinned[i] && p->node_target[i] >= 0 && p->node_target[i] < pr->n_targets);
    }
    p->est = (seam_plan_estimate){cap_cost, all_cpu, cap_cost};
    pr->estimated = true;
    /* offloading never costs more: the capability plan, whose estimates
     * cost_plan stored */
    int64_t cap_over = *cm->over, cap_need[64] = {0};
    bool limited = false;
    for (int32_t t = 0; cm->capacity && t < pr->n_targets; t++) limited |= cm->capacity[t] > 0;
    for (int32_t t = 0; limited && t < pr->n_targets; t++) cap_need[t] = cost_target_need(cm, p, t);
    if (cm->trivial && pr->n_targets < 2 && !cap_over) return SEAM_STATUS_OK;
    /* targets that declare no costs estimate every plan alike: the search
     * then chooses between them for the fewest subgraphs, the CPU aside
     * (unless a memory holds too little) */
    pr->devices_only = cm->trivial && !limited;
    int32_t *cap = malloc(sizeof(int32_t) * ((size_t)nn + 1)), *best = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    int32_t *mov = malloc(sizeof(int32_t) * ((size_t)nn + 1)), *cap_of = NULL;
    cap_subgraph *cap_sg = NULL;
    if (!cap || !best || !mov) {
        st = seam_error(pr->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    memcpy(cap, p->node_target, sizeof(int32_t) * (size_t)nn);
    /* the capability plan's subgraphs, to explain what the search moved:
     * per node its subgraph's node count, time there, launch + transfer,
     * and time on the CPU */
    cap_sg = calloc((size_t)p->n_subgraphs + 1, sizeof(*cap_sg));
    cap_of = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    if (!cap_sg || !cap_of) {
        st = seam_error(pr->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int32_t i = 0; i < nn; i++) cap_of[i] = p->node_target[i] >= 0 ? p->node_subgraph[i] : -1;
    for (int32_t s = 0; s < p->n_subgraphs; s++) {
        const plan_subgraph *sg = &p->subgraphs[s];
        double nodes = 0, cpu = 0;
        for (int32_t k = 0; k < sg->n_nodes; k++) {
            nodes += cost_node_us(cm, sg->nodes[k], sg->target);
            cpu += cm->cpu_us[sg->nodes[k]];
        }
        cap_sg[s] = (cap_subgraph){sg->n_nodes, nodes, sg->est_us - nodes, cpu, sg->boundary_bytes, 0};
    }
    /* each evaluation regroups the whole graph: about 4e7 node visits in
     * all (every plan of a graph of a few hundred nodes; 40 of a 1M-node one) */
    pr->evals_left = nn > 0 ? (int64_t)fmax(40.0, 4e7 / nn) : 0;
    int32_t n_mov = 0;
    double combos = 1;
    for (int32_t i = 0; i < nn; i++)
        if (movable(pr, i) && p->node_target[i] < pr->n_targets) {
            mov[n_mov++] = i;
            combos *= __builtin_popcountll(options_of(pr, i));
        }
    if (n_mov == 0) goto done;
    memcpy(best, cap, sizeof(int32_t) * (size_t)nn);
    score best_cost = {cap_cost, p->n_device_subgraphs, p->n_subgraphs, cap_over, supported_on_cpu(pr, cap)};
    int32_t cap_dev = p->n_device_subgraphs;
    /* exhaustive when the choices times the graph stay small: each regroups all of it */
    if (combos <= (double)(1u << partition_exhaustive_limit) && (double)nn * combos <= 4e6 &&
        n_mov <= 2 * partition_exhaustive_limit)
        exhaustive(pr, cm, cap, best, &best_cost, mov, n_mov, combos);
    else
        search_from_starts(pr, cm, cap, mov, n_mov, limited, best, &best_cost);
    /* never worse than one backend alone */
    bool to_cpu = cpu_allowed && (best_cost.over > 0 || all_cpu < best_cost.us - 1e-9);
    if (to_cpu) {
        for (int32_t i = 0; i < n_mov; i++) best[mov[i]] = pr->n_targets;
        /* nodes that are not movable (pins to cpu, cpu_ops) stay as they are */
    }
    pr->evals_left = 1; /* the plan chosen, applied whatever the search spent */
    if (try_targets(pr, cm, best).us < 0) {
        st = seam_error(pr->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while grouping");
        goto done;
    }
    double final_us = cost_plan(cm, p, true);
    if (*cm->over > 0) {
        st = memory_error(pr);
        goto done;
    }
    if (to_cpu) {
        plan_note(p, "placement by cost: the CPU alone (estimated %.1f us) beats offloading (%.1f us with every supported "
                  "node on its target): everything runs on the CPU", all_cpu, cap_cost);
    } else if (final_us < cap_cost - 1e-9) {
        int32_t n_back = 0;
        for (int32_t i = 0; i < nn; i++) n_back += best[i] == pr->n_targets && cap[i] != pr->n_targets;
        plan_note(p, "placement by cost: %d supported node%s kept on the CPU, where %s less (estimated %.1f us, "
                  "against %.1f us with every supported node on its target)", n_back, n_back == 1 ? "" : "s",
                  n_back == 1 ? "it costs" : "they cost", final_us, cap_cost);
    }
    explain_moves(pr, cap, best, cap_of, cap_sg, to_cpu, all_cpu, cap_cost);
    explain_retargets(pr, cap, best, final_us, cap_cost, cap_dev);
    if (limited) explain_memory(pr, cap, best, cap_need);
    p->est.total_us = final_us; /* (the estimates of the plan as it is: no regrouping since) */
done:
    free(cap);
    free(best);
    free(mov);
    free(cap_sg);
    free(cap_of);
    return st;
}

/* The cost model's estimate of the final plan (after the constraints). */
void partition_estimate_final(partitioner *pr) {
    if (pr->estimated) return; /* placement by cost estimated this plan, and nothing moved since */
    double all_cpu = 0;
    for (int32_t i = 0; i < pr->p->n_nodes; i++)
        if (pr->p->node_target[i] >= 0) all_cpu += pr->cm.cpu_us[i];
    double total = cost_plan(&pr->cm, pr->p, true);
    if (pr->o->placement != SEAM_PLACEMENT_COST) pr->p->est = (seam_plan_estimate){total, all_cpu, total};
    pr->p->est.total_us = total;
}
