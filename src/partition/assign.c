/*
 * Partitioning by the caller's assignment (torch.fx split_module): each
 * node gets a partition id from a callback; the nodes with one id form one
 * subgraph. The subgraphs run in a topological order of their
 * dependencies; an assignment whose subgraphs depend on each other in a
 * cycle is refused, naming the nodes that carry the cycle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "partition/partition.h"

typedef struct pid_map {
    int32_t id;     /* the caller's id */
    int32_t part;   /* dense index, in first-seen order */
} pid_map;

static int cmp_pid(const void *a, const void *b) {
    const pid_map *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* An edge between partitions, kept with the value and nodes that make it. */
typedef struct pedge {
    int32_t from, to;
    int32_t value, producer, consumer;
} pedge;

static int cmp_edge(const void *a, const void *b) {
    const pedge *x = a, *y = b;
    if (x->from != y->from) return x->from - y->from;
    return x->to - y->to;
}

/* Finds a cycle among partitions with indeg > 0 and describes it. */
static seam_status report_cycle(seam_context *ctx, const ir_graph *g, const pedge *e, int32_t ne, const int32_t *first,
                                const int32_t *indeg, const int32_t *ids, int32_t np) {
    /* walk backwards: every remaining partition has a remaining predecessor */
    int32_t *seen = malloc(sizeof(int32_t) * ((size_t)np + 1));
    int32_t *via = malloc(sizeof(int32_t) * ((size_t)np + 1)); /* edge used to reach the predecessor */
    if (!seen || !via) {
        free(seen);
        free(via);
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "the assignment makes the subgraphs depend on each other in a cycle");
    }
    for (int32_t p = 0; p < np; p++) seen[p] = -1;
    int32_t cur = 0;
    while (indeg[cur] == 0) cur++;
    int32_t step = 0;
    while (seen[cur] < 0) {
        seen[cur] = step++;
        int32_t pred = -1;
        for (int32_t k = 0; k < ne && pred < 0; k++)
            if (e[k].to == cur && indeg[e[k].from] > 0) {
                pred = e[k].from;
                via[cur] = k;
            }
        if (pred < 0) break;
        cur = pred;
    }
    (void)first;
    /* cur is on the cycle; follow `via` back around it, printing forwards */
    char msg[1500], lab1[300], lab2[300];
    size_t off = (size_t)snprintf(msg, sizeof(msg), "the assignment makes the subgraphs depend on each other in a cycle:");
    int32_t start = cur, p = cur, hops = 0;
    do {
        const pedge *x = &e[via[p]];
        off += (size_t)snprintf(msg + off, off < sizeof(msg) ? sizeof(msg) - off : 0,
                                " partition %d needs '%s' from %s in partition %d, read by %s;", ids[x->to],
                                g->values[x->value].name, ir_node_label(g, x->producer, lab1, sizeof(lab1)), ids[x->from],
                                ir_node_label(g, x->consumer, lab2, sizeof(lab2)));
        p = x->from;
    } while (p != start && ++hops < np && off < sizeof(msg));
    free(seen);
    free(via);
    return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s", msg);
}

/* Step 1: the caller's id of every node but the constants, made dense:
 * pid[i] becomes the index of node i's partition in id order (-1: a
 * constant), *ids_out (malloc'd) the caller's id of each index. */
