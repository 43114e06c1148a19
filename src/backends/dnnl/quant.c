/*
 * dnnl: quantized ops (one op family, see program.h and quant.h).
 *
 * QLinearConv and QLinearMatMul compute, per ONNX,
 *     y = saturate(round(acc * x_scale * w_scale[c] / y_scale) + y_zero_point)
 *     acc = sum (x - x_zero_point) * (w - w_zero_point)  (+ bias, int32)
 * which is oneDNN 2.6's int8 convolution and matmul: s32 accumulation,
 * the bias added in the accumulator's domain, then the output scales (one
 * per output channel: x_scale * w_scale[c] / y_scale), then dst's zero
 * point, rounded to nearest even and saturated. Zero points of x and y go
 * in as runtime arguments (oneDNN's jit kernels take them so).
 *
 * What oneDNN 2.6's int8 primitives do not take is refused in supports()
 * where the node's types and shapes say so (uint8 weights, weights that
 * are not constant) and at compile time where only the constants do
 * (weight zero points other than 0 for a convolution, per-column ones for
 * a matmul), with the node named.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "map.h"
#include "ops/attr.h"
#include "ops/quant_math.h"
#include "quant.h"

bool dx_q_is_8bit(seam_dtype dt) { return dt == SEAM_DTYPE_UINT8 || dt == SEAM_DTYPE_INT8; }

dnnl_data_type_t dx_q_dt(seam_dtype dt) { return dt == SEAM_DTYPE_UINT8 ? dnnl_u8 : dt == SEAM_DTYPE_INT8 ? dnnl_s8 : dnnl_s32; }

bool dx_is_quant_op(const seam_node_view *n) {
    return is_op(n, "QLinearConv") || is_op(n, "QLinearMatMul") || is_op(n, "QuantizeLinear") || is_op(n, "DequantizeLinear") ||
           is_op(n, "DynamicQuantizeLinear") || is_op(n, "MatMulInteger");
}

/* oneDNN's int8 kernels on a CPU without VNNI (AVX512-VNNI or AVX-VNNI)
 * add each pair of u8 x s8 products in 16 bits (vpmaddubsw), which
 * saturates once a pair passes 32767 (255 * (|w0| + |w1|) for weights of
 * one sign past 128 together): the results then differ from ONNX's exact
 * integers, silently (oneDNN's "Nuances of int8 computations"; ONNX
 * Runtime's u8 x s8 kernels do the same there). Weights quantized to the
 * full int8 range meet it at the first layer. So without VNNI dnnl takes
 * an int8 product only when its constant int8 weights are all within
 * [-64, 64] (7-bit weights, ONNX Runtime's and seam's "reduce range"):
 * then a pair is at most 255 * 128 = 32640 and cannot saturate; the
 * others run on the CPU backend's exact int8 kernels.
 * SEAM_DNNL_INT8_WITHOUT_VNNI=1 takes them all anyway (inexact where a
 * pair saturates). Read once; oneDNN's ONEDNN_MAX_CPU_ISA (below VNNI)
 * makes such a CPU of any. */
static int int8_exact_state; /* 0 unknown, 1 exact, 2 not */
static pthread_once_t int8_once = PTHREAD_ONCE_INIT;
static void int8_probe(void) {
    bool vnni = dx_isa_vnni();
    const char *e = getenv("SEAM_DNNL_INT8_WITHOUT_VNNI");
    int8_exact_state = vnni || (e && !strcmp(e, "1")) ? 1 : 2;
}

/* Input k of n: constant int8 data all within [-64, 64]. */
static bool seven_bit_weights(const seam_node_view *n, int32_t k) {
    seam_tensor_view w;
    if (k >= n->n_inputs || n->inputs[k].dtype != SEAM_DTYPE_INT8 || !seam_node_input_data(n, k, &w) ||
        w.dtype != SEAM_DTYPE_INT8)
        return false;
    const int8_t *d = w.data;
    for (size_t i = 0; i < w.nbytes; i++)
        if (d[i] < -64 || d[i] > 64) return false;
    return true;
}

bool dx_int8_products_exact(const seam_node_view *n, int32_t wk, char *why, size_t wn) {
    pthread_once(&int8_once, int8_probe);
    if (int8_exact_state == 1 || seven_bit_weights(n, wk)) return true;
    return dx_refuse(why, wn,
                     "%s in int8 on a CPU without VNNI (AVX512-VNNI or AVX-VNNI), with weights past 7 bits: oneDNN's "
                     "int8 kernels add pairs of u8 x s8 products in 16 bits there, which saturate and differ from ONNX's "
                     "integers; it runs on the CPU backend's exact int8 kernels (weights within [-64, 64] cannot "
                     "saturate: quantize with `seam quantize --reduce-range`, or ONNX Runtime's reduce_range, and dnnl "
                     "takes them)",
                     n->op_type);
}

/* Inputs first..last (those present) are constants. */
static bool consts(const seam_node_view *n, int32_t first, int32_t last) {
    for (int32_t k = first; k <= last && k < n->n_inputs; k++)
        if (!dx_const_input(n, k)) return false;
    return true;
}

/* ---- constants read at compile time ---- */

