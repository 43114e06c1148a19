/*
 * dnnl: host steps, seam's own kernels between oneDNN's primitives where
 * oneDNN has nothing as fast. Each runs on the program's OpenMP threads,
 * as oneDNN's primitives do (step.host; dnnl.c waits for the stream
 * first), and prints an `exec` line as oneDNN's do when ONEDNN_VERBOSE
 * (or DNNL_VERBOSE) is set, for bench/dnnl_vs_ort_ops.py.
 *
 * concat_norm: a channels-last Concat read only by a BatchNormalization
 * (and its Relu), with fusion on, is one pass: each source is normalized
 * straight into its channels of the batch norm's output, and the
 * concatenated value is never written. This is every dense layer of a
 * DenseNet: Concat(x0, f1 .. fk), BatchNormalization, Relu, a 1x1
 * convolution. At batch 1 oneDNN keeps those values channels-last
 * (brgconv), where no source is one contiguous range of the output, so
 * none is written in place (concat.c); oneDNN's concat copies every
 * earlier feature once per layer, and its batch norm (bnorm_jit) and
 * convolutions fall back to reference kernels on a strided sub-memory of
 * a shared buffer. densenet121 went from about 21 ms to 17.5 ms
 * (bench/RESULTS.md). With fusion off they stay oneDNN's.
 *
 * global_pool: GlobalAveragePool of a channels-last value. oneDNN's
 * pooling splits its work over the channels (a batch of 1 has no other
 * outer dim), so each thread reads every pixel, half of them from the
 * other core's cache, where the convolution before left them: 58 us for
 * efficientnet_b0's 32 x 112 x 112 against 22 us in ONNX Runtime. Here
 * each thread sums its own rows of pixels, then the partial sums are
 * added per channel.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

#include "host.h"

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
    /* the output, channels-last */
    slot shape;
    memset(&shape, 0, sizeof(shape));
    shape.rank = rank;
    int32_t order[MAXR] = {0}; /* N, the spatial dims, then C innermost */
    for (int32_t d = 0; d < rank; d++) shape.dims[d] = out_dims[d];
    for (int32_t i = 1; i + 1 < rank; i++) order[i] = i + 1;
    order[rank - 1] = 1;
    dnnl_memory_desc_t omd;
    if (!dx_dense_md_in_order(&shape, order, &omd)) return 0;
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
    int32_t final_slot = -1;
    int32_t sd = dx_result_slot(b, &out, &omd, &final_slot);
    if (sd < 0) return dx_fail(b, "out of memory"), -1;
    slots[cnt] = sf, kinds[cnt] = DNNL_ARG_SCALE;
    slots[cnt + 1] = sd, kinds[cnt + 1] = DNNL_ARG_DST;
    concat_norm *data = malloc(sizeof(*data));
    if (!data) return dx_fail(b, "out of memory"), -1;
    *data = k;
    if (!dx_add_host(b, "concat_norm", run_concat_norm, data, cnt + 2, kinds, slots)) return -1;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    dx_log(p, "node %d '%s' (Concat): host concat_norm; seam's kernel, %d source%s channels-last, one pass; fuses '%s' "
              "(BatchNormalization)%s%s%s",
           n->index, n->name, cnt, cnt == 1 ? "" : "s", bn_name, relu_name ? ", '" : "", relu_name ? relu_name : "", relu_name ? "' (Relu)" : "");
    fused[bn] = true;
    if (relu >= 0) fused[relu] = true;
    if (final_slot >= 0 && !dx_add_reorder(b, sd, final_slot)) return -1;
    return 1;
}

/* ---- GlobalAveragePool, channels-last ---- */

typedef struct global_pool {
    int64_t images, rows, ch; /* rows: the pixels of one image */
    int32_t max_threads;      /* partial holds this many rows of ch sums */
    float partial[];
} global_pool;

#if defined(__x86_64__)
/* acc[c] = sum over rows of x[r * ch + c], for ch <= 64 (four vectors,
 * the last masked), two rows at a time on separate sums. */
NORM_TARGET static void sum_rows_avx512(const float *x, int64_t rows, int64_t stride, int64_t ch, float *acc) {
    __m512 s0[4], s1[4];
    __mmask16 m[4];
    for (int32_t v = 0; v < 4; v++) {
        int64_t left = ch - 16 * v;
        m[v] = left >= 16 ? (__mmask16)0xffff : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
        s0[v] = s1[v] = _mm512_setzero_ps();
    }
    int64_t r = 0;
    for (; r + 1 < rows; r += 2, x += 2 * stride)
        for (int32_t v = 0; v < 4; v++) {
            s0[v] = _mm512_add_ps(s0[v], _mm512_maskz_loadu_ps(m[v], x + 16 * v));
            s1[v] = _mm512_add_ps(s1[v], _mm512_maskz_loadu_ps(m[v], x + stride + 16 * v));
        }
    for (; r < rows; r++, x += stride)
        for (int32_t v = 0; v < 4; v++) s0[v] = _mm512_add_ps(s0[v], _mm512_maskz_loadu_ps(m[v], x + 16 * v));
    for (int32_t v = 0; v < 4; v++) _mm512_mask_storeu_ps(acc + 16 * v, m[v], _mm512_add_ps(s0[v], s1[v]));
}
#endif

