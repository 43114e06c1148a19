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
 * precise reason when it says no: the checks every node gets here, then
 * its op's own, which sits next to the op's compile function (one row of
 * its op family's table holds both); compile() checks again, since a saved file may
 * name dnnl for anything.
 *
 * Threads: the engine and the primitive attribute all programs share are
 * made once (pthread_once) and only read afterwards; each program has its
 * own stream, memory and scratchpad, so sessions on different threads
 * compile and run concurrently. One program runs one call at a time.
 *
 * The code: see program.h for the files and their layers. This file is
 * the top one: the backend table, supports(), the compile driver
 * (compile_node, which finds a node's row in the op families' tables), the
 * memory plan, run.
 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "concat.h"
#include "conv.h"
#include "core/arena.h"
#include "eltwise.h"
#include "mask.h"
#include "matmul.h"
#include "ops/attr.h"
#include "pool_norm.h"
#include "quant_dyn.h"
#include "reduce.h"
#include "rnn.h"
#include "shuf_shuffle.h"
#include "tensor.h"

/* Inputs that parameterize a node (a shape, slice bounds, reduction axes)
 * rather than carry data: any integer type, read at compile time. */
static bool param_input(const seam_node_view *n, int32_t k) {
    return k >= 1 && (IN_LIST(n, view_ops) || is_op(n, "Slice") || IN_LIST(n, reduce_ops) || is_op(n, "Resize") ||
                      (is_op(n, "Pad") && k != 2) || is_op(n, "Gather") || is_op(n, "Split") ||
                      ((is_op(n, "Expand") || is_op(n, "Tile")) && k == 1));
}

/* A tensor whose rank is known (<= 6); its dims may be symbolic: supports()
 * decides from ranks, dtypes, attributes and which inputs are constants,
 * and compile() gets the concrete shapes of a run (runtime/subgraph.c
 * specializes a subgraph per shape signature). */
static bool known_rank(const seam_value_info *v) { return v->rank >= 0 && v->rank <= MAXR; }

static bool static_shape(const seam_value_info *v) {
    if (v->rank < 0 || v->rank > MAXR) return false;
    for (int32_t d = 0; d < v->rank; d++)
        if (v->dims[d] < 0) return false;
    return true;
}

/* ---- the op families' tables ---- */

/* Every op the backend knows: the families' rows (name, stage, support
 * check beyond supports()'s generic ones, compile function). */
static const dx_op *const dx_families[] = {dx_tensor_rows,    dx_conv_rows,   dx_matmul_rows, dx_pool_norm_rows, dx_reduce_rows,
                                           dx_eltwise_rows,   dx_concat_rows, dx_rnn_rows,    dx_mask_rows,
                                           dx_quant_rows,     dx_qdyn_rows};

/* The row of node n's op, or NULL if the backend does not know it. */
static const dx_op *dx_op_of(const seam_node_view *n) {
    for (size_t f = 0; f < sizeof(dx_families) / sizeof(dx_families[0]); f++)
        for (const dx_op *row = dx_families[f]; row->op; row++)
            if (is_op(n, row->op)) return row;
    return NULL;
}

/* ---- supports ---- */

/* The checks every node gets (auto_pad among them: any op may carry it);
 * then its op's own, the row's, next to its compile function. */
static bool dnnl_supports(void *ctx, const seam_node_view *n, char *why, size_t wn) {
    (void)ctx;
    const dx_op *op = dx_op_of(n);
    if (!op) return dx_refuse(why, wn, "%s is not in the dnnl backend (yet)", n->op_type);
    if (n->n_inputs < 1 || !n->inputs[0].name) return dx_refuse(why, wn, "%s without input 0", n->op_type);
    /* (the mask ops check their dtypes themselves; a view moves bytes,
     * so it takes the dtypes held exactly, see mask.h) */
    bool view = IN_LIST(n, view_ops);
    if (!dx_is_mask_op(n) && !dx_is_quant_op(n) && n->inputs[0].dtype != SEAM_DTYPE_FLOAT32 && !(view && dx_view_dtype_ok(n->inputs[0].dtype)))
        return dx_refuse(why, wn, "%s on %s: dnnl runs float32 only%s", n->op_type, seam_dtype_name(n->inputs[0].dtype),
                         view ? " (and moves bool, int8, uint8)" : "");
    for (int32_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k].name && !known_rank(&n->inputs[k]))
            return dx_refuse(why, wn, "%s: input '%s' has no known rank <= 6", n->op_type, n->inputs[k].name);
    for (int32_t k = 0; k < n->n_outputs; k++)
        if (n->outputs[k].name && !known_rank(&n->outputs[k]))
            return dx_refuse(why, wn, "%s: output '%s' has no known rank <= 6", n->op_type, n->outputs[k].name);
    /* oneDNN's kernels divide by zero on some empty tensors (matmul, a
     * broadcast binary: SIGFPE); an empty value costs nothing on the CPU.
     * (An empty constant is a parameter: Resize's roi [0].) */
    for (int32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
        if (k < n->n_inputs && dx_const_input(n, k)) continue;
        const seam_value_info *v = k < n->n_inputs ? &n->inputs[k] : &n->outputs[k - n->n_inputs];
        for (int32_t d = 0; v->name && d < v->rank; d++)
            if (v->dims[d] == 0)
                return dx_refuse(why, wn, "%s: '%s' has no elements (a dim of 0), which oneDNN does not take",
                                 n->op_type, v->name);
    }
    conv_auto_pad ap;
    if (!conv_auto_pad_of(dx_ir(n), &ap))
        return dx_refuse(why, wn, "auto_pad=%s is not supported", node_attr_string(dx_ir(n), "auto_pad", "?"));
    return !op->supports || op->supports(n, why, wn);
}

