/*
 * dnnl: dynamic quantization and the quantized residual Add (one op
 * family after quant.c, see program.h and quant_dyn.h): host steps and
 * oneDNN's int8 matmul with zero points read at run time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "map.h"
#include "ops/attr.h"
#include "ops/quant_math.h"
#include "quant_dyn.h"

/* ---- dynamic quantization: DynamicQuantizeLinear, MatMulInteger ----
 * ONNX Runtime's quantize_dynamic writes, per MatMul of a transformer,
 *     x -> DynamicQuantizeLinear -> (x_q, x_scale, x_zp)
 *     MatMulInteger(x_q, w_q, x_zp, w_zp) -> Cast -> Mul(x_scale * w_scale)
 * DynamicQuantizeLinear is a host step (its scale comes from the data:
 * one pass for the range, one to quantize, in float32 as the CPU kernel
 * and the spec's reference compute it); MatMulInteger is oneDNN's int8
 * matmul with an s32 result and x's zero point read at run time. */

typedef struct dyn_quant {
    int64_t count;
} dyn_quant;

static inline uint8_t sat_u8(float v) { return v < 0 || v != v ? 0 : v > 255 ? 255 : (uint8_t)v; }


/* The range of x[0, n) (holding 0), a NaN skipped as the CPU kernel's
 * fmin and fmax skip it: 8 lanes in GCC's vector types (a min/max
 * reduction of floats stays scalar without -ffinite-math-only; lane by
 * lane it is a compare and a select, false for a NaN) */
typedef float f32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));

DX_HOT static void range_span(const float *x, int64_t n, float *lo_io, float *hi_io) {
    f32x8 lo = {0}, hi = {0};
    for (int32_t j = 0; j < 8; j++) lo[j] = *lo_io, hi[j] = *hi_io;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        f32x8 v;
        memcpy(&v, x + i, sizeof(v));
        i32x8 below = v < lo, above = v > hi;
        lo = (f32x8)((below & (i32x8)v) | (~below & (i32x8)lo));
        hi = (f32x8)((above & (i32x8)v) | (~above & (i32x8)hi));
    }
    float l = lo[0], h = hi[0];
    for (int32_t j = 1; j < 8; j++) l = lo[j] < l ? lo[j] : l, h = hi[j] > h ? hi[j] : h;
    for (; i < n; i++) l = x[i] < l ? x[i] : l, h = x[i] > h ? x[i] : h;
    *lo_io = l, *hi_io = h;
}

/* y = saturate(round(x / scale) + zp) as QuantizeLinear to uint8 (a NaN
 * to 0): the CPU kernel's arithmetic (ops/quant_math.h) */
DX_HOT static void quantize_span(const float *x, uint8_t *y, int64_t n, float scale, float zp) {
    quant_f32_to_8bit(x, y, n, scale, zp, false);
}

static bool run_dyn_quant(const program *p, const step *st) {
    const dyn_quant *k = st->host_data;
    const float *x = dx_q_data(p, st->arg_slot[0]);
    uint8_t *y = dx_q_data(p, st->arg_slot[1]);
    float *ys = dx_q_data(p, st->arg_slot[2]);
    uint8_t *yz = dx_q_data(p, st->arg_slot[3]);
    int32_t *yz32 = dx_q_data(p, st->arg_slot[4]);
    float lo = 0, hi = 0; /* the range always holds 0 */
    int64_t n_chunks = (k->count + DX_Q_CHUNK - 1) / DX_Q_CHUNK;
#ifdef _OPENMP
#pragma omp parallel for reduction(min : lo) reduction(max : hi) schedule(static) if (n_chunks > 1)
#endif
    for (int64_t c = 0; c < n_chunks; c++) {
        int64_t at = c * DX_Q_CHUNK, n = k->count - at < DX_Q_CHUNK ? k->count - at : DX_Q_CHUNK;
        range_span(x + at, n, &lo, &hi);
    }
    /* as the CPU kernel computes them (backends/cpu/quant.c) */
    float scale = (float)((double)hi - (double)lo) / 255.0f;
    float zp = scale != 0 ? (float)sat_u8(nearbyintf(-lo / scale)) : 0;
    if (scale == 0) { /* (all zeros: zp is 0 too) */
        memset(y, 0, (size_t)k->count);
    } else {
        DX_Q_CHUNKS(k->count, at, n, quantize_span(x + at, y + at, n, scale, zp));
    }
    ys[0] = scale, yz[0] = (uint8_t)zp, yz32[0] = (int32_t)zp;
    return true;
}

static bool supports_dyn_quant(const seam_node_view *n, char *why, size_t wn) {
    if (n->inputs[0].dtype != SEAM_DTYPE_FLOAT32 || n->n_outputs != 3)
        return dx_refuse(why, wn, "DynamicQuantizeLinear of %s: float32 only", seam_dtype_name(n->inputs[0].dtype));
    for (int32_t k = 0; k < 3; k++)
        if (!n->outputs[k].name) return dx_refuse(why, wn, "DynamicQuantizeLinear without all three outputs");
    return true;
}

/* An 8-bit or float32 scalar output of node b->n as a plain slot. */
static int32_t scalar_out(builder *b, int32_t k, dnnl_data_type_t dt, int32_t *final_slot) {
    dnnl_memory_desc_t md;
    dnnl_dims_t one = {1};
    dnnl_memory_desc_init_by_tag(&md, 1, one, dt, dnnl_a);
    const seam_value_info *v = &b->n->outputs[k];
    /* (a rank-0 value: its slot has rank 0, seen as [1]) */
    return dx_result_slot(b, v, &md, final_slot);
}