/* acc[0 .. ch) = the sums over rows [r0, r1) of one image. */
static void sum_rows(const float *x, int64_t r0, int64_t r1, int64_t ch, float *acc, bool simd) {
    x += r0 * ch;
#if defined(__x86_64__)
    if (simd) {
        for (int64_t c = 0; c < ch; c += 64) sum_rows_avx512(x + c, r1 - r0, ch, ch - c < 64 ? ch - c : 64, acc + c);
        return;
    }
#endif
    (void)simd;
    for (int64_t c = 0; c < ch; c++) acc[c] = 0.0f;
    for (int64_t r = r0; r < r1; r++, x += ch)
        for (int64_t c = 0; c < ch; c++) acc[c] += x[c];
}

/* The step: SRC, DST ([images, ch], any layout with ch innermost). */
static bool run_global_pool(const program *p, const step *st) {
    global_pool *k = st->host_data;
    const float *x = data_of(p, st->arg_slot[0]);
    float *y = data_of(p, st->arg_slot[1]);
    bool simd = use_avx512();
    int32_t nt = 1;
#ifdef _OPENMP
    nt = omp_get_max_threads();
#endif
    if (nt > k->max_threads) nt = k->max_threads;
    /* (at least 64 rows a thread: fewer cost more to share than to sum) */
    if (nt > k->rows / 64) nt = k->rows / 64 > 1 ? (int32_t)(k->rows / 64) : 1;
    float inv = 1.0f / (float)k->rows;
    for (int64_t i = 0; i < k->images; i++) {
        const float *xi = x + i * k->rows * k->ch;
        float *yi = y + i * k->ch;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
        {
            int32_t t = 0, n = 1;
#ifdef _OPENMP
            t = omp_get_thread_num(), n = omp_get_num_threads();
#endif
            sum_rows(xi, k->rows * t / n, k->rows * (t + 1) / n, k->ch, k->partial + (int64_t)t * k->ch, simd);
#ifdef _OPENMP
#pragma omp barrier
#endif
            for (int64_t c = k->ch * t / n; c < k->ch * (t + 1) / n; c++) {
                float sum = 0.0f;
                for (int32_t q = 0; q < n; q++) sum += k->partial[(int64_t)q * k->ch + c];
                yi[c] = sum * inv;
            }
        }
    }
    return true;
}

