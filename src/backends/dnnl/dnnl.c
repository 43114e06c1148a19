/*
 * The `dnnl` backend: device subgraphs compiled to oneDNN (Debian's
 * libdnnl 2.6, C API) primitives.
 *
 * compile() walks the subgraph once, in order. Every value gets a slot: a
 * boundary input or output (bound at each run), a constant (read in
 * place), an intermediate (placed in one arena by lifetime, see
 * plan_arena), or a view of another slot (Reshape-like nodes, Slice and
 * Transpose as strided views, in-place results). Every node becomes a
 * primitive made now, or disappears into one:
 *
 *   - Conv, MatMul and Gemm absorb the run of nodes that alone read their
 *     result: activations, broadcast binaries, a residual Add as an
 *     in-place sum (collect_chain); MatMul/Gemm chains go on through
 *     Reshape-like nodes. A scalar Div/Mul feeding a MatMul becomes a
 *     factor on its result; a Transpose reading a MatMul is how it writes.
 *   - Patterns exporters write become one primitive: the decomposed layer
 *     norm, and GELU with Erf.
 *   - Convolutions run in the layouts oneDNN picks (blocked, or NHWC for its
 *     brgemm kernels); pools and batch norm follow their input's layout, and
 *     values are reordered only where a reader needs another one.
 *   - Constant weights of Conv, ConvTranspose, MatMul and Gemm are reordered
 *     once, at compile time, into the layout their primitive prefers.
 *
 * supports() answers per node from op, dtypes, ranks and attributes, with a
 * precise reason when it says no; compile() checks again, since a saved
 * file may name dnnl for anything.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seam_backend.h"

#define MAXR 6      /* plain tags up to abcdef */
#define MAX_ARGS 66 /* a Concat of up to 64 inputs, plus its output (and a scratchpad) */

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
} slot;

typedef struct step {
    dnnl_primitive_t prim;
    dnnl_memory_t scratch; /* its scratchpad: the program's one buffer, or NULL */
    int32_t n_args;
    int32_t arg_kind[MAX_ARGS];
    int32_t arg_slot[MAX_ARGS];
} step;

typedef struct program {
    slot *slots;
    int32_t n_slots, cap_slots;
    step *steps;
    int32_t n_steps, cap_steps;
    int32_t *in_slot, *out_slot;
    int32_t n_in, n_out;
    int32_t *per_run;     /* the slots whose bytes are the caller's: set at each run */
    int32_t n_per_run;
    void *arena;          /* every intermediate, placed by lifetime */
    size_t arena_bytes;
    int32_t threads;      /* OpenMP threads (target option threads=N), 0: oneDNN's default */
    void *scratch;        /* the scratchpad all steps share (they run one at a time) */
    size_t scratch_bytes;
    bool view_error;      /* a view did not fit the bytes it views */
} program;

typedef struct dnnl_ctx {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_attr_t user_scratch; /* attr of primitives without post-ops */
    bool ok;
} dnnl_ctx;

static dnnl_ctx g_ctx; /* one CPU engine for the process */

static dnnl_format_tag_t plain_tag(int32_t rank) {
    static const dnnl_format_tag_t tags[] = {dnnl_a, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef};
    return rank >= 0 && rank <= MAXR ? tags[rank] : dnnl_format_tag_undef;
}

static bool is_op(const seam_node_view *n, const char *op) { return strcmp(n->op_type, op) == 0 && !n->domain[0]; }

static const char *const eltwise_ops[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Clip", "Exp", "Log",
                                          "Sqrt", "Abs", "HardSigmoid", "Softplus", "HardSwish", "Pow"};
static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
static const char *const view_ops[] = {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
static const char *const reduce_ops[] = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"};

static bool commutative(const seam_node_view *n) {
    return is_op(n, "Add") || is_op(n, "Mul") || is_op(n, "Max") || is_op(n, "Min");
}

static bool full_shape(const seam_value_info *v, const seam_value_info *out) {
    if (v->rank != out->rank) return false;
    for (int32_t d = 0; d < v->rank; d++)
        if (v->dims[d] != out->dims[d]) return false;
    return true;
}

static int64_t seam_value_numel(const seam_value_info *v) {
    int64_t n = 1;
    for (int32_t d = 0; d < v->rank; d++) n *= v->dims[d];
    return v->rank < 0 ? -1 : n;
}

static bool in_list(const seam_node_view *n, const char *const *list, size_t len) {
    for (size_t k = 0; k < len; k++)
        if (is_op(n, list[k])) return true;
    return false;
}
#define IN_LIST(n, l) in_list(n, l, sizeof(l) / sizeof(l[0]))

/* Inputs that parameterize a node (a shape, slice bounds, reduction axes)
 * rather than carry data: any integer type, read at compile time. */
static bool param_input(const seam_node_view *n, int32_t k) {
    return k >= 1 && (IN_LIST(n, view_ops) || is_op(n, "Slice") || IN_LIST(n, reduce_ops) || is_op(n, "Resize"));
}

/* Input k is a constant (an initializer or a Constant node's output) or
 * absent. supports() cannot read the data; compile() does. */
static bool const_input(const seam_node_view *n, int32_t k) {
    return k >= n->n_inputs || !n->inputs[k].name || !n->input_producers || !n->input_producers[k] ||
           !strcmp(n->input_producers[k], "Constant");
}

static bool static_shape(const seam_value_info *v) {
    if (v->rank < 0 || v->rank > MAXR) return false;
    for (int32_t d = 0; d < v->rank; d++)
        if (v->dims[d] < 0) return false;
    return true;
}

/* ---- supports ---- */

static bool refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(char *why, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return false;
}

static bool dnnl_supports(void *ctx, const seam_node_view *n, char *why, size_t wn) {
    (void)ctx;
    bool known = is_op(n, "Conv") || is_op(n, "Gemm") || is_op(n, "MatMul") || is_op(n, "MaxPool") ||
                 is_op(n, "AveragePool") || is_op(n, "GlobalAveragePool") || is_op(n, "GlobalMaxPool") ||
                 is_op(n, "Softmax") || is_op(n, "BatchNormalization") || is_op(n, "Concat") ||
                 is_op(n, "Transpose") || is_op(n, "Slice") || is_op(n, "Pow") || is_op(n, "LayerNormalization") ||
                 is_op(n, "LogSoftmax") || is_op(n, "Sum") || is_op(n, "PRelu") || is_op(n, "LRN") ||
                 is_op(n, "ConvTranspose") || is_op(n, "Resize") || is_op(n, "Erf") ||
                 IN_LIST(n, eltwise_ops) || IN_LIST(n, binary_ops) || IN_LIST(n, view_ops) || IN_LIST(n, reduce_ops);
    if (!known) return refuse(why, wn, "%s is not in the dnnl backend (yet)", n->op_type);
    if (n->n_inputs < 1 || !n->inputs[0].name) return refuse(why, wn, "%s without input 0", n->op_type);
    if (n->inputs[0].dtype != SEAM_DTYPE_FLOAT32) return refuse(why, wn, "%s on %s: dnnl runs float32 only", n->op_type, seam_dtype_name(n->inputs[0].dtype));
    for (int32_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k].name && !static_shape(&n->inputs[k]))
            return refuse(why, wn, "%s: input '%s' has no static shape of rank <= 6", n->op_type, n->inputs[k].name);
    for (int32_t k = 0; k < n->n_outputs; k++)
        if (n->outputs[k].name && !static_shape(&n->outputs[k]))
            return refuse(why, wn, "%s: output '%s' has no static shape of rank <= 6", n->op_type, n->outputs[k].name);
    int64_t v;
    const char *s;
    if ((is_op(n, "Softmax") || is_op(n, "LogSoftmax")) && n->opset < 13)
        return refuse(why, wn, "%s before opset 13 (2-D coercion) is not supported", n->op_type);
    if (is_op(n, "Sum"))
        for (int32_t k = 0; k < n->n_inputs; k++)
            if (!n->inputs[k].name || !full_shape(&n->inputs[k], &n->outputs[0]))
                return refuse(why, wn, "Sum with broadcasting is not supported");
    if (is_op(n, "Sum") && n->n_inputs > MAX_ARGS - 2) return refuse(why, wn, "Sum of more than 64 inputs is not supported");
    if (is_op(n, "PRelu") && n->inputs[1].rank > n->inputs[0].rank)
        return refuse(why, wn, "PRelu with a slope of higher rank than X is not supported");
    if (is_op(n, "LRN") && (n->inputs[0].rank < 3 || n->inputs[0].rank > 5))
        return refuse(why, wn, "LRN of rank %d is not supported", n->inputs[0].rank);
    if (is_op(n, "ConvTranspose")) {
        if (n->inputs[0].rank < 3 || n->inputs[0].rank > 5) return refuse(why, wn, "ConvTranspose of rank %d: dnnl does 1-D, 2-D and 3-D", n->inputs[0].rank);
        if (!const_input(n, 1)) return refuse(why, wn, "ConvTranspose with weights that are not constant is not supported");
        if (seam_node_attr_string(n, "auto_pad", &s) && strcmp(s, "NOTSET") && strcmp(s, "VALID"))
            return refuse(why, wn, "ConvTranspose auto_pad=%s is not supported", s);
    }
    if (is_op(n, "Erf") && !(n->input_producers && n->input_producers[0] &&
                             (!strcmp(n->input_producers[0], "Div") || !strcmp(n->input_producers[0], "Mul"))))
        return refuse(why, wn, "Erf is supported only inside the GELU pattern x * 0.5 * (1 + Erf(x / sqrt(2)))");
    if (is_op(n, "Resize")) {
        const char *mode = "nearest", *ctm = "half_pixel", *nm = "round_prefer_floor";
        seam_node_attr_string(n, "mode", &mode);
        seam_node_attr_string(n, "coordinate_transformation_mode", &ctm);
        seam_node_attr_string(n, "nearest_mode", &nm);
        if (n->opset < 11) ctm = "asymmetric", nm = "floor";
        if (strcmp(mode, "linear") && strcmp(mode, "nearest")) return refuse(why, wn, "Resize mode=%s not supported", mode);
        if (n->inputs[0].rank < 3 || n->inputs[0].rank > 5) return refuse(why, wn, "Resize of rank %d is not supported", n->inputs[0].rank);
        if (n->inputs[0].dims[0] != n->outputs[0].dims[0] || n->inputs[0].dims[1] != n->outputs[0].dims[1])
            return refuse(why, wn, "Resize of the batch or channel dimension is not supported");
        if (!strcmp(mode, "linear") && strcmp(ctm, "half_pixel") && strcmp(ctm, "pytorch_half_pixel"))
            return refuse(why, wn, "Resize mode=linear with coordinate_transformation_mode=%s not supported", ctm);
        if (!strcmp(mode, "nearest") && !(!strcmp(ctm, "asymmetric") && !strcmp(nm, "floor")))
            return refuse(why, wn, "Resize mode=nearest with coordinate_transformation_mode=%s and nearest_mode=%s not supported (only asymmetric with floor)", ctm, nm);
        for (int32_t d = 2; d < n->inputs[0].rank; d++)
            if (!strcmp(ctm, "pytorch_half_pixel") && n->outputs[0].dims[d] == 1)
                return refuse(why, wn, "Resize pytorch_half_pixel to a size of 1 not supported");
        if (seam_node_attr_int(n, "antialias", &v) && v) return refuse(why, wn, "Resize antialias=1 not supported");
    }
    if (is_op(n, "Conv") && (n->inputs[0].rank < 3 || n->inputs[0].rank > 5))
        return refuse(why, wn, "Conv of rank %d: dnnl does 1-D, 2-D and 3-D", n->inputs[0].rank);
    if ((is_op(n, "MaxPool") || is_op(n, "AveragePool")) && n->n_outputs > 1 && n->outputs[1].name)
        return refuse(why, wn, "MaxPool with an Indices output is not supported");
    if (is_op(n, "Gemm")) {
        if (seam_node_attr_int(n, "transA", &v) && v) return refuse(why, wn, "Gemm transA=1 is not supported");
        float f;
        if ((seam_node_attr_float(n, "alpha", &f) && f != 1) || (seam_node_attr_float(n, "beta", &f) && f != 1))
            return refuse(why, wn, "Gemm with alpha or beta other than 1 is not supported");
        if (n->n_inputs > 2 && n->inputs[2].name && n->inputs[2].rank != 1)
            return refuse(why, wn, "Gemm with a C of rank other than 1 is not supported");
    }
    if (is_op(n, "MatMul") && (n->inputs[0].rank < 2 || n->inputs[1].rank < 2))
        return refuse(why, wn, "MatMul with a 1-D operand is not supported");
    if (is_op(n, "Concat") && n->n_inputs > MAX_ARGS - 2) return refuse(why, wn, "Concat of more than 64 inputs is not supported");
    if (is_op(n, "BatchNormalization") && seam_node_attr_int(n, "training_mode", &v) && v)
        return refuse(why, wn, "BatchNormalization in training mode is not supported");
    if (seam_node_attr_string(n, "auto_pad", &s) && strcmp(s, "NOTSET") && strcmp(s, "VALID") &&
        strcmp(s, "SAME_UPPER") && strcmp(s, "SAME_LOWER"))
        return refuse(why, wn, "auto_pad=%s is not supported", s);
    if (IN_LIST(n, binary_ops) && !full_shape(&n->inputs[0], &n->outputs[0]) &&
        !(commutative(n) && full_shape(&n->inputs[1], &n->outputs[0])))
        return refuse(why, wn, "%s broadcasting input 0 is not supported (dnnl broadcasts the second operand)", n->op_type);
    if (is_op(n, "Clip") && (!const_input(n, 1) || !const_input(n, 2)))
        return refuse(why, wn, "Clip with computed bounds is not supported (oneDNN needs them at compile time)");
    if (is_op(n, "Pow") && (n->inputs[1].dtype != SEAM_DTYPE_FLOAT32 || !const_input(n, 1) || seam_value_numel(&n->inputs[1]) != 1))
        return refuse(why, wn, "Pow with an exponent that is not one constant float32 is not supported");
    if ((is_op(n, "Slice") || IN_LIST(n, reduce_ops)) && n->opset >= 10)
        for (int32_t k = 1; k < n->n_inputs; k++)
            if (!const_input(n, k)) return refuse(why, wn, "%s with a computed input %d is not supported", n->op_type, k);
    if (IN_LIST(n, reduce_ops) && seam_node_attr_int(n, "noop_with_empty_axes", &v) && v)
        return refuse(why, wn, "%s with noop_with_empty_axes=1 is not supported", n->op_type);
    if (is_op(n, "LayerNormalization")) {
        if (seam_node_attr_int(n, "axis", &v) && v != -1 && v != n->inputs[0].rank - 1)
            return refuse(why, wn, "LayerNormalization over more than the last axis is not supported");
        for (int32_t k = 1; k < 3 && k < n->n_inputs; k++)
            if (n->inputs[k].name && (!const_input(n, k) || n->inputs[k].rank != 1))
                return refuse(why, wn, "LayerNormalization with a scale or bias that is not a constant vector is not supported");
        for (int32_t k = 1; k < n->n_outputs; k++)
            if (n->outputs[k].name) return refuse(why, wn, "LayerNormalization with Mean or InvStdDev outputs is not supported");
    }
    return true;
}

static double dnnl_cost(void *ctx, const seam_node_view *n) {
    (void)ctx;
    return is_op(n, "Conv") || is_op(n, "Gemm") || is_op(n, "MatMul") ? 10 : 1;
}

/* ---- compile ---- */

static int32_t slot_of(program *p, const char *name) {
    for (int32_t k = 0; k < p->n_slots; k++)
        if (!strcmp(p->slots[k].name, name)) return k;
    return -1;
}

static int32_t add_slot(program *p, const char *name, const seam_value_info *v) {
    if (p->n_slots == p->cap_slots) {
        int32_t cap = p->cap_slots ? p->cap_slots * 2 : 64;
        slot *s = realloc(p->slots, sizeof(slot) * (size_t)cap);
        if (!s) return -1;
        p->slots = s;
        p->cap_slots = cap;
    }
    slot *s = &p->slots[p->n_slots];
    memset(s, 0, sizeof(*s));
    s->name = name;
    s->alias = -1;
    s->plain = -1;
    s->other = -1;
    s->scale = 1.0f;
    s->rank = v ? v->rank : 0;
    for (int32_t d = 0; v && d < v->rank; d++) s->dims[d] = v->dims[d];
    return p->n_slots++;
}