/* Constant v's values as doubles (float32, uint8, int8, int32), at most
 * max; *count gets how many. False with b->err set. */
bool dx_q_const_values(builder *b, const seam_value_info *v, double *out, int64_t max, int64_t *count) {
    seam_tensor_view c;
    if (!v->name) return *count = 0, true;
    if (!seam_subgraph_constant(b->sg, v->name, &c)) return dx_fail(b, "a scale or zero point is not a constant"), false;
    size_t esz = seam_dtype_size(c.dtype);
    int64_t cnt = esz ? (int64_t)(c.nbytes / esz) : 0;
    if (cnt < 1 || cnt > max) return dx_fail(b, "a scale or zero point has an unexpected number of elements"), false;
    for (int64_t i = 0; i < cnt; i++) {
        const unsigned char *d = c.data;
        switch (c.dtype) {
        case SEAM_DTYPE_FLOAT32: { float f; memcpy(&f, d + 4 * i, 4); out[i] = f; break; }
        case SEAM_DTYPE_UINT8: out[i] = d[i]; break;
        case SEAM_DTYPE_INT8: out[i] = (int8_t)d[i]; break;
        case SEAM_DTYPE_INT32: { int32_t x; memcpy(&x, d + 4 * i, 4); out[i] = x; break; }
        default: return dx_fail(b, "a scale or zero point of an unexpected type"), false;
        }
    }
    *count = cnt;
    return true;
}

/* Scales: finite and positive, as the CPU kernels require. */
static bool scales_ok(builder *b, const double *s, int64_t n, const char *which) {
    for (int64_t i = 0; i < n; i++)
        if (!(s[i] > 0) || !isfinite(s[i])) {
            char msg[160];
            snprintf(msg, sizeof(msg), "%s %g is not a finite positive number", which, s[i]);
            return dx_fail(b, msg), false;
        }
    return true;
}

/* A slot over a constant's bytes, in place, plain, seen with the given
 * dims (the same element count), of oneDNN type dt. */
int32_t dx_q_const_slot(builder *b, const seam_value_info *v, seam_dtype want, int32_t rank, const int64_t *dims) {
    seam_tensor_view c;
    if (!seam_subgraph_constant(b->sg, v->name, &c) || c.dtype != want) return dx_fail(b, "a weight is not a constant of the expected type"), -1;
    seam_value_info shape = {"(int8 constant)", want, rank, dims, NULL};
    int32_t s = dx_add_slot(b->p, "(int8 constant)", &shape);
    if (s < 0) return dx_fail(b, "out of memory"), -1;
    slot *sl = &b->p->slots[s];
    dnnl_memory_desc_t md;
    if (dnnl_memory_desc_init_by_tag(&md, rank, sl->dims, dx_q_dt(want), dx_plain_tag(rank)) != dnnl_success ||
        dnnl_memory_desc_get_size(&md) != c.nbytes)
        return dx_fail(b, "a constant's size does not match its shape"), -1;
    sl->has_md = true, sl->md = md, sl->constant = true;
    if (dnnl_memory_create(&sl->mem, &md, dx_ctx.engine, (void *)c.data) != dnnl_success) return dx_fail(b, "out of memory"), -1;
    return s;
}

/* A zero point as a runtime argument: one s32, owned by the program. */
int32_t dx_q_zp_slot(builder *b, int32_t value) {
    int64_t one = 1;
    seam_value_info v = {"(zero point)", SEAM_DTYPE_INT32, 1, &one, NULL};
    int32_t s = dx_add_slot(b->p, "(zero point)", &v);
    if (s < 0) return -1;
    slot *sl = &b->p->slots[s];
    int32_t *d = malloc(sizeof(int32_t) * 2);
    dnnl_memory_desc_t md;
    if (!d || dnnl_memory_desc_init_by_tag(&md, 1, sl->dims, dnnl_s32, dnnl_a) != dnnl_success ||
        dnnl_memory_create(&sl->mem, &md, dx_ctx.engine, d) != dnnl_success)
        return free(d), -1;
    d[0] = value;
    sl->owned = d, sl->has_md = true, sl->md = md, sl->constant = true;
    return s;
}

/* The attribute every int8 primitive here gets: output scales (count of
 * them along dim `axis`, or one), the zero points of src and dst as
 * runtime arguments when not 0 (their slots appended to kinds/slots). */
dnnl_primitive_attr_t dx_q_attr(builder *b, const float *oscales, int64_t count, int32_t axis, int32_t xz, int32_t wz,
                                int32_t yz, int32_t *kinds, int32_t *slots, int32_t *n_args) {
    dnnl_primitive_attr_t attr = NULL;
    const int32_t runtime = DNNL_RUNTIME_S32_VAL;
    bool ok = dnnl_primitive_attr_create(&attr) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
              dnnl_primitive_attr_set_output_scales(attr, count, count > 1 ? 1 << axis : 0, oscales) == dnnl_success;
    /* ONNX rounds, then adds y's zero point; oneDNN adds it in float32
     * first, where 136.50000043 is 136.5 and rounds to 136, not 137 (one
     * value in ~30,000 of a mobilenet_v2, then amplified by the layers
     * after it). A round post-op makes the sum exact. */
    dnnl_post_ops_t po = NULL;
    if (ok && yz) {
        ok = dnnl_post_ops_create(&po) == dnnl_success &&
             dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f) == dnnl_success &&
             dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
        if (po) dnnl_post_ops_destroy(po);
    }
    const int32_t args[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, zps[3] = {xz, wz, yz};
    for (int32_t k = 0; ok && k < 3; k++) {
        if (!zps[k]) continue;
        int32_t s = dx_q_zp_slot(b, zps[k]);
        ok = s >= 0 && dnnl_primitive_attr_set_zero_points(attr, args[k], 1, 0, &runtime) == dnnl_success;
        if (ok) kinds[*n_args] = DNNL_ARG_ATTR_ZERO_POINTS | args[k], slots[(*n_args)++] = s;
    }
    if (!ok) {
        if (attr) dnnl_primitive_attr_destroy(attr);
        dx_fail(b, "out of memory");
        return NULL;
    }
    return attr;
}

