/*
 * seam_partition.h - how seam splits a model between backends: the
 * targets a user picks (the built-in cpu and dnnl, rules files, plug-in
 * libraries), partition options, plans and what they say, folding, and
 * applying a plan. seam.h includes this header; the table a backend fills
 * is in seam_backend.h.
 *
 *     const seam_backend *targets[] = {seam_backend_dnnl()};
 *     seam_partition_options opts = seam_partition_defaults();
 *     opts.targets = targets;
 *     opts.n_targets = 1;
 *     seam_plan *plan;
 *     if (seam_partition(model, &opts, &plan) == SEAM_STATUS_OK) { ... seam_plan_free(plan); }
 *
 * How the partitioner works, on a small example. Each node first gets a
 * target: the first target (in the order given) that supports it, unless a
 * pin, --cpu-ops or a constraint says otherwise; `cpu` runs the rest.
 * Placement by cost (the default) then searches every place the targets
 * allow for the least estimated time (and, between plans estimated alike,
 * the fewest device subgraphs): with several targets the order only
 * breaks ties.
 *
 *     x -> Conv(npu) -> Relu(npu) -> TopK(cpu) -> Gemm(npu) -> y
 *
 * Grouping then cuts a topological order into runs of one target, taking
 * "ready waves": all nodes of one target whose inputs are available, then
 * everything of that target they make ready, and so on, before switching
 * target. It tries each target as the first and keeps the plan with the
 * fewest device subgraphs:
 *
 *     subgraph 0 npu [Conv, Relu]   inputs x        outputs relu_out
 *     subgraph 1 cpu [TopK]         inputs relu_out outputs topk_out
 *     subgraph 2 npu [Gemm]         inputs topk_out outputs y
 *
 * The graph of subgraphs never has a cycle, by construction, and the plan
 * lists subgraphs in an order that can run.
 */
#ifndef SEAM_PARTITION_API_H
#define SEAM_PARTITION_API_H

#include <stdbool.h>

#include "seam.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The backend table and the node view are defined in seam_backend.h; a
 * user of this header only passes pointers to them around. */
typedef struct seam_backend seam_backend;
typedef struct seam_node_view seam_node_view;

/* Loads a backend from a shared library that exports
 *     const seam_backend *seam_backend_register(uint32_t abi_version);
 * (seam passes SEAM_BACKEND_ABI_VERSION; the library returns its table, or
 * NULL if it cannot serve that version). The table's version and slots are
 * checked, as every table is where it enters seam (a partition target, a
 * session's backend): a known version, a name (not "cpu" or "constant"),
 * supports(), compile and run both or neither, a valid memory; the message
 * names the library. The library stays loaded for the life of the process. */
SEAM_API seam_status seam_backend_load_library(seam_context *ctx, const char *path, const seam_backend **backend_out);

/* Finds and loads the backend plug-in of that name (e.g. "cuda": the
 * library libseam_cuda.so). It looks, in order, in each folder of
 * $SEAM_BACKEND_PATH (NAME.so, then libseam_NAME.so), then for
 * libseam_NAME.so next to libseam.so (or the program seam is linked into),
 * next to the running program, and in ../lib of those two. The first found
 * is loaded as seam_backend_load_library does; its table must be named
 * NAME. Fails (SEAM_STATUS_IO_ERROR) naming every file it looked for. */
SEAM_API seam_status seam_backend_find(seam_context *ctx, const char *name, const seam_backend **backend_out);

/* The built-in CPU backend: supports what seam's CPU kernels support. It is
 * always the last target, whether listed or not. Owned by seam. */
SEAM_API const seam_backend *seam_backend_cpu(void);

/* The built-in oneDNN backend `dnnl` (float32): Conv, ConvTranspose, Gemm,
 * MatMul, pools, BatchNormalization, LayerNormalization, eltwise ops,
 * broadcast binaries, Pow, Softmax/LogSoftmax, reductions, Concat, Sum,
 * Transpose, Slice, Resize, PRelu, LRN, views, and the layer-norm and GELU
 * patterns exporters write. It compiles its subgraphs into oneDNN
 * primitives with fused post-ops and works in host memory. Its engine is
 * made once for the process; each compiled subgraph has its own stream
 * and memory, so sessions on different threads use it at once. Target
 * options: fusion=on|off, threads=N (the OpenMP threads of the thread that
 * compiles or runs), conv=auto|direct|winograd (3x3 convolutions: Winograd
 * where it was measured faster, never, or wherever oneDNN takes it; see
 * docs/dnnl.md). oneDNN runs on OpenMP, which reads
 * OMP_WAIT_POLICY once, at load: the seam CLI sets ACTIVE (its threads spin
 * between primitives, measured fastest); a program using the library sets
 * it in its own environment. Owned by seam. */