static bool md_of(const slot *s, dnnl_memory_desc_t *md);

/* A slot reading base's bytes (found at run time) with the shape of
 * `shape`, in the plain layout or in md: a view, no copy. */
static int32_t view_slot(program *p, int32_t base, const slot *shape, const dnnl_memory_desc_t *md) {
    int32_t a = add_slot(p, "(view)", NULL);
    if (a < 0) return -1;
    slot *v = &p->slots[a];
    v->rank = shape->rank;
    memcpy(v->dims, shape->dims, sizeof(v->dims));
    v->alias = base;
    dnnl_memory_desc_t m, bm;
    md_of(v, &m);
    if (md && !dnnl_memory_desc_equal(&m, md)) v->has_md = true, v->md = *md, m = *md;
    /* a view never reaches past the bytes it views (a file whose shapes do
     * not agree is refused here, not read out of bounds at run time) */
    md_of(&p->slots[base], &bm);
    if (dnnl_memory_desc_get_size(&m) > dnnl_memory_desc_get_size(&bm)) {
        p->view_error = true;
        return -1;
    }
    return dnnl_memory_create(&v->mem, &m, g_ctx.engine, DNNL_MEMORY_NONE) == dnnl_success ? a : -1;
}

static bool md_of(const slot *s, dnnl_memory_desc_t *md) {
    if (s->has_md) {
        *md = s->md;
        return true;
    }
    int32_t r = s->rank ? s->rank : 1;
    dnnl_dims_t dims;
    for (int32_t d = 0; d < r; d++) dims[d] = s->rank ? s->dims[d] : 1;
    return dnnl_memory_desc_init_by_tag(md, r, dims, dnnl_f32, plain_tag(r)) == dnnl_success;
}

typedef struct builder {
    program *p;
    const seam_subgraph_view *sg;
    char *err;
    size_t err_size;
    const seam_node_view *n; /* the node being compiled, for messages */
    seam_node_view *storage; /* n's storage, to fetch it again */
    int32_t index;
    bool fuse;               /* conv + activation post-ops (target option fusion=off) */
} builder;

static void *fail(builder *b, const char *what) {
    snprintf(b->err, b->err_size, "node %d '%s' (%s): %s", b->n->index, b->n->name, b->n->op_type, what);
    return NULL;
}

/* The slot of an input value: made earlier, a boundary input, or a weight. */
static int32_t input_slot(builder *b, const seam_value_info *v) {
    int32_t s = slot_of(b->p, v->name);
    if (s >= 0) return s;
    seam_tensor_view c;
    if (!seam_subgraph_constant(b->sg, v->name, &c)) return -1;
    if (c.dtype != SEAM_DTYPE_FLOAT32) return -1;
    s = add_slot(b->p, v->name, v);
    if (s < 0) return -1;
    dnnl_memory_desc_t md;
    if (!md_of(&b->p->slots[s], &md) || dnnl_memory_create(&b->p->slots[s].mem, &md, g_ctx.engine, (void *)c.data) != dnnl_success)
        return -1;
    b->p->slots[s].constant = true;
    return s;
}

static int32_t output_slot(builder *b, const seam_value_info *v) {
    int32_t s = slot_of(b->p, v->name);
    if (s >= 0) return s; /* a boundary output made up front */
    s = add_slot(b->p, v->name, v);
    if (s < 0) return -1;
    slot *sl = &b->p->slots[s];
    dnnl_memory_desc_t md;
    if (!md_of(sl, &md)) return -1;
    size_t bytes = dnnl_memory_desc_get_size(&md);
    sl->bytes = bytes ? bytes : 4;
    if (dnnl_memory_create(&sl->mem, &md, g_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) return -1;
    return s;
}

static step *new_step(program *p) {
    if (p->n_steps == p->cap_steps) {
        int32_t cap = p->cap_steps ? p->cap_steps * 2 : 64;
        step *st = realloc(p->steps, sizeof(step) * (size_t)cap);
        if (!st) return NULL;
        p->steps = st;
        p->cap_steps = cap;
    }
    return &p->steps[p->n_steps];
}

/* A step from a primitive descriptor (which stays the caller's). */
static bool add_prim(builder *b, const_dnnl_primitive_desc_t pd, int32_t n_args, const int32_t *kinds, const int32_t *slots) {
    step *st = new_step(b->p);
    if (!st) return fail(b, "out of memory"), false;
    st->scratch = NULL;
    if (dnnl_primitive_create(&st->prim, pd) != dnnl_success) return fail(b, "oneDNN could not create the primitive"), false;
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sbytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    if (sbytes) {
        if (dnnl_memory_create(&st->scratch, smd, g_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) {
            dnnl_primitive_destroy(st->prim);
            return fail(b, "out of memory"), false;
        }
        if (sbytes > b->p->scratch_bytes) b->p->scratch_bytes = sbytes;
    }
    st->n_args = n_args;
    for (int32_t k = 0; k < n_args; k++) st->arg_kind[k] = kinds[k], st->arg_slot[k] = slots[k];
    b->p->n_steps++;
    return true;
}

static bool add_step(builder *b, const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr, int32_t n_args,
                     const int32_t *kinds, const int32_t *slots) {
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, desc, attr ? attr : g_ctx.user_scratch, g_ctx.engine, NULL) != dnnl_success) return fail(b, "oneDNN has no implementation for these shapes and attributes"), false;
    bool ok = add_prim(b, pd, n_args, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* A new intermediate slot in layout md (a temporary, named for messages). */
static int32_t temp_slot(builder *b, const slot *like, const dnnl_memory_desc_t *md) {
    int32_t t = add_slot(b->p, like->name, NULL); /* a copy of the value: its name, for read_later */
    if (t < 0) return -1;
    slot *sl = &b->p->slots[t];
    sl->rank = like->rank;
    memcpy(sl->dims, like->dims, sizeof(sl->dims));
    sl->has_md = true;
    sl->md = *md;
    size_t bytes = dnnl_memory_desc_get_size(md);
    sl->bytes = bytes ? bytes : 4;
    if (dnnl_memory_create(&sl->mem, md, g_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) return -1;
    return t;
}

static bool add_reorder(builder *b, int32_t from, int32_t to) {
    dnnl_memory_desc_t a, c;
    md_of(&b->p->slots[from], &a);
    md_of(&b->p->slots[to], &c);
    dnnl_primitive_desc_t pd;
    if (dnnl_reorder_primitive_desc_create(&pd, &a, g_ctx.engine, &c, g_ctx.engine, g_ctx.user_scratch) != dnnl_success)
        return fail(b, "oneDNN has no reorder between these layouts"), false;
    int32_t kinds[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, slots[2] = {from, to};
    bool ok = add_prim(b, pd, 2, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* Slot s in layout md: s itself, or a reordered copy. */
static int32_t in_layout(builder *b, int32_t s, const dnnl_memory_desc_t *md) {
    dnnl_memory_desc_t cur;
    md_of(&b->p->slots[s], &cur);
    if (dnnl_memory_desc_equal(&cur, md)) return s;
    int32_t o = b->p->slots[s].other;
    if (o >= 0 && dnnl_memory_desc_equal(&b->p->slots[o].md, md)) return o; /* made for an earlier reader */
    slot like = b->p->slots[s];
    int32_t t = temp_slot(b, &like, md);
    if (t < 0 || !add_reorder(b, s, t)) return -1;
    if (!b->p->slots[s].has_md) b->p->slots[s].other = t; /* a plain value's blocked copy */
    return t;
}

/* Slot s in the plain ONNX layout (reordered once, then reused). */
static int32_t as_plain(builder *b, int32_t s) {
    if (!b->p->slots[s].has_md) return s;
    if (b->p->slots[s].plain >= 0) return b->p->slots[s].plain;
    slot like = b->p->slots[s];
    like.has_md = false;
    dnnl_memory_desc_t md;
    md_of(&like, &md);
    int32_t t = temp_slot(b, &like, &md);
    if (t < 0) return -1;
    b->p->slots[t].has_md = false;
    if (!add_reorder(b, s, t)) return -1;
    b->p->slots[s].plain = t;
    return t;
}

/* Where a step writing value v in layout md puts it: a new slot in md; or,
 * for a boundary output (always plain), a temporary whose reorder into the
 * boundary slot the caller adds after the step (*final_out >= 0). */
static int32_t result_slot(builder *b, const seam_value_info *v, const dnnl_memory_desc_t *md, int32_t *final_out) {
    *final_out = -1;
    int32_t s = slot_of(b->p, v->name);
    if (s >= 0) { /* a boundary output */
        dnnl_memory_desc_t plain;
        md_of(&b->p->slots[s], &plain);
        if (dnnl_memory_desc_equal(&plain, md)) return s;
        slot like = b->p->slots[s];
        *final_out = s;
        return temp_slot(b, &like, md);
    }
    s = add_slot(b->p, v->name, v);
    if (s < 0) return -1;
    slot *sl = &b->p->slots[s];
    dnnl_memory_desc_t plain;
    md_of(sl, &plain);
    sl->has_md = !dnnl_memory_desc_equal(&plain, md);
    sl->md = *md;
    size_t bytes = dnnl_memory_desc_get_size(md);
    sl->bytes = bytes ? bytes : 4;
    if (dnnl_memory_create(&sl->mem, md, g_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) return -1;
    return s;
}

static bool eltwise_of(const seam_node_view *n, const seam_subgraph_view *sg, dnnl_alg_kind_t *alg, float *alpha, float *beta) {
    float f;
    *alpha = 0, *beta = 0;
    if (is_op(n, "Relu")) *alg = dnnl_eltwise_relu;
    else if (is_op(n, "LeakyRelu")) *alg = dnnl_eltwise_relu, *alpha = seam_node_attr_float(n, "alpha", &f) ? f : 0.01f;
    else if (is_op(n, "Sigmoid")) *alg = dnnl_eltwise_logistic;
    else if (is_op(n, "Tanh")) *alg = dnnl_eltwise_tanh;
    else if (is_op(n, "Elu")) *alg = dnnl_eltwise_elu, *alpha = seam_node_attr_float(n, "alpha", &f) ? f : 1.0f;
    else if (is_op(n, "Exp")) *alg = dnnl_eltwise_exp;
    else if (is_op(n, "Log")) *alg = dnnl_eltwise_log;
    else if (is_op(n, "Sqrt")) *alg = dnnl_eltwise_sqrt;
    else if (is_op(n, "Abs")) *alg = dnnl_eltwise_abs;
    else if (is_op(n, "Softplus")) *alg = dnnl_eltwise_soft_relu;
    else if (is_op(n, "HardSwish")) *alg = dnnl_eltwise_hardswish;
    else if (is_op(n, "Pow")) { /* alpha * x^beta, with a constant exponent */
        seam_tensor_view c;
        if (n->n_inputs < 2 || !n->inputs[1].name || !seam_subgraph_constant(sg, n->inputs[1].name, &c) ||
            c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != 4)
            return false;
        *alg = dnnl_eltwise_pow, *alpha = 1.0f;
        memcpy(beta, c.data, 4);
    }
    else if (is_op(n, "HardSigmoid")) { /* max(0, min(1, a*x + b)): linear here, then a clip (see clips_after) */
        *alg = dnnl_eltwise_linear;
        *alpha = seam_node_attr_float(n, "alpha", &f) ? f : 0.2f;
        *beta = seam_node_attr_float(n, "beta", &f) ? f : 0.5f;
    } else if (is_op(n, "Clip")) {
        *alg = dnnl_eltwise_clip_v2;
        *alpha = -INFINITY, *beta = INFINITY;
        seam_tensor_view c;
        if (n->n_inputs > 1 && n->inputs[1].name) {
            if (!seam_subgraph_constant(sg, n->inputs[1].name, &c) || c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != 4) return false;
            memcpy(alpha, c.data, 4);
        }
        if (n->n_inputs > 2 && n->inputs[2].name) {
            if (!seam_subgraph_constant(sg, n->inputs[2].name, &c) || c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != 4) return false;
            memcpy(beta, c.data, 4);
        }
        if (seam_node_attr_float(n, "min", &f)) *alpha = f;
        if (seam_node_attr_float(n, "max", &f)) *beta = f;
    } else {
        return false;
    }
    return true;
}

/* oneDNN 2.6 has no hard sigmoid: eltwise_of gives its linear part, and a
 * clip to [0, 1] follows as a post-op. */
static bool clips_after(const seam_node_view *n) { return is_op(n, "HardSigmoid"); }

/* A primitive attribute with that clip as its post-op (NULL on failure). */
static dnnl_primitive_attr_t clip01_attr(void) {
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po;
    if (dnnl_post_ops_create(&po) != dnnl_success) return NULL;
    bool ok = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, 0.0f, 1.0f) == dnnl_success &&
              dnnl_primitive_attr_create(&attr) == dnnl_success && dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    dnnl_post_ops_destroy(po);
    if (!ok && attr) dnnl_primitive_attr_destroy(attr), attr = NULL;
    return attr;
}

/* Spatial pads for Conv/pools: explicit, or from auto_pad and the known
 * output size. */
static void pads_of(const seam_node_view *n, int32_t nsp, const int64_t *in, const int64_t *out, const int64_t *kern,
                    const int64_t *str, const int64_t *dil, dnnl_dims_t pl, dnnl_dims_t pr) {
    const int64_t *pads;
    int32_t np = 0;
    const char *ap = "NOTSET";
    seam_node_attr_string(n, "auto_pad", &ap);
    if (!seam_node_attr_ints(n, "pads", &pads, &np)) np = 0;
    for (int32_t d = 0; d < nsp; d++) {
        int64_t eff = (kern[d] - 1) * dil[d] + 1;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t total = (out[d] - 1) * str[d] + eff - in[d];
            if (total < 0) total = 0;
            pl[d] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
        } else {
            pl[d] = np == 2 * nsp && strcmp(ap, "VALID") ? pads[d] : 0;
        }
        /* the right pad that gives the known output (covers ceil_mode) */
        pr[d] = (out[d] - 1) * str[d] + eff - in[d] - pl[d];
        if (pr[d] < 0) pr[d] = 0;
    }
}

static void spatial_attrs(const seam_node_view *n, int32_t nsp, int64_t *str, int64_t *dil) {
    const int64_t *v;
    int32_t c;
    for (int32_t d = 0; d < nsp; d++) str[d] = 1, dil[d] = 1;
    if (seam_node_attr_ints(n, "strides", &v, &c) && c == nsp)
        for (int32_t d = 0; d < nsp; d++) str[d] = v[d];
    if (seam_node_attr_ints(n, "dilations", &v, &c) && c == nsp)
        for (int32_t d = 0; d < nsp; d++) dil[d] = v[d];
}

/* Index of the node (in the subgraph) that alone reads value name, or -1;
 * also -1 when the value leaves the subgraph. */
static int32_t sole_reader(const seam_subgraph_view *sg, const char *name) {
    for (int32_t k = 0; k < sg->n_outputs; k++)
        if (!strcmp(sg->outputs[k].name, name)) return -1;
    int32_t found = -1;
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(sg, i, &st);
        for (int32_t k = 0; k < m->n_inputs; k++)
            if (m->inputs[k].name && !strcmp(m->inputs[k].name, name)) {
                if (found >= 0 && found != i) return -1;
                found = i;
            }
    }
    return found;
}

/* ---- post-op chains ----
 * A Conv, MatMul or Gemm absorbs the run of nodes that alone read its
 * result, as long as each is an eltwise op or a binary op whose other
 * operand exists already (a weight, a boundary input, or a value made
 * earlier): the residual Add and the Relu after a ResNet block's last
 * convolution, a MatMul's bias Add. oneDNN applies them to each output
 * tile while it is in registers: no extra pass over memory. */
#define MAX_CHAIN 8

typedef struct chain {
    int32_t n;                     /* fused nodes */
    int32_t node[MAX_CHAIN];
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
} chain;

static dnnl_alg_kind_t binary_alg(const seam_node_view *n) {
    static const dnnl_alg_kind_t algs[] = {dnnl_binary_add, dnnl_binary_sub, dnnl_binary_mul, dnnl_binary_div, dnnl_binary_max, dnnl_binary_min};
    for (size_t k = 0; k < sizeof(algs) / sizeof(algs[0]); k++)
        if (is_op(n, binary_ops[k])) return algs[k];
    return dnnl_alg_kind_undef;
}

static int32_t input_slot(builder *b, const seam_value_info *v);

/* Fills c with the nodes after the producer of `v` that can become its
 * post-ops (none when fusion is off). Node views are invalidated: the
 * caller fetches its node again. */
/* Whether node m only gives its input's bytes a new shape: a view op, or
 * a Transpose that moves nothing but 1-sized dims. */
static bool reshape_like(const seam_node_view *m) {
    if (IN_LIST(m, view_ops)) return true;
    if (!is_op(m, "Transpose") || m->inputs[0].rank < 1) return false;
    const int64_t *perm;
    int32_t np = 0, last = -1;
    bool seen[MAXR] = {false};
    if (!seam_node_attr_ints(m, "perm", &perm, &np) || np != m->inputs[0].rank || np > MAXR) return false;
    for (int32_t d = 0; d < np; d++) {
        if (perm[d] < 0 || perm[d] >= np || seen[perm[d]]) return false;
        seen[perm[d]] = true;
        if (m->inputs[0].dims[perm[d]] == 1) continue;
        if (perm[d] < last) return false;
        last = (int32_t)perm[d];
    }
    return true;
}

static void collect_chain(builder *b, const seam_value_info *v, bool allow_views, chain *c) {
    memset(c, 0, sizeof(*c));
    c->out = *v;
    for (int32_t d = 0; d < v->rank && d < MAXR; d++) c->out_dims[d] = v->dims[d], c->prim_dims[d] = v->dims[d];
    c->out.dims = c->out_dims;
    c->prim_rank = v->rank;
    while (b->fuse && c->n < MAX_CHAIN) {
        int32_t r = sole_reader(b->sg, c->out.name);
        if (r < 0) break;
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(b->sg, r, &st);
        if (m->n_outputs < 1 || !m->outputs[0].name || m->outputs[0].rank < 0 || m->outputs[0].rank > MAXR) break;
        int32_t k = c->n;
        if (allow_views && reshape_like(m) && m->n_outputs == 1) { /* the chain goes on in the new shape */
            c->is_view[k] = true;
            c->reshaped = true;
            c->node[k] = r;
            c->n++;
            c->out = m->outputs[0];
            for (int32_t d = 0; d < c->out.rank; d++) c->out_dims[d] = m->outputs[0].dims[d];
            c->out.dims = c->out_dims;
            continue;
        }
        if (m->outputs[0].rank != c->out.rank) break;
        bool same = true;
        for (int32_t d = 0; d < c->out.rank; d++) same &= m->outputs[0].dims[d] == c->out.dims[d];
        if (!same) break;
        if (IN_LIST(m, eltwise_ops)) {
            if (!eltwise_of(m, b->sg, &c->alg[k], &c->alpha[k], &c->beta[k])) break;
            c->clip01[k] = clips_after(m);
        } else if (IN_LIST(m, binary_ops) && m->n_inputs == 2 && m->inputs[0].name && m->inputs[1].name) {
            int32_t mine = !strcmp(m->inputs[0].name, c->out.name) ? 0 : 1;
            if (!strcmp(m->inputs[1 - mine].name, c->out.name)) break; /* x op x */
            if (mine == 1 && !commutative(m)) break;
            const seam_value_info *o = &m->inputs[1 - mine];
            if (o->rank > c->out.rank) break;
            bool bcast = true;
            for (int32_t d = 0; d < o->rank; d++) {
                int64_t od = o->dims[d], rd = c->out.dims[c->out.rank - o->rank + d];
                bcast &= od == rd || od == 1;
            }
            if (!bcast) break;
            bool full = o->rank == c->out.rank;
            for (int32_t d = 0; full && d < o->rank; d++) full = o->dims[d] == c->out.dims[d];
            if (c->reshaped && !full) break; /* a broadcast in another shape than the primitive's */
            c->full[k] = full;
            seam_value_info ov = *o;
            int32_t s = slot_of(b->p, ov.name);
            if (s < 0) s = input_slot(b, &ov); /* a constant */
            if (s < 0) break;                  /* made later: not yet available */
            c->is_binary[k] = true;
            c->alg[k] = binary_alg(m);
            c->operand[k] = s;
        } else {
            break;
        }
        m = seam_subgraph_node(b->sg, r, &st);
        c->node[k] = r;
        c->n++;
        c->out = m->outputs[0];
        for (int32_t d = 0; d < c->out.rank && d < MAXR; d++) c->out_dims[d] = m->outputs[0].dims[d];
        c->out.dims = c->out_dims;
    }
}

/* The chain's post-ops as a primitive attribute (NULL when empty), and the
 * execution arguments of its binary operands, appended at kinds/slots[*n].
 * A binary operand of the result's shape joins in the layout dst has (it
 * is reordered to it when needed); a broadcast one joins plain, its dims
 * right-aligned with 1s. Returns false on an error (message set). */
static bool chain_attr(builder *b, const chain *c, const dnnl_memory_desc_t *dst, dnnl_primitive_attr_t *attr,
                       int32_t *kinds, int32_t *slots, int32_t *n_args, int32_t *sum_from) {
    *attr = NULL;
    *sum_from = -1;
    bool scaled = c->prescale != 0.0f && c->prescale != 1.0f;
    if (!c->n && !scaled) return true;
    dnnl_post_ops_t po;
    if (dnnl_post_ops_create(&po) != dnnl_success) return fail(b, "out of memory"), false;
    int32_t at = 0; /* post-ops appended so far */
    if (scaled) dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, c->prescale, 0.0f), at++;
    slot prim_shape;
    memset(&prim_shape, 0, sizeof(prim_shape));
    prim_shape.rank = c->prim_rank;
    for (int32_t d = 0; d < c->prim_rank; d++) prim_shape.dims[d] = c->prim_dims[d];
    for (int32_t k = 0; k < c->n; k++) {
        if (c->is_view[k]) continue;
        if (!c->is_binary[k]) {
            dnnl_post_ops_append_eltwise(po, 1.0f, c->alg[k], c->alpha[k], c->beta[k]), at++;
            if (c->clip01[k]) dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, 0.0f, 1.0f), at++;
            continue;
        }
        int32_t s = c->operand[k];
        slot like = b->p->slots[s];
        bool full = c->full[k];
        if (full && c->reshaped) { /* the same bytes seen in the primitive's shape */
            s = as_plain(b, s);
            if (s >= 0) s = view_slot(b->p, s, &prim_shape, NULL);
            if (s < 0) {
                dnnl_post_ops_destroy(po);
                return fail(b, "out of memory"), false;
            }
            like = b->p->slots[s];
        }
        dnnl_memory_desc_t md;
        /* Adding a whole tensor: a sum post-op (dst += result), with the
         * operand put in dst beforehand (see sum_dst). oneDNN's fast kernels
         * take that, not a same-shape binary post-op. */
        if (full && dst && c->alg[k] == dnnl_binary_add && *sum_from < 0) {
            dnnl_post_ops_append_sum(po, 1.0f), at++;
            *sum_from = s;
            continue;
        }
        if (full && dst) {
            s = in_layout(b, s, dst);
        } else {
            s = as_plain(b, s);
            /* (a broadcast comes before any Reshape-like node of the chain:
             * it is aligned to the primitive's own shape) */
            if (s >= 0 && like.rank < c->prim_rank) {
                slot v = like;
                int32_t shift = c->prim_rank - like.rank;
                for (int32_t d = c->prim_rank - 1; d >= 0; d--) v.dims[d] = d >= shift ? like.dims[d - shift] : 1;
                v.rank = c->prim_rank;
                v.has_md = false;
                s = view_slot(b->p, s, &v, NULL);
            }
        }
        if (s < 0) {
            dnnl_post_ops_destroy(po);
            return fail(b, "could not lay out a fused operand"), false;
        }
        md_of(&b->p->slots[s], &md);
        dnnl_post_ops_append_binary(po, c->alg[k], &md);
        kinds[*n_args] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(at) | DNNL_ARG_SRC_1;
        slots[(*n_args)++] = s;
        at++;
    }
    bool ok = dnnl_primitive_attr_create(attr) == dnnl_success && dnnl_primitive_attr_set_post_ops(*attr, po) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user) == dnnl_success;
    dnnl_post_ops_destroy(po);
    if (!ok) return fail(b, "out of memory"), false;
    return true;
}

/* One eltwise or binary step in input 0's (blocked) layout. Returns 1
 * when made, 0 when the op does not fit (the caller then goes plain), -1 on
 * an error. */
static int32_t blocked_step(builder *b, const seam_node_view *n, int32_t sin) {
    program *p = b->p;
    dnnl_memory_desc_t src = p->slots[sin].md;
    dnnl_primitive_desc_t pd = NULL;
    int32_t kinds[3], slots[3], n_args;
    if (IN_LIST(n, eltwise_ops)) {
        dnnl_alg_kind_t alg;
        float alpha, beta;
        dnnl_eltwise_desc_t ed;
        dnnl_primitive_attr_t clip = clips_after(n) ? clip01_attr() : NULL;
        bool ok = (!clips_after(n) || clip) && eltwise_of(n, b->sg, &alg, &alpha, &beta) &&
                  dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &src, alpha, beta) == dnnl_success &&
                  dnnl_primitive_desc_create(&pd, &ed, clip ? clip : g_ctx.user_scratch, g_ctx.engine, NULL) == dnnl_success;
        if (clip) dnnl_primitive_attr_destroy(clip);
        if (!ok) return 0;
        kinds[0] = DNNL_ARG_SRC, slots[0] = sin, n_args = 2;
    } else {
        static const dnnl_alg_kind_t algs[] = {dnnl_binary_add, dnnl_binary_sub, dnnl_binary_mul, dnnl_binary_div, dnnl_binary_max, dnnl_binary_min};
        dnnl_alg_kind_t alg = dnnl_binary_add;
        for (size_t k = 0; k < 6; k++)
            if (is_op(n, binary_ops[k])) alg = algs[k];
        int32_t s1 = input_slot(b, &n->inputs[1]);
        if (s1 < 0 || p->slots[s1].rank != p->slots[sin].rank) return 0;
        for (int32_t d = 0; d < p->slots[sin].rank; d++)
            if (p->slots[s1].dims[d] != p->slots[sin].dims[d]) return 0; /* broadcasts go plain */
        s1 = in_layout(b, s1, &src);
        if (s1 < 0) return -1;
        dnnl_binary_desc_t bd;
        if (dnnl_binary_desc_init(&bd, alg, &src, &src, &src) != dnnl_success ||
            dnnl_primitive_desc_create(&pd, &bd, g_ctx.user_scratch, g_ctx.engine, NULL) != dnnl_success)
            return 0;
        kinds[0] = DNNL_ARG_SRC_0, slots[0] = sin, kinds[1] = DNNL_ARG_SRC_1, slots[1] = s1, n_args = 3;
    }
    int32_t final_slot = -1;
    int32_t sd = result_slot(b, &n->outputs[0], &src, &final_slot);
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return fail(b, "out of memory"), -1;
    }
    kinds[n_args - 1] = DNNL_ARG_DST, slots[n_args - 1] = sd;
    bool ok = add_prim(b, pd, n_args, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (ok && final_slot >= 0) ok = add_reorder(b, sd, final_slot);
    return ok ? 1 : -1;
}

