/*
 * The kernel contract: what the executor (runtime/exec.c) offers the code
 * that runs one node on the host, the CPU backend's kernels
 * (backends/cpu/) and the ai.seam Subgraph runner (runtime/subgraph.c).
 * The executor implements the kernel_* and check_* helpers below
 * (runtime/kernel.c). A kernel runs one node: it reads its inputs,
 * computes its outputs' shapes from them (shapes may be known only at run
 * time), asks the executor for each output buffer, and fills it.
 *
 *     static seam_status relu_f32(seam_kernel *k) {
 *         const seam_tensor *x = kernel_in(k, 0);
 *         seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
 *         if (!y) return kernel_oom(k);
 *         const float *a = x->data; float *b = y->data;
 *         for (int64_t i = 0; i < x->numel; i++) b[i] = a[i] > 0 ? a[i] : 0;
 *         return SEAM_STATUS_OK;
 *     }
 *
 * `check` runs once at session creation on the node's inferred types and
 * attributes. It refuses what the kernel cannot do (a dtype, an attribute
 * value) with a reason, so that an unsupported node fails when the session
 * is made, not in the middle of a run. It may also prepare `state`.
 */
#ifndef SEAM_KERNEL_H
#define SEAM_KERNEL_H

#include "ops/activation.h"
#include "ops/attr.h"
#include "ops/ops.h"
#include "core/pool.h"
#include "core/tensor.h"

typedef struct seam_kernel seam_kernel;
typedef struct seam_check seam_check;
typedef seam_status (*seam_kernel_fn)(seam_kernel *k);
typedef seam_status (*seam_check_fn)(seam_check *c);

/* How one op runs on the host. */
typedef struct seam_kernel_def {
    seam_kernel_fn run;
    seam_check_fn check; /* (optional) at session creation; default: accept */
} seam_kernel_def;

struct seam_kernel {
    const ir_graph *g;
    const ir_node *n;
    int32_t node;
    void *state;          /* made by check(), freed with the session */
    seam_pool *pool;      /* thread pool for the outer loop */
    seam_context *ctx;    /* for error messages */
    struct seam_exec *exec;
    /* A kernel that moves data between memories (a device subgraph) sets
     * these for the run; the profile reports them. */
    int64_t bytes_in, bytes_out;
    double copy_ms;       /* the part of the run spent copying them */
    double check_ms;      /* ai.seam Subgraph nodes: how long check() (the backend's compile) took */
    /* An activation the executor moved into this node (see
     * runtime/fuse.c), applied to output 0 as the kernel writes it, while
     * the data is still in cache: y = post(y). Only kernels whose check()
     * sets seam_check.post_ops get one (act_is_post_op kinds), and only on
     * float32 outputs; kind ACT_NONE if none. */
    act_params post;
    /* A quantized add the executor folded into this QuantizeLinear (see
     * runtime/fuse.c): the node quantizes DQ(a) + DQ(b), the sum of the
     * outputs of DequantizeLinear nodes qadd_dq[0] and qadd_dq[1], which
     * do not run, nor does their Add; the kernel reads those nodes' inputs
     * (kernel_node_in) and computes what the three would, element by
     * element. Only kernels whose check() sets seam_check.qadd get one. */
    bool qadd;
    int32_t qadd_dq[2];
};

/* Where an executor finds each node's kernel: the host kernels it is
 * given when made (the CPU backend's, cpu_host_kernels() in
 * backends/cpu/kernels.h); the executor itself knows no backend. */
typedef struct seam_kernel_lookup {
    /* The kernel for a node of (domain, op) at the model's opset; NULL if none. */
    const seam_kernel_def *(*find)(const char *domain, const char *op_type, int64_t opset);
    /* Whether kd takes sequence and optional values (core/tensor.h). */
    bool (*takes_values)(const seam_kernel_def *kd);
} seam_kernel_lookup;

