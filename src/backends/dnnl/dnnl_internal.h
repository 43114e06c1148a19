/*
 * What the files of the dnnl backend share: the program a subgraph
 * compiles to (its slots and steps), the builder that makes it, post-op
 * chains, and the functions each file offers the others (prefix dx_).
 * Private to src/backends/dnnl/; see dnnl.c for how compile() works.
 *
 *   dnnl.c         the backend table, supports() (the checks every node
 *                  gets), the compile driver, the memory plan, run
 *   layout.c       slots, views, layouts, reorders, steps
 *   fuse.c         post-op chains, and the patterns exporters write
 *   ops.c          per op a support check and a compile function, the
 *                  table of them (dx_ops), compile_node
 *   conv_matmul.c  the ops with weights: Conv, ConvTranspose, MatMul, Gemm
 *   rnn.c          LSTM and GRU
 *   mask.c         comparisons, Where, Expand, Tile, Cast, and how values
 *                  other than float32 are held (mask.h)
 *   shuf_shuffle.c the channel shuffle pattern (a Concat or a Reshape,
 *                  then Transpose and Reshape) in its sources' layout
 *   concat.c       Concat with its sources written in place into the
 *                  output, or by reorders into place
 *   host.c         host steps, seam's kernels between the primitives: a
 *                  channels-last Concat with its BatchNormalization and
 *                  Relu in one pass; a channels-last GlobalAveragePool
 *   log.c          the compile log
 *
 * As a built-in backend it reads the node behind a view (dx_ir) with the
 * op layer's definitions: attributes (ops/attr.h), window geometry
 * (ops/conv_geom.h), activation parameters (ops/activation.h).
 */
#ifndef SEAM_DNNL_INTERNAL_H
#define SEAM_DNNL_INTERNAL_H

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ir/ir.h"
#include "ops/conv_geom.h"
#include "seam_backend.h"

#define MAXR 6      /* plain tags up to abcdef */
#define MAX_ARGS 66 /* a Concat of up to 64 inputs, plus its output (and a scratchpad) */
#define MAX_CHAIN 8 /* post-ops fused into one primitive (see fuse.c) */

typedef struct slot {
    const char *name;
    int32_t rank;
    dnnl_dims_t dims;
    dnnl_memory_t mem;
    void *owned;       /* resident data made at compile time (reordered weights) */
    size_t bytes;      /* an intermediate: its size; its place in the arena is planned */
    int32_t alias;     /* a view of another slot, or -1 */
    int64_t offset;    /* a view's first byte within the slot it views */
    int32_t boundary;  /* 0 none, 1 input k, 2 output k */
    int32_t index;
    bool has_md;       /* md is a layout oneDNN chose; else plain */
    dnnl_memory_desc_t md;
    int32_t plain;     /* a plain copy made by a reorder, or -1 */
    int32_t other;     /* a copy in another (blocked) layout, or -1 */
    bool lazy;         /* a strided view (a Transpose) not copied yet: readers
                          that need a dense layout make a copy (as_plain) */
    float scale;       /* a MatMul operand's pending factor (see defer_scale) */
    bool constant;     /* a weight or other constant, read in place */
    bool pad_pending;  /* a zero Pad of the spatial dims left to its reader
                          (a Conv or AveragePool, see compile_pad): the
                          slot is the Pad's input, pads added to the window */
    int64_t pad_lo[MAXR - 2], pad_hi[MAXR - 2];
} slot;

struct program;
struct step;
/* A host step: seam's own kernel between oneDNN's primitives (see
 * host.c), run on the calling thread's OpenMP threads. */
typedef bool (*dx_host_fn)(const struct program *p, const struct step *st);

typedef struct step {
    dnnl_primitive_t prim; /* or NULL for a host step */
    dx_host_fn host;       /* a host step's kernel, or NULL */
    const char *host_name; /* its name (a literal), for verbose output */
    void *host_data;       /* its parameters (the program frees them) */
    dnnl_memory_t scratch; /* its scratchpad: the program's one buffer, or NULL */
    int32_t n_args;
    int32_t arg_kind[MAX_ARGS];
    int32_t arg_slot[MAX_ARGS];
    /* what a run hands dnnl_primitive_execute: made once when the program
     * is complete (the memory objects stay; only the boundary slots'
     * handles change from run to run) */
    dnnl_exec_arg_t *exec_args;
    int32_t n_exec_args;
} step;

