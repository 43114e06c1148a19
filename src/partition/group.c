/*
 * Grouping: cuts a topological order of the nodes into runs of one target
 * ("ready waves"), which makes subgraphs whose dependency graph cannot have
 * a cycle. A wave takes every ready node of its target, then every node of
 * that target those make ready, until none is left; then another target
 * takes its turn. Different first targets give different plans: each is
 * tried and the one with the fewest device subgraphs (then fewest in all)
 * is kept. With two targets the waves alternate and this is the minimum
 * (tests/unit/test_partition.c checks it against a brute-force search).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "partition/partition.h"

static void waves_free(waves *w) {
    free(w->order);
    free(w->seg_start);
    free(w->seg_target);
    memset(w, 0, sizeof(*w));
}

/* Inputs of node i that count for ordering: its inputs and the values its
 * bodies read, made by non-constant nodes. */
#define NODE_DEPS(n) ((n)->n_inputs + (n)->n_implicit)
#define NODE_DEP(n, k) ((n)->inputs[k]) /* implicit inputs follow the inputs */

/* Which target takes the next wave, once the current one has nothing
 * ready. The CPU goes first when it can (a CPU wave lets device nodes pile
 * up into one bigger device wave). Between device targets the choice is a
 * heuristic (the problem is hard with three or more targets), so several
 * policies are tried: most ready nodes, fewest ready, most nodes left,
 * fewest left. */
static int32_t next_target(int32_t cur, int32_t cpu, int32_t n_with_cpu, const int32_t *qhead, const int32_t *qtail,
                          const int32_t *left, int32_t policy) {
    if (cur != cpu && qhead[cpu] < qtail[cpu]) return cpu;
    int32_t best = -1;
    for (int32_t d = 0; d < n_with_cpu; d++) {
        if (d == cur || d == cpu || qhead[d] == qtail[d]) continue;
        if (best < 0) {
            best = d;
            continue;
        }
        int32_t rd = qtail[d] - qhead[d], rb = qtail[best] - qhead[best];
        bool better = policy == 0 ? rd > rb : policy == 1 ? rd < rb : policy == 2 ? left[d] > left[best] : left[d] < left[best];
        if (better) best = d;
    }
    if (best < 0 && cur == cpu) return -1;
    if (best < 0 && qhead[cpu] < qtail[cpu]) return cpu;
    return best;
}

#define N_POLICIES 4

/* Successors of each node (one entry per edge), as compact arrays. */
typedef struct csr {
    int32_t *start; /* n_nodes + 1 */
    int32_t *succ;
} csr;

static bool dq_follow_readers(const ir_graph *g, int32_t cpu, waves *w);

static bool run_waves(const ir_graph *g, const csr *adj, const int32_t *target, int32_t n_with_cpu, int32_t cpu,
                      int32_t start, int32_t policy, const int32_t *indeg0, waves *w) {
    int32_t nn = g->n_nodes;
    int32_t *indeg = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    int32_t *qbuf = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    int32_t *qhead = calloc((size_t)n_with_cpu, sizeof(int32_t)), *qtail = calloc((size_t)n_with_cpu, sizeof(int32_t));
    int32_t *qbase = calloc((size_t)n_with_cpu + 1, sizeof(int32_t));
    int32_t *left = calloc((size_t)n_with_cpu + 1, sizeof(int32_t)); /* nodes not yet placed, per target */
    w->order = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    w->seg_start = malloc(sizeof(int32_t) * ((size_t)nn + 2));
    w->seg_target = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    bool ok = indeg && qbuf && qhead && qtail && qbase && left && w->order && w->seg_start && w->seg_target;
    if (ok) {
        /* one FIFO per target, laid out back to back in qbuf */
        for (int32_t i = 0; i < nn; i++)
            if (target[i] >= 0) qbase[target[i] + 1]++;
        for (int32_t c = 0; c < n_with_cpu; c++) qbase[c + 1] += qbase[c];
        for (int32_t c = 0; c < n_with_cpu; c++) {
            qhead[c] = qtail[c] = qbase[c];
            left[c] = qbase[c + 1] - qbase[c];
        }
        memcpy(indeg, indeg0, sizeof(int32_t) * (size_t)nn);
        for (int32_t i = 0; i < nn; i++)
            if (target[i] >= 0 && indeg[i] == 0) qbuf[qtail[target[i]]++] = i;
        w->n_order = w->n_segs = w->n_device = 0;
        int32_t cur = start;
        for (;;) {
            if (qhead[cur] == qtail[cur]) {
                int32_t next = next_target(cur, cpu, n_with_cpu, qhead, qtail, left, policy);
                if (next < 0) break;
                cur = next;
            }
            w->seg_start[w->n_segs] = w->n_order;
            w->seg_target[w->n_segs] = cur;
            w->n_segs++;
            if (cur != cpu) w->n_device++;
            while (qhead[cur] < qtail[cur]) {
                int32_t i = qbuf[qhead[cur]++];
                w->order[w->n_order++] = i;
                left[cur]--;
                for (int32_t e = adj->start[i]; e < adj->start[i + 1]; e++) {
                    int32_t j = adj->succ[e];
                    if (--indeg[j] == 0) qbuf[qtail[target[j]]++] = j;
                }
            }
        }
        w->seg_start[w->n_segs] = w->n_order;
    }
    free(indeg);
    free(qbuf);
    free(qhead);
    free(qtail);
    free(qbase);
    free(left);
    return ok;
}