/* The output scales x_scale * w_scale[c] / y_scale, and the zero points,
 * of a QLinear node (inputs 1, 2, 4, 5, 6, 7). */
typedef struct qlin {
    float *oscale;
    int64_t n_scales;
    int32_t xz, wz, yz;
} qlin;

static bool read_qlin(builder *b, int64_t m, qlin *q) {
    const seam_node_view *n = b->n;
    double xs, ys, xz, yz, *ws = malloc(sizeof(double) * (size_t)(m + 1)), *wz = malloc(sizeof(double) * (size_t)(m + 1));
    q->oscale = malloc(sizeof(float) * (size_t)(m + 1));
    int64_t c1, c2, c3, c4, c5, c6;
    bool ok = ws && wz && q->oscale && dx_q_const_values(b, &n->inputs[1], &xs, 1, &c1) && dx_q_const_values(b, &n->inputs[2], &xz, 1, &c2) &&
              dx_q_const_values(b, &n->inputs[4], ws, m, &c3) && dx_q_const_values(b, &n->inputs[5], wz, m, &c4) &&
              dx_q_const_values(b, &n->inputs[6], &ys, 1, &c5) && dx_q_const_values(b, &n->inputs[7], &yz, 1, &c6) &&
              scales_ok(b, &xs, 1, "x_scale") && scales_ok(b, ws, c3, "w_scale") && scales_ok(b, &ys, 1, "y_scale");
    if (ok && (c3 != 1 && c3 != m)) ok = dx_fail(b, "w_scale has neither 1 nor one per output channel") != NULL;
    if (ok && c4 > 0 && c4 != 1 && c4 != c3) ok = dx_fail(b, "w_zero_point's length differs from w_scale's") != NULL;
    for (int64_t i = 1; ok && i < c4; i++)
        if (wz[i] != wz[0]) ok = dx_fail(b, "per-channel weight zero points that differ: oneDNN takes one weight zero point") != NULL;
    if (ok) {
        q->n_scales = c3;
        for (int64_t c = 0; c < c3; c++) q->oscale[c] = (float)(xs * ws[c] / ys);
        q->xz = c2 ? (int32_t)xz : 0, q->wz = c4 ? (int32_t)wz[0] : 0, q->yz = c6 ? (int32_t)yz : 0;
    }
    free(ws);
    free(wz);
    return ok;
}

/* A QLinear node's zero points (inputs 2, 5, 7) have the types of x, w
 * and y, as ONNX requires (the CPU kernels say so at run time). */
static bool zp_types_ok(const seam_node_view *n) {
    const int32_t zp[3] = {2, 5, 7};
    const seam_dtype of[3] = {n->inputs[0].dtype, n->inputs[3].dtype, n->outputs[0].dtype};
    for (int32_t k = 0; k < 3; k++)
        if (zp[k] < n->n_inputs && n->inputs[zp[k]].name && n->inputs[zp[k]].dtype != of[k]) return false;
    return true;
}

/* An int8 matmul's A and B: A (slot sin) in its own type and the plain
 * layout of its full dims (in_md), seen as a_md [rows, K]; B (slot sw)
 * reordered once into pd's weights layout. False with b->err set. */
