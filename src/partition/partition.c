/*
 * seam_partition: support, assignment, grouping, constraints.
 *
 *  1. support: every target is asked about every node (its reason kept);
 *     Constant nodes are data, placed nowhere.
 *  2. assignment: pins, then cpu_ops, then the first target by priority
 *     that supports the node, else the CPU.
 *  3. grouping (group.c) into acyclic subgraphs.
 *  3b. cost (placement COST, cost.c): supported nodes whose offload costs
 *     more than it saves go back to the CPU; a plan estimated worse than
 *     all-CPU or the capability plan is replaced by it.
 *  4. constraints: device subgraphs below min_subgraph_size, or beyond
 *     max_subgraph_count (keeping those that offload the most work), move to
 *     the CPU and the rest is grouped again, until the plan holds; or, under
 *     SEAM_ON_VIOLATION_ERROR, the first violation is an error.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/context.h"
#include "ops/attr.h"
#include "partition/partition.h"

seam_partition_options seam_partition_defaults(void) {
    seam_partition_options o;
    memset(&o, 0, sizeof(o));
    o.min_subgraph_size = 1;
    return o;
}

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

typedef struct partitioner {
    seam_context *ctx;
    const struct seam_model *m;
    const seam_partition_options *o;
    seam_plan *p;
    const seam_backend *const *targets;
    int32_t n_targets;    /* device targets; cpu is index n_targets */
    uint64_t *supported_by; /* per node: bit t set if target t supports it */
    bool *pinned;
    cost_model cm;        /* made once support is known (cost.c) */
    bool estimated;       /* p->est and the subgraphs' estimates describe the plan as it is */
} partitioner;

static const char *plan_strdup(seam_plan *p, const char *s) { return seam_arena_strdup(&p->arena, s); }