static seam_status assign_ids(seam_model *m, seam_plan *plan, seam_assign_fn assign, void *user, int32_t *pid,
                              int32_t **ids_out, int32_t *np_out) {
    seam_context *ctx = m->ctx;
    const ir_graph *g = m->graph;
    int32_t nn = g->n_nodes;
    pid_map *map = malloc(sizeof(pid_map) * ((size_t)nn + 1));
    if (!map) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    seam_status st = SEAM_STATUS_OK;
    char lab[300];
    view_builder vb;
    view_init(&vb, m);
    int32_t nm = 0;
    for (int32_t i = 0; i < nn && !st; i++) {
        if (plan_is_constant_node(g, i)) {
            pid[i] = -1;
            plan_set_constant(plan, i);
            continue;
        }
        seam_node_view view;
        if (!view_node(&vb, i, &view)) {
            st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
            break;
        }
        pid[i] = assign(user, &view);
        plan->counted++;
        if (pid[i] < 0)
            st = seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "the assignment gave %s the partition id %d; ids must be >= 0",
                            ir_node_label(g, i, lab, sizeof(lab)), pid[i]);
        map[nm++] = (pid_map){pid[i], 0};
    }
    view_free(&vb);
    if (st) {
        free(map);
        return st;
    }
    /* dense partition indices, ordered by id */
    qsort(map, (size_t)nm, sizeof(pid_map), cmp_pid);
    int32_t np = 0;
    for (int32_t k = 0; k < nm; k++)
        if (k == 0 || map[k].id != map[k - 1].id) map[np++] = map[k];
    int32_t *ids = malloc(sizeof(int32_t) * ((size_t)np + 1));
    for (int32_t p = 0; ids && p < np; p++) ids[p] = map[p].id;
    for (int32_t i = 0; i < nn; i++) {
        if (pid[i] < 0) continue;
        pid_map key = {pid[i], 0};
        pid[i] = (int32_t)((pid_map *)bsearch(&key, map, (size_t)np, sizeof(pid_map), cmp_pid) - map);
    }
    free(map);
    if (!ids) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    *ids_out = ids;
    *np_out = np;
    return SEAM_STATUS_OK;
}

/* Step 2: the np partitions in a topological order of their dependencies,
 * smallest index first, into porder; an error naming a cycle if there is
 * one. */
static seam_status order_partitions(seam_context *ctx, const ir_graph *g, const int32_t *pid, const int32_t *ids,
                                    int32_t np, int32_t *porder) {
    int32_t nn = g->n_nodes;
    /* edges between partitions */
    int64_t ne_cap = 0;
    for (int32_t i = 0; i < nn; i++) ne_cap += g->nodes[i].n_inputs + g->nodes[i].n_implicit;
    pedge *edges = malloc(sizeof(pedge) * ((size_t)ne_cap + 1));
    int32_t *indeg = calloc((size_t)np + 1, sizeof(int32_t));
    int32_t *first = malloc(sizeof(int32_t) * ((size_t)np + 2)); /* first edge from each partition */
    seam_status st = SEAM_STATUS_OK;
    if (!edges || !indeg || !first) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    int32_t ne = 0;
    for (int32_t i = 0; i < nn; i++) {
        if (pid[i] < 0) continue;
        const ir_node *n = &g->nodes[i];
        for (int32_t k = 0; k < n->n_inputs + n->n_implicit; k++) {
            int32_t v = n->inputs[k]; /* implicit inputs follow the inputs */
            if (v < 0) continue;
            int32_t pr = g->values[v].producer;
            if (pr < 0 || pid[pr] < 0 || pid[pr] == pid[i]) continue;
            edges[ne++] = (pedge){pid[pr], pid[i], v, pr, i};
        }
    }
    qsort(edges, (size_t)ne, sizeof(pedge), cmp_edge);
    int32_t ue = 0; /* unique (from, to) */
    for (int32_t k = 0; k < ne; k++)
        if (k == 0 || edges[k].from != edges[k - 1].from || edges[k].to != edges[k - 1].to) edges[ue++] = edges[k];
    ne = ue;
    for (int32_t p = 0; p <= np; p++) first[p] = ne;
    for (int32_t k = ne - 1; k >= 0; k--) first[edges[k].from] = k;
    for (int32_t k = 0; k < ne; k++) indeg[edges[k].to]++;
    /* Kahn over partitions, smallest id first */
    int32_t head = 0, tail = 0;
    for (int32_t p = 0; p < np; p++)
        if (!indeg[p]) porder[tail++] = p;
    while (head < tail) {
        int32_t p = porder[head++];
        for (int32_t k = first[p]; k < ne && edges[k].from == p; k++)
            if (--indeg[edges[k].to] == 0) porder[tail++] = edges[k].to;
    }
    if (tail < np) st = report_cycle(ctx, g, edges, ne, first, indeg, ids, np);
done:
    free(edges);
    free(indeg);
    free(first);
    return st;
}