typedef struct program {
    slot *slots;
    int32_t n_slots, cap_slots;
    step *steps;
    int32_t n_steps, cap_steps;
    int32_t n_exec_args;  /* the steps whose exec_args are made (the first ones) */
    int32_t *in_slot, *out_slot;
    int32_t n_in, n_out;
    int32_t *per_run;     /* the slots whose bytes are the caller's: set at each run */
    int32_t n_per_run;
    void *arena;          /* every intermediate, placed by lifetime */
    size_t arena_bytes;
    int32_t threads;      /* OpenMP threads (target option threads=N), 0: oneDNN's default */
    int32_t conv;         /* the convolution algorithm (target option conv=...): a dx_conv_alg */
    dnnl_stream_t stream; /* the program's own: compile's reorders and every run */
    void *scratch;        /* the scratchpad all steps share (they run one at a time) */
    size_t scratch_bytes;
    bool view_error;      /* a view did not fit the bytes it views */
    char *log;            /* the compile log (log.c), NUL-terminated, or NULL */
    size_t log_len, log_cap;
    bool log_oom;         /* the log stopped growing (no memory) */
} program;

/* Target option conv=auto|direct|winograd (see conv_matmul.c): which of
 * oneDNN's convolution algorithms a Conv runs on. */
typedef enum { DX_CONV_AUTO, DX_CONV_DIRECT, DX_CONV_WINOGRAD } dx_conv_alg;

/* What every program shares: made once for the process (pthread_once, at
 * the first seam_backend_dnnl or compile), read-only afterwards, so
 * sessions on different threads use it without locking. Each program
 * has its own stream. */
typedef struct dx_context {
    dnnl_engine_t engine;
    dnnl_primitive_attr_t user_scratch; /* attr of primitives without post-ops */
    bool ok;
    int default_threads;                /* OpenMP's own (OMP_NUM_THREADS or the cores) */
    void (*set_num_threads)(int);       /* omp_set_num_threads, or NULL */
    bool verbose;                       /* ONEDNN_VERBOSE or DNNL_VERBOSE set: host steps print
                                           exec lines as oneDNN's primitives do */
} dx_context;

extern dx_context dx_ctx; /* dnnl.c */

/* Who reads each value of a subgraph: (name, node) pairs sorted by name,
 * node -1 for a value that leaves the subgraph. Built once per compile
 * (dx_readers_build), so the fusion code's look-aheads do not rescan the
 * subgraph. */
typedef struct reader { const char *name; int32_t node; } reader;
typedef struct readers_index {
    reader *r;
    int32_t n;
} readers_index;

typedef struct builder {
    program *p;
    const seam_subgraph_view *sg;
    char *err;
    size_t err_size;
    const seam_node_view *n; /* the node being compiled, for messages */
    seam_node_view *storage; /* n's storage, to fetch it again */
    int32_t index;
    bool fuse;               /* conv + activation post-ops (target option fusion=off) */
    const readers_index *readers;
    const struct chain *chain; /* the post-op chain of the primitive being made, for the log */
    const char *ref_fix;       /* the fix a "slow:" line offers for a reference kernel, or NULL */
} builder;