SEAM_API const seam_backend *seam_backend_dnnl(void);
/* Whether dnnl runs bfloat16 natively on this CPU (AVX512_BF16 or AMX, as
 * oneDNN sees it: ONEDNN_MAX_CPU_ISA may limit it): its target option
 * precision=bf16 (Conv, MatMul and Gemm with constant weights in bfloat16,
 * float32 out) compiles only then, and is refused with the reason
 * elsewhere. False in a build without oneDNN. */
SEAM_API bool seam_backend_dnnl_bf16(void);

/* Loads a rules target: a JSON description of a device's op coverage (see
 * docs/rules.md). An unknown key or a bad value is an error naming the key.
 * Free with seam_backend_free. */
SEAM_API seam_status seam_rules_load(seam_context *ctx, const char *path, seam_backend **backend_out);
SEAM_API seam_status seam_rules_parse(seam_context *ctx, const char *json, const char *what, seam_backend **backend_out);
/* Frees a backend made by seam_rules_load/parse or seam_backend_instance
 * (calls its release). */
SEAM_API void seam_backend_free(seam_backend *backend);
/* An instance of a target: the backend `base` under the name "BASE:INDEX"
 * (index >= 0; under base's own name when index < 0), whose compiles get
 * `options` (at most 16) before the session's target options: e.g.
 * "threads=2", this instance's thread count on dnnl. Two instances of one
 * device are two targets to placement, each with its own memory budget
 * (seam_partition_options.memory_bytes; a rules target's "memory_bytes" is
 * each instance's default), placed jointly as any targets are. A
 * subgraph's saved target_options begin with its instance's options, and
 * a saved "BASE:INDEX" subgraph runs on a session that has that instance
 * or BASE itself. base must outlive the instance. Free with
 * seam_backend_free. */
SEAM_API seam_status seam_backend_instance(seam_context *ctx, const seam_backend *base, int32_t index,
                                           const char *const *options, int32_t n_options, seam_backend **backend_out);

/* The "memory_bytes" a rules target declares (what its memory holds, for
 * seam_partition_options.memory_bytes); 0 when it declares none or the
 * backend is not a rules target. */
SEAM_API int64_t seam_rules_memory_bytes(const seam_backend *backend);

/* ---- partitioning ---- */

typedef enum seam_on_violation {
    SEAM_ON_VIOLATION_FALLBACK = 0, /* move offending subgraphs to the CPU and say so */
    SEAM_ON_VIOLATION_ERROR = 1,    /* fail with a message */
} seam_on_violation;

typedef struct seam_pin {
    const char *node_name;
    const char *target;    /* a target's name, or "cpu" */
} seam_pin;

/* How nodes a target supports are placed.
 *   COST (the default): by a cost model: each node's estimated time on the
 *     CPU (seam's estimate from its shapes) and on each target (node_cost),
 *     each device subgraph's launch and the bytes crossing its boundary
 *     (cost_traits). A supported node stays on the CPU when offloading it
 *     would cost more than it saves; and a plan whose estimate is worse than
 *     running everything on the CPU, or everything supported on the device,
 *     is replaced by that plan (the plan's notes say so).
 *   CAPABILITY: everything supported goes to the first target that
 *     supports it, in the fewest subgraphs.
 * The caller's constraints (cpu_ops, pins, min_subgraph_size,
 * max_subgraph_count) win over cost. A target that declares no costs
 * (node_cost 1, no launch, free transfers) gets the capability plan. */
typedef enum seam_placement {
    SEAM_PLACEMENT_COST = 0,
    SEAM_PLACEMENT_CAPABILITY = 1,
} seam_placement;