seam_status plan_group(seam_context *ctx, seam_plan *plan) {
    const ir_graph *g = plan->model->graph;
    int32_t nn = g->n_nodes, n_with_cpu = plan->n_targets + 1, cpu = plan->n_targets; /* device targets, then cpu */
    const int32_t *target = plan->node_target;
    int32_t *indeg = calloc((size_t)nn + 1, sizeof(int32_t));
    bool *starts = calloc((size_t)n_with_cpu, sizeof(bool));
    csr adj = {calloc((size_t)nn + 2, sizeof(int32_t)), NULL};
    if (!indeg || !starts || !adj.start) {
        free(indeg);
        free(starts);
        free(adj.start);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while grouping");
    }
    /* edges between placed nodes: count per producer, then fill */
    int32_t n_placed = 0;
    int64_t n_edges = 0;
    for (int32_t i = 0; i < nn; i++) {
        if (target[i] < 0) continue;
        n_placed++;
        const ir_node *n = &g->nodes[i];
        for (int32_t k = 0; k < NODE_DEPS(n); k++) {
            int32_t v = NODE_DEP(n, k);
            int32_t p = v >= 0 ? g->values[v].producer : -1;
            if (p >= 0 && target[p] >= 0) {
                indeg[i]++;
                adj.start[p + 1]++;
                n_edges++;
            }
        }
    }
    for (int32_t i = 0; i < nn; i++) adj.start[i + 1] += adj.start[i];
    adj.succ = malloc(sizeof(int32_t) * ((size_t)n_edges + 1));
    int32_t *fill = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    if (!adj.succ || !fill) {
        free(indeg);
        free(starts);
        free(adj.start);
        free(adj.succ);
        free(fill);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while grouping");
    }
    memcpy(fill, adj.start, sizeof(int32_t) * (size_t)nn);
    for (int32_t i = 0; i < nn; i++) {
        if (target[i] < 0) continue;
        const ir_node *n = &g->nodes[i];
        for (int32_t k = 0; k < NODE_DEPS(n); k++) {
            int32_t v = NODE_DEP(n, k);
            int32_t p = v >= 0 ? g->values[v].producer : -1;
            if (p >= 0 && target[p] >= 0) adj.succ[fill[p]++] = i;
        }
    }
    free(fill);
    for (int32_t i = 0; i < nn; i++)
        if (target[i] >= 0 && indeg[i] == 0 && starts) starts[target[i]] = true;
    waves best = {0}, w = {0};
    bool have = false;
    /* with one device target the policies agree: run one */
    int32_t n_policies = n_with_cpu > 2 ? N_POLICIES : 1;
    for (int32_t trial = 0; trial < n_with_cpu * n_policies && starts; trial++) {
        int32_t c = trial / n_policies, policy = trial % n_policies;
        if (!starts[c]) continue;
        if (!run_waves(g, &adj, target, n_with_cpu, cpu, c, policy, indeg, &w)) {
            waves_free(&w);
            continue;
        }
        if (!have || w.n_device < best.n_device || (w.n_device == best.n_device && w.n_segs < best.n_segs)) {
            waves_free(&best);
            best = w;
            have = true;
        } else {
            waves_free(&w);
        }
        memset(&w, 0, sizeof(w));
    }
    free(indeg);
    free(starts);
    free(adj.start);
    free(adj.succ);
    if (n_placed && (!have || best.n_order != n_placed)) {
        waves_free(&best);
        /* the graph is acyclic (checked at load), so every node is reached */
        return seam_error(ctx, have ? SEAM_STATUS_INTERNAL : SEAM_STATUS_OUT_OF_MEMORY,
                          have ? "grouping did not reach every node" : "out of memory while grouping");
    }

    if (!dq_follow_readers(g, cpu, &best)) {
        waves_free(&best);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while grouping");
    }
    seam_status st = plan_set_subgraphs(ctx, plan, &best);
    waves_free(&best);
    return st;
}

