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
 *
 * The code: dnnl.c (this file: the backend table, supports(), the compile
 * driver, the memory plan, run), layout.c (slots, views, layouts, reorders,
 * steps), fuse.c (post-op chains and the patterns exporters write), ops.c
 * (a compile function per op, and the table compile_node finds them in),
 * conv_matmul.c (the ops with weights: Conv, ConvTranspose, MatMul, Gemm);
 * dnnl_internal.h holds what they share.
 */

#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnnl_internal.h"

dx_context dx_ctx; /* one CPU engine for the process */

static int64_t value_numel(const seam_value_info *v) {
    int64_t n = 1;
    for (int32_t d = 0; d < v->rank; d++) n *= v->dims[d];
    return v->rank < 0 ? -1 : n;
}

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
    bool known = dx_op_known(n);
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
    if (is_op(n, "Pow") && (n->inputs[1].dtype != SEAM_DTYPE_FLOAT32 || !const_input(n, 1) || value_numel(&n->inputs[1]) != 1))
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
            int32_t r = dx_root_of(p, p->steps[i].arg_slot[a]), j = at[r];
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
    if (!dx_ctx.ok) {
        snprintf(err, err_size, "no oneDNN CPU engine");
        return NULL;
    }
    program *p = calloc(1, sizeof(*p));
    if (p) p->threads = threads;
    bool *fused = calloc((size_t)sg->n_nodes + 1, sizeof(bool));
    readers_index readers = {NULL, 0};
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
        int32_t s = dx_add_slot(p, sg->inputs[k].name, &sg->inputs[k]);
        dnnl_memory_desc_t md;
        if (s < 0 || !dx_md_of(&p->slots[s], &md) || dnnl_memory_create(&p->slots[s].mem, &md, dx_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) {
            snprintf(err, err_size, "out of memory");
            goto bad;
        }
        p->slots[s].boundary = 1, p->slots[s].index = k;
        p->in_slot[p->n_in++] = s;
    }
    for (int32_t k = 0; k < sg->n_outputs; k++) {
        int32_t s = dx_slot_of(p, sg->outputs[k].name);
        if (s >= 0) {
            snprintf(err, err_size, "output '%s' is also an input of the subgraph", sg->outputs[k].name);
            goto bad;
        }
        s = dx_add_slot(p, sg->outputs[k].name, &sg->outputs[k]);
        dnnl_memory_desc_t md;
        if (s < 0 || !dx_md_of(&p->slots[s], &md) || dnnl_memory_create(&p->slots[s].mem, &md, dx_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) {
            snprintf(err, err_size, "out of memory");
            goto bad;
        }
        p->slots[s].boundary = 2, p->slots[s].index = k;
        p->out_slot[p->n_out++] = s;
    }
    if (!dx_readers_build(sg, &readers)) {
        snprintf(err, err_size, "out of memory");
        goto bad;
    }
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        seam_node_view st;
        builder b = {p, sg, err, err_size, seam_subgraph_node(sg, i, &st), &st, i, fuse, &readers};
        if (!dx_compile_node(&b, i, fused)) {
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
    free(readers.r);
    return p;
bad:
    free(fused);
    free(readers.r);
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
        if (p->slots[dx_root_of(p, s)].boundary) p->per_run[p->n_per_run++] = s;
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
        if (dnnl_primitive_execute(st->prim, dx_ctx.stream, na, args) != dnnl_success) {
            snprintf(err, err_size, "dnnl: step %d failed", k);
            return SEAM_STATUS_INTERNAL;
        }
    }
    dnnl_stream_wait(dx_ctx.stream);
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
    if (!dx_ctx.ok && !dx_ctx.engine) {
        if (dnnl_engine_create(&dx_ctx.engine, dnnl_cpu, 0) == dnnl_success &&
            dnnl_stream_create(&dx_ctx.stream, dx_ctx.engine, dnnl_stream_default_flags) == dnnl_success &&
            dnnl_primitive_attr_create(&dx_ctx.user_scratch) == dnnl_success &&
            dnnl_primitive_attr_set_scratchpad_mode(dx_ctx.user_scratch, dnnl_scratchpad_mode_user) == dnnl_success)
            dx_ctx.ok = true;
    }
    return &dnnl_backend;
}