static bool compile_dyn_quant(builder *b, bool *fused, const dx_io *io) {
    (void)fused;
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t sin = dx_as_plain(b, io->sin);
    if (sin < 0) return dx_fail(b, "could not reorder the input to the plain layout"), false;
    int32_t r = n->outputs[0].rank ? n->outputs[0].rank : 1;
    dnnl_dims_t od;
    for (int32_t d = 0; d < r; d++) od[d] = n->outputs[0].rank ? n->outputs[0].dims[d] : 1;
    dnnl_memory_desc_t ymd;
    dnnl_memory_desc_init_by_tag(&ymd, r, od, dnnl_u8, dx_plain_tag(r));
    int32_t fy = -1, fs = -1, fz = -1;
    int32_t sy = dx_result_slot(b, &n->outputs[0], &ymd, &fy);
    int32_t ss = sy < 0 ? -1 : scalar_out(b, 1, dnnl_f32, &fs);
    int32_t sz = ss < 0 ? -1 : scalar_out(b, 2, dnnl_u8, &fz);
    int32_t s32 = sz < 0 ? -1 : dx_q_zp_slot(b, 0); /* x's zero point as s32, for MatMulInteger */
    dyn_quant *k = malloc(sizeof(*k));
    if (s32 < 0 || !k) return free(k), dx_fail(b, "out of memory"), false;
    p->slots[s32].constant = false; /* (written at every run) */
    k->count = dx_slot_numel(&p->slots[sin]);
    if (k->count != dx_slot_numel(&p->slots[sy]))
        return free(k), dx_fail(b, "its output's shape differs from its input's (inconsistent shapes in the file)"), false;
    /* the s32 copy is found by MatMulInteger under the zero point's name */
    p->slots[s32].name = n->outputs[2].name;
    p->slots[s32].rank = -1; /* (not the value's own slot: dx_slot_of skips it, see zp_s32_of) */
    int32_t kinds[5] = {DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_DST_1, DNNL_ARG_DST_2, DNNL_ARG_DST_2 + 1};
    int32_t slots[5] = {sin, sy, ss, sz, s32};
    if (!dx_add_host(b, "dynamic_quantize", run_dyn_quant, k, 5, kinds, slots)) return false;
    return (fy < 0 || dx_add_reorder(b, sy, fy)) && (fs < 0 || dx_add_reorder(b, ss, fs)) &&
           (fz < 0 || dx_add_reorder(b, sz, fz));
}

/* The s32 copy of a zero point a DynamicQuantizeLinear of this program
 * writes, or -1. */
static int32_t zp_s32_of(const program *p, const char *name) {
    for (int32_t s = 0; s < p->n_slots; s++)
        if (p->slots[s].rank == -1 && p->slots[s].name && !strcmp(p->slots[s].name, name)) return s;
    return -1;
}

/* B's zero points per column that differ: oneDNN takes one, so the
 * product is made with none, and then, exactly, in integers,
 *     y[m, n] -= bz[n] * sum_k (a[m, k] - az)
 * by a host step (args: A [rows, K] u8/s8, the product, az as s32, y). */
typedef struct zp_fix {
    int64_t rows, k, n;
    bool a_signed;
    int32_t bz[]; /* n of them */
} zp_fix;

static bool run_zp_fix(const program *p, const step *st) {
    const zp_fix *f = st->host_data;
    const void *a = dx_q_data(p, st->arg_slot[0]);
    const int32_t *s1 = dx_q_data(p, st->arg_slot[1]);
    const int32_t *az = dx_q_data(p, st->arg_slot[2]);
    int32_t *y = dx_q_data(p, st->arg_slot[3]);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t r = 0; r < f->rows; r++) {
        int32_t sum32 = 0; /* (K * 255 fits: K is a tensor dim below 2^23 here) */
        if (f->a_signed) {
            const int8_t *row = (const int8_t *)a + r * f->k;
            for (int64_t q = 0; q < f->k; q++) sum32 += row[q];
        } else {
            const uint8_t *row = (const uint8_t *)a + r * f->k;
            for (int64_t q = 0; q < f->k; q++) sum32 += row[q];
        }
        int64_t sum = sum32;
        sum -= f->k * (int64_t)az[0];
        /* (int32 wraps as the int32 output of the CPU kernel does) */
        uint32_t su = (uint32_t)sum;
        const int32_t *in = s1 + r * f->n;
        int32_t *out = y + r * f->n;
        for (int64_t c = 0; c < f->n; c++) out[c] = (int32_t)((uint32_t)in[c] - (uint32_t)f->bz[c] * su);
    }
    return true;
}

/* ---- the dequantization after MatMulInteger, in one pass ----
 * ONNX Runtime's dynamic quantization follows each MatMulInteger with
 *     Cast(to float) -> Mul(x_scale * w_scale) [-> Add(bias)]
 * which would be four passes over the product here (B's zero points, the
 * Cast's reorder, the Mul, the Add). MatMulInteger leaves its int32
 * product and what B's zero points need in a pending entry, the Cast is
 * absorbed, and the Mul makes one host step computing, per element,
 *     y = (float)(acc - bz[c] * rowsum) * scale[c or 0] + bias[c or 0]
 * in the nodes' own order and float32 arithmetic: the same bits as the
 * nodes one by one (C11 contracts no a * b + c into a fused multiply-add
 * here: the build is -std=c11, -ffp-contract=off). */

typedef struct dx_qmm_pending {
    int32_t matmul, cast, mul;  /* subgraph node indices */
    int32_t product;            /* the int32 product's slot, [rows, n] */
    int32_t a, az;              /* A [rows, k] and its zero point as s32, when fix */
    zp_fix *fix;                /* B's zero points per column, or NULL (owned until consumed) */
    int64_t rows, n;
    int32_t scale_at;           /* the Mul's input holding the scale (0 or 1) */
    bool done;
} dx_qmm_pending;

typedef struct qmm_epi {
    int64_t rows, n, k;
    bool per_col_scale, has_bias, per_col_bias, has_fix, a_signed;
    int32_t bz[]; /* B's zero points, n of them, when has_fix */
} qmm_epi;

/* One row: the correction for B's zero points (su = sum_k (a[k] - az),
 * as uint32, wrapping as the int32 product does), then the scale, then
 * the bias. */
