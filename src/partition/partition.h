/* The partitioner's internals: the plan, the cost model, grouping. */
#ifndef SEAM_PARTITION_H
#define SEAM_PARTITION_H

#include "backends/view.h"
#include "ir/ir.h"
#include "seam_backend.h"

typedef struct plan_subgraph {
    int32_t target;          /* index into plan->targets; n_targets = cpu */
    int32_t n_nodes, n_inputs, n_outputs;
    int32_t *nodes;
    const char **inputs, **outputs;
    double est_us;           /* the cost model's time (cost.c) */
    int64_t boundary_bytes;
    int64_t need_bytes;      /* on a device: weights, boundary inputs and peak intermediates (cost.c) */
} plan_subgraph;

struct seam_plan {
    seam_arena arena;
    const struct seam_model *model;
    int32_t n_targets;       /* device targets; index n_targets is cpu */
    const char **target_names;
    int32_t n_nodes;
    int32_t *node_target;    /* -1 = constant */
    int32_t *node_subgraph;
    uint8_t *reason;
    const char **detail;
    int32_t *node_unit;      /* per node its QDQ unit's op node (units.c), -1 none; NULL: no unit */
    int32_t n_subgraphs, n_device_subgraphs;
    plan_subgraph *subgraphs;
    int32_t supported, counted;
    char *notes;
    size_t notes_len, notes_cap;
    seam_plan_estimate est;  /* the cost model's estimates */
    int32_t est_guessed;     /* nodes whose sizes are known only at run time (their times guessed) */
    double *node_us;         /* per node, its estimate on its target (cost.c); NULL for plans made otherwise */
    /* seam_plan_json's text between the size query and the fill */
    char *json, *json_model;
    size_t json_len;
};

/* Frees the plan's kept JSON text. */
void plan_json_drop(seam_plan *p);

/* The cost model (cost.c): per node its estimated time on the CPU and on
 * each target that supports it, per target its launch and transfer cost,
 * per value a stamp for counting boundary bytes (value_bytes, from its
 * type, when needed). */
typedef struct cost_model {
    int32_t n_targets;
    double *cpu_us;       /* per node */
    double *dev_us;       /* per node x target, where supported */
    double *launch_us;    /* per target */
    double *us_per_byte;  /* per target */
    int32_t *stamp;       /* per value: scratch for counting a boundary once */
    bool trivial;         /* no target makes offloading cost more than the CPU */
    const int64_t *capacity; /* per target: bytes its memory holds, 0 = no limit (NULL: none) */
    int32_t *last_use;    /* per value: scratch, the position of its last reader in a subgraph */
    int64_t *over;        /* (one) the last cost_plan's bytes past the capacities, summed over subgraphs */
    int32_t n_guessed;    /* nodes with a dim known only at run time (each counted as COST_UNKNOWN_DIM) */
} cost_model;

seam_status cost_model_init(cost_model *cm, seam_context *ctx, const struct seam_model *m,
                            const seam_backend *const *targets, int32_t n_targets, const uint64_t *supported_by);
void cost_model_free(cost_model *cm);
/* A value's bytes from its type (a symbolic dim as COST_UNKNOWN_DIM; 0
 * for a value that is not a tensor of known rank). */
double cost_value_bytes(const ir_value *v);
/* Node i's estimated time on target (n_targets = cpu). */
double cost_node_us(const cost_model *cm, int32_t i, int32_t target);
/* The plan's estimated time; with store, each subgraph's est_us,
 * boundary_bytes and need_bytes are set. cm->over: the bytes the plan's
 * device subgraphs need past their targets' capacities. */
double cost_plan(const cost_model *cm, seam_plan *p, bool store);
/* What target's memory holds under plan p: the weights of all its device
 * subgraphs, and the largest of their other needs (boundary inputs and
 * peak intermediates: one subgraph runs at a time). */
int64_t cost_target_need(const cost_model *cm, seam_plan *p, int32_t target);
/* Placement by cost searches graphs with at most this many movable nodes
 * exhaustively (default 12). */
extern int32_t partition_exhaustive_limit;
/* The cost model's estimate of a node's time on the CPU (microseconds):
 * the per-node cost plus its work (cost_node_work) at its class's rate. */
double cpu_estimate_us(const ir_graph *g, const ir_node *n);