bool dx_q_matmul_in(builder *b, int32_t sin, const dnnl_memory_desc_t *in_md, const dnnl_memory_desc_t *a_md, int32_t sw,
                    const_dnnl_primitive_desc_t pd, int32_t *va, int32_t *wt) {
    program *p = b->p;
    int32_t sa = dx_in_layout(b, sin, in_md);
    if (sa < 0) return dx_fail(b, "could not lay out the matmul's input"), false;
    slot flat = p->slots[sa];
    flat.rank = 2, flat.dims[0] = a_md->dims[0], flat.dims[1] = a_md->dims[1];
    *va = dx_view_slot(p, sa, &flat, a_md);
    *wt = *va < 0 ? -1 : dx_resident_copy(b, sw, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    if (*wt < 0) return dx_fail(b, "could not lay out the matmul's tensors"), false;
    return true;
}

/* Its Y: the node's output 0 in out_md (plain, its full dims), *sy (or a
 * stand-in for a boundary output, copied to *final_slot after), and when
 * vy is given, *vy seen as y_md [rows, N]. False with b->err set. */
bool dx_q_matmul_out(builder *b, const dnnl_memory_desc_t *out_md, const dnnl_memory_desc_t *y_md, int32_t *sy, int32_t *vy,
                     int32_t *final_slot) {
    program *p = b->p;
    *sy = dx_result_slot(b, &b->n->outputs[0], out_md, final_slot);
    if (*sy < 0) return dx_fail(b, "could not lay out the matmul's output"), false;
    if (!vy) return true;
    slot yflat = p->slots[*sy];
    yflat.rank = 2, yflat.dims[0] = y_md->dims[0], yflat.dims[1] = y_md->dims[1];
    *vy = dx_view_slot(p, *sy, &yflat, y_md);
    return *vy >= 0 || (dx_fail(b, "could not lay out the matmul's output"), false);
}

/* ---- QLinearConv ---- */

static bool supports_qconv(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_inputs < 8) return dx_refuse(why, wn, "QLinearConv with fewer than 8 inputs");
    if (!dx_int8_products_exact(n, 3, why, wn)) return false;
    if (n->inputs[0].rank < 3 || n->inputs[0].rank > 5)
        return dx_refuse(why, wn, "QLinearConv of rank %d: dnnl does 1-D, 2-D and 3-D", n->inputs[0].rank);
    if (!dx_q_is_8bit(n->inputs[0].dtype) || !dx_q_is_8bit(n->outputs[0].dtype))
        return dx_refuse(why, wn, "QLinearConv on %s: int8 or uint8 only", seam_dtype_name(n->inputs[0].dtype));
    if (n->inputs[3].dtype != SEAM_DTYPE_INT8)
        return dx_refuse(why, wn, "QLinearConv with %s weights: oneDNN's int8 convolutions take int8 weights "
                                  "(quantize weights as int8, symmetric)", seam_dtype_name(n->inputs[3].dtype));
    if (n->inputs[3].rank != n->inputs[0].rank) return dx_refuse(why, wn, "QLinearConv without weights of its input's rank");
    if (!consts(n, 1, 8))
        return dx_refuse(why, wn, "QLinearConv whose weights, bias, scales or zero points are not constants");
    if (!zp_types_ok(n)) return dx_refuse(why, wn, "QLinearConv with a zero point whose type is not its tensor's");
    if (n->inputs[5].name && dx_value_numel(&n->inputs[5]) != 1)
        return dx_refuse(why, wn, "QLinearConv with weight zero points per channel that differ: oneDNN takes symmetric weights");
    if (n->n_inputs > 8 && n->inputs[8].name && n->inputs[8].dtype != SEAM_DTYPE_INT32)
        return dx_refuse(why, wn, "QLinearConv with a bias that is not int32");
    conv_geom g;
    return dx_window_geom(n, n->inputs[3].dims + 2, false, &g, why, wn);
}

/* A 1x1 convolution of 1x1 images (a Gemm unit, see partition/qdq.c) as
 * oneDNN's int8 matmul of x [M, K] by W^T [K, N] (W's bytes [N, K] seen
 * transposed) plus the s32 bias: about 4x faster than its convolution at
 * M = 64, K = N = 1024. */
static bool compile_qconv_matmul(builder *b, const dx_io *io, const qlin *q) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    int64_t mm = n->inputs[0].dims[0], kk = n->inputs[0].dims[1], nn = n->inputs[3].dims[0];
    int64_t wd[2] = {nn, kk};
    int32_t sw = dx_q_const_slot(b, &n->inputs[3], SEAM_DTYPE_INT8, 2, wd);
    bool has_bias = n->n_inputs > 8 && n->inputs[8].name;
    int64_t bd[2] = {1, nn};
    int32_t sb = has_bias && sw >= 0 ? dx_q_const_slot(b, &n->inputs[8], SEAM_DTYPE_INT32, 2, bd) : -1;
    if (sw < 0 || (has_bias && sb < 0)) return false;
    /* W [N, K] as [K, N]: strides (1, K) */
    dnnl_memory_desc_t wt_md, a, w, y, bias;
    dnnl_dims_t kn = {kk, nn}, st = {1, kk}, ad = {mm, kk}, yd = {mm, nn};
    if (dnnl_memory_desc_init_by_strides(&wt_md, 2, kn, dnnl_s8, st) != dnnl_success)
        return dx_fail(b, "oneDNN cannot describe the weights"), false;
    p->slots[sw].md = wt_md, p->slots[sw].rank = 2, p->slots[sw].dims[0] = kk, p->slots[sw].dims[1] = nn;
    dnnl_memory_desc_init_by_tag(&a, 2, ad, dx_q_dt(n->inputs[0].dtype), dnnl_ab);
    dnnl_memory_desc_init_by_tag(&w, 2, kn, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&y, 2, yd, dx_q_dt(n->outputs[0].dtype), dnnl_ab);
    if (sb >= 0) bias = p->slots[sb].md;
    int32_t kinds[8] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS}, slots[8];
    int32_t n_args = sb >= 0 ? 4 : 3;
    dnnl_primitive_attr_t attr = dx_q_attr(b, q->oscale, q->n_scales, 1, q->xz, 0, q->yz, kinds, slots, &n_args);
    if (!attr) return false;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dnnl_matmul_desc_init(&md, &a, &w, sb >= 0 ? &bias : NULL, &y) == dnnl_success &&
              dnnl_primitive_desc_create(&pd, &md, attr, dx_ctx.engine, NULL) == dnnl_success;
    dnnl_primitive_attr_destroy(attr);
    if (!ok) return dx_fail(b, "oneDNN has no int8 matmul for this 1x1 convolution"), false;
    /* x [M, K, 1, 1] plain in its type, seen as [M, K]; y likewise */
    dnnl_memory_desc_t x4, y4;
    dnnl_dims_t xd4 = {mm, kk, 1, 1}, yd4 = {mm, nn, 1, 1};
    dnnl_memory_desc_init_by_tag(&x4, 4, xd4, dx_q_dt(n->inputs[0].dtype), dnnl_abcd);
    dnnl_memory_desc_init_by_tag(&y4, 4, yd4, dx_q_dt(n->outputs[0].dtype), dnnl_abcd);
    int32_t va, wt, sy, vy, final_slot = -1;
    if (!dx_q_matmul_in(b, io->sin, &x4, &a, sw, pd, &va, &wt) || !dx_q_matmul_out(b, &y4, &y, &sy, &vy, &final_slot))
        return dnnl_primitive_desc_destroy(pd), false;
    bool done = dx_weighted_step(b, pd, n_args, kinds, slots, va, wt, vy, sb, -1);
    return done && (final_slot < 0 || dx_add_reorder(b, sy, final_slot));
}

