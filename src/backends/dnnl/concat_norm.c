/*
 * dnnl: a channels-last Concat read only by a BatchNormalization (and its
 * Relu) runs as one pass of seam's own: each source is normalized straight
 * into its channels of the batch norm's output. The concatenated value is
 * never written.
 *
 * This is every dense layer of a DenseNet: Concat(x0, f1 .. fk), then
 * BatchNormalization and Relu, then a 1x1 convolution. At batch 1 oneDNN
 * keeps those values channels-last (brgconv), where no Concat source is
 * one contiguous range of the output, so it cannot be written in place
 * (concat.c); oneDNN's own concat copies every earlier feature once per
 * layer, and its batch norm (bnorm_jit) and convolutions fall back to
 * reference kernels on a strided sub-memory of a shared buffer. Fused,
 * the pass reads each source once and writes the normalized output once:
 * densenet121 went from about 21 ms to 17.5 ms (bench/RESULTS.md).
 *
 * The step is a host step (step.host): it runs on the program's OpenMP
 * threads, as oneDNN's own primitives do, between them. With fusion=off
 * the Concat and the batch norm stay oneDNN's.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "dnnl_internal.h"

typedef struct concat_norm {
    int32_t n_src;
    bool relu;
    int64_t rows;               /* every dim but the channels */
    int64_t width;              /* the output's channels */
    int64_t ch[MAX_ARGS];       /* each source's channels */
    int64_t at[MAX_ARGS];       /* and where they start in the output */
} concat_norm;

/* y[c] = max(x[c] * a[c] + t[c], 0) (or without the max) over n channels. */
static void norm_row_scalar(const float *x, float *y, const float *a, const float *t, int64_t n, bool relu) {
    for (int64_t c = 0; c < n; c++) {
        float v = x[c] * a[c] + t[c];
        y[c] = relu && !(v > 0.0f) ? 0.0f : v;
    }
}

#if defined(__x86_64__)
#define NORM_TARGET __attribute__((target("avx512f")))
NORM_TARGET static void norm_rows_avx512(const float *x, float *y, const float *a, const float *t, int64_t n, int64_t rows,
                                         int64_t ystride, bool relu) {
    __m512 zero = _mm512_setzero_ps();
    int64_t full = n / 16 * 16;
    __mmask16 tail = (__mmask16)((1u << (n - full)) - 1);
    for (int64_t r = 0; r < rows; r++, x += n, y += ystride) {
        int64_t c = 0;
        for (; c < full; c += 16) {
            /* (mul then add, as the scalar rows: both round twice) */
            __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + c), _mm512_loadu_ps(a + c)), _mm512_loadu_ps(t + c));
            _mm512_storeu_ps(y + c, relu ? _mm512_max_ps(v, zero) : v);
        }
        if (tail) {
            __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + c), _mm512_maskz_loadu_ps(tail, a + c)),
                                     _mm512_maskz_loadu_ps(tail, t + c));
            _mm512_mask_storeu_ps(y + c, tail, relu ? _mm512_max_ps(v, zero) : v);
        }
    }
}
#endif

/* SEAM_DNNL_HOST_SIMD=0 in the environment turns the AVX-512 rows off, as
 * on a CPU without it (for the tests of that path). Read once. */
static bool simd_ok;
static pthread_once_t simd_once = PTHREAD_ONCE_INIT;
static void simd_probe(void) {
    const char *e = getenv("SEAM_DNNL_HOST_SIMD");
#if defined(__x86_64__)
    __builtin_cpu_init();
    simd_ok = !(e && strcmp(e, "0") == 0) && __builtin_cpu_supports("avx512f");
#else
    (void)e;
#endif
}

static bool use_avx512(void) {
    pthread_once(&simd_once, simd_probe);
    return simd_ok;
}

/* Rows [r0, r1) of every source into the output. */
static void concat_norm_rows(const concat_norm *k, const float *const *src, float *dst, const float *a, const float *t,
                             int64_t r0, int64_t r1, bool simd) {
    for (int32_t j = 0; j < k->n_src; j++) {
        const float *x = src[j] + r0 * k->ch[j];
        float *y = dst + r0 * k->width + k->at[j];
        const float *aj = a + k->at[j], *tj = t + k->at[j];
#if defined(__x86_64__)
        if (simd) {
            norm_rows_avx512(x, y, aj, tj, k->ch[j], r1 - r0, k->width, k->relu);
            continue;
        }
#endif
        (void)simd;
        for (int64_t r = r0; r < r1; r++, x += k->ch[j], y += k->width) norm_row_scalar(x, y, aj, tj, k->ch[j], k->relu);
    }
}