typedef struct seam_partition_options {
    const seam_backend *const *targets; /* first-fit order (a tie-break under cost placement); cpu is always last */
    int32_t n_targets;
    double min_support;          /* 0..1: fraction of nodes the targets must support; default 0 */
    int32_t min_subgraph_size;   /* device subgraphs smaller than this go to the CPU; default 1 */
    int32_t max_subgraph_count;  /* most subgraphs (device and CPU); 0 = no limit (default).
                                    Over it, the device subgraphs doing the least work move
                                    to the CPU until the plan fits (or, under
                                    SEAM_ON_VIOLATION_ERROR, it is an error) */
    seam_on_violation on_violation;
    const char *const *cpu_ops;  /* op types forced to the CPU even where supported */
    int32_t n_cpu_ops;
    const seam_pin *pins;        /* nodes forced onto a target */
    int32_t n_pins;
    seam_placement placement;    /* default SEAM_PLACEMENT_COST */
    /* (optional) per target, in targets' order: the bytes its memory holds,
     * 0 for no limit. A device subgraph needs its weights, its boundary
     * inputs and the peak of its intermediate values (the shapes the model
     * has; a symbolic dim counts as 32); no plan puts more on a target than
     * it holds: nodes stay on the CPU instead (reason "memory"), and a pin
     * that cannot be kept within it is an error naming the node. */
    const int64_t *memory_bytes;
} seam_partition_options;

SEAM_API seam_partition_options seam_partition_defaults(void);

typedef struct seam_plan seam_plan;

/* Decides a target for every node and groups nodes into subgraphs. The
 * model must outlive the plan. */
SEAM_API seam_status seam_partition(seam_model *model, const seam_partition_options *opts, seam_plan **plan_out);

/* torch.fx split_module's callback: the caller gives each node a partition
 * id (>= 0); the nodes with one id form one subgraph (target "cpu", reason
 * SEAM_REASON_USER). Subgraphs are listed in a topological order of their
 * dependencies, smaller ids first where free. Fails, naming the values and
 * nodes that close the cycle, if the subgraphs would depend on each other
 * in a cycle. Constant nodes are not passed to the callback. */
typedef int32_t (*seam_assign_fn)(void *user, const seam_node_view *node);
SEAM_API seam_status seam_partition_by_callback(seam_model *model, seam_assign_fn assign, void *user, seam_plan **plan_out);

SEAM_API void seam_plan_free(seam_plan *plan);

/* The cost model's CPU rates, per op class (dense products, grouped
 * convolutions, int8 products, recurrent layers, elementwise and data
 * movement, reductions and pools) and per node: guesses built in, or this
 * machine's, measured once by `seam calibrate` and kept in a cache file
 * ($SEAM_CACHE_DIR/cost-rates.json, else $XDG_CACHE_HOME/seam/, else
 * ~/.cache/seam/; SEAM_COST_RATES=off ignores it). Plans' estimates
 * (seam_plan_estimate) come from them. Where they come from, in words: */
SEAM_API const char *seam_cost_rates_source(void);

/* Fitting the rates: after profiled runs of a model on the CPU (sessions
 * made with options.profile), add each node's time (ms; a median of a few
 * runs is best) with its model; finish fits a rate per class from all the
 * nodes added, uses it in this process from then on, saves it as this
 * machine's entry when save is set (written to a temporary name and
 * renamed), and writes a report (rates, and per model the estimate
 * against the measured time before and after) into report. Nodes of
 * device subgraphs (ai.seam Subgraph) are skipped. */
typedef struct seam_cost_fit seam_cost_fit;
SEAM_API seam_status seam_cost_fit_create(seam_cost_fit **fit_out);
SEAM_API seam_status seam_cost_fit_add_node(seam_cost_fit *fit, const seam_model *model, int32_t node, double ms);
/* A device target's measured time on a model (ms, its subgraphs' sum,
 * boundary copies included) against the plan's estimate for those
 * subgraphs (us, seam_plan_subgraph_info.est_us) made with the rates a
 * first finish fitted: finish then keeps their ratio as the target's
 * scale, which multiplies its nodes' estimates. */