/* Time on dnnl as a fraction of seam's CPU estimate (placement by cost):
 * oneDNN's JIT convolutions and matrix products beat the CPU kernels'
 * im2col + OpenBLAS by about 2x on this class of machine (bench/RESULTS.md),
 * and its other primitives are about as fast as the CPU's loops. */
/* Without AVX-512, two kinds of 2-D Conv run slower on oneDNN 2.6 than on
 * seam's CPU kernels (an AVX2 EPYC, 2 threads, ONEDNN_VERBOSE against
 * --profile, per node):
 * - 3x3, stride 1, no dilation, one group, the sizes the CPU's Winograd
 *   takes: oneDNN's jit:avx2 direct conv against it: vgg16's 64 -> 64
 *   at 224 21.5 ms against 12.6, 512 -> 512 at 28 21.5 against 10.8, at
 *   14 5.4 against 3.7;
 * - any dilation above 1 (not depthwise): oneDNN's x64:gemm:jit, im2col
 *   and a GEMM, with the weights reordered at every run, against the
 *   CPU's direct loop that skips the taps reading only padding:
 *   deeplabv3's ASPP 960 -> 256 at 20 x 20, dilations 12, 24 and 36: 23,
 *   17 and 19 ms against 13.4, 1.5 and 1.4.
 * And a conv of fewer than 8 output channels (below).
 * Returns the cost for those (relative to the CPU's estimate), else 0. */
static double conv_cost_avx2(const seam_node_view *n) {
    if (n->n_inputs < 2 || n->n_outputs < 1 || n->inputs[0].rank != 4 || n->inputs[1].rank != 4 ||
        n->outputs[0].rank != 4)
        return 0;
    const int64_t *x = n->inputs[0].dims, *w = n->inputs[1].dims, *y = n->outputs[0].dims;
    int64_t group = 1, one[2] = {1, 1};
    seam_node_attr_int(n, "group", &group);
    const int64_t *st = one, *dil = one;
    int32_t n_st = 2, n_dil = 2;
    if (!seam_node_attr_ints(n, "strides", &st, &n_st) || n_st != 2) st = one, n_st = 2;
    if (!seam_node_attr_ints(n, "dilations", &dil, &n_dil) || n_dil != 2) dil = one, n_dil = 2;
    bool depthwise = group > 1 && w[1] == 1;
    if ((dil[0] > 1 || dil[1] > 1) && !depthwise) return 2.0;
    /* fewer than 8 output channels pad a channel block of 8: the text
     * detector's last 1x1 conv, 16 -> 1 at 640 x 640, took 5.7 ms against
     * the CPU's 0.67 */
    if (group == 1 && w[0] < 8 && y[2] * y[3] >= 4096) return 4.0;
    /* grouped, fewer than 8 input channels a group (ResNeXt's 32 groups
     * of 4): no channel block of 8 fits a group, so oneDNN runs
     * x64:gemm:jit on the plain layout, against the CPU's direct loop
     * (gconv.c): 128 -> 128 in 32 groups at 56 x 56 1.30 ms against 0.25;
     * 8 a group at 28 x 28 0.39 against 0.24; 16 and 32 a group even or
     * better on oneDNN */
    if (group > 1 && !depthwise && w[1] < 8 && x[1] == group * w[1]) return 4.0;
    if (group > 1 && !depthwise && w[1] == 8 && st[0] == 1 && st[1] == 1) return 1.5;
    /* (winograd.c's cpu_wino_fits: at least 48 input and 16 output
     * channels, C M >= 16 (C + M), 16 tiles of 4 x 4; a 3x3 conv it does
     * not take, 64 -> 16 at 160 x 160, ran 6.2-7.0 ms on the CPU's GEMM
     * and 3.4-3.6 on oneDNN's jit:avx2) */
    int64_t C = x[1], M = w[0], tiles = ((y[2] + 3) / 4) * ((y[3] + 3) / 4);
    if (group == 1 && w[2] == 3 && w[3] == 3 && st[0] == 1 && st[1] == 1 && dil[0] == 1 && dil[1] == 1 && C >= 48 &&
        M >= 16 && C * M >= 16 * (C + M) && tiles >= 16)
        return 1.7;
    return 0;
}