bool plan_is_constant_node(const ir_graph *g, int32_t i) {
    const ir_node *n = &g->nodes[i];
    return ir_node_folded_op(g, i) ||
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

/* Targets decide from ranks, dtypes and attributes (symbolic dims are
 * compiled per shape at run time); a value whose rank is unknown is what
 * keeps a node from them. */
static bool view_ranks_known(const seam_node_view *v) {
    for (int32_t k = 0; k < v->n_inputs + v->n_outputs; k++) {
        const seam_value_info *x = k < v->n_inputs ? &v->inputs[k] : &v->outputs[k - v->n_inputs];
        if (x->name && x->rank < 0) return false; /* (no name: an absent optional input) */
    }
    return true;
}

/* Never silent about nodes left on the CPU because the model's inputs have
 * symbolic dims: shape computations that fixed dims would fold away, and
 * nodes whose values' ranks inference could not tell (targets decide from
 * ranks; sizes are compiled per shape at run time). */
static bool input_symbolic(const ir_value *v) {
    if (v->flags & IR_VALUE_INIT || v->type.kind != IR_TYPE_TENSOR) return false;
    bool symbolic = v->type.rank < 0;
    for (int32_t d = 0; d < v->type.rank; d++) symbolic |= v->type.dims[d].v < 0;
    return symbolic;
}

static void note_symbolic(seam_plan *p, const ir_graph *g, int32_t n_refused) {
    char syms[400];
    size_t off = 0;
    syms[0] = 0;
    for (int32_t i = 0; i < g->n_inputs && off < sizeof(syms); i++) {
        const ir_value *v = &g->values[g->inputs[i]];
        if (!input_symbolic(v)) continue;
        off += (size_t)snprintf(syms + off, sizeof(syms) - off, "%s'%s' [", off ? ", " : "", v->name);
        for (int32_t d = 0; d < v->type.rank && off < sizeof(syms); d++) {
            const ir_dim *dm = &v->type.dims[d];
            if (dm->v >= 0) off += (size_t)snprintf(syms + off, sizeof(syms) - off, "%s%lld", d ? "," : "", (long long)dm->v);
            else off += (size_t)snprintf(syms + off, sizeof(syms) - off, "%s%s", d ? "," : "", dm->sym ? dm->sym : "?");
        }
        if (off < sizeof(syms)) off += (size_t)snprintf(syms + off, sizeof(syms) - off, "]");
    }
    if (!syms[0]) return;
    plan_note(p, "%d node%s went to the CPU between device subgraphs: %s shapes from the model's symbolic dims (%s) "
              "or %s values whose rank is not known before the run; fix: give the dims with --shape NAME=AxBxC "
              "(seam run takes them from its --input files), which folds shape computations away",
              n_refused, n_refused == 1 ? "" : "s", n_refused == 1 ? "it computes" : "they compute", syms,
              n_refused == 1 ? "reads or writes" : "read or write");
}

/* Step 1: who supports what, with the reasons of the refusals. */
static seam_status compute_support(partitioner *pr) {
    const ir_graph *g = pr->m->graph;
    seam_plan *p = pr->p;
    view_builder vb;
    view_init(&vb, pr->m);
    const seam_backend *cpu = seam_backend_cpu();
    char why[512], detail[2048];
    seam_status st = SEAM_STATUS_OK;
    /* counted only when the model has symbolic inputs (note_symbolic) */
    bool symbolic = false;
    for (int32_t k = 0; k < g->n_inputs && pr->n_targets > 0 && !symbolic; k++)
        symbolic = input_symbolic(&g->values[g->inputs[k]]);
    int32_t n_unknown = 0; /* refused by every target, with a rank unknown or computing a shape */
    /* values computed from a Shape or Size by int64 arithmetic: with symbolic
     * input dims they are not folded, so the nodes computing them run on the
     * CPU between device subgraphs */
    bool *shape_val = symbolic ? calloc((size_t)g->n_values + 1, sizeof(bool)) : NULL;
    for (int32_t p_ = 0; shape_val && p_ < g->n_nodes; p_++) {
        const ir_node *n = &g->nodes[g->topo[p_]];
        bool derived = !strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size");
        for (int32_t k = 0; k < n->n_inputs && !derived; k++) derived = n->inputs[k] >= 0 && shape_val[n->inputs[k]];
        for (int32_t k = 0; k < n->n_outputs && derived; k++)
            derived = n->outputs[k] < 0 || g->values[n->outputs[k]].type.elem == SEAM_DTYPE_INT64;
        for (int32_t k = 0; k < n->n_outputs && derived; k++)
            if (n->outputs[k] >= 0) shape_val[n->outputs[k]] = true;
    }
    for (int32_t i = 0; i < g->n_nodes && !st; i++) {
        const ir_node *n = &g->nodes[i];
        if (plan_is_constant_node(g, i)) {
            plan_set_constant(p, i);
            continue;
        }
        p->counted++;
        seam_node_view view;
        if (!view_node(&vb, i, &view)) {
            st = seam_error(pr->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
            break;
        }
        size_t off = 0;
        detail[0] = 0;
        /* sequences and optionals are host-only values: no target sees them */
        const ir_value *host_only = NULL;
        for (int32_t k = 0; k < n->n_inputs + n->n_outputs && !host_only; k++) {
            int32_t v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            if (v >= 0 && g->values[v].type.kind != IR_TYPE_TENSOR && g->values[v].type.kind != IR_TYPE_NONE)
                host_only = &g->values[v];
        }
        if (host_only) {
            int kind = host_only->type.kind;
            off += (size_t)snprintf(detail, sizeof(detail), "'%s' is a%s value; only the CPU runs those", host_only->name,
                                    kind == IR_TYPE_SEQUENCE ? " sequence"
                                    : kind == IR_TYPE_OPTIONAL ? "n optional"
                                    : kind == IR_TYPE_MAP      ? " map"
                                                               : " sparse tensor");
        }
        for (int32_t t = 0; t < pr->n_targets && !host_only; t++) {
            if (backend_supports(pr->targets[t], &view, why, sizeof(why))) {
                pr->supported_by[i] |= (uint64_t)1 << t;
            } else if (off < sizeof(detail)) {
                off += (size_t)snprintf(detail + off, sizeof(detail) - off, "%s%s: %s", off ? "; " : "",
                                        pr->targets[t]->name, why);
            }
        }
        if (pr->supported_by[i]) {
            p->supported++;
        } else {
            bool computes_shape = shape_val && n->n_outputs > 0 && n->outputs[0] >= 0 && shape_val[n->outputs[0]];
            if (symbolic && (!view_ranks_known(&view) || computes_shape)) n_unknown++;
            if (!backend_supports(cpu, &view, why, sizeof(why)) && off < sizeof(detail))
                snprintf(detail + off, sizeof(detail) - off, "%scpu: %s", off ? "; " : "", why);
            p->detail[i] = plan_strdup(p, detail);
        }
    }
    view_free(&vb);
    free(shape_val);
    if (!st && n_unknown > 0) note_symbolic(p, g, n_unknown);
    return st;
}

static int32_t target_index(const partitioner *pr, const char *name) {
    if (strcmp(name, "cpu") == 0) return pr->n_targets;
    for (int32_t t = 0; t < pr->n_targets; t++)
        if (strcmp(pr->targets[t]->name, name) == 0) return t;
    return -1;
}

/* Step 2: pins, cpu_ops, then priority order. */
static seam_status assign(partitioner *pr) {
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
        for (int32_t j = 0; j < g->n_nodes && i < 0; j++)
            if (strcmp(g->nodes[j].name, pin->node_name) == 0) i = j;
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
    return changed;
}

static void describe_subgraph(const partitioner *pr, int32_t s, char *buf, size_t n) {
    const plan_subgraph *sg = &pr->p->subgraphs[s];
    snprintf(buf, n, "subgraph %d (%s, %d node%s)", s, pr->p->target_names[sg->target], sg->n_nodes,
             sg->n_nodes == 1 ? "" : "s");
}

/* Moves the non-pinned nodes of subgraph s to the CPU. */
static int32_t move_to_cpu(partitioner *pr, int32_t s, seam_reason why, const char *detail) {
    const plan_subgraph *sg = &pr->p->subgraphs[s];
    int32_t moved = 0;
    const char *d = plan_strdup(pr->p, detail);
    for (int32_t k = 0; k < sg->n_nodes; k++) {
        int32_t i = sg->nodes[k];
        if (pr->pinned[i]) continue;
        pr->p->node_target[i] = pr->n_targets;
        pr->p->reason[i] = (uint8_t)why;
        pr->p->detail[i] = d;
        moved++;
    }
    if (moved) pr->estimated = false;
    return moved;
}

typedef struct ranked {
    int32_t s;
    double work;
} ranked;

static int cmp_ranked(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->work != y->work) return x->work < y->work ? 1 : -1;
    return x->s - y->s;
}

/* ---- step 3b: placement by cost ---- */

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

/* Applies targets (capability target or CPU per movable node) and regroups;
 * returns the plan's cost, or -1 when out of memory. */
static double try_targets(partitioner *pr, const cost_model *cm, const int32_t *targets) {
    seam_plan *p = pr->p;
    memcpy(p->node_target, targets, sizeof(int32_t) * (size_t)p->n_nodes);
    if (plan_group(pr->ctx, p)) return -1;
    return cost_plan(cm, p, false);
}

/* Graphs with at most this many movable nodes are searched exhaustively;
 * the unit tests set it to 0 to measure the local search against brute
 * force. */
int32_t partition_exhaustive_limit = 12;

/* Exhaustive search over the movable nodes of a small graph; the best
 * assignment is left in best. */
static void exhaustive(partitioner *pr, const cost_model *cm, const int32_t *cap, int32_t *best, double *best_cost,
                       const int32_t *mov, int32_t n_mov) {
    int32_t nn = pr->p->n_nodes;
    int32_t *t = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    if (!t) return;
    for (uint32_t mask = 0; mask < (1u << n_mov); mask++) {
        memcpy(t, cap, sizeof(int32_t) * (size_t)nn);
        for (int32_t k = 0; k < n_mov; k++)
            if (mask >> k & 1) t[mov[k]] = pr->n_targets;
        double c = try_targets(pr, cm, t);
        if (c >= 0 && c < *best_cost - 1e-9) {
            *best_cost = c;
            memcpy(best, t, sizeof(int32_t) * (size_t)nn);
        }
    }
    free(t);
}

/* Flips node i, and j too when j >= 0 is a movable node on the same side,
 * between the CPU and its capability target; keeps the flip in best when it
 * lowers the cost. */
static bool try_flip(partitioner *pr, const cost_model *cm, const int32_t *cap, int32_t *best, double *best_cost, int32_t *t,
                     int32_t i, int32_t j, int32_t *budget) {
    int32_t nn = pr->p->n_nodes, cpu = pr->n_targets;
    if (j >= 0 && (j == i || !movable(pr, j) || (best[j] == cpu) != (best[i] == cpu))) return false;
    if (*budget <= 0) return false;
    --*budget;
    memcpy(t, best, sizeof(int32_t) * (size_t)nn);
    t[i] = best[i] == cpu ? cap[i] : cpu;
    if (j >= 0) t[j] = best[j] == cpu ? cap[j] : cpu;
    double c = try_targets(pr, cm, t);
    if (c < 0 || c >= *best_cost - 1e-9) return false;
    *best_cost = c;
    memcpy(best, t, sizeof(int32_t) * (size_t)nn);
    return true;
}

/* Flips node i with every movable neighbour on its side (its producers and
 * its outputs' readers) at once: a star of nodes that only pays off
 * together. */
static bool try_flip_star(partitioner *pr, const cost_model *cm, const int32_t *cap, int32_t *best, double *best_cost,
                          int32_t *t, int32_t i, int32_t *budget) {
    const ir_graph *g = pr->m->graph;
    int32_t nn = pr->p->n_nodes, cpu = pr->n_targets;
    if (*budget <= 0) return false;
    --*budget;
    memcpy(t, best, sizeof(int32_t) * (size_t)nn);
    bool side = best[i] == cpu;
    const ir_node *n = &g->nodes[i];
    int32_t flipped = 0;
    for (int32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int32_t v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (v < 0) continue;
        if (k < n->n_inputs) {
            int32_t j = g->values[v].producer;
            if (j >= 0 && movable(pr, j) && (best[j] == cpu) == side) t[j] = side ? cap[j] : cpu, flipped++;
        } else {
            for (int32_t q = 0; q < g->values[v].n_consumers; q++) {
                int32_t j = g->values[v].consumers[q];
                if (movable(pr, j) && (best[j] == cpu) == side) t[j] = side ? cap[j] : cpu, flipped++;
            }
        }
    }
    if (flipped < 2) return false; /* a single neighbour is a pair, tried already */
    t[i] = side ? cap[i] : cpu;
    double c = try_targets(pr, cm, t);
    if (c < 0 || c >= *best_cost - 1e-9) return false;
    *best_cost = c;
    memcpy(best, t, sizeof(int32_t) * (size_t)nn);
    return true;
}

/* Local search: moves whole device subgraphs to the CPU where that saves
 * time, then single nodes at subgraph borders either way, while the plan's
 * cost falls. */
static void local_search(partitioner *pr, const cost_model *cm, const int32_t *cap, int32_t *best, double *best_cost,
                         bool subgraph_moves) {
    seam_plan *p = pr->p;
    int32_t nn = p->n_nodes;
    int32_t *t = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    bool *border = malloc((size_t)nn + 1);
    if (!t || !border) {
        free(t);
        free(border);
        return;
    }
    /* flips regroup the whole graph: a bounded number of them (all of them
     * for small graphs, which are searched well) */
    int32_t budget = nn <= 200 ? INT32_MAX : 400;
    for (int32_t round = 0; round < 64; round++) {
        if (try_targets(pr, cm, best) < 0) break;
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
        if (!subgraph_moves) moved = false;
        double c = moved ? try_targets(pr, cm, t) : -1;
        if (c >= 0 && c < *best_cost - 1e-9) {
            *best_cost = c;
            memcpy(best, t, sizeof(int32_t) * (size_t)nn);
            continue;
        }
        /* single nodes, and a node with a neighbour (a producer, or another
         * reader of one of its inputs), flipped between the CPU and their
         * target: a lone node pays a launch, so pairs get past that */
        if (nn > 20000) break;
        bool improved = false;
        const ir_graph *g = pr->m->graph;
        /* only nodes at a subgraph's border (a neighbour in another one) */
        if (try_targets(pr, cm, best) < 0) break;
        for (int32_t i = 0; i < nn; i++) {
            const ir_node *n = &g->nodes[i];
            border[i] = false;
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
            improved = try_flip(pr, cm, cap, best, best_cost, t, i, -1, &budget);
            const ir_node *n = &g->nodes[i];
            for (int32_t k = 0; k < n->n_inputs && !improved; k++) {
                int32_t v = n->inputs[k];
                if (v < 0) continue;
                if (g->values[v].producer >= 0)
                    improved = try_flip(pr, cm, cap, best, best_cost, t, i, g->values[v].producer, &budget);
                for (int32_t q = 0; q < g->values[v].n_consumers && !improved; q++)
                    improved = try_flip(pr, cm, cap, best, best_cost, t, i, g->values[v].consumers[q], &budget);
            }
            if (!improved) improved = try_flip_star(pr, cm, cap, best, best_cost, t, i, &budget);
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

static seam_status place_by_cost(partitioner *pr) {
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
    if (cm->trivial) return SEAM_STATUS_OK;
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
    int32_t n_mov = 0;
    for (int32_t i = 0; i < nn; i++)
        if (movable(pr, i) && p->node_target[i] < pr->n_targets) mov[n_mov++] = i;
    if (n_mov == 0) goto done;
    memcpy(best, cap, sizeof(int32_t) * (size_t)nn);
    double best_cost = cap_cost;
    /* exhaustive when the masks times the graph stay small: each regroups all of it */
    if (n_mov <= partition_exhaustive_limit && (double)nn * (double)(1u << n_mov) <= 4e6)
        exhaustive(pr, cm, cap, best, &best_cost, mov, n_mov);
    else {
        /* three starts: every supported node offloaded (whole subgraphs
         * moved first, or single nodes only), and every movable node on the
         * CPU; the best local optimum wins */
        int32_t *alt = malloc(sizeof(int32_t) * ((size_t)nn + 1));
        local_search(pr, cm, cap, best, &best_cost, true);
        for (int32_t start = 0; alt && start < 2; start++) {
            memcpy(alt, cap, sizeof(int32_t) * (size_t)nn);
            if (start == 1)
                for (int32_t k = 0; k < n_mov; k++) alt[mov[k]] = pr->n_targets;
            double alt_cost = try_targets(pr, cm, alt);
            if (alt_cost < 0) continue;
            local_search(pr, cm, cap, alt, &alt_cost, start == 1);
            if (alt_cost < best_cost - 1e-9) {
                best_cost = alt_cost;
                memcpy(best, alt, sizeof(int32_t) * (size_t)nn);
            }
        }
        free(alt);
    }
    /* never worse than one backend alone */
    bool to_cpu = cpu_allowed && all_cpu < best_cost - 1e-9;
    if (to_cpu) {
        for (int32_t i = 0; i < n_mov; i++) best[mov[i]] = pr->n_targets;
        /* nodes that are not movable (pins to cpu, cpu_ops) stay as they are */
        best_cost = all_cpu;
    }
    if (try_targets(pr, cm, best) < 0) {
        st = seam_error(pr->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while grouping");
        goto done;
    }
    best_cost = cost_plan(cm, p, true);
    if (to_cpu) {
        plan_note(p, "placement by cost: the CPU alone (estimated %.1f us) beats offloading (%.1f us with every supported "
                  "node on its target): everything runs on the CPU", all_cpu, cap_cost);
    } else if (best_cost < cap_cost - 1e-9) {
        int32_t n_back = 0;
        for (int32_t i = 0; i < nn; i++) n_back += best[i] == pr->n_targets && cap[i] != pr->n_targets;
        plan_note(p, "placement by cost: %d supported node%s kept on the CPU, where %s less (estimated %.1f us, "
                  "against %.1f us with every supported node on its target)", n_back, n_back == 1 ? "" : "s",
                  n_back == 1 ? "it costs" : "they cost", best_cost, cap_cost);
    }
    /* each node the search kept off its target, with the numbers: its
     * capability subgraph's when the whole of it moved, else the node's */
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
            } else {
                snprintf(buf, sizeof(buf), "%.3g us on %s (%.3g on cpu), but on %s it would add boundary values "
                         "whose transfers cost more",
                         cost_node_us(cm, i, t), p->target_names[t], cm->cpu_us[i], p->target_names[t]);
            }
            set_cpu_by_cost(pr, i, plan_strdup(p, buf));
        }
    }
    p->est.total_us = best_cost; /* (the estimates of the plan as it is: no regrouping since) */
done:
    free(cap);
    free(best);
    free(mov);
    free(cap_sg);
    free(cap_of);
    return st;
}

/* The cost model's estimate of the final plan (after the constraints). */
static void estimate_final(partitioner *pr) {
    if (pr->estimated) return; /* placement by cost estimated this plan, and nothing moved since */
    double all_cpu = 0;
    for (int32_t i = 0; i < pr->p->n_nodes; i++)
        if (pr->p->node_target[i] >= 0) all_cpu += pr->cm.cpu_us[i];
    double total = cost_plan(&pr->cm, pr->p, true);
    if (pr->o->placement != SEAM_PLACEMENT_COST) pr->p->est = (seam_plan_estimate){total, all_cpu, total};
    pr->p->est.total_us = total;
}

/* Step 4: min size and max count, until the plan holds. */
static seam_status enforce(partitioner *pr) {
    seam_plan *p = pr->p;
    const seam_partition_options *o = pr->o;
    char desc[256], buf[512];
    seam_status st;
    for (int32_t round = 0; round < 1000; round++) {
        int32_t moved = 0;
        int32_t min = o->min_subgraph_size > 1 ? o->min_subgraph_size : 1;
        for (int32_t s = 0; s < p->n_subgraphs; s++) {
            const plan_subgraph *sg = &p->subgraphs[s];
            if (sg->target == pr->n_targets || sg->n_nodes >= min) continue;
            describe_subgraph(pr, s, desc, sizeof(desc));
            if (o->on_violation == SEAM_ON_VIOLATION_ERROR)
                return seam_error(pr->ctx, SEAM_STATUS_UNSUPPORTED,
                                  "The partitioner has found %s, which is smaller than the specified min subgraph size of %d.",
                                  desc, min);
            snprintf(buf, sizeof(buf), "its %s subgraph had %d node%s, fewer than min_subgraph_size %d",
                     p->target_names[sg->target], sg->n_nodes, sg->n_nodes == 1 ? "" : "s", min);
            int32_t m = move_to_cpu(pr, s, SEAM_REASON_MIN_SIZE, buf);
            if (m) plan_note(p, "moved %s to cpu: fewer nodes than min_subgraph_size %d", desc, min);
            moved += m;
        }
        if (!moved && o->max_subgraph_count > 0 && p->n_subgraphs > o->max_subgraph_count) {
            if (o->on_violation == SEAM_ON_VIOLATION_ERROR)
                return seam_error(pr->ctx, SEAM_STATUS_UNSUPPORTED,
                                  "The partitioner has found %d subgraphs which exceeds the specified max subgraph count of %d.",
                                  p->n_subgraphs, o->max_subgraph_count);
            /* Move the device subgraphs doing the least work to the CPU. Each
             * move removes at most two subgraphs (it joins its CPU
             * neighbours), so move at least half the excess at once. */
            ranked *r = malloc(sizeof(ranked) * ((size_t)p->n_subgraphs + 1));
            if (!r) return seam_error(pr->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
            int32_t nr = 0;
            for (int32_t s = 0; s < p->n_subgraphs; s++) {
                const plan_subgraph *sg = &p->subgraphs[s];
                if (sg->target == pr->n_targets) continue;
                double w = 0;
                bool pinned = false;
                for (int32_t k = 0; k < sg->n_nodes; k++) {
                    w += pr->cm.cpu_us[sg->nodes[k]]; /* the work it offloads */
                    pinned |= pr->pinned[sg->nodes[k]];
                }
                if (!pinned) r[nr++] = (ranked){s, w};
            }
            qsort(r, (size_t)nr, sizeof(ranked), cmp_ranked);
            int32_t excess = p->n_subgraphs - o->max_subgraph_count;
            int32_t drop = (excess + 1) / 2;
            if (drop > nr) drop = nr;
            for (int32_t k = nr - drop; k < nr; k++) {
                describe_subgraph(pr, r[k].s, desc, sizeof(desc));
                snprintf(buf, sizeof(buf), "its %s subgraph was moved to keep at most %d subgraphs (max_subgraph_count)",
                         p->target_names[p->subgraphs[r[k].s].target], o->max_subgraph_count);
                int32_t m = move_to_cpu(pr, r[k].s, SEAM_REASON_MAX_COUNT, buf);
                if (m)
                    plan_note(p, "moved %s to cpu: %d subgraphs exceed max_subgraph_count %d; the device subgraphs doing the most work stay",
                              desc, p->n_subgraphs, o->max_subgraph_count);
                moved += m;
            }
            free(r);
        }
        if (!moved) return SEAM_STATUS_OK;
        if ((st = plan_group(pr->ctx, p))) return st;
    }
    return SEAM_STATUS_OK;
}

static seam_status check_options(seam_context *ctx, const seam_partition_options *o) {
    if (o->n_targets < 0 || o->n_targets > 63 || (o->n_targets && !o->targets))
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "between 0 and 63 targets are allowed, %d given", o->n_targets);
    for (int32_t t = 0; t < o->n_targets; t++) {
        const seam_backend *b = o->targets[t];
        char where[32];
        snprintf(where, sizeof(where), "target %d", t);
        seam_status st = backend_check(ctx, b, where);
        if (st) return st;
        for (int32_t u = 0; u < t; u++)
            if (strcmp(o->targets[u]->name, b->name) == 0)
                return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "two targets are named '%s'", b->name);
    }
    if (!(o->min_support >= 0 && o->min_support <= 1))
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "min support must be between 0 and 1, got %g", o->min_support);
    if (o->min_subgraph_size < 0 || o->max_subgraph_count < 0)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "min subgraph size and max subgraph count must be >= 0");
    if (o->on_violation != SEAM_ON_VIOLATION_FALLBACK && o->on_violation != SEAM_ON_VIOLATION_ERROR)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "on_violation must be fallback or error");
    if (o->placement != SEAM_PLACEMENT_COST && o->placement != SEAM_PLACEMENT_CAPABILITY)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "placement must be cost or capability, got %d", (int)o->placement);
    return SEAM_STATUS_OK;
}

