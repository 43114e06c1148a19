/* Constraints, steps 1b and 4 of seam_partition: min support; device
 * subgraphs below min_subgraph_size, or beyond max_subgraph_count (keeping
 * those that offload the most work), move to the CPU and the rest is
 * grouped again, until the plan holds; or, under SEAM_ON_VIOLATION_ERROR,
 * the first violation is an error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "partition/partitioner.h"

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

/* Step 1b: too few nodes supported is an error. */
seam_status partition_check_min_support(partitioner *pr) {
    const seam_plan *p = pr->p;
    double min_support = pr->o->min_support;
    if (p->counted && (double)p->supported < min_support * (double)p->counted - 1e-9)
        return seam_error(pr->ctx, SEAM_STATUS_UNSUPPORTED,
                          "%.2f%% of operations (%d of %d) are supported, below the required minimum of %.2f%%",
                          100.0 * p->supported / p->counted, p->supported, p->counted, 100.0 * min_support);
    return SEAM_STATUS_OK;
}

/* Device subgraphs with fewer nodes than min_subgraph_size go to the CPU;
 * *moved counts the nodes moved. */
static seam_status move_small(partitioner *pr, int32_t *moved) {
    seam_plan *p = pr->p;
    const seam_partition_options *o = pr->o;
    char desc[256], buf[512];
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
        *moved += m;
    }
    return SEAM_STATUS_OK;
}

/* More subgraphs than max_subgraph_count: the device subgraphs doing the
 * least work move to the CPU. Each move removes at most two subgraphs (it
 * joins its CPU neighbours), so at least half the excess moves at once.
 * *moved counts the nodes moved. */
static seam_status move_least_work(partitioner *pr, int32_t *moved) {
    seam_plan *p = pr->p;
    const seam_partition_options *o = pr->o;
    char desc[256], buf[512];
    if (o->on_violation == SEAM_ON_VIOLATION_ERROR)
        return seam_error(pr->ctx, SEAM_STATUS_UNSUPPORTED,
                          "The partitioner has found %d subgraphs which exceeds the specified max subgraph count of %d.",
                          p->n_subgraphs, o->max_subgraph_count);
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
        *moved += m;
    }
    free(r);
    return SEAM_STATUS_OK;
}

/* Step 4: min size and max count, until the plan holds. */
seam_status partition_enforce(partitioner *pr) {
    seam_plan *p = pr->p;
    const seam_partition_options *o = pr->o;
    seam_status st;
    for (int32_t round = 0; round < 1000; round++) {
        int32_t moved = 0;
        if ((st = move_small(pr, &moved))) return st;
        if (!moved && o->max_subgraph_count > 0 && p->n_subgraphs > o->max_subgraph_count &&
            (st = move_least_work(pr, &moved)))
            return st;
        if (!moved) return SEAM_STATUS_OK;
        if ((st = plan_group(pr->ctx, p))) return st;
    }
    return SEAM_STATUS_OK;
}