static bool compile_qconv(builder *b, bool *fused, const dx_io *io) {
    (void)fused;
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t nsp = n->inputs[0].rank - 2, rank = n->inputs[3].rank;
    int64_t group = node_attr_int(dx_ir(n), "group", 1), m = n->inputs[3].dims[0];
    dnnl_dims_t strides, dilates, pl, pr;
    if (group < 1 || m % group) return dx_fail(b, "group does not divide the output channels"), false;
    if (!dx_window(b, nsp, n->inputs[3].dims + 2, false, strides, dilates, pl, pr)) return false;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    qlin q = {NULL, 0, 0, 0, 0};
    if (!read_qlin(b, m, &q)) return free(q.oscale), false;
    if (q.wz) return free(q.oscale), dx_fail(b, "weight zero point other than 0: oneDNN's int8 convolutions take symmetric "
                                               "weights (keep this node on the CPU: --cpu-ops QLinearConv)"), false;
    /* 1x1 images, a 1x1 kernel, no groups, no padding: a matmul */
    bool one = n->inputs[0].rank == 4 && group == 1 && dx_slot_numel(&p->slots[io->sin]) == n->inputs[0].dims[0] * n->inputs[0].dims[1];
    for (int32_t d = 0; one && d < 2; d++)
        one = n->inputs[3].dims[2 + d] == 1 && pl[d] == 0 && pr[d] == 0 && strides[d] == 1;
    if (one) {
        bool ok = compile_qconv_matmul(b, io, &q);
        free(q.oscale);
        return ok;
    }
    /* weights [M, C/g, k...], grouped: [g, M/g, C/g, k...] (the same bytes) */
    int64_t wd[MAXR + 1];
    int32_t wr = rank;
    for (int32_t d = 0; d < rank; d++) wd[d] = n->inputs[3].dims[d];
    if (group > 1) {
        wr = rank + 1, wd[0] = group, wd[1] = m / group;
        for (int32_t d = 1; d < rank; d++) wd[d + 1] = n->inputs[3].dims[d];
    }
    int32_t sw = dx_q_const_slot(b, &n->inputs[3], SEAM_DTYPE_INT8, wr, wd);
    bool has_bias = n->n_inputs > 8 && n->inputs[8].name;
    int32_t sb = has_bias && sw >= 0 ? dx_q_const_slot(b, &n->inputs[8], SEAM_DTYPE_INT32, 1, &m) : -1;
    if (sw < 0 || (has_bias && sb < 0)) return free(q.oscale), false;
    dnnl_memory_desc_t src, w, dst, bias;
    dnnl_dims_t od;
    for (int32_t d = 0; d < n->outputs[0].rank; d++) od[d] = n->outputs[0].dims[d];
    dnnl_dims_t id, wdd;
    for (int32_t d = 0; d < n->inputs[0].rank; d++) id[d] = n->inputs[0].dims[d];
    for (int32_t d = 0; d < wr; d++) wdd[d] = wd[d];
    dnnl_memory_desc_init_by_tag(&src, n->inputs[0].rank, id, dx_q_dt(n->inputs[0].dtype), dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&w, wr, wdd, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dst, n->outputs[0].rank, od, dx_q_dt(n->outputs[0].dtype), dnnl_format_tag_any);
    if (sb >= 0) bias = p->slots[sb].md;
    int32_t kinds[8] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS}, slots[8];
    int32_t n_args = sb >= 0 ? 4 : 3;
    dnnl_primitive_attr_t attr = dx_q_attr(b, q.oscale, q.n_scales, 1, q.xz, 0, q.yz, kinds, slots, &n_args);
    if (!attr) return free(q.oscale), false;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src, &w,
                                                         sb >= 0 ? &bias : NULL, &dst, strides, dilates, pl, pr) == dnnl_success &&
              dnnl_primitive_desc_create(&pd, &cd, attr, dx_ctx.engine, NULL) == dnnl_success;
    dnnl_primitive_attr_destroy(attr);
    if (!ok) return free(q.oscale), dx_fail(b, "oneDNN has no int8 convolution for these shapes and zero points"), false;
    if (q.xz) { /* x's zero point taken out where that gives brgconv (quant_conv.c) */
        qconv_plan c = {m, group, nsp, wr, q.xz, q.yz, dx_q_dt(n->inputs[0].dtype), dx_q_dt(n->outputs[0].dtype),
                        {0}, {0}, {0}, {0}, {0}, {0}, {0}, q.oscale, q.n_scales, sw};
        memcpy(c.id, id, sizeof(id)), memcpy(c.od, od, sizeof(od)), memcpy(c.wd, wdd, sizeof(wdd));
        memcpy(c.strides, strides, sizeof(strides)), memcpy(c.dilates, dilates, sizeof(dilates));
        memcpy(c.pl, pl, sizeof(pl)), memcpy(c.pr, pr, sizeof(pr));
        int32_t r = dx_qconv_without_src_zp(b, io, &c, pd);
        if (r != 0) return free(q.oscale), dnnl_primitive_desc_destroy(pd), r > 0;
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    }
    free(q.oscale);
    const dnnl_memory_desc_t *csrc = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *cw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *cdst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int32_t final_slot = -1;
    int32_t xs = dx_in_layout(b, io->sin, csrc);
    int32_t wt = xs < 0 ? -1 : dx_resident_copy(b, sw, cw);
    int32_t sd = wt < 0 ? -1 : dx_result_slot(b, &n->outputs[0], cdst, &final_slot);
    if (sd < 0) {
        dnnl_primitive_desc_destroy(pd);
        return dx_fail(b, "could not lay out the convolution's tensors"), false;
    }
    return dx_weighted_step(b, pd, n_args, kinds, slots, xs, wt, sd, sb, final_slot);
}