/* A DequantizeLinear of a computed value whose readers all sit in one later
 * run of its own target moves into that run (in front of them): it is a
 * member of their QDQ unit (DQ -> Add/MaxPool/Concat... -> Q), which a
 * wave would otherwise leave behind with the Q that made its input
 * (issue 27: a unit is never split). Its input is made at or before its
 * old run, and nothing between the two runs reads it, so the order stays
 * valid. Runs left empty are dropped. */
static bool dq_follow_readers(const ir_graph *g, int32_t cpu, waves *w) {
    int32_t nn = g->n_nodes;
    int32_t *seg = malloc(sizeof(int32_t) * ((size_t)nn + 1)), *dest = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    if (!seg || !dest) return free(seg), free(dest), false;
    for (int32_t i = 0; i < nn; i++) seg[i] = dest[i] = -1;
    for (int32_t s = 0; s < w->n_segs; s++)
        for (int32_t k = w->seg_start[s]; k < w->seg_start[s + 1]; k++) seg[w->order[k]] = s;
    int32_t moved = 0;
    for (int32_t i = 0; i < nn; i++) {
        const ir_node *n = &g->nodes[i];
        if (seg[i] < 0 || n->domain[0] || strcmp(n->op_type, "DequantizeLinear") || n->n_inputs < 1 || n->n_outputs != 1 ||
            n->inputs[0] < 0 || g->values[n->inputs[0]].producer < 0 || n->outputs[0] < 0)
            continue;
        const ir_value *y = &g->values[n->outputs[0]];
        if ((y->flags & IR_VALUE_OUTPUT) || y->n_consumers < 1) continue;
        int32_t t = -1;
        for (int32_t c = 0; c < y->n_consumers && t != -2; c++) {
            int32_t r = seg[y->consumers[c]];
            t = r < 0 || (t >= 0 && r != t) ? -2 : r;
        }
        if (t > seg[i] && w->seg_target[t] == w->seg_target[seg[i]]) dest[i] = t, moved++;
    }
    if (!moved) return free(seg), free(dest), true;
    int32_t *order = malloc(sizeof(int32_t) * ((size_t)w->n_order + 1));
    int32_t *start = malloc(sizeof(int32_t) * ((size_t)w->n_segs + 2)), *tgt = malloc(sizeof(int32_t) * ((size_t)w->n_segs + 1));
    if (!order || !start || !tgt) return free(seg), free(dest), free(order), free(start), free(tgt), false;
    /* the moving DQs by destination run, in their old order (a counting
     * sort: mv[s] .. mv[s + 1] are run s's) */
    int32_t *moving = malloc(sizeof(int32_t) * ((size_t)moved + 1));
    int32_t *mv = calloc((size_t)w->n_segs + 2, sizeof(int32_t));
    if (!moving || !mv) return free(seg), free(dest), free(order), free(start), free(tgt), free(moving), free(mv), false;
    for (int32_t k = 0; k < w->n_order; k++)
        if (dest[w->order[k]] >= 0) mv[dest[w->order[k]] + 2]++;
    for (int32_t s = 0; s < w->n_segs; s++) mv[s + 2] += mv[s + 1];
    for (int32_t k = 0; k < w->n_order; k++) /* (mv[s + 1] counts run s's placed so far) */
        if (dest[w->order[k]] >= 0) moving[mv[dest[w->order[k]] + 1]++] = w->order[k];
    int32_t at = 0, ns = 0, ndev = 0;
    for (int32_t s = 0; s < w->n_segs; s++) {
        int32_t begin = at;
        for (int32_t q = mv[s]; q < mv[s + 1]; q++) order[at++] = moving[q];
        for (int32_t k = w->seg_start[s]; k < w->seg_start[s + 1]; k++)
            if (dest[w->order[k]] < 0) order[at++] = w->order[k];
        if (at == begin) continue;
        if (ns > 0 && tgt[ns - 1] == w->seg_target[s]) continue; /* joins the run before (one left empty between) */
        start[ns] = begin, tgt[ns] = w->seg_target[s];
        ndev += w->seg_target[s] != cpu;
        ns++;
    }
    start[ns] = at;
    free(moving), free(mv);
    free(w->order), free(w->seg_start), free(w->seg_target);
    w->order = order, w->seg_start = start, w->seg_target = tgt, w->n_segs = ns, w->n_device = ndev;
    free(seg), free(dest);
    return true;
}