DX_HOT static void epi_row(const int32_t *in, float *out, int64_t n, const int32_t *bz, uint32_t su, const float *scale,
                           int64_t s_step, const float *bias, int64_t b_step) {
    if (bz && bias) {
        for (int64_t c = 0; c < n; c++)
            out[c] = (float)(int32_t)((uint32_t)in[c] - (uint32_t)bz[c] * su) * scale[c * s_step] + bias[c * b_step];
    } else if (bz) {
        for (int64_t c = 0; c < n; c++) out[c] = (float)(int32_t)((uint32_t)in[c] - (uint32_t)bz[c] * su) * scale[c * s_step];
    } else if (bias) {
        for (int64_t c = 0; c < n; c++) out[c] = (float)in[c] * scale[c * s_step] + bias[c * b_step];
    } else {
        for (int64_t c = 0; c < n; c++) out[c] = (float)in[c] * scale[c * s_step];
    }
}

DX_HOT static int32_t row_sum8(const void *a, int64_t k, bool is_signed) {
    int32_t sum = 0; /* (K * 255 fits: K is a tensor dim below 2^23 here) */
    if (is_signed)
        for (int64_t q = 0; q < k; q++) sum += ((const int8_t *)a)[q];
    else
        for (int64_t q = 0; q < k; q++) sum += ((const uint8_t *)a)[q];
    return sum;
}

/* args: the product, the scale, [the bias,] [A, A's zero point,] y */
static bool run_qmm_epi(const program *p, const step *st) {
    const qmm_epi *e = st->host_data;
    int32_t at = 0;
    const int32_t *in = dx_q_data(p, st->arg_slot[at++]);
    const float *scale = dx_q_data(p, st->arg_slot[at++]);
    const float *bias = e->has_bias ? dx_q_data(p, st->arg_slot[at++]) : NULL;
    const void *a = e->has_fix ? dx_q_data(p, st->arg_slot[at++]) : NULL;
    const int32_t *az = e->has_fix ? dx_q_data(p, st->arg_slot[at++]) : NULL;
    float *y = dx_q_data(p, st->arg_slot[at]);
    int64_t s_step = e->per_col_scale ? 1 : 0, b_step = e->per_col_bias ? 1 : 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (e->rows * e->n >= 16384)
#endif
    for (int64_t r = 0; r < e->rows; r++) {
        uint32_t su = 0;
        if (e->has_fix) {
            int64_t k = e->k;
            su = (uint32_t)((int64_t)row_sum8((const uint8_t *)a + r * k, k, e->a_signed) - k * (int64_t)az[0]);
        }
        epi_row(in + r * e->n, y + r * e->n, e->n, e->has_fix ? e->bz : NULL, su, scale, s_step, bias, b_step);
    }
    return true;
}

static dx_qmm_pending *pending_for_mul(program *p, int32_t mul) {
    for (int32_t k = 0; k < p->n_qmm; k++)
        if (p->qmm[k].mul == mul && !p->qmm[k].done) return &p->qmm[k];
    return NULL;
}

const char *dx_qmm_unfinished(program *p) {
    for (int32_t k = 0; k < p->n_qmm; k++)
        if (!p->qmm[k].done) return "a MatMulInteger's dequantization was deferred to a Mul that something else absorbed";
    return NULL;
}

void dx_qmm_release(program *p) {
    for (int32_t k = 0; k < p->n_qmm; k++) free(p->qmm[k].fix);
    free(p->qmm);
    p->qmm = NULL, p->n_qmm = 0;
}

/* Whether value v (float32) broadcasts along the last axis of an output
 * with n columns: one element, or n in its last dim and ones elsewhere;
 * *per_col says which. */
static bool last_axis_operand(const seam_value_info *v, int64_t n, bool *per_col) {
    if (v->dtype != SEAM_DTYPE_FLOAT32 || v->rank < 0) return false;
    int64_t numel = dx_value_numel(v);
    if (numel == 1) return *per_col = false, true;
    if (numel != n || v->rank < 1 || v->dims[v->rank - 1] != n) return false;
    return *per_col = true, true;
}

static bool same_value_dims(const seam_value_info *a, const seam_value_info *b) {
    if (a->rank != b->rank || a->rank < 0) return false;
    for (int32_t d = 0; d < a->rank; d++)
        if (a->dims[d] < 0 || a->dims[d] != b->dims[d]) return false;
    return true;
}

/* MatMulInteger b->index's Cast -> Mul chain (see above): the Cast and the
 * Mul, and which of the Mul's inputs is the scale; false when the chain is
 * not there (fusion off, another reader, a scale that is not one value or
 * one per column). Fetches other nodes: b->n is fetched again after. */
static bool qmm_chain(builder *b, const bool *fused, int64_t n_cols, int32_t *cast, int32_t *mul, int32_t *scale_at) {
    if (!b->fuse) return false;
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, b->index, &st);
    const char *y = m->outputs[0].name;
    bool ok = false;
    int32_t c = y ? dx_sole_reader(b, y) : -1;
    if (c >= 0 && !fused[c]) {
        m = seam_subgraph_node(b->sg, c, &st);
        const char *cy = m->outputs[0].name;
        ok = is_op(m, "Cast") && m->n_outputs == 1 && m->outputs[0].dtype == SEAM_DTYPE_FLOAT32 && cy;
        int32_t u = ok ? dx_sole_reader(b, cy) : -1;
        ok = ok && u >= 0 && !fused[u];
        if (ok) {
            m = seam_subgraph_node(b->sg, u, &st);
            int32_t at = m->n_inputs == 2 && m->inputs[0].name && !strcmp(m->inputs[0].name, cy) ? 1 : 0;
            bool per_col;
            ok = is_op(m, "Mul") && m->n_inputs == 2 && m->inputs[at].name && m->inputs[1 - at].name &&
                 !strcmp(m->inputs[1 - at].name, cy) && strcmp(m->inputs[at].name, cy) &&
                 m->outputs[0].dtype == SEAM_DTYPE_FLOAT32 && last_axis_operand(&m->inputs[at], n_cols, &per_col);
            /* the Mul's output has the product's shape (no broadcast widens it) */
            if (ok) {
                int64_t od[MAXR];
                seam_value_info mo = m->outputs[0];
                int32_t r = mo.rank;
                for (int32_t d = 0; d < r && d < MAXR; d++) od[d] = mo.dims[d];
                mo.dims = od;
                m = seam_subgraph_node(b->sg, b->index, &st);
                ok = r <= MAXR && same_value_dims(&mo, &m->outputs[0]);
            }
            *cast = c, *mul = u, *scale_at = at;
        }
    }
    b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    return ok;
}