static double dnnl_cost(void *ctx, const seam_node_view *n) {
    (void)ctx;
    /* oneDNN's packed GEMMs per step; without AVX-512 its RNN is its
     * reference cell (an AVX2 EPYC: the benchmark's LSTM 8.7 ms on dnnl,
     * 1.5 ms on the CPU's step, 2.0 in ONNX Runtime) */
    if (is_op(n, "LSTM") || is_op(n, "GRU") || is_op(n, "RNN")) return dx_isa_avx512() ? 0.3 : 5.0;
    /* int8 (VNNI, AMX) against seam's CPU int8 GEMM, which uses the same
     * instructions since session 53 (it was 0.1 against the int16 GEMM):
     * whole quantized models on dnnl over the CPU kernels, an AMX machine,
     * 2 threads (bench/quant_bench.py): resnet18 0.34, an MLP 0.42, the
     * dynamically quantized transformer 0.47, a conv chain 0.44,
     * mobilenet_v2 0.55 (its depthwise convs); dnnl takes no int8
     * product without VNNI */
    if (is_op(n, "QLinearConv") || is_op(n, "QLinearMatMul") || is_op(n, "MatMulInteger")) return 0.4;
    /* (Without AVX-512 oneDNN 2.6's matmul is gemm:jit on B as it lies: a
     * constant B whose rows are a multiple of 512 floats apart aliased in
     * the cache, 1.5-1.9x the CPU's packed GEMM, and was costed so here
     * until matmul.c padded its copy: now 0.66-0.91x the CPU's, single
     * MatMuls on a 2-core AVX2 EPYC, 16 to 320 rows, N 512 to 4096.) */
    /* Resize without AVX-512: oneDNN's resampling on channel blocks, then
     * a reorder of its large output: the text detector's 4x upsampling of
     * 16 channels to 640 x 640 took 9.9 ms (and 2.2 to reorder) against the
     * CPU's 1.5 */
    if (is_op(n, "Resize") && !dx_isa_avx512()) return 4.0;
    /* ConvTranspose without AVX-512: oneDNN 2.6's deconvolution is
     * x64:gemm:jit, against the CPU's GEMM and row-by-row col2im (an AVX2
     * EPYC, 2 threads, a U-Net's 2x2 stride-2 upsamplings as single nodes,
     * bench/op_bench.py: 512 -> 256 at 16 x 16 4.32 ms against 1.85, 256 ->
     * 128 at 32 x 32 3.25 against 2.08, 64 -> 32 at 128 x 128 5.0 against
     * 3.3) */
    if (is_op(n, "ConvTranspose") && !dx_isa_avx512()) return 1.8;
    if (is_op(n, "Conv") && !dx_isa_avx512()) {
        double r = conv_cost_avx2(n);
        if (r > 0) return r;
    }
    return is_op(n, "Conv") || is_op(n, "ConvTranspose") || is_op(n, "Gemm") || is_op(n, "MatMul") ? 0.5 : 0.9;
}