/* Fills plan->subgraphs from an order cut into runs, with each run's
 * boundary values. */
seam_status plan_set_subgraphs(seam_context *ctx, seam_plan *plan, const waves *w) {
    const ir_graph *g = plan->model->graph;
    int32_t nn = g->n_nodes;
    const int32_t *target = plan->node_target;
    const waves best = *w;
    seam_arena *a = &plan->arena;
    plan->n_subgraphs = best.n_segs;
    plan->n_device_subgraphs = best.n_device;
    plan->subgraphs = seam_arena_calloc(a, (size_t)best.n_segs + 1, sizeof(plan_subgraph));
    int32_t *stamp = malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    const char **names = malloc(sizeof(char *) * ((size_t)g->n_values + 1));
    seam_status st = SEAM_STATUS_OK;
    if (!plan->subgraphs || !stamp || !names) st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t s = 0; !st && s < best.n_segs; s++)
        for (int32_t k = best.seg_start[s]; k < best.seg_start[s + 1]; k++) plan->node_subgraph[best.order[k]] = s;
    for (int32_t i = 0; i < nn; i++)
        if (target[i] < 0) plan->node_subgraph[i] = -1;
    if (stamp)
        for (int32_t v = 0; v < g->n_values; v++) stamp[v] = -1;
    for (int32_t s = 0; !st && s < best.n_segs; s++) {
        plan_subgraph *sg = &plan->subgraphs[s];
        int32_t b = best.seg_start[s], e = best.seg_start[s + 1];
        sg->target = best.seg_target[s];
        sg->n_nodes = e - b;
        sg->nodes = seam_arena_memdup(a, best.order + b, sizeof(int32_t) * (size_t)sg->n_nodes);
        /* inputs: read here, made elsewhere (not initializers or constants) */
        int32_t ni = 0;
        for (int32_t k = b; k < e; k++) {
            const ir_node *n = &g->nodes[best.order[k]];
            for (int32_t j = 0; j < NODE_DEPS(n); j++) {
                int32_t v = NODE_DEP(n, j);
                if (v < 0 || stamp[v] == 2 * s) continue;
                const ir_value *val = &g->values[v];
                if (val->flags & IR_VALUE_INIT) continue;
                if (val->producer >= 0 && (target[val->producer] < 0 || plan->node_subgraph[val->producer] == s)) continue;
                stamp[v] = 2 * s;
                names[ni++] = val->name;
            }
        }
        sg->n_inputs = ni;
        sg->inputs = seam_arena_memdup(a, names, sizeof(char *) * (size_t)ni);
        /* outputs: made here, read by another subgraph or the caller */
        int32_t no = 0;
        for (int32_t k = b; k < e; k++) {
            const ir_node *n = &g->nodes[best.order[k]];
            for (int32_t j = 0; j < n->n_outputs; j++) {
                int32_t v = n->outputs[j];
                if (v < 0 || stamp[v] == 2 * s + 1) continue;
                const ir_value *val = &g->values[v];
                bool out = (val->flags & IR_VALUE_OUTPUT) != 0;
                for (int32_t c = 0; c < val->n_consumers && !out; c++) out = plan->node_subgraph[val->consumers[c]] != s;
                if (!out) continue;
                stamp[v] = 2 * s + 1;
                names[no++] = val->name;
            }
        }
        sg->n_outputs = no;
        sg->outputs = seam_arena_memdup(a, names, sizeof(char *) * (size_t)no);
        if (!sg->nodes || !sg->inputs || !sg->outputs) st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    free(stamp);
    free(names);
    return st;
}

void plan_note(seam_plan *plan, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = strlen(line);
    if (plan->notes_len + len + 2 > plan->notes_cap) {
        size_t cap = (plan->notes_cap + len + 2) * 2;
        char *grown = realloc(plan->notes, cap);
        if (!grown) return;
        plan->notes = grown;
        plan->notes_cap = cap;
    }
    memcpy(plan->notes + plan->notes_len, line, len);
    plan->notes_len += len;
    plan->notes[plan->notes_len++] = '\n';
    plan->notes[plan->notes_len] = 0;
}