SEAM_API seam_status seam_cost_fit_add_target(seam_cost_fit *fit, const char *target, double ms, double estimated_us);
SEAM_API seam_status seam_cost_fit_finish(seam_cost_fit *fit, bool save, char *report, size_t report_len);
SEAM_API void seam_cost_fit_free(seam_cost_fit *fit);

/* Why a node went where it went. */
typedef enum seam_reason {
    SEAM_REASON_SUPPORTED = 0,     /* the target supports it (the first by order, or the cost search's choice: detail) */
    SEAM_REASON_UNSUPPORTED,       /* no target supports it: runs on the CPU */
    SEAM_REASON_CPU_OPS,           /* its op type is in cpu_ops */
    SEAM_REASON_PINNED,            /* a pin put it here */
    SEAM_REASON_MIN_SIZE,          /* its subgraph was smaller than min_subgraph_size */
    SEAM_REASON_MAX_COUNT,         /* its subgraph was dropped to meet max_subgraph_count */
    SEAM_REASON_CONSTANT,          /* a constant: computed once, in no subgraph */
    SEAM_REASON_USER,              /* the caller's assignment */
    SEAM_REASON_COST,              /* supported, but cheaper on the CPU (the cost model's numbers in detail) */
    SEAM_REASON_UNIT,              /* a member of a QDQ unit, placed with the unit (detail: which and why) */
    SEAM_REASON_MEMORY,            /* supported, but its target's memory (memory_bytes) holds no plan with it there */
} seam_reason;

/* The word plans use for a reason in their JSON ("supported", "cpu_ops",
 * "min_subgraph_size", ...); "?" for a value that is none of them. */
SEAM_API const char *seam_reason_name(seam_reason reason);

typedef struct seam_plan_node_info {
    int32_t index;
    const char *name;
    const char *op_type;
    const char *target;       /* a target's name, "cpu" or "constant" */
    int32_t subgraph;         /* -1 for constants */
    seam_reason reason;
    const char *detail;       /* human-readable: why unsupported, which pin, ... */
} seam_plan_node_info;

typedef struct seam_plan_subgraph_info {
    int32_t id;               /* position in execution order */
    const char *target;
    int32_t n_nodes, n_inputs, n_outputs;
    const int32_t *nodes;     /* node indices, in a topological order */
    const char *const *inputs;  /* values read from outside (not initializers) */
    const char *const *outputs; /* values read by other subgraphs or graph outputs */
    double est_us;            /* the cost model's time: nodes, launch and boundary transfers */
    int64_t boundary_bytes;   /* bytes of its inputs and outputs (values of known shape) */
    int64_t memory_bytes;     /* a device subgraph's need on its target (seam_partition_options.memory_bytes) */
} seam_plan_subgraph_info;

/* Placement measured on this machine (--placement measured): the
 * capability plan's device subgraphs and the model's nodes on the CPU are
 * timed on the model's shapes (random inputs from a fixed seed, a warm-up,
 * then up to 5 runs each within budget_ms in all; 0: 2 s), each device
 * subgraph slower than its nodes on the CPU goes to the CPU, and a plan
 * measured slower than the CPU alone or the capability plan is replaced by
 * it. The model's input shapes must be static. The plan's notes say what was
 * measured; its estimate and subgraphs' est_us are the measured times.
 * target_options go to the targets' compilers, n_threads to the sessions. */
SEAM_API seam_status seam_partition_measured(seam_model *model, const seam_partition_options *opts,
                                             const char *const *target_options, int32_t n_target_options,
                                             int32_t n_threads, double budget_ms, seam_plan **plan_out);

/* The cost model's estimates of a plan (microseconds), and of the two
 * single-backend plans it was compared with. */
typedef struct seam_plan_estimate {
    double total_us;          /* this plan */
    double all_cpu_us;        /* every node on the CPU */
    double capability_us;     /* every supported node on its first target (with pins and cpu_ops) */
} seam_plan_estimate;
SEAM_API seam_status seam_plan_estimate_get(const seam_plan *plan, seam_plan_estimate *out);
/* How many nodes' estimates guess their sizes: a dim of theirs is known
 * only at run time (symbolic, or set by the data, as a detector's boxes),
 * counted as 32. The estimate is a guess for them. */
SEAM_API int32_t seam_plan_estimate_guessed(const seam_plan *plan);