static bool add_pending(program *p, const dx_qmm_pending *e) {
    dx_qmm_pending *q = realloc(p->qmm, sizeof(*q) * (size_t)(p->n_qmm + 1));
    if (!q) return false;
    p->qmm = q;
    p->qmm[p->n_qmm++] = *e;
    return true;
}

int32_t dx_compile_qmm_epilogue(builder *b, bool *fused) {
    program *p = b->p;
    dx_qmm_pending *q = pending_for_mul(p, b->index);
    if (!q) return 0;
    const int32_t self = b->index;
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, self, &st);
    int32_t ss = dx_input_slot(b, &m->inputs[q->scale_at]);
    ss = ss < 0 ? -1 : dx_as_plain(b, ss);
    if (ss < 0 || p->slots[ss].lazy) return dx_fail(b, "the dequantization's scale is neither made earlier nor a constant"), -1;
    /* a bias Add after it: the Mul's sole reader, adding one value or one
     * per column that is ready now, with the same output shape */
    m = seam_subgraph_node(b->sg, self, &st);
    const char *mul_out = m->outputs[0].name;
    int32_t add = mul_out ? dx_sole_reader(b, mul_out) : -1, sb = -1;
    bool per_col_bias = false;
    if (add >= 0 && !fused[add]) {
        int64_t od[MAXR];
        seam_value_info mo = m->outputs[0];
        for (int32_t d = 0; d < mo.rank && d < MAXR; d++) od[d] = mo.dims[d];
        mo.dims = od;
        m = seam_subgraph_node(b->sg, add, &st);
        int32_t at = m->n_inputs == 2 && m->inputs[0].name && !strcmp(m->inputs[0].name, mul_out) ? 1 : 0;
        if (mo.rank <= MAXR && is_op(m, "Add") && m->n_inputs == 2 && m->inputs[at].name && m->inputs[1 - at].name &&
            !strcmp(m->inputs[1 - at].name, mul_out) && strcmp(m->inputs[at].name, mul_out) &&
            m->outputs[0].dtype == SEAM_DTYPE_FLOAT32 && same_value_dims(&mo, &m->outputs[0]) &&
            last_axis_operand(&m->inputs[at], q->n, &per_col_bias) &&
            (dx_slot_of(p, m->inputs[at].name) >= 0 || dx_const_input(m, at))) {
            sb = dx_input_slot(b, &m->inputs[at]);
            sb = sb < 0 ? -1 : dx_as_plain(b, sb);
            if (sb >= 0 && p->slots[sb].lazy) sb = -1;
        }
        if (sb < 0) add = -1;
    } else add = -1;
    m = seam_subgraph_node(b->sg, add >= 0 ? add : self, &st);
    int32_t sy = dx_output_slot(b, &m->outputs[0]);
    if (sy < 0) return dx_fail(b, "out of memory"), -1;
    sy = p->slots[sy].has_md ? -1 : sy; /* (a boundary output made up front is plain) */
    if (sy < 0) return dx_fail(b, "the dequantized product's slot is not plain"), -1;
    qmm_epi *e = malloc(sizeof(*e) + (q->fix ? sizeof(int32_t) * (size_t)q->n : 0));
    if (!e) return dx_fail(b, "out of memory"), -1;
    m = seam_subgraph_node(b->sg, self, &st);
    bool per_col_scale = false;
    last_axis_operand(&m->inputs[q->scale_at], q->n, &per_col_scale);
    *e = (qmm_epi){q->rows, q->n, q->fix ? q->fix->k : 0, per_col_scale, sb >= 0, per_col_bias, q->fix != NULL,
                   q->fix && q->fix->a_signed};
    if (q->fix) memcpy(e->bz, q->fix->bz, sizeof(int32_t) * (size_t)q->n);
    /* (inputs as a concat's: the kinds only say read or written) */
    int32_t kinds[6], slots[6] = {q->product, ss}, n_args = 2;
    if (sb >= 0) slots[n_args++] = sb;
    if (q->fix) slots[n_args++] = q->a, slots[n_args++] = q->az;
    for (int32_t k = 0; k < n_args; k++) kinds[k] = DNNL_ARG_MULTIPLE_SRC + k;
    kinds[n_args] = DNNL_ARG_DST, slots[n_args++] = sy;
    free(q->fix);
    q->fix = NULL, q->done = true;
    b->n = seam_subgraph_node(b->sg, self, b->storage);
    if (!dx_add_host(b, "matmul_integer_dequantize", run_qmm_epi, e, n_args, kinds, slots)) return -1;
    fused[self] = true;
    if (add >= 0) fused[add] = true;
    if (add >= 0)
        dx_log(p, "node %d (MatMulInteger): with node %d (Cast), %d (Mul) and %d (Add): one pass from the int32 product",
               q->matmul, q->cast, self, add);
    else
        dx_log(p, "node %d (MatMulInteger): with node %d (Cast) and %d (Mul): one pass from the int32 product", q->matmul,
               q->cast, self);
    return 1;
}