/* Under target options: precision=bf16 runs every Conv, MatMul and Gemm
 * with constant weights in bfloat16 (conv.c, matmul.c). On an AMX
 * machine, 2 threads (bench/bf16_bench.py, whole models over float32 on
 * dnnl): mlp_large 0.19, resnet18 0.27, vit_b_16 0.35 (its other ops
 * too); the depthwise nets 0.92-0.98 (their grouped convs and their
 * short 1x1 products memory-bound, and each bf16 conv converts its
 * input). So a product K deep: 0.25 from K = 256, 0.8 below; a grouped
 * conv 0.95. */
static double dnnl_cost_with(void *ctx, const seam_node_view *n, const char *const *options, int32_t n_options) {
    double r = dnnl_cost(ctx, n);
    bool bf16 = false;
    for (int32_t k = 0; k < n_options; k++) bf16 = options[k] && !strcmp(options[k], "precision=bf16") ? true : bf16;
    bool product = is_op(n, "Conv") || is_op(n, "MatMul") || is_op(n, "Gemm");
    if (!bf16 || !product || n->n_inputs < 2 || !n->input_constant || !n->input_constant[1]) return r;
    int64_t group = 1, transB = 0;
    seam_node_attr_int(n, "group", &group);
    seam_node_attr_int(n, "transB", &transB);
    /* the products' depth: short ones are memory-bound either way */
    const seam_value_info *w = &n->inputs[1];
    int64_t K = 0;
    if (is_op(n, "Conv")) {
        K = w->rank >= 2 ? 1 : 0;
        for (int32_t d = 1; d < w->rank; d++) K *= w->dims[d];
    } else if (w->rank >= 2)
        K = is_op(n, "Gemm") && transB ? w->dims[w->rank - 1] : w->dims[w->rank - 2];
    return r * (group > 1 ? 0.95 : K >= 256 ? 0.25 : 0.8);
}

/* A subgraph costs a few microseconds to start (its primitives' dispatch),
 * and its boundary values a reorder out of and into oneDNN's blocked
 * layouts (host memory; about 10 GB/s). */
static void dnnl_cost_traits(void *ctx, double *launch_us, double *transfer_gbps) {
    (void)ctx;
    *launch_us = 3;
    *transfer_gbps = 10;
}

static void release_program(program *p) {
    if (!p) return;
    for (int32_t k = 0; k < p->n_steps; k++) {
        if (p->steps[k].prim) dnnl_primitive_destroy(p->steps[k].prim);
        free(p->steps[k].host_data);
        if (p->steps[k].scratch) dnnl_memory_destroy(p->steps[k].scratch);
        if (k < p->n_exec_args) free(p->steps[k].exec_args);
    }
    free(p->arena), free(p->scratch), free(p->per_run);
    for (int32_t k = 0; k < p->n_slots; k++) {
        if (p->slots[k].mem) dnnl_memory_destroy(p->slots[k].mem);
        free(p->slots[k].owned);
    }
    if (p->stream) dnnl_stream_destroy(p->stream);
    dx_qmm_release(p);
    free(p->slots), free(p->steps), free(p->in_slot), free(p->out_slot), free(p->log), free(p);
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
    p->arena = total ? seam_alloc_resident(total) : NULL;
    p->scratch = p->scratch_bytes ? aligned_alloc(64, (p->scratch_bytes + 63) & ~(size_t)63) : NULL;
    bool ok = (!total || p->arena) && (!p->scratch_bytes || p->scratch);
    for (int32_t j = 0; ok && j < n; j++)
        ok = dnnl_memory_set_data_handle(p->slots[sp[j].slot].mem, (char *)p->arena + sp[j].off) == dnnl_success;
    for (int32_t i = 0; ok && i < p->n_steps; i++)
        if (p->steps[i].scratch) ok = dnnl_memory_set_data_handle(p->steps[i].scratch, p->scratch) == dnnl_success;
    free(sp), free(at);
    return ok;
}

/* The calling thread's OpenMP thread count: threads=N, else OpenMP's own. */
static void set_threads(int32_t n) {
    if (dx_ctx.set_num_threads) dx_ctx.set_num_threads(n >= 1 ? n : dx_ctx.default_threads);
}

static bool fix_views(program *p);
static bool make_exec_args(program *p);

/* A boundary value's memory: plain, in its own type (mask.h: a bool as
 * u8); a value other than float32 is its readers' to convert (dx_as_plain
 * reorders it to a float32 copy, as it would a blocked layout). */