/* A post-op chain: the nodes a Conv, MatMul or Gemm absorbs (see fuse.c). */
typedef struct chain {
    int32_t n;                     /* fused nodes */
    int32_t node[MAX_CHAIN];
    int32_t aux[MAX_CHAIN];        /* a second node the entry absorbs (SiLU's Sigmoid), or -1 */
    int32_t more[MAX_CHAIN][4];    /* the other nodes of a GELU the entry (its last Mul) absorbs */
    int32_t n_more[MAX_CHAIN];
    const char *name[MAX_CHAIN];   /* their names and ops, for the log */
    const char *op[MAX_CHAIN];
    bool is_binary[MAX_CHAIN];
    bool is_view[MAX_CHAIN];       /* a Reshape-like node: bytes unchanged, not a post-op */
    bool clip01[MAX_CHAIN];        /* an eltwise followed by a clip to [0, 1] (HardSigmoid) */
    bool full[MAX_CHAIN];          /* a binary's operand has the whole value's shape */
    bool reshaped;                 /* out's shape differs from the primitive's dst */
    int32_t prim_rank;             /* the primitive's own output shape */
    int64_t prim_dims[MAXR];
    dnnl_alg_kind_t alg[MAX_CHAIN];
    float alpha[MAX_CHAIN], beta[MAX_CHAIN];
    int32_t operand[MAX_CHAIN];    /* a binary's other operand: its slot */
    float prescale;                /* a factor applied first (defer_scale); 0 or 1: none */
    seam_value_info out;           /* the value the chain ends with */
    int64_t out_dims[MAXR];
    seam_value_info outs[MAX_CHAIN]; /* each entry's output (to cut the chain short) */
    int64_t outs_dims[MAX_CHAIN][MAXR];
    bool sum_first;                /* the sum post-op goes first (dx_chain_may_lead) */
    int32_t skip;                  /* an entry given to the primitive as its bias, or -1 */
} chain;

static inline bool is_op(const seam_node_view *n, const char *op) { return strcmp(n->op_type, op) == 0 && !n->domain[0]; }

/* The node behind a view: seam's own views carry it. */
static inline const ir_node *dx_ir(const seam_node_view *n) { return (const ir_node *)n->impl; }

/* Input k is a constant (an initializer or a Constant node's output) or
 * absent. supports() cannot read the data; compile() does. */
/* Input k is known at compile time (an initializer, a Constant, a folded
 * value) or absent; a graph input is not. */
static inline bool dx_const_input(const seam_node_view *n, int32_t k) {
    return k >= n->n_inputs || !n->inputs[k].name || (n->input_constant && n->input_constant[k]);
}

/* Elements of v; -1 when a dim (or the rank) is not known. */
static inline int64_t dx_value_numel(const seam_value_info *v) {
    int64_t n = 1;
    for (int32_t d = 0; d < v->rank; d++) {
        if (v->dims[d] < 0) return -1;
        n *= v->dims[d];
    }
    return v->rank < 0 ? -1 : n;
}

/* Whether dim d of v and dim e of w may be the same size. supports() sees
 * symbolic dims (-1); it says no only where the sizes surely differ (two
 * known sizes) or likely do (a known 1 against an unknown: a broadcast,
 * unless the unknown is 1 at the run). compile() sees concrete sizes and
 * decides exactly. */
static inline bool dx_dim_may_equal(const seam_value_info *v, int32_t d, const seam_value_info *w, int32_t e) {
    int64_t a = v->dims[d], b = w->dims[e];
    if (a >= 0 && b >= 0) return a == b;
    if (a < 0 && b < 0) return true;
    return (a >= 0 ? a : b) != 1;
}

static inline bool commutative(const seam_node_view *n) {
    return is_op(n, "Add") || is_op(n, "Mul") || is_op(n, "Max") || is_op(n, "Min");
}

static inline bool full_shape(const seam_value_info *v, const seam_value_info *out) {
    if (v->rank != out->rank) return false;
    for (int32_t d = 0; d < v->rank; d++)
        if (!dx_dim_may_equal(v, d, out, d)) return false;
    return true;
}

static inline bool in_list(const seam_node_view *n, const char *const *list, size_t len) {
    for (size_t k = 0; k < len; k++)
        if (is_op(n, list[k])) return true;
    return false;
}
#define IN_LIST(n, l) in_list(n, l, sizeof(l) / sizeof(l[0]))

/* The op families, shared by supports(), the fusion and the compilers
 * (each file that reads one has its own copy: a few pointers). */
static const char *const eltwise_ops[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Clip", "Exp", "Log",
                                          "Sqrt", "Abs", "HardSigmoid", "Softplus", "HardSwish", "Pow"};