/* Input i, or NULL when the optional input is absent. */
const seam_tensor *kernel_in(seam_kernel *k, int32_t i);
/* Input i of another node of the graph (a folded node's: seam_kernel.qadd). */
const seam_tensor *kernel_node_in(seam_kernel *k, int32_t node, int32_t i);
int32_t kernel_n_in(const seam_kernel *k);
int32_t kernel_n_out(const seam_kernel *k);
bool kernel_has_out(const seam_kernel *k, int32_t i);
/* The largest tensor kernel_out makes (4 GiB). */
#define SEAM_MAX_TENSOR_BYTES ((size_t)1 << 32)

/* Output i with the given dtype and shape, its buffer ready to fill (the
 * planned one, or one made now when the shape was not known before the
 * run). NULL when the output is absent or out of memory: check
 * kernel_has_out first for optional outputs. */
seam_tensor *kernel_out(seam_kernel *k, int32_t i, int32_t dtype, int32_t rank, const int64_t *dims);
/* Output i as a copy of t (its dtype, shape and bytes; a sequence with
 * its elements); OK with nothing to do when output i is absent. */
seam_status kernel_out_copy(seam_kernel *k, int32_t i, const seam_tensor *t);
/* Output i becomes v, which the executor now owns (v's data malloc'd; for
 * a sequence, its elements' too): for values a kernel builds itself. v is
 * freed here when output i is absent. */
seam_status kernel_out_value(seam_kernel *k, int32_t i, seam_tensor *v);
/* n bytes that live until the root executor's next run or its end: where
 * string elements made at run time keep their bytes. NULL when out of
 * memory. */
void *kernel_bytes(seam_kernel *k, size_t n);
/* Scratch memory valid until the kernel returns. There is one scratch
 * buffer per executor: a second call may free what the first returned, so
 * take all the scratch a run needs in one call (and not from pool threads). */
void *kernel_scratch(seam_kernel *k, size_t n);

/* Error helpers: the message names the node. kernel_oom returns
 * SEAM_STATUS_OUT_OF_MEMORY ("<node>: out of memory"); kernel_fail returns
 * SEAM_STATUS_RUN_FAILED: the node cannot be computed from the values it
 * was given (a shape or a value the model does not allow). */
seam_status kernel_oom(seam_kernel *k);
seam_status kernel_fail(seam_kernel *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* At session creation: `check` sees the node with its inferred types. */
struct seam_check {
    const ir_graph *g;
    const ir_node *n;
    int32_t node;
    char *reason;         /* write why the node is refused here */
    size_t reason_size;
    void **state;         /* optional per-node state for the kernel */
    void (**free_state)(void *state); /* set when state needs freeing */
    seam_context *ctx;
    seam_pool *pool;
    struct seam_exec *exec; /* the graph's executor (bodies use it as parent) */
    /* check sets this when the kernel applies seam_kernel.post to its
     * float32 output 0: the executor may then fuse a following activation */
    bool post_ops;
    /* check sets this when the kernel (QuantizeLinear's) runs a folded
     * quantized add (seam_kernel.qadd) */
    bool qadd;
};

/* Bodies of control-flow nodes (If, Loop, Scan, SequenceMap): a graph the
 * kernel runs as often as it needs, on an executor made at check() below
 * the node's own (outer values resolve there, its host kernels are used).
 * Like the helpers above, these are declared here, for the kernels, and
 * implemented by the runtime (runtime/kernel.c): the one place where the
 * kernel contract calls up into the executor. */
typedef struct seam_exec seam_body;
/* Makes the executor for body graph g of the node c checks; the message
 * names what failed. */
seam_status kernel_body_create(seam_check *c, const ir_graph *g, seam_body **out);
void kernel_body_free(seam_body *b);
/* Binds body input k to t (which the caller keeps alive for the run). */
void kernel_body_set_input(seam_body *b, int32_t k, const seam_tensor *t);
/* Runs the body; the status and message of the node in it that failed. */
seam_status kernel_body_run(seam_body *b);
/* Body output k as the last run left it (owned by the body). */
const seam_tensor *kernel_body_output(const seam_body *b, int32_t k);

/* The input's inferred dtype, or SEAM_DTYPE_UNDEFINED. */
int32_t check_in_dtype(const seam_check *c, int32_t i);
/* Writes the reason into c->reason and returns SEAM_STATUS_UNSUPPORTED. */
seam_status check_refuse(seam_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));


#endif
