/*
 * The executor: runs one graph (the model's, or a body of If, Loop, Scan
 * or an ai.seam Subgraph) on the host, node by node.
 *
 * Phases, kept apart:
 *   seam_exec_create  find and check every node's kernel (unknown or
 *                     unsupported ops fail here, naming the node), fuse,
 *                     plan memory
 *   seam_exec_run     run the nodes in topological order
 *
 * Before planning, Constant nodes are bound to their tensors, Identity
 * outputs become aliases of their inputs, and activations fuse into the
 * kernel before them where it can apply them (no copy, no extra pass; see
 * fuse.c).
 *
 * Memory (plan_memory.c): values whose shape is known before the run share
 * one slab; two values share bytes only when their lifetimes (producer to
 * last consumer, in topological positions) do not overlap. Values whose
 * shape depends on data are allocated when produced and freed after their
 * last use, the first time; their sizes are kept, and from the next run
 * on they have places of their own in a second slab planned the same way
 * (one that outgrows its place is allocated again, and planned anew).
 *
 * Kernels (kernel.h) see the executor through seam_kernel; exec_impl.h
 * holds what the executor's files share.
 */
#ifndef SEAM_EXEC_H
#define SEAM_EXEC_H

#include "backends/kernel.h"
#include "core/pool.h"

typedef struct exec_value {
    seam_tensor t;
    int32_t last_use;     /* topo position of the last reader; n_nodes for outputs */
    int64_t offset;       /* planned place in the slab, or -1 */
    size_t planned;       /* planned bytes */
    int64_t dyn_offset;   /* place in the dynamic slab, or -1 */
    size_t dyn_planned;   /* its bytes there */
    size_t seen;          /* the most bytes a run allocated for it (0: none, or planned in the slab) */
    void *user;           /* a caller's output buffer of `capacity` bytes */
    size_t capacity;
    bool dynamic;         /* t.data was malloc'd during this run */
    bool bound;           /* t.data is the caller's (input or output buffer) */
    bool fixed;           /* an initializer, outer value or bound Constant: never freed or planned */
    bool alias;           /* shares the tensor of another value (see seam_exec.how): not planned */
} exec_value;

/* How a node runs (decided at creation, see fuse.c). */
enum {
    EXEC_RUN = -1,        /* its kernel runs */
    EXEC_SKIP = -2,       /* nothing to do: a Constant bound to its value */
    /* >= 0: its output 0 is an alias of that value (Identity, or an
     * activation fused into the producer of its input) */
};

typedef struct seam_exec {
    seam_context *ctx;
    const ir_graph *g;
    struct seam_exec *parent;   /* for bodies: where outer values live */
    seam_pool *pool;
    exec_value *vals;
    seam_kernel *kernels;       /* per node */
    const seam_kernel_def **defs; /* per node: the kernel that runs it */
    int32_t *pos;               /* topo position of each node */
    int32_t *how;               /* per node: EXEC_RUN, EXEC_SKIP or an aliased value */
    bool *post_ok;              /* per node: its check() set post_ops */
    bool *qadd_ok;              /* per node: its check() set qadd */
    bool *values_ok;            /* per node: its kernel takes sequences and optionals */
    uint8_t *slab;
    size_t slab_size;
    /* values whose size depends on the run, placed from the sizes the
     * runs so far gave them (exec_plan_dynamic) */
    uint8_t *dyn_slab;
    size_t dyn_slab_size;
    bool dyn_missed;            /* the last run allocated a value: plan again */
    struct state_entry *states; /* per node, from check() */
    /* targets that ai.seam Subgraph nodes may name (the root exec's; a
     * body's exec asks its parent) */
    const struct seam_backend *const *targets;
    int32_t n_targets;
    /* where each node's kernel is found (the root's; bodies inherit it) */
    const seam_kernel_lookup *lookup;
    void (*progress)(void *user, int32_t done, int32_t total); /* root only */
    void *progress_user;
    bool profile;               /* time each node into node_ms and node_start_ms */
    double *node_ms;
    double *node_start_ms;      /* from the start of the run */
    /* root only: what making the executor decided that a user may want to
     * read (compile logs of device subgraphs; see exec_log) */
    char *log;
    size_t log_len;
    /* root only: the bytes of strings made during the run (kernel_bytes),
     * freed by the next run's reset */
    struct bytes_block *bytes;
    /* scratch for kernel_scratch, reset after each node */
    void *scratch;
    size_t scratch_size;
} seam_exec;

/* An executor for a body graph g below parent (its kernels are found where
 * the parent's are). */
seam_status seam_exec_create(seam_context *ctx, const ir_graph *g, seam_exec *parent, seam_pool *pool,
                             seam_exec **out);
/* A root executor (parent NULL): lookup finds each node's kernel (the CPU
 * backend's: cpu_host_kernels()); targets are those its Subgraph nodes may
 * use (known before any node is checked). */
seam_status seam_exec_create_with(seam_context *ctx, const ir_graph *g, seam_exec *parent, seam_pool *pool,
                                  const seam_kernel_lookup *lookup, const struct seam_backend *const *targets,
                                  int32_t n_targets,
                                  void (*progress)(void *user, int32_t done, int32_t total), void *progress_user,
                                  seam_exec **out);
void seam_exec_free(seam_exec *e);
/* Appends text to the root executor's log, each of its lines prefixed
 * with prefix and ended with a newline. False when out of memory. */
bool exec_log(seam_exec *e, const char *prefix, const char *text);
/* Runs the graph; inputs must have been set (seam_exec_set_input, or in
 * vals[] with t filled and bound). Stops at the first node that fails,
 * with its status: SEAM_STATUS_RUN_FAILED (it cannot be computed from the
 * values it was given), SEAM_STATUS_OUT_OF_MEMORY, or SEAM_STATUS_INTERNAL;
 * the message names the node. */
seam_status seam_exec_run(seam_exec *e);
/* Binds graph input k to t (which the caller keeps alive for the run). */
void seam_exec_set_input(seam_exec *e, int32_t k, const seam_tensor *t);
/* Graph output k as the last run left it (owned by the executor). */
const seam_tensor *seam_exec_output(const seam_exec *e, int32_t k);
/* Frees what the last run allocated dynamically (call before the next run
 * or when done with the outputs). */
void seam_exec_reset(seam_exec *e);


#endif