static bool boundary_md(slot *s, seam_dtype dt, dnnl_memory_desc_t *md) {
    if (!dx_md_of(s, md)) return false;
    if (dt == SEAM_DTYPE_FLOAT32) return true;
    dnnl_dims_t dims;
    for (int32_t d = 0; d < md->ndims; d++) dims[d] = md->dims[d];
    if (dnnl_memory_desc_init_by_tag(md, md->ndims, dims, dx_boundary_type(dt), dx_plain_tag(md->ndims)) != dnnl_success)
        return false;
    s->has_md = true, s->md = *md;
    return true;
}

/* Hands node b->n to its row's compile function with input 0 in slot sin
 * and output 0 in slot sd (-1: none, see op_stage) and their layouts: what
 * every op's compile starts from, made here once. */
static bool compile_row(builder *b, const dx_op *c, bool *fused, int32_t sin, int32_t sd) {
    dx_io io;
    memset(&io, 0, sizeof(io));
    io.sin = sin, io.sd = sd;
    if (sin >= 0) dx_md_of(&b->p->slots[sin], &io.src);
    if (sd >= 0) dx_md_of(&b->p->slots[sd], &io.dst);
    return c->compile(b, fused, &io);
}

static bool same_dims(const slot *a, const slot *b) {
    if (a->rank != b->rank) return false;
    for (int32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

/* Compiles node i of the subgraph (b->n), unless a primitive made earlier
 * absorbed it (fused[i]); false with b->err set on failure. The steps every
 * node goes through (the layout its input needs, the patterns tried
 * first), then its row's compile function (compile_row). */
static bool compile_node(builder *b, int32_t i, bool *fused) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    if (fused[i]) return true;
    /* the Mul that ends a MatMulInteger -> Cast -> Mul chain (quant_dyn.c);
     * before input 0's slot is asked for: the absorbed Cast made none */
    if (p->n_qmm && is_op(n, "Mul")) {
        int32_t r = dx_compile_qmm_epilogue(b, fused);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    }
    const dx_op *c = dx_op_of(n);
    int32_t sin = c && c->stage == STAGE_VIEW && !is_op(n, "Reshape") ? -1 : dx_input_slot(b, &n->inputs[0]);
    /* a channel shuffle (a Concat or a Reshape, then Transpose and
     * Reshape) in its sources' layout: shuf_shuffle.c */
    if (sin >= 0 && (is_op(n, "Concat") || is_op(n, "Reshape")) && dx_compile_shuffle_pattern(b, fused, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (c && c->stage == STAGE_VIEW) return compile_row(b, c, fused, -1, -1);
    if (sin < 0) return dx_fail(b, "input 0 is neither made earlier nor a constant"), false;
    /* a quantized Add or Mul (DQ, DQ -> Add -> Q) in one pass, a quantized MaxPool
     * (DQ -> MaxPool -> Q) as one int8 pooling, a quantized Concat (quant_dyn.c,
     * quant_concat.c) */
    if (is_op(n, "DequantizeLinear") && b->fuse) {
        int32_t r = dx_compile_qadd_pattern(b, fused, sin);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
        r = dx_compile_qpool_pattern(b, fused, sin);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
        r = dx_compile_qconcat_pattern(b, fused, sin);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    }
    /* (pattern matchers look at other nodes, which invalidates n: fetch
     * it again after each) */
    /* (GELU is matched with fusion=off too: oneDNN 2.6 has no erf, so the
     * pattern is the only way dnnl runs an Erf, and supports() took it) */
    if ((is_op(n, "Div") || is_op(n, "Mul")) && dx_compile_gelu_pattern(b, fused, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if ((is_op(n, "Div") || is_op(n, "Mul")) && dx_defer_scale(b, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    /* a strided view stays one for the ops that view it again; the ops
     * that take any layout, and Concat, read a dense copy in the view's own
     * dim order (a channels-last value's slice stays channels-last) */
    bool views_it = is_op(n, "Slice") || is_op(n, "Split") || is_op(n, "Gather") || is_op(n, "Transpose");
    if (p->slots[sin].lazy && !is_op(n, "MatMul") && !views_it)
        sin = (c && c->stage == STAGE_ANY_LAYOUT) || is_op(n, "Concat") ? dx_as_dense(b, sin) : dx_as_plain(b, sin);
    if (sin < 0) return dx_fail(b, "could not copy input 0 to a dense layout"), false;
    if (c && c->stage == STAGE_ANY_LAYOUT) return compile_row(b, c, fused, sin, -1);
    /* An activation or a same-shape binary on a convolution's blocked output
     * stays in that layout (the residual Add of a ResNet, the Relu after
     * it): no reorder to plain and back. */
    int32_t s1 = IN_LIST(n, binary_ops) && commutative(n) && n->n_inputs > 1 ? dx_input_slot(b, &n->inputs[1]) : -1;
    bool blocked_second = s1 >= 0 && p->slots[s1].has_md && !p->slots[s1].lazy; /* scale * x, x blocked */
    if ((p->slots[sin].has_md || blocked_second) && (IN_LIST(n, eltwise_ops) || IN_LIST(n, binary_ops))) {
        int32_t r = dx_blocked_step(b, n, sin);
        if (r < 0) return false;
        if (r > 0) return true;
    }
    /* a Concat written in place by its sources' producers, or copied into
     * place by jit reorders (concat.c); else oneDNN's concat primitive */
    if (is_op(n, "Concat") && !p->slots[sin].lazy) {
        int32_t r = dx_compile_concat_norm(b, fused, sin);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
        r = dx_compile_concat_places(b, sin);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n; /* (fetched again there) */
    }
    if (is_op(n, "Concat") && n->n_inputs <= MAX_ARGS - 2 && p->slots[sin].has_md && !p->slots[sin].lazy) {
        int32_t r = dx_blocked_concat(b, sin);
        if (r < 0) return false;
        if (r > 0) return true;
        n = b->n; /* (fetched again there) */
    }
    if (is_op(n, "ReduceMean") || is_op(n, "ReduceMax")) {
        int32_t r = dx_reduce_as_pool(b, sin);
        if (r < 0) return false;
        if (r > 0) return true;
    }
    /* every other op works in the plain layout: a convolution's blocked
     * output is reordered back first (once per value) */
    if (!p->slots[sin].lazy && !(views_it && dx_is_strided(&p->slots[sin]))) sin = dx_as_plain(b, sin);
    if (sin < 0) return dx_fail(b, "could not reorder input 0 to the plain layout"), false;
    /* the decomposed layer norm is tried on its first ReduceMean, before
     * the plain reduction */
    if (is_op(n, "ReduceMean") && dx_compile_layernorm_pattern(b, fused, sin)) return true;
    if (b->err[0]) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (c && c->stage == STAGE_PLAIN) return compile_row(b, c, fused, sin, -1);
    int32_t sd = dx_output_slot(b, &n->outputs[0]);
    if (sd < 0) return dx_fail(b, "out of memory"), false;
    /* the ops whose primitive writes dst in src's shape: a file whose
     * shapes disagree is refused here, not written past dst's bytes */
    if ((IN_LIST(n, eltwise_ops) || is_op(n, "PRelu") || is_op(n, "LRN") || is_op(n, "Erf") || is_op(n, "Softmax") ||
         is_op(n, "LogSoftmax")) && !same_dims(&p->slots[sin], &p->slots[sd]))
        return dx_fail(b, "its output's shape differs from its input's (inconsistent shapes in the file)"), false;
    if (c) return compile_row(b, c, fused, sin, sd);
    return dx_fail(b, "not implemented by the dnnl backend"), false;
}

/* The target options; false with the message in err on one it does not know. */
static bool compile_options(const char *const *options, int32_t n_options, bool *fuse, bool *bf16, int32_t *threads,
                            int32_t *conv, char *err, size_t err_size) {
    for (int32_t k = 0; k < n_options; k++) {
        char *end;
        if (!strcmp(options[k], "fusion=off")) *fuse = false;
        else if (!strcmp(options[k], "fusion=on")) *fuse = true;
        else if (!strcmp(options[k], "precision=bf16")) *bf16 = true;
        else if (!strcmp(options[k], "precision=fp32")) *bf16 = false;
        else if (dx_conv_option(options[k], conv)) continue;
        else if (!strncmp(options[k], "threads=", 8) && (*threads = (int32_t)strtol(options[k] + 8, &end, 10)) >= 1 &&
                 *threads <= 1024 && !*end) {
        } else {
            snprintf(err, err_size,
                     "dnnl: unknown or bad target option '%s' (known: fusion=on|off, threads=N with N >= 1, "
                     "conv=auto|direct|winograd, precision=fp32|bf16)",
                     options[k]);
            return false;
        }
    }
    return true;
}

static void *dnnl_compile(void *ctx, const seam_subgraph_view *sg, const char *const *options, int32_t n_options, char *err,
                          size_t err_size) {
    (void)ctx;
    bool fuse = true, bf16 = false;
    int32_t threads = 0, conv = DX_CONV_AUTO;
    if (!compile_options(options, n_options, &fuse, &bf16, &threads, &conv, err, err_size)) return NULL;
    dx_context_init();
    set_threads(threads);
    if (!dx_ctx.ok) {
        snprintf(err, err_size, "no oneDNN CPU engine");
        return NULL;
    }
    if (bf16 && !dx_isa_bf16()) {
        snprintf(err, err_size,
                 "dnnl: precision=bf16: this CPU has neither AVX512_BF16 nor AMX (or oneDNN was limited below them, "
                 "ONEDNN_MAX_CPU_ISA): oneDNN would emulate bfloat16, slower than float32. Run in fp32, or int8 "
                 "(--precision int8 with --calibration)");
        return NULL;
    }
    program *p = calloc(1, sizeof(*p));
    if (p) p->threads = threads, p->conv = conv, p->bf16 = bf16;
    bool *fused = calloc((size_t)sg->n_nodes + 1, sizeof(bool));
    readers_index readers = {NULL, 0};
    if (!p || !fused || dnnl_stream_create(&p->stream, dx_ctx.engine, dnnl_stream_default_flags) != dnnl_success ||
        !(p->in_slot = calloc((size_t)sg->n_inputs + 1, sizeof(int32_t))) ||
        !(p->out_slot = calloc((size_t)sg->n_outputs + 1, sizeof(int32_t)))) {
        snprintf(err, err_size, "out of memory");
        free(fused);
        release_program(p);
        return NULL;
    }
    if (threads > 0) dx_log(p, "threads: %d (target option threads=%d)", threads, threads);
    if (bf16) dx_log(p, "precision: bf16 (Conv, MatMul and Gemm with constant weights read input and weights in "
                        "bfloat16, accumulate and write float32)");
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
            /* (held in float32, see mask.h: integer constants are checked
             * when read, dx_held_constant) */
            bool int_const = k < n->n_inputs && dx_const_input(n, k) &&
                             (v->dtype == SEAM_DTYPE_INT32 || v->dtype == SEAM_DTYPE_INT64);
            bool held = dx_is_quant_op(n) || ((dx_is_mask_op(n) || IN_LIST(n, view_ops)) &&
                        (dx_boundary_type(v->dtype) != dnnl_data_type_undef || int_const));
            if (v->name && v->dtype != SEAM_DTYPE_FLOAT32 && !held && !(k < n->n_inputs && param_input(n, k))) {
                snprintf(err, err_size, "node %d '%s' (%s): value '%s' is %s; dnnl runs float32 only", n->index, n->name,
                         n->op_type, v->name, seam_dtype_name(v->dtype));
                goto bad;
            }
        }
    }
    for (int32_t k = 0; k < sg->n_inputs + sg->n_outputs; k++) {
        const seam_value_info *v = k < sg->n_inputs ? &sg->inputs[k] : &sg->outputs[k - sg->n_inputs];
        if (dx_boundary_type(v->dtype) == dnnl_data_type_undef || !static_shape(v)) {
            snprintf(err, err_size, "boundary value '%s' is not a float32, bool, int8, uint8 or int32 tensor of static shape",
                     v->name);
            goto bad;
        }
    }
    for (int32_t k = 0; k < sg->n_inputs; k++) {
        int32_t s = dx_add_slot(p, sg->inputs[k].name, &sg->inputs[k]);
        dnnl_memory_desc_t md;
        if (s < 0 || !boundary_md(&p->slots[s], sg->inputs[k].dtype, &md) || dnnl_memory_create(&p->slots[s].mem, &md, dx_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) {
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
        if (s < 0 || !boundary_md(&p->slots[s], sg->outputs[k].dtype, &md) || dnnl_memory_create(&p->slots[s].mem, &md, dx_ctx.engine, DNNL_MEMORY_NONE) != dnnl_success) {
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
        builder b = {p, sg, err, err_size, seam_subgraph_node(sg, i, &st), &st, i, fuse, &readers, NULL, NULL};
        /* constants of other types than float32 that the node reads as
         * data: held in float32 (mask.h), checked to be exact */
        bool held_ok = true;
        if (dx_is_mask_op(b.n) || IN_LIST(b.n, view_ops))
            for (int32_t k = 0; held_ok && k < b.n->n_inputs; k++) {
                b.n = seam_subgraph_node(sg, i, &st);
                if (!param_input(b.n, k)) held_ok = dx_held_constant(&b, &b.n->inputs[k]);
            }
        b.n = seam_subgraph_node(sg, i, &st);
        if (!held_ok || !compile_node(&b, i, fused)) {
            b.n = seam_subgraph_node(sg, i, &st);
            if (p->view_error)
                snprintf(err, err_size, "node %d '%s' (%s): its shapes do not fit its input's bytes (inconsistent shapes in the file)",
                         b.n->index, b.n->name, b.n->op_type);
            else if (!err[0]) snprintf(err, err_size, "node %d '%s' (%s): could not be compiled", b.n->index, b.n->name, b.n->op_type);
            goto bad;
        }
    }
    if (dx_qmm_unfinished(p)) {
        snprintf(err, err_size, "%s", dx_qmm_unfinished(p));
        goto bad;
    }
    dx_qmm_release(p);
    if (!plan_arena(p) || !fix_views(p) || !make_exec_args(p)) {
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

/* Each step's arguments as dnnl_primitive_execute takes them, made once:
 * a run only points the boundary memories at the caller's buffers. */
static bool make_exec_args(program *p) {
    for (int32_t k = 0; k < p->n_steps; k++) {
        step *st = &p->steps[k];
        int32_t na = st->n_args;
        if (!(st->exec_args = malloc(sizeof(dnnl_exec_arg_t) * ((size_t)na + 1)))) return false;
        for (int32_t a = 0; a < na; a++) st->exec_args[a] = (dnnl_exec_arg_t){st->arg_kind[a], p->slots[st->arg_slot[a]].mem};
        if (st->scratch) st->exec_args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, st->scratch};
        st->n_exec_args = na;
        p->n_exec_args = k + 1;
    }
    return true;
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

/* For the exec lines of host steps (dx_ctx.verbose). */
static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
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
        const step *st = &p->steps[k];
        if (st->host) { /* after the primitives before it are done */
            double t0 = dx_ctx.verbose ? now_ms() : 0;
            if (dnnl_stream_wait(p->stream) == dnnl_success && st->host(p, st)) {
                if (dx_ctx.verbose) printf("onednn_verbose,exec,cpu,host,%s,forward_inference,,,,,%g\n", st->host_name, now_ms() - t0);
                continue;
            }
            snprintf(err, err_size, "dnnl: step %d failed", k);
            return SEAM_STATUS_INTERNAL;
        }
        if (dnnl_primitive_execute(st->prim, p->stream, st->n_exec_args, st->exec_args) != dnnl_success) {
            snprintf(err, err_size, "dnnl: step %d failed", k);
            return SEAM_STATUS_INTERNAL;
        }
    }
    dnnl_stream_wait(p->stream);
    /* a boundary output that is a view of another slot was written there */
    return SEAM_STATUS_OK;
}

static const char *dnnl_compile_log(void *ctx, void *compiled) {
    (void)ctx;
    const program *p = compiled;
    return p && p->log ? p->log : "";
}

static seam_backend dnnl_backend = {
    .abi_version = SEAM_BACKEND_ABI_VERSION,
    .name = "dnnl",
    .supports = dnnl_supports,
    .node_cost = dnnl_cost,
    .node_cost_with = dnnl_cost_with,
    .compile = dnnl_compile,
    .run = dnnl_run,
    .release_compiled = dnnl_release_compiled,
    .memory = SEAM_MEMORY_HOST,
    .compile_log = dnnl_compile_log,
    .cost_traits = dnnl_cost_traits,
    .run_team = dx_run_team,
};

bool seam_backend_dnnl_bf16(void) {
    dx_context_init();
    return dx_ctx.ok && dx_isa_bf16();
}

const seam_backend *seam_backend_dnnl(void) {
    dx_context_init();
    return &dnnl_backend;
}
