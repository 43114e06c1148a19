/*
 * seam_backend.h - for the people who write backends: the table a backend
 * fills, the node and subgraph views seam hands it, the buffers of a run.
 * Partitioning a model between backends (options, plans, folding,
 * applying a plan) is in seam_partition.h, for the people who use them;
 * seam.h includes it.
 *
 * A backend is a versioned table of function pointers plus a context
 * pointer. The first field is the ABI version; seam refuses a table whose
 * version it does not know. Optional slots say "(optional)" and may be NULL.
 *
 *     static bool npu_supports(void *ctx, const seam_node_view *n, char *why, size_t why_size) {
 *         if (strcmp(n->op_type, "Conv") == 0 && n->inputs[0].dtype == SEAM_DTYPE_FLOAT32) return true;
 *         snprintf(why, why_size, "%s is not supported", n->op_type);
 *         return false;
 *     }
 *     static const seam_backend npu = {
 *         .abi_version = SEAM_BACKEND_ABI_VERSION,
 *         .name = "npu",
 *         .supports = npu_supports,
 *     };
 *
 * A backend built as a shared library exports seam_backend_register
 * (seam_partition.h: seam_backend_load_library); one linked into the
 * program is passed to seam_partition as a target (seam_partition.h).
 */
#ifndef SEAM_BACKEND_H
#define SEAM_BACKEND_H

#include <stdbool.h>

#include "seam.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version 2 added compile/run/release_compiled and memory; a version-1
 * table (those slots NULL) is still accepted. */
#define SEAM_BACKEND_ABI_VERSION 2

/* A node as a backend sees it when asked whether it can run it. Everything
 * is owned by seam and valid only during the call. */
typedef struct seam_node_view {
    int32_t index;                 /* position in the model's node list (in supports() and node_cost();
                                      from seam_subgraph_node, the position in the subgraph) */
    const char *name;
    const char *op_type;
    const char *domain;            /* "" for ai.onnx */
    int64_t opset;                 /* version of the node's domain, -1 if not imported */
    int32_t n_inputs, n_outputs;
    const seam_value_info *inputs; /* inferred; an absent optional input has name NULL */
    const seam_value_info *outputs;
    /* The op type of the node producing each input; NULL for graph inputs,
     * initializers and absent inputs. */
    const char *const *input_producers;
    const void *impl;              /* seam's; read attributes with the calls below */
    /* Per input: 1 when its value is known before any run (an initializer,
     * a Constant's output, a folded value), 0 when it is fed or computed at
     * run time (a graph input, another node's output) or absent. A backend
     * that lays out weights at compile time asks this, not
     * input_producers (a graph input has no producer either). */
    const uint8_t *input_constant;
} seam_node_view;

/* Attribute access on a node view. Each returns false if the attribute is
 * absent or of another kind. */
SEAM_API bool seam_node_attr_int(const seam_node_view *node, const char *name, int64_t *value_out);
SEAM_API bool seam_node_attr_float(const seam_node_view *node, const char *name, float *value_out);
/* The string is NUL-terminated and valid during the call. */
SEAM_API bool seam_node_attr_string(const seam_node_view *node, const char *name, const char **value_out);
SEAM_API bool seam_node_attr_ints(const seam_node_view *node, const char *name, const int64_t **values_out, int32_t *n_out);
SEAM_API bool seam_node_attr_floats(const seam_node_view *node, const char *name, const float **values_out, int32_t *n_out);
/* The data of input k where it is known before any run (input_constant[k]
 * is 1: an initializer, a Constant's value, a folded value), valid during
 * the call; false otherwise (known only at run time, a string tensor, or a
 * view seam did not make). supports() can read a Resize's scales, a Pad's
 * pads or a Slice's bounds with it. */
SEAM_API bool seam_node_input_data(const seam_node_view *node, int32_t k, seam_tensor_view *data_out);
/* String k of a STRINGS attribute (an LSTM's activations), NUL-terminated
 * and valid during the call, and their count; false if the attribute is
 * absent, of another kind, or has no string k. */
SEAM_API bool seam_node_attr_string_at(const seam_node_view *node, const char *name, int32_t k, const char **value_out,
                                       int32_t *n_out);

/* Where a backend keeps tensors. HOST: it reads and writes seam's buffers
 * (zero-copy at the boundary). DEVICE: it has memory of its own; seam
 * hands it copies of the inputs and copies the outputs back, at every
 * subgraph boundary (weights stay resident: compile sees them once). */
typedef enum seam_memory { SEAM_MEMORY_HOST = 0, SEAM_MEMORY_DEVICE = 1 } seam_memory;

/* A device subgraph as compile sees it. Valid during the call. */
typedef struct seam_subgraph_view {
    const char *name;                /* the ai.seam Subgraph node's name */
    int32_t n_nodes, n_inputs, n_outputs;
    const seam_value_info *inputs;   /* boundary values, in the order run passes them */
    const seam_value_info *outputs;
    const void *impl;                /* seam's */
} seam_subgraph_view;

/* Node i (topological order) of a subgraph; valid until the next call. */
SEAM_API const seam_node_view *seam_subgraph_node(const seam_subgraph_view *sg, int32_t i, seam_node_view *storage);
/* A weight (or other constant) a subgraph node reads, by value name: its
 * data, or false if the value is not a constant. */