static seam_status partition_once(seam_model *m, const seam_partition_options *opts, seam_plan **out);

/* Placement by cost searches without the size and count constraints, which
 * enforce() applies after it and may undo; with constraints, the capability
 * plan under the same constraints is also made, and the cheaper kept. */
seam_status seam_partition(seam_model *m, const seam_partition_options *opts, seam_plan **out) {
    seam_status st = partition_once(m, opts, out);
    if (st || !opts || opts->placement != SEAM_PLACEMENT_COST || opts->n_targets == 0 ||
        (opts->min_subgraph_size <= 1 && opts->max_subgraph_count <= 0))
        return st;
    seam_partition_options o = *opts;
    o.placement = SEAM_PLACEMENT_CAPABILITY;
    seam_plan *cap = NULL;
    if (partition_once(m, &o, &cap) == SEAM_STATUS_OK && cap->est.total_us < (*out)->est.total_us - 1e-9) {
        plan_note(cap, "placement by cost: with min_subgraph_size and max_subgraph_count applied, offloading every "
                  "supported node is estimated faster (%.1f us against %.1f us)", cap->est.total_us, (*out)->est.total_us);
        cap->est.capability_us = cap->est.total_us;
        cap->est.all_cpu_us = (*out)->est.all_cpu_us;
        seam_plan_free(*out);
        *out = cap;
        return SEAM_STATUS_OK;
    }
    seam_plan_free(cap);
    return SEAM_STATUS_OK;
}