int32_t dx_compile_global_pool(builder *b, int32_t sin) {
    const seam_node_view *n = b->n;
    program *p = b->p;
    const slot *x = &p->slots[sin];
    if (!is_op(n, "GlobalAveragePool") || !dx_is_channels_last(x) || n->n_outputs < 1 || !n->outputs[0].name ||
        n->outputs[0].rank != x->rank)
        return 0;
    int64_t rows = 1;
    for (int32_t d = 2; d < x->rank; d++) rows *= x->dims[d];
    for (int32_t d = 0; d < x->rank; d++)
        if (n->outputs[0].dims[d] != (d < 2 ? x->dims[d] : 1)) return 0;
    if (rows < 1 || x->dims[0] < 1 || x->dims[1] < 1) return 0;
    /* the output, [N, C, 1, ...]: plain, which is also channels-last */
    dnnl_memory_desc_t omd;
    if (dnnl_memory_desc_init_by_tag(&omd, x->rank, n->outputs[0].dims, dnnl_f32, dx_plain_tag(x->rank)) != dnnl_success)
        return 0;
    int32_t threads = p->threads > dx_ctx.default_threads ? p->threads : dx_ctx.default_threads;
    if (threads < 1) threads = 1;
    global_pool *k = calloc(1, sizeof(*k) + sizeof(float) * (size_t)(threads * x->dims[1]));
    if (!k) return dx_fail(b, "out of memory"), -1;
    k->images = x->dims[0], k->rows = rows, k->ch = x->dims[1], k->max_threads = threads;
    int32_t final_slot = -1;
    int32_t sd = dx_result_slot(b, &n->outputs[0], &omd, &final_slot);
    if (sd < 0) return free(k), dx_fail(b, "out of memory"), -1;
    int32_t kinds[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, slots[2] = {sin, sd};
    if (!dx_add_host(b, "global_pool", run_global_pool, k, 2, kinds, slots)) return -1;
    n = b->n = seam_subgraph_node(b->sg, b->index, b->storage);
    dx_log(p, "node %d '%s' (GlobalAveragePool): host global_pool; seam's kernel, channels-last, %lld pixels of %lld "
              "channels, rows split over the threads (at least 64 each)", n->index, n->name, (long long)rows, (long long)k->ch);
    if (final_slot >= 0 && !dx_add_reorder(b, sd, final_slot)) return -1;
    return 1;
}

/* ---- Add, Sub, Mul, Div with a broadcast second operand, plain ---- */

typedef struct bcast_binary {
    int32_t op, rank; /* op: 0 Add, 1 Sub, 2 Mul, 3 Div */
    int64_t dims[MAXR], s1[MAXR]; /* the output's dims; the second operand's strides, 0 where it broadcasts */
} bcast_binary;

/* y = a op b over n elements, b one value (b_step 0) or n (b_step 1). */
static void bcast_row(int32_t op, const float *restrict a, const float *restrict b, int64_t b_step, float *restrict y,
                      int64_t n) {
    if (b_step == 0) {
        float v = b[0];
        switch (op) {
        case 0: for (int64_t i = 0; i < n; i++) y[i] = a[i] + v; return;
        case 1: for (int64_t i = 0; i < n; i++) y[i] = a[i] - v; return;
        case 2: for (int64_t i = 0; i < n; i++) y[i] = a[i] * v; return;
        default: for (int64_t i = 0; i < n; i++) y[i] = a[i] / v; return;
        }
    }
    switch (op) {
    case 0: for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i]; return;
    case 1: for (int64_t i = 0; i < n; i++) y[i] = a[i] - b[i]; return;
    case 2: for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i]; return;
    default: for (int64_t i = 0; i < n; i++) y[i] = a[i] / b[i]; return;
    }
}

/* The step: SRC_0 (the output's shape), SRC_1, DST, all plain. */
static bool run_bcast_binary(const program *p, const step *st) {
    const bcast_binary *k = st->host_data;
    const float *a = data_of(p, st->arg_slot[0]), *b = data_of(p, st->arg_slot[1]);
    float *y = data_of(p, st->arg_slot[2]);
    int32_t last = k->rank - 1;
    int64_t inner = k->dims[last], rows = 1;
    for (int32_t d = 0; d < last; d++) rows *= k->dims[d];
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (rows * inner >= 16384)
#endif
    for (int64_t r = 0; r < rows; r++) {
        int64_t rem = r, off = 0;
        for (int32_t d = last - 1; d >= 0; d--) off += rem % k->dims[d] * k->s1[d], rem /= k->dims[d];
        bcast_row(k->op, a + r * inner, b + off, k->s1[last], y + r * inner, inner);
    }
    return true;
}

bool dx_host_bcast_binary(builder *b, dnnl_alg_kind_t alg, int32_t s0, int32_t s1, int32_t sd) {
    program *p = b->p;
    const slot *x = &p->slots[s0], *w = &p->slots[s1];
    int32_t op = alg == dnnl_binary_add ? 0 : alg == dnnl_binary_sub ? 1 : alg == dnnl_binary_mul ? 2
               : alg == dnnl_binary_div ? 3 : -1;
    if (op < 0 || x->rank != w->rank || x->rank < 1 || x->rank > MAXR) return false;
    bcast_binary *k = calloc(1, sizeof(*k));
    if (!k) return false;
    k->op = op, k->rank = x->rank;
    int64_t stride = 1;
    for (int32_t d = x->rank - 1; d >= 0; d--) {
        if (w->dims[d] != x->dims[d] && w->dims[d] != 1) return free(k), false;
        k->dims[d] = x->dims[d];
        k->s1[d] = w->dims[d] == 1 ? 0 : stride;
        stride *= w->dims[d];
    }
    int32_t kinds[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, slots[3] = {s0, s1, sd};
    return dx_add_host(b, "bcast_binary", run_bcast_binary, k, 3, kinds, slots);
}

/* run_team (seam_backend.h): oneDNN's OpenMP threads run the session's CPU
 * loops, so they are busy there instead of spinning beside seam's pool. */
void dx_run_team(void *ctx, int32_t n_threads, void (*body)(void *arg, int32_t thread, int32_t n_threads), void *arg) {
    (void)ctx;
#ifdef _OPENMP
#pragma omp parallel num_threads(n_threads)
    body(arg, omp_get_thread_num(), omp_get_num_threads());
#else
    (void)n_threads;
    body(arg, 0, 1);
#endif
}