/* Op classes of the CPU estimate, each with a rate (rates.c): dense
 * convolutions and products (multiply-adds), 3x3 convolutions of stride
 * and dilation 1 (which the CPU runs by Winograd), grouped and depthwise
 * convolutions, int8 products, recurrent layers (multiply-adds), other
 * ops by the elements they write, and reductions and pools (whose first
 * input is larger than their output) by the elements they read. */
typedef enum cost_class {
    COST_GEMM, COST_CONV3, COST_GROUPED, COST_INT8, COST_RNN, COST_ELEM, COST_REDUCE, COST_N_CLASSES
} cost_class;
/* Node n's class and work (multiply-adds or elements). */
cost_class cost_node_work(const ir_graph *g, const ir_node *n, double *work);

typedef struct cost_rates {
    double per_us[COST_N_CLASSES]; /* work per microsecond */
    double node_us;                /* fixed cost per node */
    bool calibrated;               /* measured on this machine */
    char source[1800];             /* where the rates come from, for the user */
    bool measured[COST_N_CLASSES]; /* (saving) which classes the calibration saw */
    /* device targets measured: each one's measured time over the estimate
     * (its backend's node costs times the CPU's), which multiplies its
     * nodes' estimates */
    int32_t n_scales;
    char scale_name[8][64];
    double scale[8];
} cost_rates;
/* Target name's measured scale (1 when not measured). */
double cost_rates_target_scale(const char *name);
/* The rates in use: this machine's from the cache file, read once, or the
 * guesses. */
const cost_rates *cost_rates_get(void);
const cost_rates *cost_rates_defaults(void);
/* Replaces the rates in use for this process (NULL: the guesses); not to
 * be called while another thread partitions. */
void cost_rates_set(const cost_rates *r);
/* Saves r as this machine's entry of the cache file (others kept; written
 * to a temporary name and renamed). false with why set on failure; on
 * success why holds the file's path. */
bool cost_rates_save(const cost_rates *r, const char *date, char *why, size_t why_len);
const char *cost_class_key(cost_class c);
/* "MODEL NAME, N cores": the machine a cache entry belongs to. */
void cost_machine_id(char *buf, size_t n);
bool cost_cache_path(char *buf, size_t n);

/* Nodes in execution order, cut into runs of one target. */
typedef struct waves {
    int32_t *order;     /* nodes in run order */
    int32_t *seg_start; /* start of each run in order[]; n_segs + 1 entries */
    int32_t *seg_target; /* target of each run */
    int32_t n_order, n_segs, n_device;
} waves;

/* Sets plan->subgraphs (and node_subgraph) from runs, with boundaries. */
seam_status plan_set_subgraphs(seam_context *ctx, seam_plan *plan, const waves *w);
/* The plan self-check (validate.c): the plan against its model, by rules
 * of its own; SEAM_STATUS_INTERNAL naming what is wrong. Run on every plan
 * returned when the context's self_check is on (SEAM_SELF_CHECK). */
seam_status plan_self_check(seam_plan *p);

/* Groups nodes by node_target into subgraphs (ready waves), fills
 * plan->subgraphs with boundaries. Constants (target -1) go nowhere. */
seam_status plan_group(seam_context *ctx, seam_plan *plan);
/* Node i of g runs in no subgraph: a Constant of the model, or a node
 * folding replaced (ir_node_folded_op set). */
bool plan_is_constant_node(const ir_graph *g, int32_t i);
/* Marks node i of the plan's model constant, with what replaced it. */
void plan_set_constant(seam_plan *plan, int32_t i);
/* Appends a line to plan->notes. */
void plan_note(seam_plan *plan, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
seam_plan *plan_new(const struct seam_model *m, int32_t n_targets);

/* The most members a QDQ unit left as nodes may have. */
#define QDQ_UNIT_MAX 16
/* Whether node i is the op of a QDQ unit left as nodes (units.c): its
 * float inputs all DequantizeLinear outputs, its output read only by
 * QuantizeLinear nodes (through one Relu or Clip at most). Fills out (cap
 * entries at least 4) with the op, its DQs, the Relu and the Qs; returns
 * how many (0: not a unit, or more than cap members). */
int32_t qdq_unit_members(const ir_graph *g, int32_t i, int32_t *out, int32_t cap);

#endif