static void *data_of(const program *p, int32_t s) {
    void *h = NULL;
    dnnl_memory_get_data_handle(p->slots[s].mem, &h);
    return h;
}

/* The step: arguments are the sources (MULTIPLE_SRC + j), the factors
 * (SCALE: a, then t) and the output (DST). */
static bool run_concat_norm(const program *p, const step *st) {
    const concat_norm *k = st->host_data;
    const float *src[MAX_ARGS];
    for (int32_t j = 0; j < k->n_src; j++) src[j] = data_of(p, st->arg_slot[j]);
    const float *a = data_of(p, st->arg_slot[k->n_src]), *t = a + k->width;
    float *dst = data_of(p, st->arg_slot[k->n_src + 1]);
    bool simd = use_avx512();
    /* rows in chunks of about 64 KiB of output per chunk, shared out */
    int64_t chunk = k->width * 4 >= 65536 ? 1 : 65536 / (k->width * 4);
    int64_t n_chunks = (k->rows + chunk - 1) / chunk;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t q = 0; q < n_chunks; q++) {
        int64_t r0 = q * chunk, r1 = r0 + chunk < k->rows ? r0 + chunk : k->rows;
        concat_norm_rows(k, src, dst, a, t, r0, r1, simd);
    }
    return true;
}

/* Node m's input k as float32 constant of `count` values, or NULL. */
static const float *const_floats(builder *b, const seam_node_view *m, int32_t k, int64_t count) {
    seam_tensor_view v;
    if (k >= m->n_inputs || !m->inputs[k].name || !seam_subgraph_constant(b->sg, m->inputs[k].name, &v) ||
        v.dtype != SEAM_DTYPE_FLOAT32 || v.nbytes != (size_t)count * 4)
        return NULL;
    return v.data;
}

/* The batch norm that alone reads the Concat's output (in inference mode,
 * its four parameters constants of the channel count), or -1. */
static int32_t norm_reader(builder *b, const char *out, int64_t channels, const float **par, float *eps) {
    int32_t r = out ? dx_sole_reader(b, out) : -1;
    if (r < 0) return -1;
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, r, &st);
    int64_t training = 0;
    seam_node_attr_int(m, "training_mode", &training);
    if (!is_op(m, "BatchNormalization") || training || m->n_inputs < 5 || !m->inputs[0].name || strcmp(m->inputs[0].name, out) ||
        m->n_outputs < 1 || !m->outputs[0].name)
        return -1;
    for (int32_t k = 1; k < m->n_outputs; k++)
        if (m->outputs[k].name && m->outputs[k].name[0]) return -1; /* (running statistics out: training) */
    for (int32_t k = 0; k < 4; k++)
        if (!(par[k] = const_floats(b, m, k + 1, channels))) return -1;
    *eps = 1e-5f;
    seam_node_attr_float(m, "epsilon", eps);
    return r;
}