static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
static const char *const view_ops[] = {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
static const char *const reduce_ops[] = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"};

/* ---- layout.c: slots, views, layouts, steps ---- */
/* The plain (row-major) format tag of a rank (0 as 1). */
dnnl_format_tag_t dx_plain_tag(int32_t rank);
int32_t dx_slot_of(program *p, const char *name);
int32_t dx_add_slot(program *p, const char *name, const seam_value_info *v);
/* A slot reading base's bytes (found at run time) with the shape of
 * `shape`, in the plain layout or in md: a view, no copy. */
int32_t dx_view_slot(program *p, int32_t base, const slot *shape, const dnnl_memory_desc_t *md);
bool dx_md_of(const slot *s, dnnl_memory_desc_t *md);
int32_t dx_root_of(const program *p, int32_t s);
/* Sets the builder's error message (naming the node); returns NULL. */
void *dx_fail(builder *b, const char *what);
/* The slot of an input value: made earlier, a boundary input, or a weight. */
int32_t dx_input_slot(builder *b, const seam_value_info *v);
int32_t dx_output_slot(builder *b, const seam_value_info *v);
/* The slot of a value known by name only: made earlier, or a constant. */
int32_t dx_named_slot(builder *b, const char *name);
/* A step from a primitive descriptor (which stays the caller's). */
bool dx_add_prim(builder *b, const_dnnl_primitive_desc_t pd, int32_t n_args, const int32_t *kinds, const int32_t *slots);
bool dx_add_step(builder *b, const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr, int32_t n_args,
                 const int32_t *kinds, const int32_t *slots);
bool dx_add_reorder(builder *b, int32_t from, int32_t to);
/* A host step running fn (data, malloc'd, becomes the program's) on the
 * slots, whose kinds say which it reads and writes (as a primitive's). */
bool dx_add_host(builder *b, const char *name, dx_host_fn fn, void *data, int32_t n_args, const int32_t *kinds, const int32_t *slots);
/* A new intermediate slot shaped like `like`, in layout md. */
int32_t dx_temp_slot(builder *b, const slot *like, const dnnl_memory_desc_t *md);
/* Slot s in layout md: s itself, or a reordered copy. */
int32_t dx_in_layout(builder *b, int32_t s, const dnnl_memory_desc_t *md);
/* Slot s in the plain ONNX layout (reordered once, then reused). */
int32_t dx_as_plain(builder *b, int32_t s);
int32_t dx_result_slot(builder *b, const seam_value_info *v, const dnnl_memory_desc_t *md, int32_t *final_out);
bool dx_layout_step_with(builder *b, dnnl_primitive_desc_t pd, int32_t sin, const seam_value_info *out, int32_t n_extra,
                         const int32_t *extra_kinds, const int32_t *extra_slots);
bool dx_layout_step(builder *b, dnnl_primitive_desc_t pd, int32_t sin, const seam_value_info *out);
/* Weights in layout md, reordered once now into a resident buffer. */
int32_t dx_resident_copy(builder *b, int32_t from, const dnnl_memory_desc_t *md);
int32_t dx_const_ints(builder *b, const seam_value_info *v, int64_t *out, int32_t max);
int64_t dx_slot_numel(const slot *s);
void dx_plain_strides(const slot *s, int64_t *st);
void dx_dense_strides(const slot *s, int64_t *st);
bool dx_reshape_view(const slot *in, const slot *out, dnnl_memory_desc_t *md);
void dx_shape_of(slot *shape, const seam_value_info *v);
/* Strided layouts through the view ops: a value in a layout without inner
 * blocks (channels-last `acdb`, a Slice's or a Transpose's strided view)
 * is sliced, split, transposed and reshaped as a view of its bytes, and
 * copied only when a reader needs it dense: into the dense layout of the
 * same dim order (a channels-last value's slice stays channels-last for
 * the convolution that reads it), not plain. */
/* Whether slot s holds float32 in a layout oneDNN describes by strides
 * alone (no inner blocks) other than plain: channels-last, or a strided
 * view (a boundary value of another type is its readers' to convert). */
bool dx_is_strided(const slot *s);
/* Whether slot s is a float32 value of rank 3 to 6 in the dense
 * channels-last layout (acb, acdb, acdeb, ...: dim 1 innermost). */
bool dx_is_channels_last(const slot *s);
/* Slot s dense: s itself when it is not a lazy view, else a copy in the
 * dense layout with the dims in the order of s's strides (reordered once,
 * then reused; plain when that order is plain). */
int32_t dx_as_dense(builder *b, int32_t s);
/* The dense float32 layout of s's dims with order[0] outermost and
 * order[rank - 1] innermost; false when oneDNN refuses it. */
bool dx_dense_md_in_order(const slot *s, const int32_t *order, dnnl_memory_desc_t *md);

/* ---- fuse.c: post-op chains and patterns ---- */
bool dx_readers_build(const seam_subgraph_view *sg, readers_index *ix);
int32_t dx_readers(const builder *b, const char *name, int32_t *out, int32_t max);
int32_t dx_sole_reader(const builder *b, const char *name);
void dx_collect_chain(builder *b, const seam_value_info *v, bool allow_views, chain *c);
int32_t dx_chain_sum_entry(const chain *c);
bool dx_chain_may_lead(const chain *c, int32_t k);
/* c cut to its first n entries (its output then theirs; `first` is the
 * primitive's own output, for n = 0). */
void dx_chain_cut(chain *c, int32_t n, const seam_value_info *first);
bool dx_chain_attr(builder *b, const chain *c, const dnnl_memory_desc_t *dst, dnnl_primitive_attr_t *attr,
                   int32_t *kinds, int32_t *slots, int32_t *n_args, int32_t *sum_from);
int32_t dx_sum_dst(builder *b, const chain *c, int32_t sum_from, const seam_value_info *result,
                   const dnnl_memory_desc_t *md, int32_t *final_out);
int32_t dx_reshaped_dst(builder *b, const chain *c, int32_t sum_from, const seam_value_info *result, const slot *prim);
void dx_take_chain(const chain *c, bool *fused);
bool dx_compile_layernorm_pattern(builder *b, bool *fused, int32_t sin);
bool dx_defer_scale(builder *b, int32_t sin);
bool dx_compile_gelu_pattern(builder *b, bool *fused, int32_t sin);
/* The squeeze-excite scale a Conv (node b->index, reading `input` as slot
 * sin) applies to its weights per input channel at each run: its slot, or
 * -1 when the input is no such Mul's (fuse.c; the error set only when out
 * of memory). */
int32_t dx_se_scale_for_conv(builder *b, int32_t sin, const char *input);

/* ---- rnn.c: LSTM and GRU (rows of ops.c's table) ---- */
bool dx_supports_rnn(const seam_node_view *n, char *why, size_t wn);
bool dx_compile_rnn(builder *b, bool *fused, int32_t sin, int32_t out0);

/* ---- log.c: the compile log ---- */
void dx_log(program *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *dx_impl_name(const_dnnl_primitive_desc_t pd);
/* Whether pd is one of oneDNN's reference kernels ("ref:any", ...). */
bool dx_is_ref(const_dnnl_primitive_desc_t pd);
/* A reference kernel that is slow: not oneDNN's concat or sum, which are
 * made of fast reorders whatever their name. */
bool dx_is_slow_ref(const_dnnl_primitive_desc_t pd);
void dx_log_prim(builder *b, const_dnnl_primitive_desc_t pd);

/* ---- ops.c: the ops ---- */

/* Where compile_node hands a node to its op's function; the stages come in
 * this order, and each readies input 0 (sin) for the next:
 *   STAGE_VIEW:       nothing readied: a Reshape-like node becomes a view
 *   STAGE_ANY_LAYOUT: sin as it is, plain or in a convolution's blocked
 *                     layout (oneDNN picks dst's layout from it)
 *   STAGE_PLAIN:      sin plain (a lazy strided view stays one for MatMul
 *                     and Transpose, which read it as it is)
 *   STAGE_PLAIN_OUT:  sin plain, and a new plain slot sd made for the
 *                     output first (-1 at the other stages)
 * ConvTranspose reads input 0 again itself (and makes it plain). */
typedef enum { STAGE_VIEW, STAGE_ANY_LAYOUT, STAGE_PLAIN, STAGE_PLAIN_OUT } op_stage;

/* An op the backend knows: one row of ops.c's table. supports() runs the
 * checks every node gets (float32, static shapes, ...), then the row's
 * own, which lives next to its compile function and says no with the
 * precise reason (NULL: nothing more to check). */
typedef struct dx_op {
    const char *op;
    op_stage stage;
    bool (*supports)(const seam_node_view *n, char *why, size_t why_size);
    bool (*compile)(builder *b, bool *fused, int32_t sin, int32_t sd);
} dx_op;

/* The row of node n's op, or NULL if the backend does not know it. */
const dx_op *dx_op_of(const seam_node_view *n);
/* Writes the reason into why; returns false (for `return dx_refuse(...)`). */
bool dx_refuse(char *why, size_t why_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Compiles node i of the subgraph (b->n), unless a primitive made earlier
 * absorbed it (fused[i]); false with b->err set on failure. */
bool dx_compile_node(builder *b, int32_t i, bool *fused);
bool dx_eltwise_of(const seam_node_view *n, const seam_subgraph_view *sg, dnnl_alg_kind_t *alg, float *alpha, float *beta);
bool dx_clips_after(const seam_node_view *n);
dnnl_alg_kind_t dx_binary_alg(const seam_node_view *n);
bool dx_reduce_axes(builder *b, int32_t rank, bool *mask);
/* The window of Conv or a pool for the known input (conv_geom,
 * ops/conv_geom.h), checked against the known output and oneDNN's 1 to 3
 * spatial axes; false with the reason in why. Support checks and compile
 * both ask it, so a node supports() accepts compiles. */
bool dx_window_geom(const seam_node_view *n, const int64_t *kernel, bool ceil_mode, conv_geom *g, char *why,
                    size_t why_size);
/* The window of Conv or a pool (conv_geom, ops/conv_geom.h) for the known
 * input and output sizes, as oneDNN takes it: strides, dilations (minus
 * one), pads before and after. False, with b->err set, when the
 * attributes are invalid or do not give the known output. */
bool dx_window(builder *b, int32_t nsp, const int64_t *kernel, bool ceil_mode, dnnl_dims_t strides, dnnl_dims_t dilates,
               dnnl_dims_t pad_lo, dnnl_dims_t pad_hi);
bool dx_layernorm_step(builder *b, int32_t sin, const char *scale, const char *shift, float eps,
                       const seam_value_info *out);

/* ---- conv_matmul.c: the ops with weights (rows of ops.c's table) ---- */
bool dx_supports_conv(const seam_node_view *n, char *why, size_t wn);
/* Parses target option `conv=auto|direct|winograd` into *conv; false when
 * opt is not one of them. */
bool dx_conv_option(const char *opt, int32_t *conv);
bool dx_compile_conv(builder *b, bool *fused, int32_t in0, int32_t out0);
bool dx_supports_convtranspose(const seam_node_view *n, char *why, size_t wn);
bool dx_compile_convtranspose(builder *b, bool *fused, int32_t in0, int32_t out0);
bool dx_supports_gemm(const seam_node_view *n, char *why, size_t wn);
bool dx_supports_matmul(const seam_node_view *n, char *why, size_t wn);
bool dx_compile_matmul(builder *b, bool *fused, int32_t sin, int32_t out0);

/* ---- concat.c: Concat in place, or by reorders into place ---- */
/* Concat (b->n, input 0 in slot sin) with its sources written in place into
 * the output where the layouts allow, the others reordered into their
 * sub-memories by jit reorders. 1 when made, 0 when it is not done so (the
 * concat primitive then: nothing was changed), -1 on an error (b->err set). */
int32_t dx_compile_concat_places(builder *b, int32_t sin);

/* ---- host.c: host steps ---- */
/* A channels-last Concat (b->n, input 0 in slot sin) read only by a batch
 * norm (and its Relu), with fusion on: one host step writes the batch
 * norm's (or the Relu's) output. 1 when made (the nodes fused), 0 when the
 * pattern does not apply (nothing changed), -1 on an error. */
int32_t dx_compile_concat_norm(builder *b, bool *fused, int32_t sin);
/* GlobalAveragePool (b->n) of a channels-last input (slot sin): 1 when
 * made as a host step, 0 when not (nothing changed), -1 on an error. */
int32_t dx_compile_global_pool(builder *b, int32_t sin);

#endif