static bool supports_matmul_integer(const seam_node_view *n, char *why, size_t wn) {
    if (!dx_int8_products_exact(n, 1, why, wn)) return false;
    if (!dx_q_is_8bit(n->inputs[0].dtype) || n->n_inputs < 2 || n->inputs[1].dtype != SEAM_DTYPE_INT8)
        return dx_refuse(why, wn, "MatMulInteger of %s by %s: dnnl takes uint8 or int8 by int8", seam_dtype_name(n->inputs[0].dtype),
                         n->n_inputs > 1 ? seam_dtype_name(n->inputs[1].dtype) : "nothing");
    if (!dx_const_input(n, 1) || n->inputs[1].rank != 2 || n->inputs[0].rank < 2)
        return dx_refuse(why, wn, "MatMulInteger with B not a 2-D constant");
    if (n->n_inputs > 2 && n->inputs[2].name && (dx_value_numel(&n->inputs[2]) != 1 || n->inputs[2].dtype != n->inputs[0].dtype))
        return dx_refuse(why, wn, "MatMulInteger with a zero point of A per row: dnnl takes one");
    if (n->n_inputs > 3 && n->inputs[3].name && (!dx_const_input(n, 3) || n->inputs[3].dtype != SEAM_DTYPE_INT8))
        return dx_refuse(why, wn, "MatMulInteger with B's zero point not an int8 constant");
    if (n->n_inputs > 3 && n->inputs[3].name && dx_value_numel(&n->inputs[3]) != 1 &&
        dx_value_numel(&n->inputs[3]) != n->inputs[1].dims[1])
        return dx_refuse(why, wn, "MatMulInteger with B's zero point neither one nor one per column");
    return true;
}

static bool compile_matmul_integer(builder *b, bool *fused, const dx_io *io) {
    int32_t cast = -1, mul = -1, scale_at = 0;
    bool deferred = qmm_chain(b, fused, b->n->inputs[1].dims[1], &cast, &mul, &scale_at);
    const seam_node_view *n = b->n;
    program *p = b->p;
    int32_t ra = n->inputs[0].rank;
    int64_t k = n->inputs[1].dims[0], nn = n->inputs[1].dims[1], rows = 1;
    for (int32_t d = 0; d < ra - 1; d++) rows *= n->inputs[0].dims[d];
    if (n->inputs[0].dims[ra - 1] != k) return dx_fail(b, "A's last dim differs from B's first"), false;
    /* zero points: A's a constant or a value made in this program (by a
     * DynamicQuantizeLinear), B's a constant, one each */
    double az = 0, bz[2] = {0, 0};
    int64_t c = 0;
    int32_t az_slot = -1;
    bool has_az = n->n_inputs > 2 && n->inputs[2].name;
    if (has_az && dx_const_input(n, 2)) {
        if (!dx_q_const_values(b, &n->inputs[2], &az, 1, &c)) return false;
    } else if (has_az && (az_slot = zp_s32_of(p, n->inputs[2].name)) < 0) {
        /* a value of its own (a boundary input): an s32 copy, each run */
        int32_t zs = dx_input_slot(b, &n->inputs[2]);
        dnnl_memory_desc_t md;
        dnnl_dims_t one = {1};
        dnnl_memory_desc_init_by_tag(&md, 1, one, dnnl_s32, dnnl_a);
        az_slot = zs < 0 ? -1 : dx_temp_slot(b, &p->slots[zs], &md);
        if (az_slot < 0 || !dx_add_reorder(b, zs, az_slot)) return dx_fail(b, "A's zero point cannot be read"), false;
        n = b->n;
    }
    double *bzs = malloc(sizeof(double) * (size_t)(nn + 1));
    if (!bzs) return dx_fail(b, "out of memory"), false;
    if (n->n_inputs > 3 && n->inputs[3].name && !dx_q_const_values(b, &n->inputs[3], bzs, nn, &c)) return free(bzs), false;
    bool per_col = false;
    for (int64_t q = 1; q < c; q++) per_col |= bzs[q] != bzs[0];
    bz[0] = c ? bzs[0] : 0;
    zp_fix *fix = NULL;
    if (per_col) { /* the product with no zero point of B, then a host step */
        fix = malloc(sizeof(*fix) + sizeof(int32_t) * (size_t)nn);
        if (!fix) return free(bzs), dx_fail(b, "out of memory"), false;
        fix->rows = rows, fix->k = k, fix->n = nn, fix->a_signed = n->inputs[0].dtype == SEAM_DTYPE_INT8;
        for (int64_t q = 0; q < nn; q++) fix->bz[q] = (int32_t)bzs[q];
        bz[0] = 0;
    }
    free(bzs);
    int64_t bd[2] = {k, nn};
    int32_t sw = dx_q_const_slot(b, &n->inputs[1], SEAM_DTYPE_INT8, 2, bd);
    if (sw < 0) return false;
    int32_t kinds[8] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, slots[8];
    int32_t n_args = 3;
    const int32_t runtime = DNNL_RUNTIME_S32_VAL;
    dnnl_primitive_attr_t attr = NULL;
    bool ok = dnnl_primitive_attr_create(&attr) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    int32_t az_s32 = az_slot >= 0 ? az_slot : (az != 0 || fix) ? dx_q_zp_slot(b, (int32_t)az) : -1;
    if (ok && (az_slot >= 0 || az != 0)) {
        ok = az_s32 >= 0 && dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &runtime) == dnnl_success;
        kinds[n_args] = DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, slots[n_args++] = az_s32;
    }
    if (fix && az_s32 < 0) ok = false;
    if (ok && bz[0] != 0) {
        int32_t zs = dx_q_zp_slot(b, (int32_t)bz[0]);
        ok = zs >= 0 && dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_WEIGHTS, 1, 0, &runtime) == dnnl_success;
        kinds[n_args] = DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_WEIGHTS, slots[n_args++] = zs;
    }
    dnnl_memory_desc_t a, w, y;
    dnnl_dims_t ad = {rows, k}, wd = {k, nn}, yd = {rows, nn};
    dnnl_memory_desc_init_by_tag(&a, 2, ad, dx_q_dt(n->inputs[0].dtype), dnnl_ab);
    dnnl_memory_desc_init_by_tag(&w, 2, wd, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&y, 2, yd, dnnl_s32, dnnl_ab);
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    ok = ok && dnnl_matmul_desc_init(&md, &a, &w, NULL, &y) == dnnl_success &&
         dnnl_primitive_desc_create(&pd, &md, attr, dx_ctx.engine, NULL) == dnnl_success;
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!ok) return free(fix), dx_fail(b, "oneDNN has no int8 matmul for these shapes and zero points"), false;
    dnnl_memory_desc_t plain, yfull;
    dnnl_dims_t full, yo;
    for (int32_t d = 0; d < ra; d++) full[d] = n->inputs[0].dims[d];
    for (int32_t d = 0; d < n->outputs[0].rank; d++) yo[d] = n->outputs[0].dims[d];
    dnnl_memory_desc_init_by_tag(&plain, ra, full, dx_q_dt(n->inputs[0].dtype), dx_plain_tag(ra));
    dnnl_memory_desc_init_by_tag(&yfull, n->outputs[0].rank, yo, dnnl_s32, dx_plain_tag(n->outputs[0].rank));
    int32_t va, wt, sy, final_slot = -1;
    if (!dx_q_matmul_in(b, io->sin, &plain, &a, sw, pd, &va, &wt) || !dx_q_matmul_out(b, &yfull, &y, &sy, NULL, &final_slot))
        return dnnl_primitive_desc_destroy(pd), free(fix), false;
    slot yflat = p->slots[sy];
    yflat.rank = 2, yflat.dims[0] = rows, yflat.dims[1] = nn;
    /* with the host step after it, the product goes to a temporary */
    if (dx_slot_numel(&p->slots[sy]) != rows * nn) {
        dnnl_primitive_desc_destroy(pd);
        free(fix);
        return dx_fail(b, "its output's shape is not A's rows by B's columns (inconsistent shapes in the file)"), false;
    }
    /* with the host step after it, the product goes to a temporary; with
     * the dequantization deferred to the Mul (which corrects for B's zero
     * points too), to the output */
    bool to_temp = fix && !(deferred && final_slot < 0);
    int32_t s1 = !to_temp ? sy : dx_temp_slot(b, &yflat, &y);
    int32_t vy = s1 < 0 ? -1 : to_temp ? s1 : dx_view_slot(p, sy, &yflat, &y);
    if (vy < 0) {
        dnnl_primitive_desc_destroy(pd);
        free(fix);
        return dx_fail(b, "could not lay out the matmul's tensors"), false;
    }
    bool done = dx_weighted_step(b, pd, n_args, kinds, slots, va, wt, vy, -1, -1);
    if (done && deferred && final_slot < 0) {
        dx_qmm_pending e = {b->index, cast, mul, sy, va, az_s32, fix, rows, nn, scale_at, false};
        if (!add_pending(p, &e)) return free(fix), dx_fail(b, "out of memory"), false;
        fused[cast] = true;
        return true;
    }
    if (done && fix) {
        int32_t hk[4] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_SRC_2, DNNL_ARG_DST}, hs[4] = {va, s1, az_s32, sy};
        done = dx_add_host(b, "matmul_integer_zero_points", run_zp_fix, fix, 4, hk, hs); /* (fix is its now) */
    } else free(fix);
    return done && (final_slot < 0 || dx_add_reorder(b, sy, final_slot));
}