static void release_program(program *p) {
    if (!p) return;
    for (int32_t k = 0; k < p->n_steps; k++) {
        dnnl_primitive_destroy(p->steps[k].prim);
        if (p->steps[k].scratch) dnnl_memory_destroy(p->steps[k].scratch);
    }
    free(p->arena), free(p->scratch), free(p->per_run);
    for (int32_t k = 0; k < p->n_slots; k++) {
        if (p->slots[k].mem) dnnl_memory_destroy(p->slots[k].mem);
        free(p->slots[k].owned);
    }
    free(p->slots), free(p->steps), free(p->in_slot), free(p->out_slot), free(p);
}

static void dnnl_release_compiled(void *ctx, void *compiled) {
    (void)ctx;
    release_program(compiled);
}

/* A step whose dst layout the primitive chose (the layout of its input,
 * for pools and batch norm): SRC and DST, plus extra arguments. The pd is
 * consumed. */
static bool layout_step_with(builder *b, dnnl_primitive_desc_t pd, int32_t sin, const seam_value_info *out, int32_t n_extra,
                             const int32_t *extra_kinds, const int32_t *extra_slots) {
    const dnnl_memory_desc_t *dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int32_t final_slot = -1;
    int32_t sd = result_slot(b, out, dst, &final_slot);
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return fail(b, "out of memory"), false;
    }
    int32_t kinds[8] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[8] = {sin, sd};
    for (int32_t k = 0; k < n_extra; k++) kinds[2 + k] = extra_kinds[k], slots[2 + k] = extra_slots[k];
    bool ok = add_prim(b, pd, 2 + n_extra, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (ok && final_slot >= 0) ok = add_reorder(b, sd, final_slot);
    return ok;
}

static bool layout_step(builder *b, dnnl_primitive_desc_t pd, int32_t sin, const seam_value_info *out) {
    return layout_step_with(b, pd, sin, out, 0, NULL, NULL);
}

/* Weights in layout md, reordered once now into a resident buffer. */
static int32_t resident_copy(builder *b, int32_t from, const dnnl_memory_desc_t *md) {
    slot like = b->p->slots[from];
    int32_t t = temp_slot(b, &like, md);
    if (t < 0) return -1;
    slot *ts = &b->p->slots[t]; /* resident: its own buffer, out of the arena */
    ts->owned = malloc(ts->bytes);
    ts->bytes = 0;
    if (!ts->owned || dnnl_memory_set_data_handle(ts->mem, ts->owned) != dnnl_success) return -1;
    dnnl_primitive_desc_t rpd;
    dnnl_memory_desc_t src;
    md_of(&b->p->slots[from], &src);
    if (dnnl_reorder_primitive_desc_create(&rpd, &src, g_ctx.engine, md, g_ctx.engine, NULL) != dnnl_success) return -1;
    dnnl_primitive_t rp;
    bool ok = dnnl_primitive_create(&rp, rpd) == dnnl_success;
    dnnl_primitive_desc_destroy(rpd);
    if (!ok) return -1;
    /* a view of a weight (grouped weights): point it at the weight's bytes */
    const slot *base = &b->p->slots[from];
    while (base->alias >= 0) base = &b->p->slots[base->alias];
    void *h = NULL;
    dnnl_memory_get_data_handle(base->mem, &h);
    if (base != &b->p->slots[from]) dnnl_memory_set_data_handle(b->p->slots[from].mem, h);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, b->p->slots[from].mem}, {DNNL_ARG_TO, b->p->slots[t].mem}};
    ok = dnnl_primitive_execute(rp, g_ctx.stream, 2, args) == dnnl_success;
    dnnl_stream_wait(g_ctx.stream);
    dnnl_primitive_destroy(rp);
    return ok ? t : -1;
}

static int32_t root_of(const program *p, int32_t s) {
    while (p->slots[s].alias >= 0) s = p->slots[s].alias;
    return s;
}

/* Whether value `name` is read by a node after the one being compiled,
 * other than the nodes fused into it. */
static bool read_later(builder *b, const char *name, const chain *c) {
    for (int32_t k = 0; k < b->sg->n_outputs; k++)
        if (!strcmp(b->sg->outputs[k].name, name)) return true;
    for (int32_t i = b->index + 1; i < b->sg->n_nodes; i++) {
        bool in_chain = false;
        for (int32_t k = 0; k < c->n; k++) in_chain |= c->node[k] == i;
        if (in_chain) continue;
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(b->sg, i, &st);
        for (int32_t k = 0; k < m->n_inputs; k++)
            if (m->inputs[k].name && !strcmp(m->inputs[k].name, name)) return true;
    }
    return false;
}

/* Whether slot s may be overwritten by the primitive now compiled: its
 * bytes are an intermediate of this program, in layout md, and no value
 * living in those bytes (s, or any view of the same buffer) is read after
 * this node, except by the nodes fused into it. */