int32_t dx_compile_concat_norm(builder *b, bool *fused, int32_t sin) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    if (!b->fuse || !n->outputs[0].name) return 0;
    int32_t cnt = n->n_inputs, rank = n->outputs[0].rank;
    int64_t axis = 0;
    seam_node_attr_int(n, "axis", &axis);
    if (axis < 0) axis += rank;
    if (axis != 1 || rank < 3 || rank > MAXR || cnt < 1 || cnt > MAX_ARGS - 2) return 0;
    concat_norm k;
    memset(&k, 0, sizeof(k));
    k.n_src = cnt;
    int32_t slots[MAX_ARGS], kinds[MAX_ARGS];
    int64_t out_dims[MAXR];
    for (int32_t d = 0; d < rank; d++) out_dims[d] = n->outputs[0].dims[d];
    k.width = out_dims[1];
    k.rows = 1;
    for (int32_t d = 0; d < rank; d++)
        if (d != 1) k.rows *= out_dims[d];
    /* every source dense channels-last, of the output's other dims */
    for (int32_t j = 0; j < cnt; j++) {
        int32_t s = j ? dx_input_slot(b, &n->inputs[j]) : sin;
        n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
        const slot *sj = s >= 0 ? &p->slots[s] : NULL;
        if (!sj || sj->lazy || sj->pad_pending || sj->scale != 1.0f || sj->rank != rank || !dx_is_channels_last(sj)) return 0;
        for (int32_t d = 0; d < rank; d++)
            if (d != 1 && sj->dims[d] != out_dims[d]) return 0;
        k.at[j] = j ? k.at[j - 1] + k.ch[j - 1] : 0;
        k.ch[j] = sj->dims[1];
        slots[j] = s, kinds[j] = DNNL_ARG_MULTIPLE_SRC + j;
    }
    if (k.at[cnt - 1] + k.ch[cnt - 1] != k.width || k.rows < 1 || k.width < 1) return 0;
    const float *par[4];
    float eps;
    int32_t bn = norm_reader(b, n->outputs[0].name, k.width, par, &eps);
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    if (bn < 0) return 0;
    /* the Relu that alone reads the batch norm's output, if any */
    seam_node_view st;
    const seam_node_view *m = seam_subgraph_node(b->sg, bn, &st);
    const char *bn_name = m->name, *bn_out = m->outputs[0].name;
    int32_t relu = dx_sole_reader(b, bn_out);
    if (relu >= 0) {
        m = seam_subgraph_node(b->sg, relu, &st);
        if (!is_op(m, "Relu") || m->n_outputs < 1 || !m->outputs[0].name) relu = -1;
    }
    m = seam_subgraph_node(b->sg, relu >= 0 ? relu : bn, &st);
    seam_value_info out = m->outputs[0];
    const char *relu_name = relu >= 0 ? m->name : NULL;
    if (out.rank != rank) return 0;
    for (int32_t d = 0; d < rank; d++)
        if (out.dims[d] != out_dims[d]) return 0;
    out.dims = out_dims;
    k.relu = relu >= 0;
    /* the factors: a = scale / sqrt(var + eps), t = B - mean * a */
    float *ft;
    int64_t f_dims[1] = {2 * k.width};
    seam_value_info fv = {"(concat norm factors)", SEAM_DTYPE_FLOAT32, 1, f_dims, NULL};
    int32_t sf = dx_add_slot(p, fv.name, &fv);
    dnnl_memory_desc_t fmd;
    if (sf < 0 || !(ft = calloc((size_t)(2 * k.width), sizeof(float)))) return dx_fail(b, "out of memory"), -1;
    p->slots[sf].owned = ft, p->slots[sf].constant = true;
    if (!dx_md_of(&p->slots[sf], &fmd) || dnnl_memory_create(&p->slots[sf].mem, &fmd, dx_ctx.engine, ft) != dnnl_success)
        return dx_fail(b, "out of memory"), -1;
    for (int64_t c = 0; c < k.width; c++) {
        float a = par[0][c] / sqrtf(par[3][c] + eps);
        ft[c] = a, ft[k.width + c] = par[1][c] - par[2][c] * a;
    }
    /* the output, channels-last */
    dnnl_dims_t strides, dims;
    int64_t acc = 1;
    strides[1] = acc, acc *= out_dims[1];
    for (int32_t d = rank - 1; d >= 2; d--) strides[d] = acc, acc *= out_dims[d];
    strides[0] = acc;
    for (int32_t d = 0; d < rank; d++) dims[d] = out_dims[d];
    dnnl_memory_desc_t omd;
    if (dnnl_memory_desc_init_by_strides(&omd, rank, dims, dnnl_f32, strides) != dnnl_success) return 0;
    int32_t final_slot = -1;
    int32_t sd = dx_result_slot(b, &out, &omd, &final_slot);
    if (sd < 0) return dx_fail(b, "out of memory"), -1;
    slots[cnt] = sf, kinds[cnt] = DNNL_ARG_SCALE;
    slots[cnt + 1] = sd, kinds[cnt + 1] = DNNL_ARG_DST;
    concat_norm *data = malloc(sizeof(*data));
    if (!data) return dx_fail(b, "out of memory"), -1;
    *data = k;
    if (!dx_add_host(b, run_concat_norm, data, cnt + 2, kinds, slots)) return -1;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    dx_log(p, "node %d '%s' (Concat): seam concat_norm (%d source%s, channels-last, one pass); fuses '%s' (BatchNormalization)%s%s%s",
           n->index, n->name, cnt, cnt == 1 ? "" : "s", bn_name, relu_name ? ", '" : "", relu_name ? relu_name : "", relu_name ? "' (Relu)" : "");
    fused[bn] = true;
    if (relu >= 0) fused[relu] = true;
    if (final_slot >= 0 && !dx_add_reorder(b, sd, final_slot)) return -1;
    return 1;
}