/* ---- a quantized Add or Mul: DQ(a) + DQ(b) -> Q as one pass ----
 * The residual Add of a QDQ network (ONNX Runtime's QLinearAdd; and the
 * same for a Mul of two quantized values, its QLinearMul) would be
 * five passes over memory here (two DQ reorders, the binary, the Q's two
 * reorders); one host step computes the same float32 arithmetic as the
 * QDQ form, element by element:
 *     y = saturate(round((a - za) * sa + (b - zb) * sb) / ys) + yz)  */

typedef struct qadd {
    int64_t count;
    float sa, sb, ys;
    float fza, fzb, fyz; /* the zero points (exact in float32) */
    bool a8s, b8s, y8s;  /* int8 (else uint8) */
    bool mul;            /* a Mul (ONNX Runtime's QLinearMul), else an Add */
} qadd;

/* Elements [0, n) of one quantized Add, a and b read as uint8 (u8) or
 * int8: a loop the compiler vectorizes (a, b, y of one type each). */
#define QADD_LOOP(TA, TB, OP)                                                                              \
    for (int64_t i = 0; i < n; i++) {                                                                      \
        float v = (((float)((const TA *)a)[i] - k->fza) * k->sa OP((float)((const TB *)bb)[i] - k->fzb) * k->sb) / \
                  k->ys;                                                                                   \
        v = v > -1024.0f ? v : -1024.0f; /* (saturated either way; NaN to the low end) */                  \
        v = v < 1024.0f ? v : 1024.0f;                                                                     \
        v = ((v + big) - big) + k->fyz;                                                                    \
        v = v < lo ? lo : v;                                                                               \
        v = v > hi ? hi : v;                                                                               \
        y[i] = (uint8_t)(int32_t)v;                                                                        \
    }

DX_HOT static void qadd_span(const qadd *k, const void *a, const void *bb, uint8_t *y, int64_t n, float big) {
    float lo = k->y8s ? -128.0f : 0.0f, hi = k->y8s ? 127.0f : 255.0f;
    if (k->mul) {
        if (!k->a8s && !k->b8s) QADD_LOOP(uint8_t, uint8_t, *)
        else if (k->a8s && k->b8s) QADD_LOOP(int8_t, int8_t, *)
        else if (k->a8s) QADD_LOOP(int8_t, uint8_t, *)
        else QADD_LOOP(uint8_t, int8_t, *)
    } else {
        if (!k->a8s && !k->b8s) QADD_LOOP(uint8_t, uint8_t, +)
        else if (k->a8s && k->b8s) QADD_LOOP(int8_t, int8_t, +)
        else if (k->a8s) QADD_LOOP(int8_t, uint8_t, +)
        else QADD_LOOP(uint8_t, int8_t, +)
    }
}

static bool run_qadd(const program *p, const step *st) {
    const qadd *k = st->host_data;
    const uint8_t *a = dx_q_data(p, st->arg_slot[0]), *bb = dx_q_data(p, st->arg_slot[1]);
    uint8_t *y = dx_q_data(p, st->arg_slot[2]);
    float big = dx_round_big;
    DX_Q_CHUNKS(k->count, at, n, qadd_span(k, a + at, bb + at, y + at, n, big));
    return true;
}