static bool may_overwrite(builder *b, int32_t s, const dnnl_memory_desc_t *md, const chain *c) {
    program *p = b->p;
    int32_t root = root_of(p, s);
    if (!p->slots[root].bytes || p->slots[root].boundary) return false;
    dnnl_memory_desc_t cur;
    md_of(&p->slots[s], &cur);
    if (!dnnl_memory_desc_equal(&cur, md)) return false;
    for (int32_t k = 0; k < p->n_slots; k++)
        if (root_of(p, k) == root && p->slots[k].name[0] != '(' && read_later(b, p->slots[k].name, c)) return false;
    return true;
}

/* dst for a primitive with a sum post-op reading sum_from: sum_from's own
 * buffer when nothing reads it later (in place, no copy), else a new slot
 * the operand is copied into just before the primitive. */
static int32_t sum_dst(builder *b, const chain *c, int32_t sum_from, const seam_value_info *result,
                       const dnnl_memory_desc_t *md, int32_t *final_out) {
    program *p = b->p;
    *final_out = -1;
    if (slot_of(p, result->name) < 0 && may_overwrite(b, sum_from, md, c)) {
        slot shape = p->slots[sum_from];
        int32_t v = view_slot(p, sum_from, &shape, md);
        if (v >= 0) p->slots[v].name = result->name;
        return v;
    }
    int32_t sd = result_slot(b, result, md, final_out);
    if (sd < 0 || !add_reorder(b, sum_from, sd)) return -1;
    return sd;
}

/* dst for a chain that ends in another shape (through Reshape-like nodes):
 * the final value's slot, plain, in its own shape, which the primitive
 * writes through a view in its own shape. A sum operand is put there first
 * (same bytes, any shape), or is that slot when it may be overwritten. */
static int32_t reshaped_dst(builder *b, const chain *c, int32_t sum_from, const seam_value_info *result, const slot *prim) {
    program *p = b->p;
    slot rshape;
    memset(&rshape, 0, sizeof(rshape));
    rshape.rank = result->rank;
    for (int32_t d = 0; d < result->rank; d++) rshape.dims[d] = result->dims[d];
    int32_t fs = -1;
    if (sum_from >= 0 && slot_of(p, result->name) < 0) {
        dnnl_memory_desc_t pm;
        md_of(&p->slots[sum_from], &pm);
        if (!p->slots[sum_from].has_md && may_overwrite(b, sum_from, &pm, c)) {
            fs = view_slot(p, sum_from, &rshape, NULL);
            if (fs < 0) return -1;
            p->slots[fs].name = result->name;
        }
    }
    if (fs < 0) {
        fs = output_slot(b, result);
        if (fs >= 0 && sum_from >= 0) {
            int32_t v = view_slot(p, sum_from, &rshape, NULL);
            if (v < 0 || !add_reorder(b, v, fs)) return -1;
        }
    }
    return fs >= 0 ? view_slot(p, fs, prim, NULL) : -1;
}

/* Marks a chain's nodes as done by the primitive that absorbed them. */
static void take_chain(const chain *c, bool *fused) {
    for (int32_t k = 0; k < c->n; k++) fused[c->node[k]] = true;
}

/* A convolution in the layouts oneDNN picks (blocked ones for its fast
 * kernels): the input is reordered to it if needed, the weights once, now.
 * Its post-op chain comes along when oneDNN accepts it. */
static bool compile_conv(builder *b, bool *fused) {
    program *p = b->p;
    chain c;
    collect_chain(b, &b->n->outputs[0], false, &c); /* (dst is blocked: no views) */
    const seam_node_view *n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    int32_t sin = input_slot(b, &n->inputs[0]);
    if (sin < 0) return fail(b, "input 0 is neither made earlier nor a constant"), false;
    dnnl_memory_desc_t src, w, bias, dst;
    md_of(&p->slots[sin], &src);
    int32_t nsp = n->inputs[0].rank - 2;
    int64_t group = 1, str[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, in[3] = {0}, out[3] = {0}, kern[3] = {0};
    seam_node_attr_int(n, "group", &group);
    spatial_attrs(n, nsp, str, dil);
    for (int32_t d = 0; d < nsp; d++) in[d] = n->inputs[0].dims[2 + d], out[d] = n->outputs[0].dims[2 + d], kern[d] = n->inputs[1].dims[2 + d];
    dnnl_dims_t pl, pr, strides, dilates;
    pads_of(n, nsp, in, out, kern, str, dil, pl, pr);
    for (int32_t d = 0; d < nsp; d++) strides[d] = str[d], dilates[d] = dil[d] - 1;
    int32_t sw = input_slot(b, &n->inputs[1]);
    if (sw < 0) return fail(b, "the weights are not constant"), false;
    /* grouped weights [M, C/g, k...] viewed as [g, M/g, C/g, k...] (same bytes) */
    if (group > 1) {
        slot ws = p->slots[sw];
        ws.rank = n->inputs[1].rank + 1;
        ws.dims[0] = group;
        ws.dims[1] = n->inputs[1].dims[0] / group;
        for (int32_t d = 1; d < n->inputs[1].rank; d++) ws.dims[d + 1] = n->inputs[1].dims[d];
        sw = view_slot(p, sw, &ws, NULL);
        if (sw < 0) return fail(b, "out of memory"), false;
    }
    md_of(&p->slots[sw], &w);
    int32_t sb = n->n_inputs > 2 && n->inputs[2].name ? input_slot(b, &n->inputs[2]) : -1;
    if (n->n_inputs > 2 && n->inputs[2].name && sb < 0) return fail(b, "the bias is not constant"), false;
    if (sb >= 0) md_of(&p->slots[sb], &bias);
    dnnl_memory_desc_t any_src, any_w, any_dst;
    dnnl_memory_desc_init_by_tag(&any_src, src.ndims, src.dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&any_w, w.ndims, w.dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_convolution_desc_t cd;
    if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &any_src, &any_w,
                                                   sb >= 0 ? &bias : NULL, &any_dst, strides, dilates, pl, pr) != dnnl_success)
        return fail(b, "oneDNN refuses this convolution's shapes"), false;
    /* first without post-ops, to learn the layout dst will have; then with
     * the chain, its same-shape operands in that layout */
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_primitive_desc_create(&pd, &cd, g_ctx.user_scratch, g_ctx.engine, NULL) != dnnl_success)
        return fail(b, "oneDNN refuses this convolution's shapes"), false;
    int32_t kinds[4 + MAX_CHAIN] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS}, slots[4 + MAX_CHAIN];
    int32_t n_args = sb >= 0 ? 4 : 3, sum_from = -1;
    if (c.n) {
        dst = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
        dnnl_primitive_attr_t attr;
        if (!chain_attr(b, &c, &dst, &attr, kinds, slots, &n_args, &sum_from)) return dnnl_primitive_desc_destroy(pd), false;
        dnnl_convolution_desc_t cd2;
        dnnl_primitive_desc_t pd2 = NULL;
        if (dnnl_dilated_convolution_forward_desc_init(&cd2, dnnl_forward_inference, dnnl_convolution_direct, &any_src, &any_w,
                                                       sb >= 0 ? &bias : NULL, &dst, strides, dilates, pl, pr) == dnnl_success &&
            dnnl_primitive_desc_create(&pd2, &cd2, attr, g_ctx.engine, NULL) == dnnl_success) {
            dnnl_primitive_desc_destroy(pd);
            pd = pd2;
            take_chain(&c, fused);
        } else {
            c.n = 0, n_args = sb >= 0 ? 4 : 3, sum_from = -1; /* oneDNN cannot fuse these: they run on their own */
        }
        dnnl_primitive_attr_destroy(attr);
    }
    const seam_value_info *result = c.n ? &c.out : &n->outputs[0];
    const dnnl_memory_desc_t *csrc = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *cw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *cdst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int32_t xs = in_layout(b, sin, csrc);
    int32_t wt = xs >= 0 ? resident_copy(b, sw, cw) : -1;
    int32_t final_slot = -1;
    int32_t sd = xs < 0 || wt < 0 ? -1
                 : sum_from >= 0 ? sum_dst(b, &c, sum_from, result, cdst, &final_slot)
                                 : result_slot(b, result, cdst, &final_slot);
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return fail(b, "could not lay out the convolution's tensors"), false;
    }
    slots[0] = xs, slots[1] = wt, slots[2] = sd;
    if (sb >= 0) slots[3] = sb; /* else the post-op operands start at 3 */
    bool ok = add_prim(b, pd, n_args, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (ok && final_slot >= 0) ok = add_reorder(b, sd, final_slot);
    return ok;
}

/* Integers of a constant input (int64 or int32), at most max; -1 when
 * the input is not a constant of those types. */
static int32_t const_ints(builder *b, const seam_value_info *v, int64_t *out, int32_t max) {
    seam_tensor_view c;
    if (!v->name || !seam_subgraph_constant(b->sg, v->name, &c)) return -1;
    size_t esz = c.dtype == SEAM_DTYPE_INT64 ? 8 : c.dtype == SEAM_DTYPE_INT32 ? 4 : 0;
    if (!esz || c.nbytes / esz > (size_t)max) return -1;
    int32_t n = (int32_t)(c.nbytes / esz);
    for (int32_t k = 0; k < n; k++) {
        if (esz == 8) memcpy(&out[k], (const char *)c.data + 8 * k, 8);
        else {
            int32_t x;
            memcpy(&x, (const char *)c.data + 4 * k, 4);
            out[k] = x;
        }
    }
    return n;
}

static int64_t slot_numel(const slot *s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->rank; d++) n *= s->dims[d];
    return n;
}

static void plain_strides(const slot *s, int64_t *st) {
    int64_t acc = 1;
    for (int32_t d = s->rank - 1; d >= 0; d--) st[d] = acc, acc *= s->dims[d];
}

/* The dims and element strides of a slot in a plain or strided layout. */
static void dense_strides(const slot *s, int64_t *st) {
    if (s->has_md && s->md.format_kind == dnnl_blocked && s->md.format_desc.blocking.inner_nblks == 0) {
        for (int32_t d = 0; d < s->rank; d++) st[d] = s->md.format_desc.blocking.strides[d];
        return;
    }
    plain_strides(s, st);
}

/* The strided layout of `in`'s bytes seen with shape `out`, when one exists
 * (numpy's no-copy reshape: each run of merged dims must be contiguous
 * within itself). */
static bool reshape_view(const slot *in, const slot *out, dnnl_memory_desc_t *md) {
    int64_t ist[MAXR], od[MAXR], os[MAXR], id[MAXR], is[MAXR];
    dense_strides(in, ist);
    int32_t ni = 0, no = out->rank;
    for (int32_t d = 0; d < in->rank; d++) /* 1-sized dims carry no stride */
        if (in->dims[d] != 1) id[ni] = in->dims[d], is[ni++] = ist[d];
    for (int32_t d = 0; d < no; d++) od[d] = out->dims[d], os[d] = 1;
    if (slot_numel(in) != slot_numel(out) || slot_numel(in) == 0) return false;
    int32_t oi = 0, oj = 1, ki = 0, kj = 1;
    while (ki < no && oi < ni) {
        int64_t np = od[ki], op = id[oi];
        while (np != op) {
            if (np < op) {
                if (kj >= no) return false;
                np *= od[kj++];
            } else {
                if (oj >= ni) return false;
                op *= id[oj++];
            }
        }
        for (int32_t k = oi; k < oj - 1; k++)
            if (is[k] != id[k + 1] * is[k + 1]) return false;
        os[kj - 1] = is[oj - 1];
        for (int32_t k = kj - 1; k > ki; k--) os[k - 1] = os[k] * od[k];
        ki = kj++, oi = oj++;
    }
    for (int32_t d = ki; d < no; d++) os[d] = 1; /* trailing 1-sized dims */
    dnnl_dims_t dims, strides;
    int32_t r = no ? no : 1;
    for (int32_t d = 0; d < r; d++) dims[d] = no ? od[d] : 1, strides[d] = no ? os[d] : 1;
    return dnnl_memory_desc_init_by_strides(md, r, dims, dnnl_f32, strides) == dnnl_success;
}

static void shape_of(slot *shape, const seam_value_info *v) {
    memset(shape, 0, sizeof(*shape));
    shape->rank = v->rank;
    for (int32_t d = 0; d < v->rank; d++) shape->dims[d] = v->dims[d];
}

/* Transpose: a reorder from a view of the input with permuted strides. */
static bool compile_transpose(builder *b, int32_t sin) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[sin].rank;
    int64_t perm[MAXR], st[MAXR];
    const int64_t *pv;
    int32_t np = 0;
    if (seam_node_attr_ints(n, "perm", &pv, &np)) {
        if (np != r) return fail(b, "perm does not match the input's rank"), false;
        bool seen[MAXR] = {false};
        for (int32_t d = 0; d < r; d++) {
            perm[d] = pv[d] < 0 ? pv[d] + r : pv[d];
            if (perm[d] < 0 || perm[d] >= r || seen[perm[d]]) return fail(b, "perm is not a permutation of the axes"), false;
            seen[perm[d]] = true;
        }
    } else {
        for (int32_t d = 0; d < r; d++) perm[d] = r - 1 - d;
    }
    dense_strides(&p->slots[sin], st);
    slot shape;
    shape_of(&shape, &n->outputs[0]);
    dnnl_dims_t dims, strides;
    for (int32_t d = 0; d < r; d++) dims[d] = p->slots[sin].dims[perm[d]], strides[d] = st[perm[d]];
    dnnl_memory_desc_t vmd;
    int32_t rr = r ? r : 1;
    if (!r) dims[0] = 1, strides[0] = 1;
    if (dnnl_memory_desc_init_by_strides(&vmd, rr, dims, dnnl_f32, strides) != dnnl_success) return fail(b, "bad transpose"), false;
    int32_t v = view_slot(p, sin, &shape, &vmd);
    if (v < 0) return fail(b, "out of memory"), false;
    /* no copy until a reader needs one: a MatMul reads the strided view
     * as it is, and a permutation that moves only 1-sized dims is plain */
    int32_t sd = slot_of(p, n->outputs[0].name);
    if (sd >= 0) return add_reorder(b, v, sd); /* a boundary output */
    p->slots[v].name = n->outputs[0].name;
    p->slots[v].lazy = p->slots[v].has_md;
    return true;
}

/* Slice with constant bounds and positive steps: a reorder from a strided
 * view of the input, which starts at the first element taken. */
static bool compile_slice(builder *b, int32_t sin) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[sin].rank;
    int64_t starts[MAXR], ends[MAXR], axes[MAXR], steps[MAXR];
    int32_t ns, ne, na = -1, nst = -1;
    if (n->opset >= 10) {
        ns = n->n_inputs > 1 ? const_ints(b, &n->inputs[1], starts, MAXR) : -1;
        ne = n->n_inputs > 2 ? const_ints(b, &n->inputs[2], ends, MAXR) : -1;
        if (n->n_inputs > 3 && n->inputs[3].name) na = const_ints(b, &n->inputs[3], axes, MAXR);
        if (n->n_inputs > 4 && n->inputs[4].name) nst = const_ints(b, &n->inputs[4], steps, MAXR);
        if ((n->n_inputs > 3 && n->inputs[3].name && na < 0) || (n->n_inputs > 4 && n->inputs[4].name && nst < 0))
            return fail(b, "axes and steps must be constants"), false;
    } else {
        const int64_t *v;
        int32_t c;
        ns = seam_node_attr_ints(n, "starts", &v, &c) && c <= MAXR ? (memcpy(starts, v, 8 * (size_t)c), c) : -1;
        ne = seam_node_attr_ints(n, "ends", &v, &c) && c <= MAXR ? (memcpy(ends, v, 8 * (size_t)c), c) : -1;
        if (seam_node_attr_ints(n, "axes", &v, &c) && c <= MAXR) memcpy(axes, v, 8 * (size_t)c), na = c;
    }
    if (ns < 0 || ne != ns) return fail(b, "starts and ends must be constants of one length"), false;
    if (na < 0) {
        na = ns;
        for (int32_t k = 0; k < ns; k++) axes[k] = k;
    }
    if (nst < 0) {
        nst = ns;
        for (int32_t k = 0; k < ns; k++) steps[k] = 1;
    }
    if (na != ns || nst != ns) return fail(b, "starts, ends, axes and steps differ in length"), false;
    int64_t first[MAXR] = {0}, stride_of[MAXR], st[MAXR];
    for (int32_t d = 0; d < r; d++) stride_of[d] = 1;
    for (int32_t k = 0; k < ns; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
        if (a < 0 || a >= r) return fail(b, "an axis is out of range"), false;
        if (steps[k] <= 0) return fail(b, "Slice with a step below 1 is not supported by dnnl"), false;
        int64_t dim = p->slots[sin].dims[a], f = starts[k] < 0 ? starts[k] + dim : starts[k];
        first[a] = f < 0 ? 0 : f > dim ? dim : f;
        stride_of[a] = steps[k];
    }
    plain_strides(&p->slots[sin], st);
    slot shape;
    shape_of(&shape, &n->outputs[0]);
    if (shape.rank != r) return fail(b, "the inferred output rank differs from the input's"), false;
    dnnl_dims_t dims, strides;
    int64_t offset = 0;
    for (int32_t d = 0; d < r; d++) {
        dims[d] = shape.dims[d], strides[d] = st[d] * stride_of[d];
        int64_t room = p->slots[sin].dims[d] - first[d]; /* elements from the first one taken */
        if (dims[d] > 0 && (room <= 0 || (dims[d] > 1 && stride_of[d] > (room - 1) / (dims[d] - 1))))
            return fail(b, "the inferred output shape does not fit the input"), false;
        offset += first[d] * st[d];
    }
    dnnl_memory_desc_t vmd;
    if (dnnl_memory_desc_init_by_strides(&vmd, r, dims, dnnl_f32, strides) != dnnl_success) return fail(b, "bad slice"), false;
    int32_t v = view_slot(p, sin, &shape, &vmd);
    if (v < 0) return fail(b, "out of memory"), false;
    p->slots[v].offset = offset * (int64_t)sizeof(float);
    /* like a Transpose: no copy until a reader needs a dense layout */
    int32_t sd = slot_of(p, n->outputs[0].name);
    if (sd >= 0) return add_reorder(b, v, sd); /* a boundary output */
    p->slots[v].name = n->outputs[0].name;
    p->slots[v].lazy = p->slots[v].has_md;
    return true;
}

