/*
 * seam_partition: support, assignment, grouping, constraints. This file
 * drives the steps; each lives in its own file.
 *
 *  1. support (capability.c): every target is asked about every node (its
 *     reason kept); Constant nodes are data, placed nowhere.
 *  1b. min support (constraints.c): too few supported nodes is an error.
 *  2. assignment (place.c): pins, then cpu_ops, then the first target by
 *     priority that supports the node, else the CPU.
 *  3. grouping (group.c) into acyclic subgraphs.
 *  3b. cost (placement COST, place.c over cost.c's model): supported nodes
 *     whose offload costs more than it saves go back to the CPU; a plan
 *     estimated worse than all-CPU or the capability plan is replaced by it.
 *  4. constraints (constraints.c): device subgraphs below
 *     min_subgraph_size, or beyond max_subgraph_count (keeping those that
 *     offload the most work), move to the CPU and the rest is grouped again,
 *     until the plan holds; or, under SEAM_ON_VIOLATION_ERROR, the first
 *     violation is an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/context.h"
#include "partition/partitioner.h"

seam_partition_options seam_partition_defaults(void) {
    seam_partition_options o;
    memset(&o, 0, sizeof(o));
    o.min_subgraph_size = 1;
    return o;
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
static seam_status partition_best(seam_model *m, const seam_partition_options *opts, seam_plan **out) {
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

seam_status seam_partition(seam_model *m, const seam_partition_options *opts, seam_plan **out) {
    seam_status st = partition_best(m, opts, out);
    if (!st && m->ctx->self_check && (st = plan_self_check(*out))) {
        seam_plan_free(*out);
        *out = NULL;
    }
    return st;
}

/* Never silent: a target the plan gives no node says so, once, with why
 * (it supports none of the nodes: their commonest ops; or the nodes it
 * supports stayed on the CPU). */
static void note_idle_targets(partitioner *pr) {
    const seam_plan *p = pr->p;
    for (int32_t t = 0; t < pr->n_targets; t++) {
        int32_t taken = 0, supported = 0, live = 0;
        for (int32_t i = 0; i < p->n_nodes; i++) {
            if (p->node_target[i] < 0) continue; /* a constant */
            live++;
            taken += p->node_target[i] == t;
            supported += (int32_t)(pr->supported_by[i] >> t & 1);
        }
        if (taken || !live) continue;
        if (supported) {
            plan_note(pr->p, "target '%s' takes no node of this model: the %d node%s it supports stay on the CPU "
                      "(each node's reason: `seam analyze`; placement by capability offloads every supported node)",
                      p->target_names[t], supported, supported == 1 ? "" : "s");
            continue;
        }
        enum { TOP = 5, KINDS = 64 };
        const char *ops[KINDS];
        int32_t counts[KINDS], n_ops = 0;
        for (int32_t i = 0; i < p->n_nodes; i++) {
            if (p->node_target[i] < 0) continue;
            const char *op = pr->m->graph->nodes[i].op_type;
            int32_t k = 0;
            while (k < n_ops && strcmp(ops[k], op) != 0) k++;
            if (k == n_ops && n_ops == KINDS) continue;
            if (k == n_ops) ops[n_ops] = op, counts[n_ops++] = 0;
            counts[k]++;
        }
        char list[256] = "";
        size_t len = 0;
        for (int32_t r = 0; r < TOP && r < n_ops && len < sizeof(list); r++) {
            int32_t best = 0;
            for (int32_t k = 1; k < n_ops; k++) best = counts[k] > counts[best] ? k : best;
            int w = snprintf(list + len, sizeof(list) - len, "%s%s %d", r ? ", " : "", ops[best], counts[best]);
            len += w > 0 ? (size_t)w : 0;
            counts[best] = -1;
        }
        plan_note(pr->p, "target '%s' supports none of this model's %d nodes: every node runs on the CPU (the "
                  "commonest ops: %s; each node's reason: `seam analyze`)", p->target_names[t], live, list);
    }
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
    partitioner pr = {m->ctx, m, opts, plan_new(m, opts->n_targets), opts->targets, opts->n_targets, NULL, NULL, {0}, false,
                      0, NULL, NULL, false, 0};
    pr.supported_by = calloc((size_t)g->n_nodes + 1, sizeof(uint64_t));
    pr.pinned = calloc((size_t)g->n_nodes + 1, sizeof(bool));
    if (!pr.p || !pr.supported_by || !pr.pinned) {
        st = seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int32_t t = 0; t < pr.n_targets; t++) pr.p->target_names[t] = plan_strdup(pr.p, pr.targets[t]->name);
    for (int32_t k = 0; k < m->n_rewrites; k++) plan_note(pr.p, "%s", m->rewrites[k]);
    seam_phase(m->ctx, "partition: setup");
    if ((st = partition_support(&pr))) goto done;
    seam_phase(m->ctx, "partition: support");
    if ((st = partition_check_min_support(&pr))) goto done;
    if ((st = partition_assign(&pr))) goto done;
    if ((st = partition_units_find(&pr))) goto done;
    partition_units_assign(&pr);
    seam_phase(m->ctx, "partition: assign");
    if ((st = plan_group(m->ctx, pr.p))) goto done;
    seam_phase(m->ctx, "partition: group");
    if (pr.n_targets > 1 && (st = partition_smooth(&pr))) goto done;
    /* made after grouping, in the memory grouping's scratch gave back */
    if ((st = cost_model_init(&pr.cm, m->ctx, m, pr.targets, pr.n_targets, pr.supported_by))) goto done;
    pr.p->est_guessed = pr.cm.n_guessed;
    pr.cm.capacity = opts->memory_bytes;
    seam_phase(m->ctx, "partition: cost model");
    bool limited = false; /* a memory that holds less than everything: the search keeps every plan within it */
    for (int32_t t = 0; opts->memory_bytes && t < pr.n_targets; t++) limited |= opts->memory_bytes[t] > 0;
    if ((opts->placement == SEAM_PLACEMENT_COST || limited) && pr.n_targets > 0 && (st = partition_place_by_cost(&pr)))
        goto done;
    seam_phase(m->ctx, "partition: cost");
    if ((st = partition_enforce(&pr))) goto done;
    partition_estimate_final(&pr);
    /* each node's own estimate, for what reads the plan later (stages.c) */
    if ((pr.p->node_us = seam_arena_alloc(&pr.p->arena, sizeof(double) * ((size_t)g->n_nodes + 1))))
        for (int32_t i = 0; i < g->n_nodes; i++)
            pr.p->node_us[i] = pr.p->node_target[i] < 0 ? 0 : cost_node_us(&pr.cm, i, pr.p->node_target[i]);
    note_idle_targets(&pr);
    seam_phase(m->ctx, "partition: constraints");
done:
    free(pr.supported_by);
    free(pr.pinned);
    free(pr.unit_start);
    free(pr.unit_member);
    cost_model_free(&pr.cm);
    if (st) {
        seam_plan_free(pr.p);
        return st;
    }
    *out = pr.p;
    return SEAM_STATUS_OK;
}