/* ---- QLinearMatMul ---- */

static bool supports_qmatmul(const seam_node_view *n, char *why, size_t wn) {
    if (n->n_inputs < 8) return dx_refuse(why, wn, "QLinearMatMul with fewer than 8 inputs");
    if (!dx_int8_products_exact(n, 3, why, wn)) return false;
    if (!dx_q_is_8bit(n->inputs[0].dtype) || !dx_q_is_8bit(n->outputs[0].dtype))
        return dx_refuse(why, wn, "QLinearMatMul on %s: int8 or uint8 only", seam_dtype_name(n->inputs[0].dtype));
    if (n->inputs[3].dtype != SEAM_DTYPE_INT8)
        return dx_refuse(why, wn, "QLinearMatMul with %s weights: oneDNN's int8 matmul takes int8 weights",
                         seam_dtype_name(n->inputs[3].dtype));
    if (!consts(n, 1, 7)) return dx_refuse(why, wn, "QLinearMatMul whose B, scales or zero points are not constants");
    if (!zp_types_ok(n)) return dx_refuse(why, wn, "QLinearMatMul with a zero point whose type is not its tensor's");
    if (n->inputs[5].name && dx_value_numel(&n->inputs[5]) != 1)
        return dx_refuse(why, wn, "QLinearMatMul with zero points of B per column that differ: dnnl takes one");
    if (n->inputs[3].rank != 2 || n->inputs[0].rank < 2)
        return dx_refuse(why, wn, "QLinearMatMul with B of rank %d: dnnl takes a 2-D constant B", n->inputs[3].rank);
    return true;
}