/* The axes a Reduce* node reduces (attribute, or constant input 1 from
 * ReduceSum-13 and the others' opset 18), as a mask; all when none. */
static bool reduce_axes(builder *b, int32_t rank, bool *mask) {
    const seam_node_view *n = b->n;
    int64_t ax[MAXR];
    int32_t na = 0;
    const int64_t *v;
    if (seam_node_attr_ints(b->n, "axes", &v, &na)) {
        if (na > MAXR) return false;
        memcpy(ax, v, 8 * (size_t)na);
    } else if (n->n_inputs > 1 && n->inputs[1].name) {
        na = const_ints(b, &n->inputs[1], ax, MAXR);
        if (na < 0) return false;
    }
    for (int32_t d = 0; d < rank; d++) mask[d] = na == 0;
    for (int32_t k = 0; k < na; k++) {
        int64_t a = ax[k] < 0 ? ax[k] + rank : ax[k];
        if (a < 0 || a >= rank) return false;
        mask[a] = true;
    }
    return true;
}

/* ReduceMean/Sum/Max/Min: oneDNN's reduction into the kept-dims shape,
 * which is a view of the output when keepdims=0. */
static bool compile_reduce(builder *b, int32_t sin) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t r = p->slots[sin].rank;
    bool mask[MAXR];
    if (!reduce_axes(b, r, mask)) return fail(b, "axes must be constants within the input's rank"), false;
    slot kept = p->slots[sin];
    kept.has_md = false;
    for (int32_t d = 0; d < r; d++)
        if (mask[d]) kept.dims[d] = 1;
    int32_t sd = output_slot(b, &n->outputs[0]);
    if (sd < 0) return fail(b, "out of memory"), false;
    int32_t dv = view_slot(p, sd, &kept, NULL);
    if (dv < 0) return fail(b, "out of memory"), false;
    dnnl_memory_desc_t src, dst;
    md_of(&p->slots[sin], &src);
    md_of(&p->slots[dv], &dst);
    dnnl_alg_kind_t alg = is_op(n, "ReduceMean") ? dnnl_reduction_mean : is_op(n, "ReduceSum") ? dnnl_reduction_sum
                          : is_op(n, "ReduceMax") ? dnnl_reduction_max : dnnl_reduction_min;
    dnnl_reduction_desc_t rd;
    if (dnnl_reduction_desc_init(&rd, alg, &src, &dst, 0.0f, 0.0f) != dnnl_success) return fail(b, "oneDNN refuses this reduction"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, dv};
    return add_step(b, &rd, NULL, 2, kinds, slots);
}

static int32_t named_slot(builder *b, const char *name);

/* Layer normalization over the last axis, with optional scale and shift
 * (constant vectors): the LayerNormalization op, or the decomposed form
 * exporters write (see compile_layernorm_pattern). */
static bool layernorm_step(builder *b, int32_t sin, const char *scale, const char *shift, float eps,
                           const seam_value_info *out) {
    program *p = b->p;
    int32_t sc = scale ? named_slot(b, scale) : -1, sh = shift ? named_slot(b, shift) : -1;
    if ((scale && sc < 0) || (shift && sh < 0)) return fail(b, "scale and bias must be float32 constants"), false;
    int64_t c = p->slots[sin].dims[p->slots[sin].rank - 1];
    for (int32_t k = 0; k < 2; k++) {
        int32_t t = k ? sh : sc;
        if (t >= 0 && slot_numel(&p->slots[t]) != c) return fail(b, "scale and bias must have one value per normalized element"), false;
        if (t >= 0) { /* as a [C] vector, whatever rank the file gives */
            slot v = p->slots[t];
            v.rank = 1, v.dims[0] = c, v.has_md = false;
            if (k) sh = view_slot(p, sh, &v, NULL);
            else sc = view_slot(p, sc, &v, NULL);
            if ((k ? sh : sc) < 0) return fail(b, "out of memory"), false;
        }
    }
    dnnl_memory_desc_t src;
    md_of(&p->slots[sin], &src);
    unsigned flags = (sc >= 0 ? dnnl_use_scale : 0) | (sh >= 0 ? dnnl_use_shift : 0);
    dnnl_layer_normalization_desc_t ld;
    if (dnnl_layer_normalization_forward_desc_init(&ld, dnnl_forward_inference, &src, NULL, eps, flags) != dnnl_success)
        return fail(b, "oneDNN refuses this layer normalization"), false;
    int32_t sd = output_slot(b, out);
    if (sd < 0) return fail(b, "out of memory"), false;
    int32_t kinds[4] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[4] = {sin, sd};
    int32_t na = 2;
    if (sc >= 0) kinds[na] = DNNL_ARG_SCALE, slots[na++] = sc;
    if (sh >= 0) kinds[na] = DNNL_ARG_SHIFT, slots[na++] = sh;
    return add_step(b, &ld, NULL, na, kinds, slots);
}

/* The slot of a value known by name only: made earlier, or a constant
 * (with the constant's own shape). */
static int32_t named_slot(builder *b, const char *name) {
    int32_t s = slot_of(b->p, name);
    if (s >= 0) return s;
    seam_tensor_view c;
    if (!seam_subgraph_constant(b->sg, name, &c) || c.rank > MAXR) return -1;
    seam_value_info vi = {name, c.dtype, c.rank, c.dims, NULL};
    return input_slot(b, &vi);
}

static bool compile_layernorm(builder *b, int32_t sin) {
    const seam_node_view *n = b->n;
    float eps = 1e-5f;
    seam_node_attr_float(n, "epsilon", &eps);
    const char *scale = n->n_inputs > 1 ? n->inputs[1].name : NULL, *shift = n->n_inputs > 2 ? n->inputs[2].name : NULL;
    seam_value_info out = n->outputs[0];
    int64_t dims[MAXR];
    for (int32_t d = 0; d < out.rank; d++) dims[d] = out.dims[d];
    out.dims = dims;
    return layernorm_step(b, sin, scale, shift, eps, &out);
}

/* The readers of value `name` in the subgraph (at most max), or -1 when
 * it leaves the subgraph or has more readers. */
static int32_t readers_of(const seam_subgraph_view *sg, const char *name, int32_t *out, int32_t max) {
    for (int32_t k = 0; k < sg->n_outputs; k++)
        if (!strcmp(sg->outputs[k].name, name)) return -1;
    int32_t cnt = 0;
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(sg, i, &st);
        for (int32_t k = 0; k < m->n_inputs; k++)
            if (m->inputs[k].name && !strcmp(m->inputs[k].name, name)) {
                if (cnt == max) return -1;
                out[cnt++] = i;
                break;
            }
    }
    return cnt;
}

/* Node i of the subgraph if it is op `op` reading `name` (as input `pos`,
 * or either when pos < 0), with the output name copied to out_name. */
static bool node_is(const seam_subgraph_view *sg, int32_t i, const char *op, const char *name, int32_t pos,
                    const char **out_name, const char **other) {
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(sg, i, &st);
    if (!is_op(m, op) || m->n_outputs < 1 || !m->outputs[0].name) return false;
    int32_t at = -1;
    for (int32_t k = 0; k < m->n_inputs && k < 2; k++)
        if (m->inputs[k].name && !strcmp(m->inputs[k].name, name) && (pos < 0 || pos == k)) at = k;
    if (at < 0) return false;
    if (other) *other = m->n_inputs > 1 && m->inputs[1 - at].name ? m->inputs[1 - at].name : NULL;
    *out_name = m->outputs[0].name;
    return true;
}

static bool scalar_const(builder *b, const char *name, float *v) {
    seam_tensor_view c;
    if (!name || !seam_subgraph_constant(b->sg, name, &c) || c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes != 4) return false;
    memcpy(v, c.data, 4);
    return true;
}

/* Whether value `name` is a float32 vector of c values available now: a
 * constant, or a value made earlier or given to the subgraph (the scale of
 * a layer norm, which the primitive reads at run time). */
static bool vector_of(builder *b, const char *name, int64_t c) {
    if (!name) return false;
    int32_t s = slot_of(b->p, name);
    if (s >= 0) return slot_numel(&b->p->slots[s]) == c && !b->p->slots[s].has_md;
    seam_tensor_view t;
    return seam_subgraph_constant(b->sg, name, &t) && t.dtype == SEAM_DTYPE_FLOAT32 && t.nbytes == 4 * (size_t)c;
}

/* The decomposed layer norm exporters write (torch's LayerNorm before
 * opset 17):
 *     mean = ReduceMean(x, last axis); d = Sub(x, mean)
 *     var = ReduceMean(Pow(d, 2)); y = Div(d, Sqrt(Add(var, eps)))
 *     [y = Add(Mul(y, gamma), beta)]
 * becomes one layer normalization. Called on the first ReduceMean; false
 * (and no error) when the nodes do not form the pattern. */
static bool compile_layernorm_pattern(builder *b, bool *fused, int32_t sin) {
    const seam_subgraph_view *sg = b->sg;
    const seam_node_view *n = b->n;
    int32_t r = b->p->slots[sin].rank;
    bool mask[MAXR];
    int64_t keep = 1;
    seam_node_attr_int(n, "keepdims", &keep);
    if (!b->fuse || r < 1 || !keep || !reduce_axes(b, r, mask) || !mask[r - 1]) return false;
    for (int32_t d = 0; d < r - 1; d++)
        if (mask[d]) return false;
    const char *x = n->inputs[0].name, *mean = n->outputs[0].name, *d, *sq, *var, *ve, *sd, *y, *other;
    int32_t nodes[9], cnt = 0, rd[2];
    float pw, eps;
    nodes[cnt++] = b->index;
    /* mean -> Sub(x, mean) */
    if (readers_of(sg, mean, rd, 1) != 1 || !node_is(sg, rd[0], "Sub", mean, 1, &d, &other) || strcmp(other, x)) return false;
    nodes[cnt++] = rd[0];
    /* d -> Pow(d, 2) and Div(d, ...) */
    int32_t dr[2];
    if (readers_of(sg, d, dr, 2) != 2) return false;
    int32_t ipow = node_is(sg, dr[0], "Pow", d, 0, &sq, &other) ? 0 : node_is(sg, dr[1], "Pow", d, 0, &sq, &other) ? 1 : -1;
    if (ipow < 0 || !scalar_const(b, other, &pw) || pw != 2.0f) return false;
    int32_t idiv = dr[1 - ipow];
    nodes[cnt++] = dr[ipow];
    /* Pow -> ReduceMean (same axes) -> Add(eps) -> Sqrt -> the Div */
    int32_t k1;
    if (readers_of(sg, sq, &k1, 1) != 1 || !node_is(sg, k1, "ReduceMean", sq, 0, &var, &other)) return false;
    {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(sg, k1, &st);
        int64_t kd = 1;
        seam_node_attr_int(m, "keepdims", &kd);
        const int64_t *ax;
        int32_t na;
        if (!kd || !seam_node_attr_ints(m, "axes", &ax, &na) || na != 1 || (ax[0] != -1 && ax[0] != r - 1)) return false;
    }
    nodes[cnt++] = k1;
    if (readers_of(sg, var, &k1, 1) != 1 || !node_is(sg, k1, "Add", var, -1, &ve, &other) || !scalar_const(b, other, &eps)) return false;
    nodes[cnt++] = k1;
    if (readers_of(sg, ve, &k1, 1) != 1 || !node_is(sg, k1, "Sqrt", ve, 0, &sd, &other)) return false;
    nodes[cnt++] = k1;
    if (readers_of(sg, sd, &k1, 1) != 1 || k1 != idiv || !node_is(sg, k1, "Div", sd, 1, &y, &other) || strcmp(other, d)) return false;
    nodes[cnt++] = k1;
    /* optional scale and shift */
    const char *scale = NULL, *shift = NULL, *end = y, *o;
    int64_t ch = b->p->slots[sin].dims[r - 1];
    if (readers_of(sg, y, &k1, 1) == 1 && node_is(sg, k1, "Mul", y, -1, &o, &other) && vector_of(b, other, ch)) {
        scale = other, end = o, nodes[cnt++] = k1;
        if (readers_of(sg, end, &k1, 1) == 1 && node_is(sg, k1, "Add", end, -1, &o, &other) && vector_of(b, other, ch))
            shift = other, end = o, nodes[cnt++] = k1;
    }
    /* the output's value info, from the last node */
    seam_value_info out = {0};
    int64_t dims[MAXR];
    {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(sg, nodes[cnt - 1], &st);
        out = m->outputs[0];
        if (out.rank != r) return false;
        for (int32_t k = 0; k < out.rank; k++) dims[k] = out.dims[k];
        out.dims = dims;
    }
    (void)end;
    b->n = seam_subgraph_node(sg, b->index, b->storage);
    for (int32_t k = 0; k < r; k++)
        if (out.dims[k] != b->p->slots[sin].dims[k]) return false;
    if (!layernorm_step(b, sin, scale, shift, eps, &out)) return false;
    for (int32_t k = 0; k < cnt; k++) fused[nodes[k]] = true;
    return true;
}

/* A Div or Mul by a constant scalar whose only reader is a MatMul (the
 * 1/sqrt(d) of attention): no step; its output is a view of its input
 * carrying the factor, which the MatMul applies to its result as a post-op
 * ((A/c) B = (A B)/c). */
static bool defer_scale(builder *b, int32_t sin) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    if (!b->fuse || n->n_inputs != 2 || !n->inputs[1].name || p->slots[sin].scale != 1.0f) return false;
    if (!full_shape(&n->inputs[0], &n->outputs[0])) return false;
    float c;
    if (!scalar_const(b, n->inputs[1].name, &c) || c == 0.0f || !isfinite(c)) return false;
    float f = is_op(n, "Div") ? 1.0f / c : c;
    const char *out = n->outputs[0].name;
    int32_t rank = n->outputs[0].rank, r = sole_reader(b->sg, out); /* (n is stale after this) */
    seam_node_view st;
    const seam_node_view *m = r >= 0 ? seam_subgraph_node(b->sg, r, &st) : NULL;
    bool ok = m && is_op(m, "MatMul") && m->n_inputs == 2 && m->outputs[0].rank == rank &&
              m->inputs[0].rank == rank && m->inputs[1].rank == rank && rank >= 2 &&
              strcmp(m->inputs[0].name, m->inputs[1].name);
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (!ok) return false;
    slot shape = p->slots[sin];
    int32_t v = view_slot(p, sin, &shape, shape.has_md ? &shape.md : NULL);
    if (v < 0) return fail(b, "out of memory"), false;
    p->slots[v].name = out;
    p->slots[v].lazy = p->slots[sin].lazy;
    p->slots[v].scale = f;
    return true;
}