static seam_status partition_once(seam_model *m, const seam_partition_options *opts, seam_plan **out) {
    if (!out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    if (!m) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_partition_options dflt = seam_partition_defaults();
    if (!opts) opts = &dflt;
    seam_status st = check_options(m->ctx, opts);
    if (st) return st;
    const ir_graph *g = m->graph;
    partitioner pr = {m->ctx, m, opts, plan_new(m, opts->n_targets), opts->targets, opts->n_targets, NULL, NULL, {0}, false};
    pr.supported_by = calloc((size_t)g->n_nodes + 1, sizeof(uint64_t));
    pr.pinned = calloc((size_t)g->n_nodes + 1, sizeof(bool));
    if (!pr.p || !pr.supported_by || !pr.pinned) {
        st = seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int32_t t = 0; t < pr.n_targets; t++) pr.p->target_names[t] = plan_strdup(pr.p, pr.targets[t]->name);
    seam_phase(m->ctx, "partition: setup");
    if ((st = compute_support(&pr))) goto done;
    seam_phase(m->ctx, "partition: support");
    if (pr.p->counted && (double)pr.p->supported < opts->min_support * (double)pr.p->counted - 1e-9) {
        st = seam_error(m->ctx, SEAM_STATUS_UNSUPPORTED,
                        "%.2f%% of operations (%d of %d) are supported, below the required minimum of %.2f%%",
                        100.0 * pr.p->supported / pr.p->counted, pr.p->supported, pr.p->counted, 100.0 * opts->min_support);
        goto done;
    }
    if ((st = assign(&pr))) goto done;
    seam_phase(m->ctx, "partition: assign");
    if ((st = plan_group(m->ctx, pr.p))) goto done;
    seam_phase(m->ctx, "partition: group");
    if (pr.n_targets > 1) {
        /* several targets: try the neighbour-aware choice; keep it only
         * if it gives fewer device subgraphs */
        int32_t *first_fit = malloc(sizeof(int32_t) * ((size_t)g->n_nodes + 1));
        if (first_fit) {
            memcpy(first_fit, pr.p->node_target, sizeof(int32_t) * (size_t)g->n_nodes);
            int32_t before = pr.p->n_device_subgraphs, before_all = pr.p->n_subgraphs;
            if (smooth(&pr)) {
                if ((st = plan_group(m->ctx, pr.p))) {
                    free(first_fit);
                    goto done;
                }
                if (pr.p->n_device_subgraphs > before ||
                    (pr.p->n_device_subgraphs == before && pr.p->n_subgraphs >= before_all)) {
                    memcpy(pr.p->node_target, first_fit, sizeof(int32_t) * (size_t)g->n_nodes);
                    st = plan_group(m->ctx, pr.p);
                } else {
                    plan_note(pr.p, "joint placement across targets: %d device subgraphs instead of %d with first-fit",
                              pr.p->n_device_subgraphs, before);
                }
            }
            free(first_fit);
            if (st) goto done;
        }
    }
    /* made after grouping, in the memory grouping's scratch gave back */
    if ((st = cost_model_init(&pr.cm, m->ctx, m, pr.targets, pr.n_targets, pr.supported_by))) goto done;
    seam_phase(m->ctx, "partition: cost model");
    if (opts->placement == SEAM_PLACEMENT_COST && pr.n_targets > 0 && (st = place_by_cost(&pr))) goto done;
    seam_phase(m->ctx, "partition: cost");
    if ((st = enforce(&pr))) goto done;
    estimate_final(&pr);
    seam_phase(m->ctx, "partition: constraints");
done:
    free(pr.supported_by);
    free(pr.pinned);
    cost_model_free(&pr.cm);
    if (st) {
        seam_plan_free(pr.p);
        return st;
    }
    *out = pr.p;
    return SEAM_STATUS_OK;
}

/* ---- accessors ---- */

int32_t seam_plan_node_count(const seam_plan *p) { return p ? p->n_nodes : 0; }
int32_t seam_plan_subgraph_count(const seam_plan *p) { return p ? p->n_subgraphs : 0; }
int32_t seam_plan_device_subgraph_count(const seam_plan *p) { return p ? p->n_device_subgraphs : 0; }
const char *seam_plan_notes(const seam_plan *p) { return p && p->notes ? p->notes : ""; }

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
                                sg->nodes, sg->inputs, sg->outputs, sg->est_us, sg->boundary_bytes};
    return SEAM_STATUS_OK;
}

