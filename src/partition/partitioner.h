/* seam_partition's steps (partition.c drives them) and the state they
 * share: support (capability.c), placement by priority and by cost
 * (place.c), constraints (constraints.c). Grouping is group.c's. */
#ifndef SEAM_PARTITIONER_H
#define SEAM_PARTITIONER_H

#include "partition/partition.h"

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
    /* QDQ units left as nodes (units.c): unit u's members are
     * unit_member[unit_start[u] .. unit_start[u + 1]), its op first */
    int32_t n_units;
    int32_t *unit_start, *unit_member;
    /* the cost search chooses between targets only, never the CPU (targets
     * that declare no costs: every plan is estimated alike) */
    bool devices_only;
    int64_t evals_left;   /* plans the cost search may still regroup and estimate */
} partitioner;

/* A copy of s in the plan's arena (NULL when out of memory). */
static inline const char *plan_strdup(seam_plan *p, const char *s) { return seam_arena_strdup(&p->arena, s); }

/* Step 1 (capability.c): every target asked about every node; constants
 * marked, supported_by and the refusals' reasons set. */
seam_status partition_support(partitioner *pr);

/* Step 2 (place.c): pins, cpu_ops, then the first target by priority. */
seam_status partition_assign(partitioner *pr);
/* With several targets, the neighbour-aware choice (smoothing) when it
 * gives fewer device subgraphs; the plan is grouped either way. */
seam_status partition_smooth(partitioner *pr);
/* Step 3b (place.c): placement by cost. */
seam_status partition_place_by_cost(partitioner *pr);
/* The cost model's estimate of the final plan (after the constraints). */
void partition_estimate_final(partitioner *pr);

/* QDQ units kept whole (units.c). find: after support, lists them;
 * assign: after the pins, each unit to its op's target (or a pinned
 * member's, or the CPU where that target refuses a member), members
 * moved saying why; close: the same on a search's target array, returning
 * how many entries changed. */
seam_status partition_units_find(partitioner *pr);
void partition_units_assign(partitioner *pr);
int32_t partition_units_close(const partitioner *pr, int32_t *t);

/* Step 1b (constraints.c): an error when fewer nodes than min_support are
 * supported. */
seam_status partition_check_min_support(partitioner *pr);
/* Step 4 (constraints.c): min size and max count, until the plan holds. */
seam_status partition_enforce(partitioner *pr);

#endif