static bool scalar_const(builder *b, const char *name, float *v);

/* MatMul and Gemm (transB, bias) on oneDNN's matmul, with B read in place
 * (a strided view when transposed) and the post-op chain: bias Adds,
 * residual Adds (a sum, in place when it may be), activations. */
static bool compile_matmul(builder *b, bool *fused, int32_t sin) {
    program *p = b->p;
    chain c;
    collect_chain(b, &b->n->outputs[0], true, &c);
    const seam_node_view *n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    dnnl_memory_desc_t src, w, bias, dst;
    int32_t r = n->outputs[0].rank;
    int32_t sw = input_slot(b, &n->inputs[1]);
    if (sw >= 0 && !(p->slots[sw].lazy && p->slots[sw].rank == r)) sw = as_plain(b, sw);
    if (sw < 0) return fail(b, "input 1 is not available"), false;
    if (p->slots[sin].lazy && p->slots[sin].rank != r) sin = as_plain(b, sin);
    if (sin < 0) return fail(b, "input 0 is not available"), false;
    float prescale = p->slots[sin].scale * p->slots[sw].scale;
    /* Rows times 2-D constant weights (a Linear layer on [B, S, K]) run as
     * one 2-D product [B*S, K] x [K, N]: oneDNN 2.6 keeps weights packed
     * only for 2-D products. The chain's broadcast operands must then be
     * one row (a bias). */
    int64_t n_cols = n->outputs[0].rank >= 1 ? n->outputs[0].dims[r - 1] : 0;
    bool flat = b->fuse && p->slots[sw].constant && p->slots[sw].rank == 2 && r > 2 && p->slots[sin].rank == r &&
                !p->slots[sin].has_md && n_cols > 0;
    for (int32_t k = 0; flat && k < c.n; k++)
        if (c.is_binary[k] && !c.full[k]) {
            const slot *o = &p->slots[c.operand[k]];
            int64_t cnt = slot_numel(o);
            flat = o->rank <= 2 && (cnt == 1 || (cnt == n_cols && o->dims[o->rank - 1] == n_cols));
        }
    if (flat) {
        int64_t rows = 1;
        for (int32_t d = 0; d < r - 1; d++) rows *= n->outputs[0].dims[d];
        c.prim_rank = 2, c.prim_dims[0] = rows, c.prim_dims[1] = n_cols;
        c.reshaped = true;
        r = 2;
    }
    slot wv = p->slots[sw];
    int64_t tb = 0;
    if (is_op(n, "Gemm")) seam_node_attr_int(n, "transB", &tb);
    /* B as stored (plain, or a strided view of a Transpose), its batch dims
     * right-aligned to the output's rank, transposed when transB */
    dnnl_dims_t wd, wst;
    int64_t vst[MAXR];
    dense_strides(&wv, vst);
    int32_t shift = r - wv.rank;
    for (int32_t d = 0; d < r; d++) {
        wd[d] = d >= shift ? wv.dims[d - shift] : 1;
        wst[d] = d >= shift ? vst[d - shift] : wd[d] == 1 ? 1 : 0;
    }
    for (int32_t d = shift - 1; d >= 0; d--) wst[d] = wst[d + 1] * wd[d + 1]; /* 1-sized: any stride */
    if (tb) {
        int64_t t = wd[r - 1]; wd[r - 1] = wd[r - 2]; wd[r - 2] = t;
        t = wst[r - 1]; wst[r - 1] = wst[r - 2]; wst[r - 2] = t;
    }
    if (dnnl_memory_desc_init_by_strides(&w, r, wd, dnnl_f32, wst) != dnnl_success) return fail(b, "bad B layout"), false;
    int32_t a = view_slot(p, sw, &wv, &w);
    if (a < 0) return fail(b, "out of memory"), false;
    /* constant weights go in the layout the primitive prefers, reordered
     * once now (as for convolutions): no packing of B at every run */
    bool packed = p->slots[sw].constant;
    dnnl_memory_desc_t any_w;
    if (dnnl_memory_desc_init_by_tag(&any_w, w.ndims, w.dims, dnnl_f32, dnnl_format_tag_any) != dnnl_success) packed = false;
    const dnnl_memory_desc_t *wd_for = packed ? &any_w : &w;
    /* A with batch dims right-aligned too */
    slot av = p->slots[sin];
    if (flat) {
        av.rank = 2, av.dims[0] = c.prim_dims[0], av.dims[1] = p->slots[sin].dims[p->slots[sin].rank - 1];
    } else if (av.rank < r) {
        int32_t sh = r - av.rank;
        for (int32_t d = r - 1; d >= 0; d--) av.dims[d] = d >= sh ? p->slots[sin].dims[d - sh] : 1;
        av.rank = r;
    }
    md_of(&av, &src);
    int32_t sa = view_slot(p, sin, &av, av.has_md ? &av.md : NULL);
    if (sa < 0) return fail(b, "out of memory"), false;
    int32_t sb = is_op(n, "Gemm") && n->n_inputs > 2 && n->inputs[2].name ? input_slot(b, &n->inputs[2]) : -1;
    if (sb >= 0) {
        slot bv = p->slots[sb];
        bv.rank = 2, bv.dims[0] = 1, bv.dims[1] = p->slots[sb].dims[0];
        md_of(&bv, &bias);
        int32_t ab = view_slot(p, sb, &bv, NULL);
        if (ab < 0) return fail(b, "out of memory"), false;
        sb = ab;
    }
    /* A Transpose alone reading the product that keeps the last axis (the
     * attention heads put back side by side): the product is written
     * through a strided view of the Transpose's output, which costs
     * nothing then. */
    int32_t tnode = -1;
    seam_value_info tout;
    int64_t tdims[MAXR];
    dnnl_memory_desc_t tmd;
    if (!c.n && b->fuse && !flat) {
        const char *out_name = n->outputs[0].name;
        int32_t t = sole_reader(b->sg, out_name);
        seam_node_view st;
        const seam_node_view *m = t >= 0 ? seam_subgraph_node(b->sg, t, &st) : NULL;
        const int64_t *perm;
        int32_t np = 0;
        if (m && is_op(m, "Transpose") && seam_node_attr_ints(m, "perm", &perm, &np) && np == r && perm[r - 1] == r - 1 &&
            m->outputs[0].rank == r) {
            tout = m->outputs[0];
            for (int32_t d = 0; d < r; d++) tdims[d] = tout.dims[d];
            tout.dims = tdims;
            int64_t tst[MAXR];
            dnnl_dims_t pd_dims, pd_strides;
            int64_t acc = 1;
            for (int32_t d = r - 1; d >= 0; d--) tst[d] = acc, acc *= tdims[d];
            bool ok = true, seen[MAXR] = {false};
            for (int32_t j = 0; j < r; j++) {
                int64_t ax = perm[j] < 0 ? perm[j] + r : perm[j];
                if (ax < 0 || ax >= r || seen[ax]) ok = false;
                else pd_strides[ax] = tst[j], pd_dims[ax] = tdims[j], seen[ax] = true;
            }
            if (ok && dnnl_memory_desc_init_by_strides(&tmd, r, pd_dims, dnnl_f32, pd_strides) == dnnl_success) tnode = t;
        }
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    }
    const seam_value_info *result = c.n ? &c.out : &n->outputs[0];
    slot rs; /* the product's own shape (the chain may end in another) */
    shape_of(&rs, &n->outputs[0]);
    if (flat) rs.rank = 2, rs.dims[0] = c.prim_dims[0], rs.dims[1] = c.prim_dims[1];
    md_of(&rs, &dst);
    dnnl_matmul_desc_t md;
    if (tnode >= 0 && dnnl_matmul_desc_init(&md, &src, wd_for, sb >= 0 ? &bias : NULL, &tmd) == dnnl_success) {
        dnnl_primitive_desc_t probe;
        if (dnnl_primitive_desc_create(&probe, &md, g_ctx.user_scratch, g_ctx.engine, NULL) == dnnl_success) {
            dnnl_primitive_desc_destroy(probe);
            dst = tmd;
        } else {
            tnode = -1;
        }
    } else {
        tnode = -1;
    }
    if (dnnl_matmul_desc_init(&md, &src, wd_for, sb >= 0 ? &bias : NULL, &dst) != dnnl_success)
        return fail(b, "oneDNN refuses this matrix product"), false;
    int32_t kinds[4 + MAX_CHAIN] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS}, slots[4 + MAX_CHAIN];
    int32_t n_args = sb >= 0 ? 4 : 3, sum_from = -1;
    c.prescale = prescale;
    dnnl_primitive_attr_t attr = NULL;
    if (!chain_attr(b, &c, &dst, &attr, kinds, slots, &n_args, &sum_from)) return false;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_primitive_desc_create(&pd, &md, attr ? attr : g_ctx.user_scratch, g_ctx.engine, NULL) != dnnl_success) {
        pd = NULL;
        if (c.n) { /* oneDNN cannot fuse these: they run on their own (the factor stays) */
            c.n = 0, c.reshaped = flat, n_args = sb >= 0 ? 4 : 3, result = &n->outputs[0];
            if (attr) dnnl_primitive_attr_destroy(attr);
            attr = NULL;
            if (!chain_attr(b, &c, &dst, &attr, kinds, slots, &n_args, &sum_from) ||
                dnnl_primitive_desc_create(&pd, &md, attr ? attr : g_ctx.user_scratch, g_ctx.engine, NULL) != dnnl_success)
                pd = NULL;
        }
    }
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!pd) return fail(b, "oneDNN refuses this matrix product"), false;
    take_chain(&c, fused);
    int32_t final_slot = -1;
    int32_t sd;
    if (tnode >= 0) { /* the Transpose's output, written through a strided view */
        int32_t os = output_slot(b, &tout);
        sd = os >= 0 ? view_slot(p, os, &rs, &dst) : -1;
        fused[tnode] = true;
    } else if (c.reshaped) {
        sd = reshaped_dst(b, &c, sum_from, result, &rs);
    } else {
        sd = sum_from >= 0 ? sum_dst(b, &c, sum_from, result, &dst, &final_slot) : result_slot(b, result, &dst, &final_slot);
    }
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return fail(b, "out of memory"), false;
    }
    if (packed) {
        a = resident_copy(b, a, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
        if (a < 0) {
            dnnl_primitive_desc_destroy(pd);
            return fail(b, "could not reorder the weights"), false;
        }
    }
    slots[0] = sa, slots[1] = a, slots[2] = sd;
    if (sb >= 0) slots[3] = sb;
    bool ok = add_prim(b, pd, n_args, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (ok && final_slot >= 0) ok = add_reorder(b, sd, final_slot);
    return ok;
}

/* ConvTranspose as oneDNN's deconvolution. ONNX keeps the weights as
 * [C_in, C_out/group, k...]; oneDNN wants [group, OC/group, IC/group, k...]:
 * a strided view of the same bytes, reordered once into the layout the
 * primitive picks. The right pads follow from the known output size (they
 * absorb output_padding and output_shape). */
static bool compile_convtranspose(builder *b) {
    program *p = b->p;
    const seam_node_view *n = b->n;
    int32_t sin = input_slot(b, &n->inputs[0]);
    if (sin >= 0) sin = as_plain(b, sin);
    int32_t sw = input_slot(b, &n->inputs[1]);
    if (sin < 0 || sw < 0) return fail(b, "input or weights not available"), false;
    int32_t nsp = n->inputs[0].rank - 2;
    int64_t group = 1, str[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
    seam_node_attr_int(n, "group", &group);
    spatial_attrs(n, nsp, str, dil);
    const int64_t *wd = n->inputs[1].dims;
    int64_t cin = n->inputs[0].dims[1], cout = n->outputs[0].dims[1];
    if (group < 1 || cin % group || cout % group || wd[0] != cin || wd[1] * group != cout) return fail(b, "weights do not match the channels and group"), false;
    int64_t kk = 1, ocg = cout / group, icg = cin / group;
    for (int32_t d = 0; d < nsp; d++) kk *= wd[2 + d];
    slot ws;
    memset(&ws, 0, sizeof(ws));
    ws.name = "(deconvolution weights)";
    dnnl_dims_t dims, strides;
    int32_t r = 0;
    if (group > 1) dims[r] = group, strides[r++] = icg * ocg * kk;
    dims[r] = ocg, strides[r++] = kk;
    dims[r] = icg, strides[r++] = ocg * kk;
    int64_t acc = 1;
    for (int32_t d = nsp - 1; d >= 0; d--) dims[r + d] = wd[2 + d], strides[r + d] = acc, acc *= wd[2 + d];
    r += nsp;
    ws.rank = r;
    for (int32_t d = 0; d < r; d++) ws.dims[d] = dims[d];
    dnnl_memory_desc_t wmd, src, bias, any_w, any_dst;
    if (dnnl_memory_desc_init_by_strides(&wmd, r, dims, dnnl_f32, strides) != dnnl_success) return fail(b, "bad weights"), false;
    int32_t wv = view_slot(p, sw, &ws, &wmd);
    if (wv < 0) return fail(b, "out of memory"), false;
    md_of(&p->slots[sin], &src);
    int32_t sb = n->n_inputs > 2 && n->inputs[2].name ? input_slot(b, &n->inputs[2]) : -1;
    if (n->n_inputs > 2 && n->inputs[2].name && sb < 0) return fail(b, "the bias is not available"), false;
    if (sb >= 0) md_of(&p->slots[sb], &bias);
    dnnl_dims_t pl, pr, sd_, dl;
    const int64_t *pads;
    int32_t np = 0;
    const char *ap = "NOTSET";
    seam_node_attr_string(n, "auto_pad", &ap);
    if (!seam_node_attr_ints(n, "pads", &pads, &np) || strcmp(ap, "NOTSET")) np = 0;
    for (int32_t d = 0; d < nsp; d++) {
        pl[d] = np == 2 * nsp ? pads[d] : 0;
        pr[d] = (n->inputs[0].dims[2 + d] - 1) * str[d] + (wd[2 + d] - 1) * dil[d] + 1 - pl[d] - n->outputs[0].dims[2 + d];
        if (pr[d] < 0) return fail(b, "output padding beyond the right pad is not supported by dnnl"), false;
        sd_[d] = str[d], dl[d] = dil[d] - 1;
    }
    dnnl_memory_desc_init_by_tag(&any_w, r, dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_deconvolution_desc_t dd;
    dnnl_primitive_desc_t pd;
    if (dnnl_dilated_deconvolution_forward_desc_init(&dd, dnnl_forward_inference, dnnl_deconvolution_direct, &src, &any_w,
                                                     sb >= 0 ? &bias : NULL, &any_dst, sd_, dl, pl, pr) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &dd, g_ctx.user_scratch, g_ctx.engine, NULL) != dnnl_success)
        return fail(b, "oneDNN refuses this transposed convolution"), false;
    int32_t wt = resident_copy(b, wv, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    int32_t final_slot = -1;
    int32_t sd = wt >= 0 ? result_slot(b, &n->outputs[0], dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &final_slot) : -1;
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return fail(b, "could not lay out the transposed convolution's tensors"), false;
    }
    int32_t kinds[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS}, slots[4] = {sin, wt, sd, sb};
    bool ok = add_prim(b, pd, sb >= 0 ? 4 : 3, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    if (ok && final_slot >= 0) ok = add_reorder(b, sd, final_slot);
    return ok;
}

/* GELU as exporters write it, x * 0.5 * (1 + Erf(x / sqrt(2))) (the 0.5
 * on either side, Div by sqrt(2) or Mul by 1/sqrt(2)), as one gelu_erf
 * eltwise. Called on the Div/Mul feeding the Erf; false when the nodes do
 * not form the pattern. */
static bool compile_gelu_pattern(builder *b, bool *fused, int32_t sin) {
    const seam_subgraph_view *sg = b->sg;
    const seam_node_view *n = b->n;
    float c;
    if (n->n_inputs != 2 || !n->inputs[1].name || !scalar_const(b, n->inputs[1].name, &c)) return false;
    float inv = is_op(n, "Div") ? 1.0f / c : c;
    if (fabsf(inv - 0.70710678f) > 1e-4f) return false;
    const char *x = n->inputs[0].name, *dv = n->outputs[0].name, *e, *o, *h, *y, *other;
    int32_t nodes[5], cnt = 0, k;
    nodes[cnt++] = b->index;
    if (readers_of(sg, dv, &k, 1) != 1 || !node_is(sg, k, "Erf", dv, 0, &e, &other)) return false;
    nodes[cnt++] = k;
    float one, half;
    if (readers_of(sg, e, &k, 1) != 1 || !node_is(sg, k, "Add", e, -1, &o, &other) || !scalar_const(b, other, &one) || one != 1.0f)
        return false;
    nodes[cnt++] = k;
    /* (1 + erf) * x * 0.5 in either order */
    if (readers_of(sg, o, &k, 1) != 1 || !node_is(sg, k, "Mul", o, -1, &h, &other)) return false;
    nodes[cnt++] = k;
    bool have_x = other && !strcmp(other, x), have_half = scalar_const(b, other, &half) && half == 0.5f;
    if (!have_x && !have_half) return false;
    if (readers_of(sg, h, &k, 1) != 1 || !node_is(sg, k, "Mul", h, -1, &y, &other)) return false;
    if (have_x ? !(scalar_const(b, other, &half) && half == 0.5f) : !(other && !strcmp(other, x))) return false;
    nodes[cnt++] = k;
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(sg, k, &st);
    seam_value_info out = m->outputs[0];
    int64_t dims[MAXR];
    for (int32_t d = 0; d < out.rank && d < MAXR; d++) dims[d] = out.dims[d];
    out.dims = dims;
    b->n = seam_subgraph_node(sg, b->index, b->storage);
    if (!full_shape(&out, &b->n->inputs[0])) return false;
    program *p = b->p;
    dnnl_memory_desc_t src;
    md_of(&p->slots[sin], &src);
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_t pd;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_gelu_erf, &src, 0.0f, 0.0f) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &ed, g_ctx.user_scratch, g_ctx.engine, NULL) != dnnl_success)
        return false;
    for (int32_t j = 0; j < cnt; j++) fused[nodes[j]] = true;
    return layout_step(b, pd, sin, &out);
}