/* Owned by the plan, valid until seam_plan_free. */
SEAM_API int32_t seam_plan_node_count(const seam_plan *plan);
SEAM_API int32_t seam_plan_subgraph_count(const seam_plan *plan);
SEAM_API int32_t seam_plan_device_subgraph_count(const seam_plan *plan);
SEAM_API seam_status seam_plan_node(const seam_plan *plan, int32_t index, seam_plan_node_info *out);
/* The QDQ unit node `index` belongs to, among those seam keeps as nodes
 * (DequantizeLinear -> Add/Mul/pool/Concat/... -> QuantizeLinear, placed
 * whole; docs/quantized.md): the index of the unit's op node, or -1 (not
 * a member, or a plan made without units). */
SEAM_API int32_t seam_plan_node_unit(const seam_plan *plan, int32_t index);
SEAM_API seam_status seam_plan_subgraph(const seam_plan *plan, int32_t id, seam_plan_subgraph_info *out);
/* Nodes supported by some target, and nodes counted (constants excluded). */
SEAM_API void seam_plan_support(const seam_plan *plan, int32_t *supported_out, int32_t *counted_out);
/* What constraints changed, one line each ("moved subgraph 3 (npu, 2
 * nodes) to cpu: below min_subgraph_size 3"); "" if nothing. */
SEAM_API const char *seam_plan_notes(const seam_plan *plan);
/* The model the plan was made for (it must outlive the plan); NULL for a
 * NULL plan. */
SEAM_API const seam_model *seam_plan_model(const seam_plan *plan);

/* The plan as one JSON object, the text `seam partition --json` prints:
 * {"model", "targets" (priority order, "cpu" last), "supported_fraction",
 *  "subgraphs": [{"id", "target", "nodes", "inputs", "outputs"}],
 *  "nodes": [{"index", "name", "op", "target", "reason"}], "notes": [...]}.
 * model_name (may be NULL) is written as "model". snprintf-style: writes at
 * most size bytes, NUL-terminated, into buf (may be NULL with size 0) and
 * sets *needed to the bytes the whole text needs, NUL included; call again
 * with a larger buffer when *needed > size. */
SEAM_API seam_status seam_plan_json(const seam_plan *plan, const char *model_name, char *buf, size_t size,
                                    size_t *needed);
/* The support analysis, the text `seam analyze --json` prints, for a plan
 * made without constraints: {"model", "targets", "supported_fraction",
 * "supported_count", "node_count" (constants excluded), "supported_ops" and
 * "unsupported_ops" (op type -> count, first-seen order),
 * "unsupported_nodes": [{"index", "name", "op", "reason"}]}. Buffer as
 * seam_plan_json. */
SEAM_API seam_status seam_plan_analysis_json(const seam_plan *plan, const char *model_name, char *buf, size_t size,
                                             size_t *needed);

/* ---- pipeline stages ----
 *
 * A plan's nodes in execution order (its subgraphs in order, each one's
 * nodes in order; constants left out) cut into n_stages contiguous stages,
 * one per process of a pipeline, such that the slowest stage or link is as
 * fast as it can be and every stage fits memory_bytes. A stage's time is
 * its nodes' share of their subgraphs' estimates (seam_plan_subgraph_info
 * .est_us, split in proportion to each node's own estimate: launches and
 * boundary copies included). Its memory is what it holds while it runs: the
 * weights its nodes read (each once), the values it receives (each once,
 * for the whole stage), and the peak of the values it makes, each held
 * from its node to its last reader in the stage, or to the stage's end
 * when a later stage reads it or it is a graph output (a symbolic dim
 * counts as 32). The link between stage k and k + 1 carries every value
 * made before the cut and read after it (graph inputs as made by stage 0),
 * each micro-batch: link_latency_us plus its bytes at link_gbits. */
typedef struct seam_stage_options {
    int32_t n_stages;        /* >= 1 */
    int64_t memory_bytes;    /* what one stage's process may hold; 0: no limit */
    double link_gbits;       /* the link's bandwidth, gigabits per second (default 10) */
    double link_latency_us;  /* per transfer (default 20) */
} seam_stage_options;
SEAM_API seam_stage_options seam_stage_defaults(void);