/* Step 3: the plan's subgraphs, one per partition in porder, its nodes in
 * topological order, all on the CPU target. */
static seam_status make_runs(seam_context *ctx, seam_plan *plan, const int32_t *pid, const int32_t *ids,
                             const int32_t *porder, int32_t np) {
    const ir_graph *g = plan->model->graph;
    int32_t nn = g->n_nodes;
    waves w = {0};
    int32_t *pos = malloc(sizeof(int32_t) * ((size_t)np + 1)); /* partition -> run */
    int32_t *pcount = calloc((size_t)np + 1, sizeof(int32_t));
    w.order = malloc(sizeof(int32_t) * ((size_t)nn + 1));
    w.seg_start = calloc((size_t)np + 2, sizeof(int32_t));
    w.seg_target = calloc((size_t)np + 1, sizeof(int32_t));
    seam_status st = SEAM_STATUS_OK;
    if (!pos || !pcount || !w.order || !w.seg_start || !w.seg_target) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int32_t r = 0; r < np; r++) pos[porder[r]] = r;
    for (int32_t i = 0; i < nn; i++)
        if (pid[i] >= 0) pcount[pos[pid[i]]]++;
    for (int32_t r = 0; r < np; r++) w.seg_start[r + 1] = w.seg_start[r] + pcount[r];
    memset(pcount, 0, sizeof(int32_t) * (size_t)np);
    for (int32_t q = 0; q < nn; q++) {
        int32_t i = g->topo[q];
        if (pid[i] < 0) continue;
        int32_t r = pos[pid[i]];
        w.order[w.seg_start[r] + pcount[r]++] = i;
        plan->node_target[i] = 0; /* every partition runs on the CPU target */
        plan->reason[i] = SEAM_REASON_USER;
    }
    w.n_segs = np;
    w.n_order = w.seg_start[np];
    st = plan_set_subgraphs(ctx, plan, &w);
    for (int32_t i = 0; i < nn; i++) {
        if (pid[i] < 0) continue;
        char buf[64];
        snprintf(buf, sizeof(buf), "partition %d", ids[pid[i]]);
        plan->detail[i] = seam_arena_strdup(&plan->arena, buf);
    }
    plan->supported = plan->counted;
done:
    free(pos);
    free(pcount);
    free(w.order);
    free(w.seg_start);
    free(w.seg_target);
    return st;
}

seam_status seam_partition_by_callback(seam_model *m, seam_assign_fn assign, void *user, seam_plan **out) {
    if (!out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    if (!m || !assign) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = m->ctx;
    int32_t nn = m->graph->n_nodes, np = 0;
    seam_plan *plan = plan_new(m, 0);
    int32_t *pid = malloc(sizeof(int32_t) * ((size_t)nn + 1)), *ids = NULL, *porder = NULL;
    seam_status st = SEAM_STATUS_OK;
    if (!plan || !pid) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    if ((st = assign_ids(m, plan, assign, user, pid, &ids, &np))) goto done;
    porder = malloc(sizeof(int32_t) * ((size_t)np + 1));
    if (!porder) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    if ((st = order_partitions(ctx, m->graph, pid, ids, np, porder))) goto done;
    st = make_runs(ctx, plan, pid, ids, porder, np);
    if (!st && ctx->self_check) st = plan_self_check(plan);
done:
    free(pid);
    free(ids);
    free(porder);
    if (st) {
        seam_plan_free(plan);
        return st;
    }
    *out = plan;
    return SEAM_STATUS_OK;
}