/* The subgraph node writing value `name`, or -1. */
int32_t dx_producer_of(builder *b, const char *name) {
    for (int32_t i = 0; i < b->sg->n_nodes; i++) {
        seam_node_view st;
        const seam_node_view *m = seam_subgraph_node(b->sg, i, &st);
        if (m->n_outputs > 0 && m->outputs[0].name && !strcmp(m->outputs[0].name, name)) return i;
    }
    return -1;
}

/* Scale and zero point of a per-tensor (De)QuantizeLinear node m. */
bool dx_qdq_params(builder *b, const seam_node_view *m, double *s, double *z) {
    int64_t c1, c2 = 0;
    *z = 0;
    if (m->n_inputs < 2 || !m->inputs[1].name || !dx_const_input(m, 1) || !dx_const_input(m, 2)) return false;
    if (!dx_q_const_values(b, &m->inputs[1], s, 1, &c1)) return b->err[0] = 0, false;
    if (m->n_inputs > 2 && m->inputs[2].name && !dx_q_const_values(b, &m->inputs[2], z, 1, &c2)) return b->err[0] = 0, false;
    return *s > 0 && isfinite(*s);
}

/* Slot s as an 8-bit value of type dt, in layout `like` when given (else
 * s's own layout, plain if s holds it in float32: exact, an integer). */
int32_t dx_as_8bit(builder *b, int32_t s, dnnl_data_type_t dt, const dnnl_memory_desc_t *like) {
    dnnl_memory_desc_t md;
    dx_md_of(&b->p->slots[s], &md);
    if (like) md = *like;
    else if (md.data_type != dnnl_u8 && md.data_type != dnnl_s8) {
        dnnl_dims_t d;
        for (int32_t k = 0; k < md.ndims; k++) d[k] = md.dims[k];
        dnnl_memory_desc_init_by_tag(&md, md.ndims, d, dt, dx_plain_tag(md.ndims));
    }
    md.data_type = dt;
    return dx_in_layout(b, s, &md);
}

int32_t dx_compile_qadd_pattern(builder *b, bool *fused, int32_t sin) {
    program *p = b->p;
    const int32_t self = b->index;
    /* (a node view lasts until the next one is fetched: what is needed of
     * each is copied out first; names are the model's, stable) */
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, self, &st);
    const char *dq1_out = m->outputs[0].name;
    seam_dtype ta_dt = m->inputs[0].dtype;
    int32_t add = dx_sole_reader(b, dq1_out);
    if (add < 0 || fused[add] || !dx_q_is_8bit(ta_dt)) return 0;
    m = seam_subgraph_node(b->sg, add, &st);
    bool is_mul = is_op(m, "Mul");
    if (!(is_op(m, "Add") || is_mul) || m->n_inputs != 2 || !m->outputs[0].name || !m->inputs[0].name || !m->inputs[1].name) return 0;
    const char *other = strcmp(m->inputs[0].name, dq1_out) ? m->inputs[0].name : m->inputs[1].name;
    const char *add_out = m->outputs[0].name;
    /* the same static shape on both sides (no broadcast) */
    const seam_value_info *va = &m->inputs[0], *vb = &m->inputs[1];
    if (va->rank != vb->rank || dx_value_numel(va) < 0 || dx_value_numel(vb) < 0) return 0;
    for (int32_t d = 0; d < va->rank; d++)
        if (va->dims[d] != vb->dims[d]) return 0;
    int32_t dq2 = dx_producer_of(b, other), q = dx_sole_reader(b, add_out);
    if (dq2 < 0 || q < 0 || dq2 == self || fused[q] || dx_sole_reader(b, other) != add || dx_slot_of(p, other) >= 0) return 0;
    double sa, za, sbv, zb, ys, yz;
    m = seam_subgraph_node(b->sg, dq2, &st);
    if (!is_op(m, "DequantizeLinear") || !dx_q_is_8bit(m->inputs[0].dtype) || !dx_qdq_params(b, m, &sbv, &zb)) return 0;
    const char *dq2_in = m->inputs[0].name;
    seam_dtype tb_dt = m->inputs[0].dtype;
    m = seam_subgraph_node(b->sg, q, &st);
    if (!is_op(m, "QuantizeLinear") || !dx_q_is_8bit(m->outputs[0].dtype) || !dx_qdq_params(b, m, &ys, &yz)) return 0;
    seam_dtype ty_dt = m->outputs[0].dtype;
    m = seam_subgraph_node(b->sg, self, &st);
    if (!dx_qdq_params(b, m, &sa, &za)) return 0;
    /* the other DQ's input is made later: this DQ waits for it, and the
     * other one makes the step (the pattern matches from there too) */
    int32_t sb = dx_slot_of(p, dq2_in);
    if (sb < 0) {
        if (fused[dq2]) return 0;
        fused[self] = true;
        return 1;
    }
    dnnl_data_type_t ta = dx_q_dt(ta_dt), tb = dx_q_dt(tb_dt);
    int32_t a8 = dx_as_8bit(b, sin, ta, NULL);
    dnnl_memory_desc_t amd;
    if (a8 < 0) return dx_fail(b, "could not lay out a quantized Add's input"), -1;
    dx_md_of(&p->slots[a8], &amd);
    int32_t b8 = dx_as_8bit(b, sb, tb, &amd);
    dnnl_memory_desc_t ymd = amd;
    ymd.data_type = dx_q_dt(ty_dt);
    int32_t final_slot = -1;
    m = seam_subgraph_node(b->sg, q, &st);
    int32_t sy = b8 < 0 ? -1 : dx_result_slot(b, &m->outputs[0], &ymd, &final_slot);
    qadd *k = malloc(sizeof(*k));
    if (sy < 0 || !k) return free(k), dx_fail(b, "out of memory"), -1;
    *k = (qadd){(int64_t)dnnl_memory_desc_get_size(&amd), (float)sa, (float)sbv, (float)ys, (float)za, (float)zb, (float)yz,
                ta == dnnl_s8, tb == dnnl_s8, ty_dt == SEAM_DTYPE_INT8, is_mul};
    int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {a8, b8, sy};
    b->n = seam_subgraph_node(b->sg, self, b->storage);
    if (!dx_add_host(b, is_mul ? "quantized_mul" : "quantized_add", run_qadd, k, 3, kinds, slots)) return -1;
    if (final_slot >= 0 && !dx_add_reorder(b, sy, final_slot)) return -1;
    fused[self] = fused[add] = fused[dq2] = fused[q] = true;
    dx_log(p, "node %d (DequantizeLinear): with node %d (DequantizeLinear), %d (%s) and %d (QuantizeLinear): one pass, "
              "in the QDQ form's float32 arithmetic",
           b->n->index, dq2, add, is_mul ? "Mul" : "Add", q);
    return 1;
}