/* A is [..., M, K], viewed as [rows, K]; B [K, N]; Y [rows, N]. */
static bool compile_qmatmul(builder *b, bool *fused, const dx_io *io) {
    (void)fused;
    const seam_node_view *n = b->n;
    int32_t ra = n->inputs[0].rank;
    int64_t k = n->inputs[3].dims[0], nn = n->inputs[3].dims[1], rows = 1;
    for (int32_t d = 0; d < ra - 1; d++) rows *= n->inputs[0].dims[d];
    if (n->inputs[0].dims[ra - 1] != k) return dx_fail(b, "A's last dim differs from B's first"), false;
    qlin q = {NULL, 0, 0, 0, 0};
    if (!read_qlin(b, nn, &q)) return free(q.oscale), false;
    int64_t bd[2] = {k, nn};
    int32_t sw = dx_q_const_slot(b, &n->inputs[3], SEAM_DTYPE_INT8, 2, bd);
    if (sw < 0) return free(q.oscale), false;
    int32_t kinds[8] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, slots[8];
    int32_t n_args = 3;
    dnnl_primitive_attr_t attr = dx_q_attr(b, q.oscale, q.n_scales, 1, q.xz, q.wz, q.yz, kinds, slots, &n_args);
    free(q.oscale);
    if (!attr) return false;
    dnnl_memory_desc_t a, w, y;
    dnnl_dims_t ad = {rows, k}, wd = {k, nn}, yd = {rows, nn};
    dnnl_memory_desc_init_by_tag(&a, 2, ad, dx_q_dt(n->inputs[0].dtype), dnnl_ab);
    dnnl_memory_desc_init_by_tag(&w, 2, wd, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&y, 2, yd, dx_q_dt(n->outputs[0].dtype), dnnl_ab);
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dnnl_matmul_desc_init(&md, &a, &w, NULL, &y) == dnnl_success &&
              dnnl_primitive_desc_create(&pd, &md, attr, dx_ctx.engine, NULL) == dnnl_success;
    dnnl_primitive_attr_destroy(attr);
    if (!ok) return dx_fail(b, "oneDNN has no int8 matmul for these shapes and zero points"), false;
    /* A in its plain layout and type (a value held in float32 is reordered
     * to it, exactly), seen as [rows, K]; Y [rows, N] */
    dnnl_memory_desc_t plain, yfull;
    dnnl_dims_t full, yo;
    for (int32_t d = 0; d < ra; d++) full[d] = n->inputs[0].dims[d];
    for (int32_t d = 0; d < n->outputs[0].rank; d++) yo[d] = n->outputs[0].dims[d];
    dnnl_memory_desc_init_by_tag(&plain, ra, full, dx_q_dt(n->inputs[0].dtype), dx_plain_tag(ra));
    dnnl_memory_desc_init_by_tag(&yfull, n->outputs[0].rank, yo, dx_q_dt(n->outputs[0].dtype), dx_plain_tag(n->outputs[0].rank));
    int32_t va, wt, sy, vy, final_slot = -1;
    if (!dx_q_matmul_in(b, io->sin, &plain, &a, sw, pd, &va, &wt) || !dx_q_matmul_out(b, &yfull, &y, &sy, &vy, &final_slot))
        return dnnl_primitive_desc_destroy(pd), false;
    bool done = dx_weighted_step(b, pd, n_args, kinds, slots, va, wt, vy, -1, -1);
    return done && (final_slot < 0 || dx_add_reorder(b, sy, final_slot));
}

/* ---- QuantizeLinear and DequantizeLinear ----
 * Per tensor, each step exact where ONNX's is:
 *   Q:  one host pass dividing by the scale (run_quantize);
 *   DQ: u8/s8 -> float32 minus the zero point (an integer difference),
 *       times the scale (one rounding), in one reorder; an 8-bit value
 *       held in float32 (after a view op) by two eltwise steps. */

static bool supports_qdq(const seam_node_view *n, char *why, size_t wn) {
    bool q = is_op(n, "QuantizeLinear");
    const seam_value_info *v = q ? &n->outputs[0] : &n->inputs[0];
    if (!dx_q_is_8bit(v->dtype)) return dx_refuse(why, wn, "%s of %s: int8 or uint8 only", n->op_type, seam_dtype_name(v->dtype));
    if (q && n->inputs[0].dtype != SEAM_DTYPE_FLOAT32)
        return dx_refuse(why, wn, "QuantizeLinear of %s: float32 only", seam_dtype_name(n->inputs[0].dtype));
    if (!consts(n, 1, 2)) return dx_refuse(why, wn, "%s whose scale or zero point is not a constant", n->op_type);
    if (n->n_inputs > 2 && n->inputs[2].name && n->inputs[2].dtype != v->dtype)
        return dx_refuse(why, wn, "%s with a zero point of %s for %s values", n->op_type, seam_dtype_name(n->inputs[2].dtype),
                         seam_dtype_name(v->dtype));
    if (n->n_inputs < 2 || !n->inputs[1].name || dx_value_numel(&n->inputs[1]) != 1)
        return dx_refuse(why, wn, "%s per axis: dnnl takes a scale per tensor", n->op_type);
    int64_t bs = 0;
    if (seam_node_attr_int(n, "block_size", &bs) && bs) return dx_refuse(why, wn, "%s by blocks", n->op_type);
    return true;
}

static bool eltwise_linear(builder *b, int32_t from, int32_t to, float alpha, float beta) {
    dnnl_memory_desc_t a;
    dx_md_of(&b->p->slots[from], &a);
    dnnl_eltwise_desc_t ed;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_linear, &a, alpha, beta) != dnnl_success)
        return dx_fail(b, "oneDNN refuses this eltwise"), false;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {from, to};
    return dx_add_step(b, &ed, NULL, 2, kinds, slots);
}

/* A reorder from slot `from` to slot `to` scaled by `scale`, with the
 * zero point zp of `zp_arg` (DNNL_ARG_FROM or DNNL_ARG_TO; 0: none) as a
 * runtime argument. */
static bool scaled_reorder(builder *b, int32_t from, int32_t to, float scale, int32_t zp_arg, int32_t zp) {
    dnnl_memory_desc_t a, c;
    dx_md_of(&b->p->slots[from], &a);
    dx_md_of(&b->p->slots[to], &c);
    const int32_t runtime = DNNL_RUNTIME_S32_VAL;
    int32_t kinds[3] = {DNNL_ARG_FROM, DNNL_ARG_TO}, slots[3] = {from, to}, n = 2;
    int32_t zs = zp ? dx_q_zp_slot(b, zp) : -1;
    if (zp && zs < 0) return dx_fail(b, "out of memory"), false;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dnnl_primitive_attr_create(&attr) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
              (scale == 1.0f || dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale) == dnnl_success) &&
              (!zp || dnnl_primitive_attr_set_zero_points(attr, zp_arg, 1, 0, &runtime) == dnnl_success) &&
              dnnl_reorder_primitive_desc_create(&pd, &a, dx_ctx.engine, &c, dx_ctx.engine, attr) == dnnl_success;
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!ok) return dx_fail(b, "oneDNN has no reorder with this scale and zero point"), false;
    if (zp) kinds[n] = DNNL_ARG_ATTR_ZERO_POINTS | zp_arg, slots[n++] = zs;
    ok = dx_add_prim(b, pd, n, kinds, slots);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