static bool compile_node(builder *b, int32_t i, bool *fused) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    if (fused[i]) return true;
    if (IN_LIST(n, view_ops)) { /* same bytes, new shape: an alias slot */
        int32_t in = input_slot(b, &n->inputs[0]);
        slot shape;
        memset(&shape, 0, sizeof(shape));
        shape.rank = n->outputs[0].rank;
        for (int32_t d = 0; d < shape.rank; d++) shape.dims[d] = n->outputs[0].dims[d];
        /* a strided view (a Slice, a Transpose) stays one when the new shape
         * only splits or merges dims its strides allow */
        dnnl_memory_desc_t smd;
        bool strided = in >= 0 && p->slots[in].lazy && p->slots[in].scale == 1.0f && reshape_view(&p->slots[in], &shape, &smd);
        if (in >= 0 && !strided) in = as_plain(b, in);
        if (in < 0) return fail(b, "its input is not available"), false;
        int32_t v = view_slot(p, in, &shape, strided ? &smd : NULL);
        if (v < 0) return fail(b, "out of memory"), false;
        int32_t s = slot_of(p, n->outputs[0].name);
        if (s >= 0) return add_reorder(b, v, s); /* a boundary output: a copy */
        p->slots[v].name = n->outputs[0].name;
        p->slots[v].lazy = p->slots[v].has_md;
        return true;
    }
    dnnl_memory_desc_t src, dst;
    int32_t sin = input_slot(b, &n->inputs[0]);
    if (sin < 0) return fail(b, "input 0 is neither made earlier nor a constant"), false;
    /* (pattern matchers look at other nodes, which invalidates n: fetch
     * it again after each) */
    if ((is_op(n, "Div") || is_op(n, "Mul")) && b->fuse && !p->slots[sin].lazy && compile_gelu_pattern(b, fused, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if ((is_op(n, "Div") || is_op(n, "Mul")) && defer_scale(b, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (p->slots[sin].lazy && !is_op(n, "MatMul") && !is_op(n, "Transpose")) sin = as_plain(b, sin);
    if (sin < 0) return fail(b, "could not copy input 0 to a dense layout"), false;
    md_of(&p->slots[sin], &src);
    if (is_op(n, "Conv")) return compile_conv(b, fused);
    if (is_op(n, "ConvTranspose")) return compile_convtranspose(b);
    if (is_op(n, "Erf")) return fail(b, "Erf outside the GELU pattern x * 0.5 * (1 + Erf(x / sqrt(2)))"), false;
    /* An activation or a same-shape binary on a convolution's blocked output
     * stays in that layout (the residual Add of a ResNet, the Relu after
     * it): no reorder to plain and back. */
    if (p->slots[sin].has_md && (IN_LIST(n, eltwise_ops) || IN_LIST(n, binary_ops))) {
        int32_t r = blocked_step(b, n, sin);
        if (r < 0) return false;
        if (r > 0) return true;
    }
    /* a Concat of inputs in oneDNN's layouts (the branches of an inception
     * block, a densenet's features) stays in them: dst takes the layout
     * oneDNN picks from its inputs */
    if (is_op(n, "Concat") && n->n_inputs <= MAX_ARGS - 2 && p->slots[sin].has_md && !p->slots[sin].lazy) {
        int64_t axis = 0;
        seam_node_attr_int(n, "axis", &axis);
        if (axis < 0) axis += n->inputs[0].rank;
        int32_t cnt = n->n_inputs, kinds[MAX_ARGS], slots[MAX_ARGS];
        dnnl_memory_desc_t mds[MAX_ARGS], any_dst;
        bool ok = true;
        for (int32_t k = 0; ok && k < cnt; k++) {
            int32_t s2 = input_slot(b, &n->inputs[k]);
            if (s2 >= 0 && p->slots[s2].lazy) s2 = as_plain(b, s2);
            ok = s2 >= 0;
            if (ok) md_of(&p->slots[s2], &mds[k]), kinds[k] = DNNL_ARG_MULTIPLE_SRC + k, slots[k] = s2;
        }
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
        dnnl_primitive_desc_t pd;
        if (ok && dnnl_memory_desc_init_by_tag(&any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
            dnnl_concat_primitive_desc_create(&pd, &any_dst, cnt, (int)axis, mds, g_ctx.user_scratch, g_ctx.engine) == dnnl_success) {
            const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
            int32_t final_slot = -1;
            int32_t sd = result_slot(b, &n->outputs[0], dmd, &final_slot);
            if (sd < 0) {
                dnnl_primitive_desc_destroy(pd);
                return fail(b, "out of memory"), false;
            }
            kinds[cnt] = DNNL_ARG_DST, slots[cnt] = sd;
            ok = add_prim(b, pd, cnt + 1, kinds, slots);
            dnnl_primitive_desc_destroy(pd);
            if (ok && final_slot >= 0) ok = add_reorder(b, sd, final_slot);
            return ok;
        }
        if (!ok) return fail(b, "an input is not available"), false;
        /* else the plain concat below */
    }
    /* pools and batch norm work in the layout their input has */
    if (is_op(n, "MaxPool") || is_op(n, "AveragePool") || is_op(n, "GlobalAveragePool") || is_op(n, "GlobalMaxPool")) {
        int32_t nsp = n->inputs[0].rank - 2;
        bool global = n->op_type[0] == 'G';
        int64_t str[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, in[3] = {0}, out[3] = {0}, kern[3] = {0};
        spatial_attrs(n, nsp, str, dil);
        const int64_t *ks;
        int32_t nk = 0;
        if (!global && (!seam_node_attr_ints(n, "kernel_shape", &ks, &nk) || nk != nsp)) return fail(b, "bad kernel_shape"), false;
        for (int32_t d = 0; d < nsp; d++) {
            in[d] = n->inputs[0].dims[2 + d], out[d] = n->outputs[0].dims[2 + d];
            kern[d] = global ? in[d] : ks[d];
            if (global) str[d] = 1, dil[d] = 1;
        }
        dnnl_dims_t pl, pr, strides, kernel, dilation;
        if (global) for (int32_t d = 0; d < nsp; d++) pl[d] = pr[d] = 0;
        else pads_of(n, nsp, in, out, kern, str, dil, pl, pr);
        for (int32_t d = 0; d < nsp; d++) strides[d] = str[d], kernel[d] = kern[d], dilation[d] = dil[d] - 1;
        int64_t cip = 0;
        seam_node_attr_int(n, "count_include_pad", &cip);
        dnnl_alg_kind_t alg = strstr(n->op_type, "Max") ? dnnl_pooling_max : cip ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
        dnnl_memory_desc_t any_dst;
        dnnl_memory_desc_init_by_tag(&any_dst, src.ndims, n->outputs[0].dims, dnnl_f32, dnnl_format_tag_any);
        dnnl_pooling_v2_desc_t pld;
        dnnl_primitive_desc_t pd;
        if (dnnl_pooling_v2_forward_desc_init(&pld, dnnl_forward_inference, alg, &src, &any_dst, strides, kernel, dilation, pl, pr) != dnnl_success ||
            dnnl_primitive_desc_create(&pd, &pld, g_ctx.user_scratch, g_ctx.engine, NULL) != dnnl_success)
            return fail(b, "oneDNN refuses this pooling"), false;
        return layout_step(b, pd, sin, &n->outputs[0]);
    }
    if (is_op(n, "BatchNormalization")) {
        int32_t sc = input_slot(b, &n->inputs[1]), sh = input_slot(b, &n->inputs[2]);
        int32_t mn = input_slot(b, &n->inputs[3]), vr = input_slot(b, &n->inputs[4]);
        if (sc < 0 || sh < 0 || mn < 0 || vr < 0) return fail(b, "scale, B, mean and var must be constants"), false;
        float eps = 1e-5f;
        seam_node_attr_float(n, "epsilon", &eps);
        dnnl_batch_normalization_desc_t bd;
        if (dnnl_batch_normalization_forward_desc_init(&bd, dnnl_forward_inference, &src, eps,
                                                       dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift) != dnnl_success)
            return fail(b, "oneDNN refuses this batch normalization"), false;
        dnnl_primitive_desc_t pd;
        if (dnnl_primitive_desc_create(&pd, &bd, g_ctx.user_scratch, g_ctx.engine, NULL) != dnnl_success)
            return fail(b, "oneDNN refuses this batch normalization"), false;
        int32_t extra_kinds[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE}, extra[4] = {sc, sh, mn, vr};
        return layout_step_with(b, pd, sin, &n->outputs[0], 4, extra_kinds, extra);
    }
    /* every other op works in the plain layout: a convolution's blocked
     * output is reordered back first (once per value) */
    if (!p->slots[sin].lazy) sin = as_plain(b, sin);
    if (sin < 0) return fail(b, "could not reorder input 0 to the plain layout"), false;
    md_of(&p->slots[sin], &src);
    if (is_op(n, "Gemm") || is_op(n, "MatMul")) return compile_matmul(b, fused, sin);
    if (is_op(n, "Transpose")) return compile_transpose(b, sin);
    if (is_op(n, "Slice")) return compile_slice(b, sin);
    if (is_op(n, "ReduceMean") && compile_layernorm_pattern(b, fused, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (IN_LIST(n, reduce_ops)) return compile_reduce(b, sin);
    if (is_op(n, "LayerNormalization")) return compile_layernorm(b, sin);
    int32_t sd = output_slot(b, &n->outputs[0]);
    if (sd < 0) return fail(b, "out of memory"), false;
    md_of(&p->slots[sd], &dst);
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (IN_LIST(n, eltwise_ops)) {
        if (!eltwise_of(n, b->sg, &alg, &alpha, &beta)) return fail(b, "not expressible as one oneDNN eltwise (e.g. Clip with a non-constant bound)"), false;
        dnnl_eltwise_desc_t ed;
        if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &src, alpha, beta) != dnnl_success)
            return fail(b, "oneDNN refuses this eltwise"), false;
        int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
        dnnl_primitive_attr_t clip = clips_after(n) ? clip01_attr() : NULL;
        if (clips_after(n) && !clip) return fail(b, "out of memory"), false;
        bool ok = add_step(b, &ed, clip, 2, kinds, slots);
        if (clip) dnnl_primitive_attr_destroy(clip);
        return ok;
    }
    if (IN_LIST(n, binary_ops)) {
        alg = binary_alg(n);
        /* oneDNN broadcasts the second operand only: a commutative op whose
         * first operand broadcasts takes its operands the other way round */
        int32_t i1 = 1;
        if (!full_shape(&n->inputs[0], &n->outputs[0])) {
            if (!commutative(n)) return fail(b, "broadcasting input 0 is not supported"), false;
            sin = input_slot(b, &n->inputs[1]);
            if (sin >= 0) sin = as_plain(b, sin);
            if (sin < 0) return fail(b, "input 1 is not available"), false;
            md_of(&p->slots[sin], &src);
            i1 = 0;
        }
        int32_t s1 = input_slot(b, &n->inputs[i1]);
        if (s1 >= 0) s1 = as_plain(b, s1);
        if (s1 < 0) return fail(b, "an input is not available"), false;
        /* right-align the second operand's dims with leading 1s */
        slot v1 = p->slots[s1];
        int32_t r0 = n->outputs[0].rank;
        if (v1.rank < r0) {
            int32_t shift = r0 - v1.rank;
            for (int32_t d = r0 - 1; d >= 0; d--) v1.dims[d] = d >= shift ? p->slots[s1].dims[d - shift] : 1;
            v1.rank = r0;
            int32_t a = view_slot(p, s1, &v1, NULL);
            if (a < 0) return fail(b, "out of memory"), false;
            s1 = a;
        }
        dnnl_memory_desc_t m1;
        md_of(&p->slots[s1], &m1);
        dnnl_binary_desc_t bd;
        if (dnnl_binary_desc_init(&bd, alg, &src, &m1, &dst) != dnnl_success) return fail(b, "oneDNN refuses this broadcast"), false;
        int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {sin, s1, sd};
        return add_step(b, &bd, NULL, 3, kinds, slots);
    }
    if (is_op(n, "Softmax") || is_op(n, "LogSoftmax")) {
        int64_t axis = -1;
        seam_node_attr_int(n, "axis", &axis);
        if (n->opset < 13) return fail(b, "Softmax before opset 13 (2-D coercion) is not supported"), false;
        if (axis < 0) axis += n->inputs[0].rank;
        dnnl_softmax_v2_desc_t sd2;
        if (dnnl_softmax_v2_forward_desc_init(&sd2, dnnl_forward_inference, is_op(n, "Softmax") ? dnnl_softmax_accurate : dnnl_softmax_log,
                                              &src, &dst, (int)axis) != dnnl_success)
            return fail(b, "oneDNN refuses this softmax"), false;
        int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
        return add_step(b, &sd2, NULL, 2, kinds, slots);
    }
    if (is_op(n, "Sum")) {
        int32_t cnt = n->n_inputs, kinds[MAX_ARGS], slots[MAX_ARGS];
        dnnl_memory_desc_t mds[MAX_ARGS];
        float scales[MAX_ARGS];
        for (int32_t k = 0; k < cnt; k++) {
            int32_t s2 = input_slot(b, &n->inputs[k]);
            if (s2 >= 0) s2 = as_plain(b, s2);
            if (s2 < 0) return fail(b, "an input is not available"), false;
            md_of(&p->slots[s2], &mds[k]);
            kinds[k] = DNNL_ARG_MULTIPLE_SRC + k, slots[k] = s2, scales[k] = 1.0f;
        }
        kinds[cnt] = DNNL_ARG_DST, slots[cnt] = sd;
        dnnl_primitive_desc_t pd;
        if (dnnl_sum_primitive_desc_create(&pd, &dst, cnt, scales, mds, g_ctx.user_scratch, g_ctx.engine) != dnnl_success)
            return fail(b, "oneDNN refuses this sum"), false;
        bool ok = add_prim(b, pd, cnt + 1, kinds, slots);
        dnnl_primitive_desc_destroy(pd);
        return ok;
    }
    if (is_op(n, "PRelu")) { /* the slope broadcast like ONNX's: right-aligned */
        int32_t s1 = input_slot(b, &n->inputs[1]);
        if (s1 >= 0) s1 = as_plain(b, s1);
        if (s1 < 0) return fail(b, "the slope is not available"), false;
        slot v1 = p->slots[s1];
        int32_t r0 = n->inputs[0].rank, shift = r0 - v1.rank;
        for (int32_t d = r0 - 1; d >= 0; d--) v1.dims[d] = d >= shift ? p->slots[s1].dims[d - shift] : 1;
        v1.rank = r0;
        int32_t a = view_slot(p, s1, &v1, NULL);
        if (a < 0) return fail(b, "out of memory"), false;
        dnnl_memory_desc_t wmd;
        md_of(&p->slots[a], &wmd);
        dnnl_prelu_desc_t pdsc;
        if (dnnl_prelu_forward_desc_init(&pdsc, dnnl_forward_inference, &src, &wmd) != dnnl_success)
            return fail(b, "oneDNN refuses this PRelu"), false;
        int32_t kinds[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, slots[3] = {sin, a, sd};
        return add_step(b, &pdsc, NULL, 3, kinds, slots);
    }
    if (is_op(n, "LRN")) { /* y = x / (bias + alpha / size * sum of squares)^beta, as oneDNN's */
        int64_t size = 0;
        float la = 1e-4f, lb = 0.75f, bias = 1.0f;
        if (!seam_node_attr_int(n, "size", &size) || size < 1) return fail(b, "LRN needs size >= 1"), false;
        seam_node_attr_float(n, "alpha", &la);
        seam_node_attr_float(n, "beta", &lb);
        seam_node_attr_float(n, "bias", &bias);
        dnnl_lrn_desc_t ld;
        if (dnnl_lrn_forward_desc_init(&ld, dnnl_forward_inference, dnnl_lrn_across_channels, &src, size, la, lb, bias) != dnnl_success)
            return fail(b, "oneDNN refuses this LRN"), false;
        int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
        return add_step(b, &ld, NULL, 2, kinds, slots);
    }
    if (is_op(n, "Resize")) { /* the factors from the static shapes */
        const char *mode = "nearest";
        seam_node_attr_string(n, "mode", &mode);
        float factors[3];
        int32_t nsp = src.ndims - 2;
        for (int32_t d = 0; d < nsp; d++) factors[d] = (float)n->outputs[0].dims[2 + d] / (float)n->inputs[0].dims[2 + d];
        dnnl_resampling_desc_t rd;
        if (dnnl_resampling_forward_desc_init(&rd, dnnl_forward_inference, strcmp(mode, "linear") ? dnnl_resampling_nearest : dnnl_resampling_linear,
                                              factors, &src, &dst) != dnnl_success)
            return fail(b, "oneDNN refuses this resampling"), false;
        int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
        return add_step(b, &rd, NULL, 2, kinds, slots);
    }
    if (is_op(n, "Concat")) {
        int64_t axis = 0;
        seam_node_attr_int(n, "axis", &axis);
        if (axis < 0) axis += n->inputs[0].rank;
        int32_t cnt = n->n_inputs;
        if (cnt > MAX_ARGS - 2) return fail(b, "Concat of more than 64 inputs is not supported"), false;
        dnnl_memory_desc_t mds[MAX_ARGS];
        int32_t kinds[MAX_ARGS], slots[MAX_ARGS];
        for (int32_t k = 0; k < cnt; k++) {
            int32_t s = input_slot(b, &n->inputs[k]);
            if (s >= 0) s = as_plain(b, s);
            if (s < 0) return fail(b, "an input is not available"), false;
            md_of(&p->slots[s], &mds[k]);
            kinds[k] = DNNL_ARG_MULTIPLE_SRC + k, slots[k] = s;
        }
        kinds[cnt] = DNNL_ARG_DST, slots[cnt] = sd;
        dnnl_primitive_desc_t pd;
        if (dnnl_concat_primitive_desc_create(&pd, &dst, cnt, (int)axis, mds, g_ctx.user_scratch, g_ctx.engine) != dnnl_success)
            return fail(b, "oneDNN refuses this concat"), false;
        bool ok = add_prim(b, pd, cnt + 1, kinds, slots);
        dnnl_primitive_desc_destroy(pd);
        return ok;
    }
    return fail(b, "not implemented by the dnnl backend"), false;
}

/* ---- memory plan ----
 * Every intermediate gets a place in one arena: two share bytes when no
 * step uses both between the first write of one and the last read of the
 * other (greedy, largest first, as seam's CPU executor plans its own).
 * Made once at compile time; a run allocates nothing. */
typedef struct span { int32_t slot, first, last; size_t off, bytes; } span;

static int cmp_span_size(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->bytes != y->bytes ? (x->bytes < y->bytes ? 1 : -1) : x->slot - y->slot;
}

static bool plan_arena(program *p) {
    span *sp = calloc((size_t)p->n_slots + 1, sizeof(span));
    int32_t *at = calloc((size_t)p->n_slots + 1, sizeof(int32_t));
    if (!sp || !at) return free(sp), free(at), false;
    int32_t n = 0;
    for (int32_t k = 0; k < p->n_slots; k++) {
        at[k] = -1;
        if (p->slots[k].bytes && p->slots[k].alias < 0) at[k] = n, sp[n++] = (span){k, -1, -1, 0, p->slots[k].bytes};
    }
    for (int32_t i = 0; i < p->n_steps; i++)
        for (int32_t a = 0; a < p->steps[i].n_args; a++) {
            int32_t r = root_of(p, p->steps[i].arg_slot[a]), j = at[r];
            if (j < 0) continue;
            if (sp[j].first < 0) sp[j].first = i;
            sp[j].last = i;
        }
    qsort(sp, (size_t)n, sizeof(span), cmp_span_size);
    size_t total = 0;
    for (int32_t j = 0; j < n; j++) {
        size_t off = 0;
        for (bool moved = true; moved;) { /* the lowest offset clear of every live placed span */
            moved = false;
            for (int32_t q = 0; q < j; q++) {
                bool live = sp[q].first <= sp[j].last && sp[j].first <= sp[q].last;
                if (live && off < sp[q].off + sp[q].bytes && sp[q].off < off + sp[j].bytes) {
                    off = (sp[q].off + sp[q].bytes + 63) & ~(size_t)63;
                    moved = true;
                }
            }
        }
        sp[j].off = off;
        if (off + sp[j].bytes > total) total = off + sp[j].bytes;
    }
    p->arena_bytes = total;
    p->arena = total ? aligned_alloc(64, (total + 63) & ~(size_t)63) : NULL;
    p->scratch = p->scratch_bytes ? aligned_alloc(64, (p->scratch_bytes + 63) & ~(size_t)63) : NULL;
    bool ok = (!total || p->arena) && (!p->scratch_bytes || p->scratch);
    for (int32_t j = 0; ok && j < n; j++)
        ok = dnnl_memory_set_data_handle(p->slots[sp[j].slot].mem, (char *)p->arena + sp[j].off) == dnnl_success;
    for (int32_t i = 0; ok && i < p->n_steps; i++)
        if (p->steps[i].scratch) ok = dnnl_memory_set_data_handle(p->steps[i].scratch, p->scratch) == dnnl_success;
    free(sp), free(at);
    return ok;
}

/* oneDNN (Debian's build) runs on OpenMP: the thread count is the calling
 * thread's OpenMP setting, read when primitives are made and run. libgomp is
 * loaded with libdnnl; its setter is looked up rather than linked. */
static void set_threads(int32_t n) {
    static void (*setter)(int);
    static int default_threads; /* OpenMP's own (OMP_NUM_THREADS or the cores) */
    if (!setter) {
        int (*getter)(void);
        *(void **)&setter = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
        *(void **)&getter = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
        default_threads = getter ? getter() : 1;
    }
    if (setter) setter(n >= 1 ? n : default_threads);
}

static bool fix_views(program *p);

static void *dnnl_compile(void *ctx, const seam_subgraph_view *sg, const char *const *options, int32_t n_options, char *err,
                          size_t err_size) {
    (void)ctx;
    bool fuse = true;
    int32_t threads = 0;
    for (int32_t k = 0; k < n_options; k++) {
        char *end;
        if (!strcmp(options[k], "fusion=off")) fuse = false;
        else if (!strcmp(options[k], "fusion=on")) fuse = true;
        else if (!strncmp(options[k], "threads=", 8) && (threads = (int32_t)strtol(options[k] + 8, &end, 10)) >= 1 &&
                 threads <= 1024 && !*end) {
        } else {
            snprintf(err, err_size, "dnnl: unknown or bad target option '%s' (known: fusion=on|off, threads=N with N >= 1)", options[k]);
            return NULL;
        }
    }
    set_threads(threads);
    if (!g_ctx.ok) {
        snprintf(err, err_size, "no oneDNN CPU engine");
        return NULL;
    }
    program *p = calloc(1, sizeof(*p));
    if (p) p->threads = threads;
    bool *fused = calloc((size_t)sg->n_nodes + 1, sizeof(bool));
    if (!p || !fused ||
        !(p->in_slot = calloc((size_t)sg->n_inputs + 1, sizeof(int32_t))) ||
        !(p->out_slot = calloc((size_t)sg->n_outputs + 1, sizeof(int32_t)))) {
        snprintf(err, err_size, "out of memory");
        free(fused);
        release_program(p);
        return NULL;
    }
    /* a saved file may name dnnl for anything: check every node and every
     * boundary value as supports() would, before trusting a byte */
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view st;
        const seam_node_view *n = seam_subgraph_node(sg, i, &st);
        char why[256];
        if (!dnnl_supports(NULL, n, why, sizeof(why))) {
            snprintf(err, err_size, "node %d '%s' (%s): %s", n->index, n->name, n->op_type, why);
            goto bad;
        }
        for (int32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
            const seam_value_info *v = k < n->n_inputs ? &n->inputs[k] : &n->outputs[k - n->n_inputs];
            if (v->name && v->dtype != SEAM_DTYPE_FLOAT32 && !(k < n->n_inputs && param_input(n, k))) {
                snprintf(err, err_size, "node %d '%s' (%s): value '%s' is %s; dnnl runs float32 only", n->index, n->name,
                         n->op_type, v->name, seam_dtype_name(v->dtype));
                goto bad;
            }
        }
    }
    for (int32_t k = 0; k < sg->n_inputs + sg->n_outputs; k++) {
        const seam_value_info *v = k < sg->n_inputs ? &sg->inputs[k] : &sg->outputs[k - sg->n_inputs];
        if (v->dtype != SEAM_DTYPE_FLOAT32 || !static_shape(v)) {
            snprintf(err, err_size, "boundary value '%s' is not a float32 tensor of static shape", v->name);
            goto bad;
        }
    }
    for (int32_t k = 0; k < sg->n_inputs; k++) {
        int32_t s = add_slot(p, sg->inputs[k].name, &sg->inputs[k]);
        dnnl_memory_desc_t md;
        if (s < 0 || !md_of(&p->slots[s], &md) || dnnl_memory_create(&p->slots[s].mem, &md, g_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) {
            snprintf(err, err_size, "out of memory");
            goto bad;
        }
        p->slots[s].boundary = 1, p->slots[s].index = k;
        p->in_slot[p->n_in++] = s;
    }
    for (int32_t k = 0; k < sg->n_outputs; k++) {
        int32_t s = slot_of(p, sg->outputs[k].name);
        if (s >= 0) {
            snprintf(err, err_size, "output '%s' is also an input of the subgraph", sg->outputs[k].name);
            goto bad;
        }
        s = add_slot(p, sg->outputs[k].name, &sg->outputs[k]);
        dnnl_memory_desc_t md;
        if (s < 0 || !md_of(&p->slots[s], &md) || dnnl_memory_create(&p->slots[s].mem, &md, g_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) {
            snprintf(err, err_size, "out of memory");
            goto bad;
        }
        p->slots[s].boundary = 2, p->slots[s].index = k;
        p->out_slot[p->n_out++] = s;
    }
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view st;
        builder b = {p, sg, err, err_size, seam_subgraph_node(sg, i, &st), &st, i, fuse};
        if (!compile_node(&b, i, fused)) {
            b.n = seam_subgraph_node(sg, i, &st);
            if (p->view_error)
                snprintf(err, err_size, "node %d '%s' (%s): its shapes do not fit its input's bytes (inconsistent shapes in the file)",
                         b.n->index, b.n->name, b.n->op_type);
            else if (!err[0]) snprintf(err, err_size, "node %d '%s' (%s): could not be compiled", b.n->index, b.n->name, b.n->op_type);
            goto bad;
        }
    }
    if (!plan_arena(p) || !fix_views(p)) {
        snprintf(err, err_size, "out of memory (the subgraph's intermediates)");
        goto bad;
    }
    free(fused);
    return p;
bad:
    free(fused);
    release_program(p);
    return NULL;
}

static void *slot_data(program *p, int32_t s, const seam_tensor_view *in, seam_buffer *out) {
    slot *sl = &p->slots[s];
    int64_t off = 0;
    while (sl->alias >= 0) off += sl->offset, sl = &p->slots[sl->alias];
    char *h = NULL;
    if (sl->boundary == 1) h = (char *)in[sl->index].data;
    else if (sl->boundary == 2) h = out[sl->index].data;
    else dnnl_memory_get_data_handle(sl->mem, (void **)&h);
    return h + off;
}

/* Views of intermediates and weights point at fixed bytes: set once, here.
 * Only the boundary slots and their views change from run to run. */
static bool fix_views(program *p) {
    p->per_run = calloc((size_t)p->n_slots + 1, sizeof(int32_t));
    if (!p->per_run) return false;
    for (int32_t s = 0; s < p->n_slots; s++) {
        slot *sl = &p->slots[s];
        if (p->slots[root_of(p, s)].boundary) p->per_run[p->n_per_run++] = s;
        else if (sl->alias >= 0 && dnnl_memory_set_data_handle(sl->mem, slot_data(p, s, NULL, NULL)) != dnnl_success) return false;
    }
    return true;
}

static seam_status dnnl_run(void *ctx, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs, seam_buffer *outputs,
                            int32_t n_outputs, char *err, size_t err_size) {
    (void)ctx;
    program *p = compiled;
    set_threads(p->threads);
    if (n_inputs != p->n_in || n_outputs != p->n_out) {
        snprintf(err, err_size, "dnnl: %d inputs and %d outputs given, %d and %d compiled", n_inputs, n_outputs, p->n_in, p->n_out);
        return SEAM_STATUS_INVALID_ARGUMENT;
    }
    /* point the boundary memories and their views at this run's buffers */
    for (int32_t k = 0; k < p->n_per_run; k++) {
        int32_t s = p->per_run[k];
        dnnl_memory_set_data_handle(p->slots[s].mem, slot_data(p, s, inputs, outputs));
    }
    for (int32_t k = 0; k < p->n_steps; k++) {
        step *st = &p->steps[k];
        dnnl_exec_arg_t args[MAX_ARGS + 1];
        int32_t na = st->n_args;
        for (int32_t a = 0; a < na; a++) args[a] = (dnnl_exec_arg_t){st->arg_kind[a], p->slots[st->arg_slot[a]].mem};
        if (st->scratch) args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, st->scratch};
        if (dnnl_primitive_execute(st->prim, g_ctx.stream, na, args) != dnnl_success) {
            snprintf(err, err_size, "dnnl: step %d failed", k);
            return SEAM_STATUS_INTERNAL;
        }
    }
    dnnl_stream_wait(g_ctx.stream);
    /* a boundary output that is a view of another slot was written there */
    return SEAM_STATUS_OK;
}

static seam_backend dnnl_backend = {
    .abi_version = SEAM_BACKEND_ABI_VERSION,
    .name = "dnnl",
    .supports = dnnl_supports,
    .node_cost = dnnl_cost,
    .compile = dnnl_compile,
    .run = dnnl_run,
    .release_compiled = dnnl_release_compiled,
    .memory = SEAM_MEMORY_HOST,
};

const seam_backend *seam_backend_dnnl(void) {
    if (!g_ctx.ok && !g_ctx.engine) {
        if (dnnl_engine_create(&g_ctx.engine, dnnl_cpu, 0) == dnnl_success &&
            dnnl_stream_create(&g_ctx.stream, g_ctx.engine, dnnl_stream_default_flags) == dnnl_success &&
            dnnl_primitive_attr_create(&g_ctx.user_scratch) == dnnl_success &&
            dnnl_primitive_attr_set_scratchpad_mode(g_ctx.user_scratch, dnnl_scratchpad_mode_user) == dnnl_success)
            g_ctx.ok = true;
    }
    return &dnnl_backend;
}