typedef struct seam_stage_info {
    int32_t first, n_nodes;  /* positions in execution order (seam_stages_node_at) */
    double compute_us;       /* the stage's time per micro-batch */
    int64_t memory_bytes;    /* weights + received + peak of its own values */
    int64_t weight_bytes, receive_bytes;
    int64_t send_bytes;      /* over the link to the next stage (0 for the last) */
    double send_us;          /* that link's time per micro-batch (0 for the last) */
} seam_stage_info;

typedef struct seam_stages seam_stages;

/* Cuts plan (which must outlive the result) into stages. Fails with
 * SEAM_STATUS_INVALID_ARGUMENT when no cut fits: naming the node that
 * alone needs more than memory_bytes and what it needs, or saying how many
 * stages the budget needs, or that the plan has fewer nodes than stages. */
SEAM_API seam_status seam_plan_stages(const seam_plan *plan, const seam_stage_options *opts, seam_stages **out);
SEAM_API void seam_stages_free(seam_stages *st);
SEAM_API int32_t seam_stages_count(const seam_stages *st);
SEAM_API seam_status seam_stages_stage(const seam_stages *st, int32_t k, seam_stage_info *out);
/* The node at position pos of the execution order; -1 out of range. */
SEAM_API int32_t seam_stages_node_at(const seam_stages *st, int32_t pos);
/* The stage node runs in; -1 for a constant or an index out of range. */
SEAM_API int32_t seam_stages_node_stage(const seam_stages *st, int32_t node);

/* The pipeline's schedule for micro_batches inputs in flight, simulated:
 * each stage and each link serves one micro-batch at a time, in order
 * (micro-batch m enters stage k when stage k - 1's link has delivered it
 * and stage k has finished m - 1). */
typedef struct seam_stage_schedule {
    int32_t micro_batches;
    double makespan_us;       /* from the first input to the last output */
    double latency_us;        /* one micro-batch alone: every stage and link */
    double interval_us;       /* steady state: one output per this (the slowest stage or link) */
    double throughput_per_s;  /* micro_batches / makespan */
    double bubble_fraction;   /* the stages' idle share of n_stages x makespan */
    int32_t bottleneck;       /* the slowest stage (or link k: the one after stage k) */
    bool bottleneck_is_link;
} seam_stage_schedule;
/* busy (may be NULL): per stage, its busy share of the makespan. */
SEAM_API seam_status seam_stages_simulate(const seam_stages *st, int32_t micro_batches, seam_stage_schedule *out,
                                          double *busy);
/* {"n_stages", "memory_limit", "link": {"gbits", "latency_us"}, "stages":
 * [{"stage", "first", "nodes", "first_node", "last_node", "compute_us",
 * "memory_bytes", "weight_bytes", "receive_bytes", "send_bytes",
 * "send_us"}], "schedule": {...} (when micro_batches > 0, with each
 * stage's "busy")}, snprintf-style as seam_plan_json. */
SEAM_API seam_status seam_stages_json(const seam_stages *st, int32_t micro_batches, char *buf, size_t size,
                                      size_t *needed);

/* ---- folding ---- */

/* Replaces every node whose output depends only on initializers and on
 * statically known shapes (Shape -> Gather -> Concat chains,
 * ConstantOfShape, Range, Mod, Expand, Where, ScatterND, ... on them) with
 * a Constant node holding the value, in place: indices, names and outputs
 * stay. What inference does not compute itself, the CPU backend's kernels
 * compute once, here, and inference runs again on the result, until
 * nothing changes (outputs up to 4 MiB; not QuantizeLinear and
 * DequantizeLinear, which seam_model_fuse_qdq reads, random generators,
 * control flow or graph outputs). Run it
 * before seam_partition: the plan then lists those nodes with target
 * "constant", in no subgraph, and they no longer tie device subgraphs to
 * the CPU. The readers of an Identity of an initializer (one per shared
 * weight, in many exports) read the initializer itself: backends see a
 * constant. With symbolic input dims (named, e.g. "seq"), the shape
 * arithmetic that depends on them becomes `ai.seam` `DimExpr` nodes: each
 * keeps its index, name and output (plans report the op it was, with its
 * expressions), reads only the inputs' shapes, and so runs before any
 * device subgraph and cuts none (docs/dynamic.md). *folded_out (may be
 * NULL) gets how many nodes were folded. */