volatile float dx_round_big = 12582912.0f;

/* QuantizeLinear as ONNX writes it, y = saturate(round(x / scale) + zp):
 * a division (a reorder's output scale multiplies by 1 / scale, which
 * rounds some halfway points the other way), rounded half to even, a NaN
 * to 0, in the CPU kernel's float32 arithmetic (backends/cpu/quant.c) */
typedef struct qstep {
    int64_t count;
    float scale, zp;
    bool is_signed;
} qstep;

DX_HOT static void quantize_span(const float *x, uint8_t *y, int64_t n, float scale, float zp, bool is_signed) {
    quant_f32_to_8bit(x, y, n, scale, zp, is_signed); /* (ops/quant_math.h: the CPU kernel's bits) */
}

static bool run_quantize(const program *p, const step *st) {
    const qstep *k = st->host_data;
    const float *x = dx_q_data(p, st->arg_slot[0]);
    uint8_t *y = dx_q_data(p, st->arg_slot[1]);
    DX_Q_CHUNKS(k->count, at, n, quantize_span(x + at, y + at, n, k->scale, k->zp, k->is_signed));
    return true;
}

static bool compile_qdq(builder *b, bool *fused, const dx_io *io) {
    (void)fused;
    const seam_node_view *n = b->n;
    program *p = b->p;
    bool q = is_op(n, "QuantizeLinear");
    double s, z = 0;
    int64_t c1, c2 = 0;
    if (!dx_q_const_values(b, &n->inputs[1], &s, 1, &c1) || !scales_ok(b, &s, 1, "scale") ||
        (n->n_inputs > 2 && !dx_q_const_values(b, &n->inputs[2], &z, 1, &c2)))
        return false;
    int32_t sin = io->sin;
    dnnl_memory_desc_t in;
    dx_md_of(&p->slots[sin], &in);
    if (!q && in.data_type != dnnl_f32) {
        /* float32 in x's layout (a convolution's channels-last output stays
         * so for the Add and the Q after it, and the next convolution) */
        dnnl_memory_desc_t f = in;
        f.data_type = dnnl_f32;
        int32_t final_slot = -1;
        int32_t sd = dx_result_slot(b, &n->outputs[0], &f, &final_slot);
        if (sd < 0) return dx_fail(b, "out of memory"), false;
        return scaled_reorder(b, sin, sd, (float)s, DNNL_ARG_FROM, (int32_t)z) &&
               (final_slot < 0 || dx_add_reorder(b, sd, final_slot));
    }
    if (!q) {
        int32_t sd = dx_output_slot(b, &n->outputs[0]); /* float32, plain */
        if (sd < 0) return dx_fail(b, "out of memory"), false;
        sin = dx_as_plain(b, sin);
        dnnl_memory_desc_t f;
        dx_md_of(&p->slots[sin], &f);
        int32_t t = sin < 0 ? -1 : dx_temp_slot(b, &p->slots[sin], &f);
        if (t < 0) return dx_fail(b, "out of memory"), false;
        p->slots[t].has_md = false;
        return eltwise_linear(b, sin, t, 1.0f, (float)-z) && eltwise_linear(b, t, sd, (float)s, 0.0f);
    }
    /* one host pass in x's layout (the 8-bit value in it too: a blocked
     * layout pads both alike, so element i of one is element i of the
     * other) */
    dnnl_memory_desc_t o = in;
    o.data_type = dx_q_dt(n->outputs[0].dtype);
    int32_t final_slot = -1;
    int32_t sd = dx_result_slot(b, &n->outputs[0], &o, &final_slot);
    qstep *k = sd < 0 ? NULL : malloc(sizeof(*k));
    if (!k) return dx_fail(b, "out of memory"), false;
    *k = (qstep){(int64_t)dnnl_memory_desc_get_size(&o), (float)s, (float)z, o.data_type == dnnl_s8};
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
    return dx_add_host(b, "quantize", run_quantize, k, 2, kinds, slots) && (final_slot < 0 || dx_add_reorder(b, sd, final_slot));
}

const dx_op dx_quant_rows[] = {
    {"QLinearConv", STAGE_ANY_LAYOUT, supports_qconv, compile_qconv},
    {"QLinearMatMul", STAGE_ANY_LAYOUT, supports_qmatmul, compile_qmatmul},
    {"QuantizeLinear", STAGE_ANY_LAYOUT, supports_qdq, compile_qdq},
    {"DequantizeLinear", STAGE_ANY_LAYOUT, supports_qdq, compile_qdq},
    {NULL, STAGE_VIEW, NULL, NULL},
};