seam_status seam_plan_estimate_get(const seam_plan *p, seam_plan_estimate *out) {
    if (!p || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = p->est;
    return SEAM_STATUS_OK;
}

/* ---- the plan as JSON (seam partition --json, seam analyze --json) ---- */

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
    }
    return "?";
}

/* Counts op in a JSON object kept in first-seen order. */
static void count_op(json_t *hist, const char *op) {
    json_t *c = json_object_get(hist, op);
    json_object_set_new(hist, op, json_integer(c ? json_integer_value(c) + 1 : 1));
}

static json_t *plan_head(const seam_plan *p, const char *model_name) {
    json_t *o = json_object(), *jt = json_array();
    int32_t supported, counted;
    seam_plan_support(p, &supported, &counted);
    json_object_set_new(o, "model", json_string(model_name ? model_name : ""));
    for (int32_t t = 0; t <= p->n_targets; t++) json_array_append_new(jt, json_string(p->target_names[t]));
    json_object_set_new(o, "targets", jt);
    json_object_set_new(o, "supported_fraction", json_real(counted ? (double)supported / counted : 1.0));
    return o;
}

/* ---- the plan as JSON text ----
 * A million-node plan is about 100 MB of JSON: it is written directly as
 * text, in the exact form jansson's compact dump gives (the analysis, which
 * is small, still goes through jansson). */