SEAM_API bool seam_subgraph_constant(const seam_subgraph_view *sg, const char *name, seam_tensor_view *out);

/* A buffer for run to fill: dtype and shape are set, data has nbytes. */
typedef struct seam_buffer {
    const char *name;
    seam_dtype dtype;
    int32_t rank;
    const int64_t *dims;
    void *data;
    size_t nbytes;
} seam_buffer;

/* Threads: seam calls a table from several threads at once when sessions
 * (or partitions) on different contexts run on different threads:
 * supports, node_cost and compile may run concurrently, and run may run
 * concurrently on different compiled handles, never on one handle (seam
 * runs a session from one thread at a time). A backend keeps per-call
 * state in its compiled handle, and sets up any process-wide state once
 * (pthread_once). */
/* The start of compile's message when the device ran out of memory. */
#define SEAM_COMPILE_OUT_OF_MEMORY "out of device memory: "

typedef struct seam_backend {
    uint32_t abi_version;  /* SEAM_BACKEND_ABI_VERSION (1 is still accepted) */
    const char *name;      /* shown in plans; "cpu" is reserved */
    void *ctx;             /* passed back to every call */

    /* Can this backend run the node? On no, writes a precise reason into
     * why (e.g. "Resize mode=cubic not supported"). */
    bool (*supports)(void *ctx, const seam_node_view *node, char *why, size_t why_size);

    /* (optional) This target's time for the node as a fraction of seam's
     * estimate of its time on the CPU: 0.1 means ten times faster, 2 twice
     * as slow; default 1. Placement by cost reads it (see seam_placement). */
    double (*node_cost)(void *ctx, const seam_node_view *node);

    /* (optional) Frees ctx when the backend is released; default: nothing. */
    void (*release)(void *ctx);

    /* (optional) Compiles one device subgraph, once, at session creation;
     * options are the target options (compiler flags), passed through.
     * Returns a handle, or NULL with a message in err naming the node that
     * could not be compiled. A compile that failed for want of the device's
     * memory begins err with SEAM_COMPILE_OUT_OF_MEMORY: seam then runs
     * that subgraph on its CPU kernels and says so once; any other failure
     * fails the session (a subgraph whose shapes are known only at run time
     * runs on the CPU either way). A backend without compile runs its subgraphs
     * on seam's CPU kernels (in its own memory when memory is DEVICE). */
    void *(*compile)(void *ctx, const seam_subgraph_view *subgraph, const char *const *options, int32_t n_options,
                     char *err, size_t err_size);
    /* Runs a compiled subgraph: inputs and outputs in the subgraph's
     * boundary order; the output buffers are allocated by seam from the
     * shapes known when compiling (so a subgraph with outputs of unknown
     * shape must be refused by compile). Returns SEAM_STATUS_OK or an
     * error, with a message in err. */
    seam_status (*run)(void *ctx, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs, seam_buffer *outputs,
                       int32_t n_outputs, char *err, size_t err_size);
    void (*release_compiled)(void *ctx, void *compiled);
    seam_memory memory;
    /* (optional) The compile log of a compiled subgraph, valid until
     * release_compiled: text, one decision per line (the kernels chosen and
     * their implementation names, layouts, what was fused). A line that
     * starts with "slow: " says the backend took a slower path than the
     * subgraph asked for (a reference kernel, a fusion split, a layout
     * reorder it could not avoid), with the reason and the fix; seam run
     * prints those once per session. seam_session_log gathers the logs. */
    const char *(*compile_log)(void *ctx, void *compiled);
    /* (optional) What a subgraph on this target costs beyond its nodes:
     * launch_us per run, and moving its boundary values in and out at
     * transfer_gbps (GB/s; 0: free, as when the target reads host memory
     * as it is). Defaults 0 and 0. Placement by cost reads them. */
    void (*cost_traits)(void *ctx, double *launch_us, double *transfer_gbps);
    /* (optional) Lends the threads of the backend's own runtime to seam's
     * CPU kernels. A backend whose kernels run on a thread runtime of its
     * own (oneDNN on OpenMP) usually keeps those threads busy-waiting
     * between its calls, for speed; seam's CPU parts of the same session
     * then compete with them for the cores (a plan that alternates the
     * two ran 1.8x slower on 2 cores). When set, the CPU parts' parallel
     * loops of a session with subgraphs on this backend run as body(arg,
     * i, n) on n of the runtime's threads (i from 0; the calling thread,
     * the one that runs the session, among them; n may be fewer than
     * n_threads), and run_team returns when every body has returned. */
    void (*run_team)(void *ctx, int32_t n_threads, void (*body)(void *arg, int32_t thread, int32_t n_threads),
                     void *arg);
    /* (optional) node_cost under target options: placement by cost calls
     * it instead of node_cost for a target made with options of its own
     * (seam_backend_instance; the CLI's --precision bf16 makes dnnl one
     * with "precision=bf16"), passing those options. NULL: node_cost for
     * every target. (The slot was reserved, NULL, before; a table that
     * sets reserved to {NULL} still compiles.) */
    union {
        double (*node_cost_with)(void *ctx, const seam_node_view *node, const char *const *options, int32_t n_options);
        void *reserved[1];
    };
} seam_backend;

#ifdef __cplusplus
}
#endif
#endif /* SEAM_BACKEND_H */