SEAM_API seam_status seam_model_fold(seam_model *model, int32_t *folded_out);

/* Rewrites that heal partitions: each node the targets of opts take none
 * of, whose op can be written as ops they may take (a reflect or edge Pad
 * as Slices and a Concat, a Split as Slices, a Sum as Adds; HardSwish,
 * the normalizations, Gelu, Mish and HardSigmoid as their elementwise and
 * reduction forms, within a few ulps: src/runtime/rewrite.c), is
 * written so when, and only when, seam_partition then finds a plan
 * estimated faster, or as fast with fewer device subgraphs (each kind is
 * tried on a copy of the model first). What was rewritten, and the
 * numbers, become notes of every later plan of the model ("rewrite: ...").
 * *applied_out (may be NULL): the nodes rewritten. */
SEAM_API seam_status seam_model_rewrite(seam_model *model, const seam_partition_options *opts, int32_t *applied_out);

/* ---- quantized models: QDQ node units ---- */

/* What seam_model_fuse_qdq did (or, with SEAM_QDQ_COUNT, would do). */
typedef struct seam_qdq_stats {
    int32_t conv_units;   /* DQ -> Conv -> Q units, now QLinearConv nodes */
    int32_t matmul_units; /* DQ -> MatMul -> Q units, now QLinearMatMul nodes */
    int32_t gemm_units;   /* DQ -> Gemm -> Q units, now 1x1 QLinearConv nodes between Reshapes */
    int32_t relus;        /* Relus between op and Q, redundant, in a unit */
    int32_t dq_folded;    /* DequantizeLinear of constants, now float Constants */
    int32_t dq_left;      /* DequantizeLinear nodes left (run in float) */
    int32_t q_left;       /* QuantizeLinear nodes left */
} seam_qdq_stats;

enum {
    SEAM_QDQ_UNITS = 1u << 0, /* make QLinearConv/QLinearMatMul of the units */
    SEAM_QDQ_FOLD = 1u << 1,  /* fold DequantizeLinear of constants to float */
    SEAM_QDQ_COUNT = 1u << 2, /* change nothing; count the units */
};

/* The quantized form ONNX Runtime's quantizer writes (QDQ: each op between
 * DequantizeLinear and QuantizeLinear nodes) made into node units that
 * placement keeps whole: every DequantizeLinear(x), DequantizeLinear(
 * constant int8 weights, per tensor or per output channel) -> Conv or
 * MatMul (-> a Relu the QuantizeLinear makes redundant) -> QuantizeLinear
 * becomes one QLinearConv or QLinearMatMul node (named as the op node),
 * which a target with int8 kernels runs in int8. Nodes the units absorbed
 * leave the graph. Run it after seam_model_fold, before seam_partition. A
 * model without DequantizeLinear is left as it is. */
SEAM_API seam_status seam_model_fuse_qdq(seam_model *model, uint32_t flags, seam_qdq_stats *stats_out);

/* ---- applying a plan ---- */

/* Rewrites the model as the plan says: each device subgraph becomes one
 * node of domain "ai.seam", op "Subgraph", holding the subgraph's nodes
 * in its "body" graph attribute, the target's name in "target" and, for a
 * rules target, the rules file's text in "rules" (so the saved model runs
 * elsewhere). CPU and constant nodes stay plain nodes; weights stay the
 * main graph's initializers, which bodies read as outer-scope values. The
 * model then runs like any other (seam_session_create) and saves as one
 * ONNX file (seam_model_save). targets are the backends the plan was made
 * with. target_options (may be NULL) are stored, untouched, in each
 * Subgraph node's "target_options" and reach the backend's compile.
 * Afterwards the plan no longer describes the model: free it. Fails
 * (UNSUPPORTED) if a device subgraph holds a node with a body. */
SEAM_API seam_status seam_plan_apply(seam_model *model, const seam_plan *plan, const seam_backend *const *targets,
                            int32_t n_targets, const char *const *target_options, int32_t n_target_options);

#ifdef __cplusplus
}
#endif
#endif /* SEAM_PARTITION_API_H */