typedef struct jtext {
    char *s;
    size_t len, cap;
    bool oom;
} jtext;

static bool jt_reserve(jtext *j, size_t n) {
    if (j->oom) return false;
    if (j->cap - j->len >= n) return true;
    size_t cap = j->cap ? j->cap : 4096;
    while (cap - j->len < n) {
        if (cap > SIZE_MAX / 2) {
            j->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *s = realloc(j->s, cap);
    if (!s) {
        j->oom = true;
        return false;
    }
    j->s = s;
    j->cap = cap;
    return true;
}

static void jt_put(jtext *j, const char *s, size_t n) {
    if (!jt_reserve(j, n)) return;
    memcpy(j->s + j->len, s, n);
    j->len += n;
}

#define JT_LIT(j, lit) jt_put((j), (lit), sizeof(lit) - 1)

static void jt_int(jtext *j, long long v) {
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do tmp[sizeof(tmp) - 1 - n++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0) tmp[sizeof(tmp) - 1 - n++] = '-';
    jt_put(j, tmp + sizeof(tmp) - n, (size_t)n);
}

/* jansson's real format: %.17g, ".0" added when the text reads as an
 * integer, the exponent without '+' and leading zeros. */
static void jt_real(jtext *j, double v) {
    char b[40];
    int n = snprintf(b, sizeof(b), "%.17g", v);
    if (n < 0 || (size_t)n >= sizeof(b) - 3) {
        j->oom = true;
        return;
    }
    if (!strchr(b, '.') && !strchr(b, 'e')) {
        memcpy(b + n, ".0", 3);
        n += 2;
    }
    char *e = strchr(b, 'e');
    if (e) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-') start++;
        while (*end == '0') end++;
        if (end != start) {
            memmove(start, end, (size_t)(b + n + 1 - end));
            n -= (int)(end - start);
        }
    }
    jt_put(j, b, (size_t)n);
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return 0;
    if (len > n) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* A JSON string: '"' and '\\' escaped, control characters as jansson
 * writes them; bytes that are not UTF-8 (which jansson refuses) become
 * U+FFFD. */
static void jt_esc(jtext *j, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t run = 0; /* start of the bytes not yet written */
    for (size_t k = 0; k < n;) {
        unsigned c = s[k];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            k++;
            continue;
        }
        size_t len = c >= 0x80 ? utf8_len(s + k, n - k) : 1;
        if (c >= 0x80 && len) {
            k += len;
            continue;
        }
        jt_put(j, str + run, k - run);
        switch (c) {
        case '"': JT_LIT(j, "\\\""); break;
        case '\\': JT_LIT(j, "\\\\"); break;
        case '\b': JT_LIT(j, "\\b"); break;
        case '\f': JT_LIT(j, "\\f"); break;
        case '\n': JT_LIT(j, "\\n"); break;
        case '\r': JT_LIT(j, "\\r"); break;
        case '\t': JT_LIT(j, "\\t"); break;
        default:
            if (c < 0x20) {
                char u[8];
                snprintf(u, sizeof(u), "\\u%04X", c);
                jt_put(j, u, 6);
            } else {
                JT_LIT(j, "\xEF\xBF\xBD");
            }
        }
        run = ++k;
    }
    jt_put(j, str + run, n - run);
}

static void jt_str(jtext *j, const char *str, size_t n) {
    JT_LIT(j, "\"");
    jt_esc(j, str, n);
    JT_LIT(j, "\"");
}

static void jt_cstr(jtext *j, const char *s) { jt_str(j, s, strlen(s)); }

/* ,"key": before a member (no comma before the first). */
static void jt_key(jtext *j, const char *key, bool first) {
    if (!first) JT_LIT(j, ",");
    jt_cstr(j, key);
    JT_LIT(j, ":");
}

/* A real member; jansson has no NaN or infinity, and leaves such a
 * member out. */
static void jt_real_member(jtext *j, const char *key, double v) {
    if (!isfinite(v)) return;
    jt_key(j, key, false);
    jt_real(j, v);
}

static void jt_names(jtext *j, const char *const *names, int32_t n) {
    JT_LIT(j, "[");
    for (int32_t k = 0; k < n; k++) {
        if (k) JT_LIT(j, ",");
        jt_cstr(j, names[k]);
    }
    JT_LIT(j, "]");
}

static void plan_text(const seam_plan *p, const char *model_name, jtext *j) {
    int32_t supported, counted;
    seam_plan_support(p, &supported, &counted);
    JT_LIT(j, "{");
    jt_key(j, "model", true);
    jt_cstr(j, model_name ? model_name : "");
    jt_key(j, "targets", false);
    jt_names(j, p->target_names, p->n_targets + 1);
    jt_real_member(j, "supported_fraction", counted ? (double)supported / counted : 1.0);
    jt_key(j, "subgraphs", false);
    JT_LIT(j, "[");
    for (int32_t s = 0; s < p->n_subgraphs && !j->oom; s++) {
        seam_plan_subgraph_info sg;
        seam_plan_subgraph(p, s, &sg);
        if (s) JT_LIT(j, ",");
        JT_LIT(j, "{\"id\":");
        jt_int(j, s);
        jt_key(j, "target", false);
        jt_cstr(j, sg.target);
        jt_key(j, "nodes", false);
        JT_LIT(j, "[");
        for (int32_t k = 0; k < sg.n_nodes; k++) {
            if (k) JT_LIT(j, ",");
            jt_int(j, sg.nodes[k]);
        }
        JT_LIT(j, "]");
        jt_key(j, "inputs", false);
        jt_names(j, sg.inputs, sg.n_inputs);
        jt_key(j, "outputs", false);
        jt_names(j, sg.outputs, sg.n_outputs);
        jt_real_member(j, "estimated_us", sg.est_us);
        jt_key(j, "boundary_bytes", false);
        jt_int(j, sg.boundary_bytes);
        JT_LIT(j, "}");
    }
    JT_LIT(j, "]");
    jt_key(j, "estimate", false);
    JT_LIT(j, "{");
    /* the first member decides the commas: write them as jansson would */
    bool first = true;
    const char *ek[3] = {"plan_us", "all_cpu_us", "capability_us"};
    double ev[3] = {p->est.total_us, p->est.all_cpu_us, p->est.capability_us};
    for (int k = 0; k < 3; k++) {
        if (!isfinite(ev[k])) continue;
        jt_key(j, ek[k], first);
        jt_real(j, ev[k]);
        first = false;
    }
    JT_LIT(j, "}");
    jt_key(j, "nodes", false);
    JT_LIT(j, "[");
    char why[2400];
    for (int32_t i = 0; i < p->n_nodes && !j->oom; i++) {
        seam_plan_node_info n;
        seam_plan_node(p, i, &n);
        if (i) JT_LIT(j, ",");
        JT_LIT(j, "{\"index\":");
        jt_int(j, i);
        jt_key(j, "name", false);
        jt_cstr(j, n.name);
        jt_key(j, "op", false);
        jt_cstr(j, n.op_type);
        jt_key(j, "target", false);
        jt_cstr(j, n.target);
        jt_key(j, "reason", false);
        /* "unsupported: npu: TopK is not supported", "supported by npu",
         * "constant": written in pieces (a million snprintf calls cost
         * more than the rest of the text), cut at sizeof(why) - 1 bytes
         * as the text always was */
        const char *word = seam_reason_name(n.reason);
        size_t wl = strlen(word), dl = strlen(n.detail), tl = strlen(n.target);
        if (n.detail[0] && wl + 2 + dl < sizeof(why)) {
            JT_LIT(j, "\"");
            jt_esc(j, word, wl);
            JT_LIT(j, ": ");
            jt_esc(j, n.detail, dl);
            JT_LIT(j, "\"");
        } else if (!n.detail[0] && n.reason == SEAM_REASON_SUPPORTED && 13 + tl < sizeof(why)) {
            JT_LIT(j, "\"supported by ");
            jt_esc(j, n.target, tl);
            JT_LIT(j, "\"");
        } else if (!n.detail[0] && n.reason != SEAM_REASON_SUPPORTED) {
            jt_str(j, word, wl);
        } else { /* longer than that: cut */
            size_t at = 0;
            const char *part[3] = {n.detail[0] ? word : "supported by ", n.detail[0] ? ": " : n.target, n.detail};
            for (int k = 0; k < (n.detail[0] ? 3 : 2); k++) {
                size_t pl = strlen(part[k]);
                if (pl > sizeof(why) - 1 - at) pl = sizeof(why) - 1 - at;
                memcpy(why + at, part[k], pl);
                at += pl;
            }
            jt_str(j, why, at);
        }
        JT_LIT(j, "}");
    }
    JT_LIT(j, "]");
    jt_key(j, "notes", false);
    JT_LIT(j, "[");
    bool first_note = true;
    for (const char *notes = seam_plan_notes(p); *notes;) {
        const char *nl = strchr(notes, '\n');
        size_t len = nl ? (size_t)(nl - notes) : strlen(notes);
        if (!first_note) JT_LIT(j, ",");
        jt_str(j, notes, len);
        first_note = false;
        notes += len + (nl ? 1 : 0);
    }
    JT_LIT(j, "]}");
}

static json_t *analysis_object(const seam_plan *p, const char *model_name) {
    json_t *o = plan_head(p, model_name), *js = json_object(), *ju = json_object(), *jn = json_array();
    int32_t supported, counted;
    seam_plan_support(p, &supported, &counted);
    json_object_set_new(o, "supported_count", json_integer(supported));
    json_object_set_new(o, "node_count", json_integer(counted));
    for (int32_t i = 0; i < p->n_nodes; i++) {
        seam_plan_node_info n;
        seam_plan_node(p, i, &n);
        if (n.reason == SEAM_REASON_CONSTANT) continue;
        count_op(n.reason == SEAM_REASON_UNSUPPORTED ? ju : js, n.op_type);
        if (n.reason != SEAM_REASON_UNSUPPORTED) continue;
        json_t *e = json_object();
        json_object_set_new(e, "index", json_integer(i));
        json_object_set_new(e, "name", json_string(n.name));
        json_object_set_new(e, "op", json_string(n.op_type));
        json_object_set_new(e, "reason", json_string(n.detail));
        json_array_append_new(jn, e);
    }
    json_object_set_new(o, "supported_ops", js);
    json_object_set_new(o, "unsupported_ops", ju);
    json_object_set_new(o, "unsupported_nodes", jn);
    return o;
}

/* Writes o (taken) into buf as NUL-terminated text, snprintf-style. */
static seam_status plan_dump(const seam_plan *p, json_t *o, char *buf, size_t size, size_t *needed) {
    size_t n = o ? json_dumpb(o, buf, buf && size ? size - 1 : 0, JSON_PRESERVE_ORDER | JSON_COMPACT) : 0;
    json_decref(o);
    if (n == 0) return seam_error(p->model->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory writing the plan as JSON");
    if (needed) *needed = n + 1;
    if (buf && size) buf[n < size ? n : size - 1] = 0;
    return SEAM_STATUS_OK;
}

/* The text is made once for the size query and kept in the plan until the
 * call that receives it (a plan is used by one thread at a time). */
seam_status seam_plan_json(const seam_plan *plan, const char *model_name, char *buf, size_t size, size_t *needed) {
    if (!plan) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_plan *p = (seam_plan *)plan;
    const char *mn = model_name ? model_name : "";
    if (!p->json || strcmp(p->json_model, mn) != 0) {
        plan_json_drop(p);
        jtext j = {0};
        plan_text(p, mn, &j);
        jt_put(&j, "", 1);
        p->json_model = strdup(mn);
        if (j.oom || !p->json_model) {
            free(j.s);
            free(p->json_model);
            p->json_model = NULL;
            return seam_error(p->model->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory writing the plan as JSON");
        }
        p->json = j.s;
        p->json_len = j.len - 1;
        seam_phase(p->model->ctx, "plan json");
    }
    if (needed) *needed = p->json_len + 1;
    if (buf && size) {
        size_t n = p->json_len < size ? p->json_len : size - 1;
        memcpy(buf, p->json, n);
        buf[n] = 0;
        if (n == p->json_len) plan_json_drop(p);
    }
    return SEAM_STATUS_OK;
}

seam_status seam_plan_analysis_json(const seam_plan *plan, const char *model_name, char *buf, size_t size,
                                    size_t *needed) {
    if (!plan) return SEAM_STATUS_INVALID_ARGUMENT;
    return plan_dump(plan, analysis_object(plan, model_name), buf, size, needed);
}