/* ---- a quantized MaxPool: DQ -> MaxPool -> Q as one int8 pooling ----
 * With the same scale and zero point on both sides (ONNX Runtime's
 * quantizer gives a MaxPool's output its input's), Q(max(DQ(x))) is
 * max(x): DQ is increasing (the scale is positive) and Q(DQ(x)) is x
 * exactly ((x - z) * s / s rounds back to the integer x - z). oneDNN's
 * max pooling on the 8-bit values, in their layout, replaces a
 * dequantizing reorder, a float32 pooling and two quantizing reorders. */
int32_t dx_compile_qpool_pattern(builder *b, bool *fused, int32_t sin) {
    program *p = b->p;
    const int32_t self = b->index;
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, self, &st);
    seam_dtype xdt = m->inputs[0].dtype;
    double s1, z1, s2, z2;
    if (!dx_q_is_8bit(xdt) || !m->outputs[0].name || !dx_qdq_params(b, m, &s1, &z1)) return 0;
    int32_t pool = dx_sole_reader(b, m->outputs[0].name);
    if (pool < 0 || fused[pool]) return 0;
    m = seam_subgraph_node(b->sg, pool, &st);
    if (!is_op(m, "MaxPool") || m->n_inputs != 1 || (m->n_outputs > 1 && m->outputs[1].name) || !m->outputs[0].name ||
        m->inputs[0].rank < 3 || p->slots[sin].pad_pending || p->slots[sin].lazy)
        return 0;
    int32_t q = dx_sole_reader(b, m->outputs[0].name);
    if (q < 0 || fused[q]) return 0;
    m = seam_subgraph_node(b->sg, q, &st);
    if (!is_op(m, "QuantizeLinear") || m->outputs[0].dtype != xdt || !dx_qdq_params(b, m, &s2, &z2) || s1 != s2 || z1 != z2)
        return 0;
    /* the window, read from the MaxPool's attributes */
    m = b->n = seam_subgraph_node(b->sg, pool, b->storage);
    int32_t nsp = m->inputs[0].rank - 2;
    const int64_t *ks;
    dnnl_dims_t pl, pr, strides, kernel, dilation, od;
    bool ok = node_attr_ints(dx_ir(m), "kernel_shape", &ks) == nsp &&
              dx_window(b, nsp, ks, node_attr_int(dx_ir(m), "ceil_mode", 0) != 0, strides, dilation, pl, pr);
    b->n = seam_subgraph_node(b->sg, self, b->storage);
    if (!ok) return b->err[0] = 0, 0;
    for (int32_t d = 0; d < nsp; d++) kernel[d] = ks[d];
    m = seam_subgraph_node(b->sg, pool, &st);
    for (int32_t d = 0; d < m->outputs[0].rank; d++) od[d] = m->outputs[0].dims[d];
    dnnl_memory_desc_t src, any_dst;
    dx_md_of(&p->slots[sin], &src);
    if (src.data_type != dx_q_dt(xdt) || src.ndims != nsp + 2 || src.ndims > 5) return 0;
    /* oneDNN 2.6's int8 pooling is jit in channels-last (nwc, nhwc, ndhwc)
     * and a reference loop in the plain layout: an 8-bit value in another
     * layout (a graph input) is reordered to channels-last first */
    static const dnnl_format_tag_t cl[6] = {0, 0, 0, dnnl_acb, dnnl_acdb, dnnl_acdeb};
    dnnl_memory_desc_t want;
    dnnl_dims_t xd;
    for (int32_t d = 0; d < src.ndims; d++) xd[d] = src.dims[d];
    dnnl_memory_desc_init_by_tag(&want, src.ndims, xd, src.data_type, cl[src.ndims]);
    if (!dnnl_memory_desc_equal(&src, &want)) {
        sin = dx_in_layout(b, sin, &want);
        if (sin < 0) return dx_fail(b, "could not reorder a quantized MaxPool's input to channels-last"), -1;
        src = want;
    }
    dnnl_memory_desc_init_by_tag(&any_dst, src.ndims, od, src.data_type, dnnl_format_tag_any);
    dnnl_pooling_v2_desc_t pld;
    dnnl_primitive_desc_t pd;
    if (dnnl_pooling_v2_forward_desc_init(&pld, dnnl_forward_inference, dnnl_pooling_max, &src, &any_dst, strides, kernel,
                                          dilation, pl, pr) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &pld, dx_ctx.user_scratch, dx_ctx.engine, NULL) != dnnl_success)
        return 0; /* (the float32 path then) */
    m = seam_subgraph_node(b->sg, q, &st);
    if (!dx_layout_step(b, pd, sin, &m->outputs[0])) return -1;
    fused[self] = fused[pool] = fused[q] = true;
    dx_log(p, "node %d (DequantizeLinear): with node %d (MaxPool) and %d (QuantizeLinear) of the same scale and zero "
              "point: one max pooling on the 8-bit values",
           b->n->index, pool, q);
    return 1;
}

const dx_op dx_qdyn_rows[] = {
    {"DynamicQuantizeLinear", STAGE_ANY_LAYOUT, supports_dyn_quant, compile_dyn_quant},
    {"MatMulInteger", STAGE_ANY_LAYOUT, supports_matmul_integer, compile_matmul_integer},
    {NULL, STAGE_VIEW, NULL, NULL},
};
