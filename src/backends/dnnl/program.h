/*
 * dnnl, layer 1 of the backend's files: the program a subgraph compiles
 * to (its slots and steps), the builder that makes it, the post-op chain
 * a primitive absorbs, the context every program shares, and the compile
 * log. Private to src/backends/dnnl/ (prefix dx_).
 *
 * The files' layers, lowest first; a header includes only headers above
 * it in this list (and a .c file only its own header and those above),
 * so "X includes Y" has no cycle:
 *
 *   program.h      (context.c, log.c) this header
 *   builder.h      (layout.c) slots, views, layouts, reorders, steps; who
 *                  reads each value; the rows an op family's table holds
 *                  (dx_op) and what the driver readies for them (dx_io)
 *   map.h          (map.c) ONNX ops to oneDNN: eltwise and binary
 *                  algorithms, reduction axes, windows, the op lists
 *   pattern.h      (pattern.c) the patterns exporters write that become
 *                  one primitive: layer norm, GELU, deferred scales,
 *                  squeeze-excite scales
 *   fuse.h         (fuse.c) post-op chains, where their result goes, the
 *                  step of a primitive with weights
 *   host.h         (host.c) host steps: seam's kernels between oneDNN's
 *                  primitives (a Concat with its batch norm, a global pool)
 *   the op families, each with its table rows and its own header:
 *     tensor.h       (tensor.c) views, Transpose, Slice, Gather, Split, Pad
 *     eltwise.h      (eltwise.c) activations, math, binaries, Sum, PRelu, Erf
 *     reduce.h       (reduce.c) reductions, and global pools made of them
 *     pool_norm.h    (pool_norm.c) pools, batch and layer norms, LRN,
 *                    Softmax, Resize
 *     concat.h       (concat.c) Concat: in place, by reorders, or oneDNN's
 *     conv.h         (conv.c) Conv, ConvTranspose
 *     matmul.h       (matmul.c) MatMul, Gemm
 *     rnn.h          (rnn.c) LSTM, GRU
 *     mask.h         (mask.c) comparisons, Where, Expand, Tile, Cast; how
 *                    values other than float32 are held
 *     shuf_shuffle.h (shuf_shuffle.c) the channel shuffle pattern
 *     quant.h        (quant.c) int8: QLinearConv, QLinearMatMul,
 *                    QuantizeLinear, DequantizeLinear (docs/quantized.md)
 *     quant_dyn.h    (quant_dyn.c) DynamicQuantizeLinear, MatMulInteger,
 *                    the quantized residual Add (one host pass)
 *   dnnl.c         the driver: the backend table, supports() (the checks
 *                  every node gets, then the op's row), the compile driver
 *                  (compile_node, over the families' tables), the memory
 *                  plan, run
 *
 * As a built-in backend it reads the node behind a view (dx_ir) with the
 * op layer's definitions: attributes (ops/attr.h), window geometry
 * (ops/conv_geom.h), activation parameters (ops/activation.h).
 */
#ifndef SEAM_DNNL_PROGRAM_H
#define SEAM_DNNL_PROGRAM_H

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ir/ir.h"
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
    bool bf16;            /* target option precision=bf16: Conv, MatMul and Gemm with constant
                             weights read their input and weights in bfloat16 (dst float32) */
    dnnl_stream_t stream; /* the program's own: compile's reorders and every run */
    void *scratch;        /* the scratchpad all steps share (they run one at a time) */
    size_t scratch_bytes;
    bool view_error;      /* a view did not fit the bytes it views */
    char *log;            /* the compile log (log.c), NUL-terminated, or NULL */
    size_t log_len, log_cap;
    bool log_oom;         /* the log stopped growing (no memory) */
    /* compile time only: MatMulInteger products whose Cast and Mul (and
     * bias Add) become one host pass at the Mul (quant_dyn.c) */
    struct dx_qmm_pending *qmm;
    int32_t n_qmm;
} program;

/* Target option conv=auto|direct|winograd (see conv.c): which of
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

extern dx_context dx_ctx; /* context.c */
/* Makes dx_ctx, once for the process (pthread_once); dx_ctx.ok says
 * whether oneDNN gave an engine. */
void dx_context_init(void);

/* What oneDNN's effective ISA (ONEDNN_MAX_CPU_ISA counts) has, by the
 * enum's bits, not its order (avx2_vnni, 0x407, is above avx512_core,
 * 0x27): AVX-512 core (its brgemm kernels, brgconv layouts), and VNNI
 * (AVX512-VNNI or AVX-VNNI: int8 products that do not saturate). */
/* run_team of the backend table (host.c): the OpenMP threads run body. */
void dx_run_team(void *ctx, int32_t n_threads, void (*body)(void *arg, int32_t thread, int32_t n_threads), void *arg);
bool dx_isa_avx512(void);
/* oneDNN's ISA has bf16 instructions (AVX512_BF16; AMX machines have them too). */
bool dx_isa_bf16(void);
bool dx_isa_vnni(void);

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

/* ---- log.c: the compile log ---- */
void dx_log(program *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *dx_impl_name(const_dnnl_primitive_desc_t pd);
/* Whether pd is one of oneDNN's reference kernels ("ref:any", ...). */
bool dx_is_ref(const_dnnl_primitive_desc_t pd);
/* A reference kernel that is slow: not oneDNN's concat or sum, which are
 * made of fast reorders whatever their name. */
bool dx_is_slow_ref(const_dnnl_primitive_desc_t pd);
/* Whether pd's kernel is for a lesser ISA than the CPU runs (an AVX2
 * kernel on an AVX-512 machine): oneDNN picks one where a layout forces it
 * (channels blocked by 8), at half the vector width. */
bool dx_below_best_isa(const_dnnl_primitive_desc_t pd);
void dx_log_prim(builder *b, const_dnnl_primitive_desc_t pd);

#endif
