/* CPU kernels: activations, Softmax/LogSoftmax/Hardmax, Clip, Shrink,
 * Identity and Dropout (inference). Point-wise activations compute in
 * float for float32 (the hot path) and in double for float64, float16 and
 * bfloat16 (converted on load and store). */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu.h"

typedef struct act_job {
    act_kind op;
    double alpha, beta, gamma;
    const seam_tensor *x;
    seam_tensor *y;
} act_job;

static double act_d(const act_job *j, double x) {
    double a = j->alpha, b = j->beta;
    switch (j->op) {
    case ACT_RELU: return x > 0 ? x : (x == x ? 0 : x);
    case ACT_LEAKY_RELU: return x >= 0 ? x : a * x;
    case ACT_SIGMOID: return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
    case ACT_HARD_SIGMOID: return fmax(0, fmin(1, a * x + b));
    case ACT_HARD_SWISH: return x * fmax(0, fmin(1, x / 6 + 0.5));
    case ACT_TANH: return tanh(x);
    case ACT_ELU: return x >= 0 ? x : a * (exp(x) - 1);
    case ACT_SELU: return j->gamma * (x > 0 ? x : a * exp(x) - a);
    case ACT_CELU: return fmax(0, x) + fmin(0, a * (exp(x / a) - 1));
    case ACT_THRESHOLDED_RELU: return x > a ? x : 0;
    case ACT_SOFTPLUS: return x > 30 ? x : log1p(exp(x));
    case ACT_SOFTSIGN: return x / (1 + fabs(x));
    case ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case ACT_GELU_TANH: return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case ACT_MISH: return x * tanh(x > 30 ? x : log1p(exp(x)));
    case ACT_SHRINK: return x < -a ? x + b : x > a ? x - b : 0;
    default: break; /* Clip has its own kernel; ScaledTanh and Affine are RNN-only */
    }
    return x;
}

/* min(1, max(0, v)) as compares, which vectorize (fminf and fmaxf are
 * calls per element without -ffast-math); NaN stays NaN. */
static inline float hard_sigmoid(float v) {
    v = v < 0 ? 0 : v;
    return v > 1 ? 1 : v;
}

/* HardSigmoid and HardSwish eight floats at once: GCC turns hard_sigmoid's
 * two selects into branches when a multiply follows them (a scalar loop,
 * the most part of a HardSwish conv's time); spelled as compares and
 * masks on vectors they are the same operations in the same order, so
 * every lane gets hard_sigmoid's bits (NaN stays NaN). */
typedef float act_v8 __attribute__((vector_size(8 * sizeof(float))));
typedef int32_t act_v8i __attribute__((vector_size(8 * sizeof(int32_t))));

/* (in place: a vector returned by value would change the baseline clone's ABI) */
static inline __attribute__((always_inline)) void hard_sigmoid8(act_v8 *p) {
    const act_v8 one = {1, 1, 1, 1, 1, 1, 1, 1}, zero = {0};
    act_v8 v = (act_v8)((act_v8i)*p & ~(*p < zero));               /* v < 0 ? 0 : v */
    act_v8i gt = v > one;
    *p = (act_v8)(((act_v8i)v & ~gt) | ((act_v8i)one & gt));       /* v > 1 ? 1 : v */
}

/* y = hard_sigmoid(a * (x + bias) + b), or x (+ bias) times
 * hard_sigmoid((x + bias) / 6 + 0.5) (swish), the bias added only when
 * add_bias (x + 0 is not x for x = -0). */
static inline __attribute__((always_inline)) void hard_act_f32(const float *x, float *y, int64_t n, float a, float b,
                                                               float bias, bool add_bias, bool swish) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        act_v8 v;
        memcpy(&v, x + i, sizeof v);
        if (add_bias) v = v + bias;
        act_v8 t = swish ? v * (1.0f / 6) + 0.5f : a * v + b;
        hard_sigmoid8(&t);
        v = swish ? v * t : t;
        memcpy(y + i, &v, sizeof v);
    }
    for (; i < n; i++) {
        float v = add_bias ? x[i] + bias : x[i];
        y[i] = swish ? v * hard_sigmoid(v * (1.0f / 6) + 0.5f) : hard_sigmoid(a * v + b);
    }
}

/* e^-|x| in plain arithmetic, so a loop around it vectorizes (expf is a
 * call per element, and a float select that clamps makes GCC branch):
 * |x| is clamped to 87 on its bits (e^-87 is near float's smallest normal;
 * NaN becomes 87 too, callers mend NaN inputs after the loop), -|x| =
 * n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor series to r^7
 * (relative error about an ulp), times 2^n built in the exponent bits. */
static inline float exp_negabs(float x) {
    uint32_t ab;
    memcpy(&ab, &x, sizeof(ab));
    ab &= 0x7FFFFFFFu;
    ab = ab < 0x42AE0000u ? ab : 0x42AE0000u; /* 87.0f */
    float c;
    ab |= 0x80000000u;
    memcpy(&c, &ab, sizeof(c));
    float t = c * 1.44269504f + 12582912.0f, n = t - 12582912.0f; /* n = round(c / ln2) in t's low bits */
    float r = (c - n * 0.693145752f) - n * 1.42860677e-6f;        /* ln2 in two parts, the first exact */
    float p = 1 + r * (1 + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
    int32_t bits;
    memcpy(&bits, &t, sizeof(bits));
    bits = (bits - 0x4B400000 + 127) * (1 << 23);
    float scale;
    memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}

/* Sigmoid over n floats, vectorizing (exp_negabs), about 2 ulp; NaN stays
 * NaN. The Sigmoid op and the recurrent kernels' gates use it. */
CPU_HOT void cpu_sigmoid_f32(const float *x, float *y, int64_t n) {
    int nan = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i], e = exp_negabs(v), num = v >= 0 ? 1.0f : e;
        y[i] = num / (1 + e);
        nan |= v != v;
    }
    for (int64_t i = 0; nan && i < n; i++)
        if (x[i] != x[i]) y[i] = x[i];
}

/* tanh over n floats, vectorizing: (1 - e) / (1 + e) with e = e^-2|x| and
 * the sign put back; below |x| = 0.1, where 1 - e cancels, its odd Taylor
 * series to x^7 (relative error below 1e-9 there). Within a few ulp
 * elsewhere; NaN stays NaN. The Tanh op and the recurrent kernels' gates
 * use it (tanhf, a call per element, made Tanh 9x ONNX Runtime). */
CPU_HOT void cpu_tanh_f32(const float *x, float *y, int64_t n) {
    int nan = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i], a = fabsf(v), e = exp_negabs(2 * a), x2 = v * v;
        float big = (1 - e) / (1 + e), small = a * (1 + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315))));
        /* small where |x| < 0.1, else big, and v's sign: on the bits, as a
         * float select makes GCC branch (erf below does the same) */
        uint32_t bs, bb, bv, mask = -(uint32_t)(a < 0.1f);
        memcpy(&bs, &small, sizeof(bs));
        memcpy(&bb, &big, sizeof(bb));
        memcpy(&bv, &v, sizeof(bv));
        bs = ((bs & mask) | (bb & ~mask)) | (bv & 0x80000000u);
        memcpy(y + i, &bs, sizeof(bs));
        nan |= v != v;
    }
    for (int64_t i = 0; nan && i < n; i++)
        if (x[i] != x[i]) y[i] = x[i];
}

/* erf over n floats in plain arithmetic, so the loop vectorizes (erff is
 * a call per element). |x| < 0.5: the Taylor series of erf to x^15;
 * above, erf = 1 - erfc with the Chebyshev fit of erfc in Numerical
 * Recipes (relative error below 1.2e-7) on exp_negabs. Both are computed
 * and one is selected, so there is no branch. NaN stays NaN, +-inf gives
 * +-1. Elementwise's Erf uses it too. */
CPU_HOT void cpu_erf_f32(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i], z = fabsf(v), z2 = v * v;
        /* 2/sqrt(pi) (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320 + x^13/9360 - x^15/75600) */
        float series = 1.12837917f * v *
                       (1 + z2 * (-1.0f / 3 + z2 * (1.0f / 10 + z2 * (-1.0f / 42 + z2 * (1.0f / 216 +
                        z2 * (-1.0f / 1320 + z2 * (1.0f / 9360 + z2 * (-1.0f / 75600))))))));
        float t = 1 / (1 + 0.5f * z);
        float q = -1.26551223f +
                  t * (1.00002368f + t * (0.37409196f + t * (0.09678418f + t * (-0.18628806f + t * (0.27886807f +
                  t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
        float erfc = t * exp_negabs(z2 - q); /* e^(-z^2 + q), the exponent <= 0 here */
        float big = copysignf(1 - erfc, v);
        /* series where z < 0.5, else big, on the bits: a float select here
         * makes GCC branch */
        uint32_t bs, bb, mask = -(uint32_t)(z < 0.5f);
        memcpy(&bs, &series, sizeof(bs));
        memcpy(&bb, &big, sizeof(bb));
        bs = (bs & mask) | (bb & ~mask);
        memcpy(y + i, &bs, sizeof(bs));
    }
}

CPU_HOT static void act_range(void *arg, int64_t begin, int64_t end) {
    act_job *j = arg;
    int32_t dt = j->x->dtype;
    if (dt == SEAM_DTYPE_FLOAT32) {
        const float *x = j->x->data;
        float *y = j->y->data;
        float a = (float)j->alpha, b = (float)j->beta;
        switch (j->op) {
        case ACT_RELU:
            for (int64_t i = begin; i < end; i++) y[i] = x[i] < 0 ? 0 : x[i]; /* NaN stays NaN */
            return;
        case ACT_LEAKY_RELU:
            for (int64_t i = begin; i < end; i++) y[i] = x[i] >= 0 ? x[i] : a * x[i];
            return;
        case ACT_SIGMOID: cpu_sigmoid_f32(x + begin, y + begin, end - begin); return;
        case ACT_TANH: cpu_tanh_f32(x + begin, y + begin, end - begin); return;
        case ACT_HARD_SIGMOID: hard_act_f32(x + begin, y + begin, end - begin, a, b, 0, false, false); return;
        case ACT_HARD_SWISH: hard_act_f32(x + begin, y + begin, end - begin, 0, 0, 0, false, true); return;
        case ACT_GELU: {
            float e[256], u[256];
            for (int64_t i0 = begin; i0 < end; i0 += 256) {
                int64_t m = end - i0 < 256 ? end - i0 : 256;
                for (int64_t i = 0; i < m; i++) u[i] = x[i0 + i] * (float)M_SQRT1_2;
                cpu_erf_f32(u, e, m);
                for (int64_t i = 0; i < m; i++) y[i0 + i] = 0.5f * x[i0 + i] * (1 + e[i]);
            }
            return;
        }
        default:
            for (int64_t i = begin; i < end; i++) y[i] = (float)act_d(j, x[i]);
            return;
        }
    }
    for (int64_t i = begin; i < end; i++) cpu_set(j->y->data, dt, i, act_d(j, cpu_get(j->x->data, dt, i)));
}

/* One loop per kind, so each vectorizes (see cpu.h). */
CPU_HOT void cpu_post_apply(const act_params *op, float *y, int64_t n, float bias) {
    float a = op->alpha, b = op->beta, l = op->lo, h = op->hi;
    switch (op->kind) {
    default: /* not a post-op kind (act_is_post_op): fusion never sets one */
    case ACT_NONE:
        if (bias != 0)
            for (int64_t i = 0; i < n; i++) y[i] += bias;
        return;
    case ACT_RELU:
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] + bias;
            y[i] = v < 0 ? 0 : v;
        }
        return;
    case ACT_CLIP:
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] + bias;
            v = v < l ? l : v;
            y[i] = v > h ? h : v;
        }
        return;
    case ACT_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] + bias;
            y[i] = v >= 0 ? v : a * v;
        }
        return;
    case ACT_HARD_SIGMOID: hard_act_f32(y, y, n, a, b, bias, true, false); return;
    case ACT_HARD_SWISH: hard_act_f32(y, y, n, 0, 0, bias, true, true); return;
    case ACT_SILU: /* v * sigmoid(v), the sigmoid as cpu_sigmoid_f32 computes it: the same bits as unfused */
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] + bias, e = exp_negabs(v), num = v >= 0 ? 1.0f : e;
            y[i] = v * (num / (1 + e));
        }
        return;
    }
}

static seam_status run_act(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    act_params p;
    if (!act_of_node(k->n, &p)) return kernel_fail(k, "%s is not an activation", k->n->op_type);
    act_job j = {p.kind, p.alpha, p.beta, p.gamma, x, NULL};
    j.y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!j.y) return kernel_oom(k);
    seam_parallel_for(k->pool, x->numel, 16384, act_range, &j);
    return SEAM_STATUS_OK;
}

/* float32 PRelu whose slope, right-aligned to X, is X's dims [a, b) with
 * 1 elsewhere (one slope; per channel; over the last axis): element i
 * takes slope (i / inner) % count, inner the product of X's dims from b. */
typedef struct prelu_job {
    const float *x, *s;
    float *y;
    int64_t inner, count;
} prelu_job;

/* v < 0 ? v * a : v, selected on the bits (a float select makes GCC
 * branch, as in cpu_tanh_f32), so that the loops vectorize */
static inline float prelu1(float v, float a) {
    float m = v * a;
    uint32_t bv, bm, mask = -(uint32_t)(v < 0);
    memcpy(&bv, &v, 4);
    memcpy(&bm, &m, 4);
    bv = (bm & mask) | (bv & ~mask);
    memcpy(&m, &bv, 4);
    return m;
}

CPU_HOT static void prelu_range(void *arg, int64_t begin, int64_t end) {
    const prelu_job *j = arg;
    const float *restrict x = j->x, *restrict s = j->s;
    float *restrict y = j->y;
    for (int64_t i = begin; i < end;) {
        int64_t q = (i / j->inner) % j->count, run;
        if (j->inner == 1) { /* a slope per element of the row */
            run = end - i < j->count - q ? end - i : j->count - q;
            const float *a = s + q;
            for (int64_t t = 0; t < run; t++) y[i + t] = prelu1(x[i + t], a[t]);
        } else {
            int64_t e = i % j->inner;
            run = end - i < j->inner - e ? end - i : j->inner - e;
            float a = s[q];
            for (int64_t t = 0; t < run; t++) y[i + t] = prelu1(x[i + t], a);
        }
        i += run;
    }
}

/* Whether slope s, right-aligned to X's rank, is X's dims on one run of
 * axes and 1 elsewhere; sets the job's inner and count. */
static bool prelu_pattern(const seam_tensor *x, const seam_tensor *s, prelu_job *j) {
    if (s->rank > x->rank) return false;
    int32_t shift = x->rank - s->rank, last = -1;
    for (int32_t d = 0; d < s->rank; d++) {
        if (s->dims[d] == 1) continue;
        if (s->dims[d] != x->dims[d + shift]) return false;
        if (last >= 0 && last != d + shift - 1) return false; /* a 1 between two runs */
        last = d + shift;
    }
    j->count = s->numel;
    j->inner = last < 0 ? x->numel : cpu_span(x->dims, last + 1, x->rank); /* one slope: one block */
    return j->count >= 1 && j->inner >= 1;
}

/* PRelu: y = x < 0 ? slope * x : x, slope broadcast to x. */
static seam_status run_prelu(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *s = kernel_in(k, 1);
    if (!x || !s) return kernel_fail(k, "needs X and slope");
    seam_tensor per_channel;
    const seam_tensor *ins[2] = {x, s};
    int32_t rank;
    int64_t dims[SEAM_MAX_RANK];
    if (!cpu_broadcast(ins, 2, &rank, dims) && s->rank == 1 && x->rank >= 2 && s->dims[0] == x->dims[1]) {
        /* old exporters give a per-channel slope [C]: view it as [C, 1, ...] */
        per_channel = *s;
        per_channel.rank = x->rank - 1;
        for (int32_t d = 1; d < per_channel.rank; d++) per_channel.dims[d] = 1;
        s = ins[1] = &per_channel;
    }
    if (!cpu_broadcast(ins, 2, &rank, dims)) return kernel_fail(k, "slope does not broadcast to X");
    seam_tensor *y = kernel_out(k, 0, x->dtype, rank, dims);
    if (!y) return kernel_oom(k);
    prelu_job j = {x->data, s->data, y->data, 1, 1};
    if (x->dtype == SEAM_DTYPE_FLOAT32 && s->dtype == SEAM_DTYPE_FLOAT32 && y->numel == x->numel && y->numel &&
        prelu_pattern(x, s, &j)) {
        seam_parallel_for(k->pool, y->numel, 16384, prelu_range, &j);
        return SEAM_STATUS_OK;
    }
    cpu_iter it;
    cpu_iter_init(&it, rank, dims, ins, 2);
    for (int64_t i = 0; i < y->numel; i++, cpu_iter_next(&it)) {
        double v = cpu_get(x->data, x->dtype, it.off[0]);
        cpu_set(y->data, y->dtype, i, v < 0 ? v * cpu_get(s->data, s->dtype, it.off[1]) : v);
    }
    return SEAM_STATUS_OK;
}

typedef struct clip_job {
    const float *x;
    float *y;
    float lo, hi;
} clip_job;

/* Two selects the compiler turns into max/min vector instructions (a NaN
 * input stays NaN). */
CPU_HOT static void clip_range(void *arg, int64_t begin, int64_t end) {
    const clip_job *j = arg;
    const float *a = j->x;
    float *b = j->y, l = j->lo, h = j->hi;
    for (int64_t i = begin; i < end; i++) {
        float v = a[i];
        v = v < l ? l : v;
        b[i] = v > h ? h : v;
    }
}

/* Clip: min and max are inputs from opset 11, attributes before (which
 * act_of_node reads). */
static seam_status run_clip(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    act_params p;
    if (!act_of_node(k->n, &p)) return kernel_fail(k, "%s is not an activation", k->n->op_type);
    double lo = p.lo, hi = p.hi;
    bool is_int = cpu_is_int(x->dtype);
    int64_t ilo = INT64_MIN, ihi = INT64_MAX;
    if (k->n->opset >= 11) {
        const seam_tensor *mn = kernel_in(k, 1), *mx = kernel_in(k, 2);
        if ((mn && mn->numel != 1) || (mx && mx->numel != 1)) return kernel_fail(k, "min and max must be scalars");
        if ((mn && mn->dtype != x->dtype) || (mx && mx->dtype != x->dtype))
            return kernel_fail(k, "min and max must have the input's dtype");
        if (mn) lo = cpu_get(mn->data, mn->dtype, 0), ilo = cpu_get_i64(mn->data, mn->dtype, 0);
        if (mx) hi = cpu_get(mx->data, mx->dtype, 0), ihi = cpu_get_i64(mx->data, mx->dtype, 0);
    }
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    if (x->dtype == SEAM_DTYPE_FLOAT32) {
        clip_job j = {x->data, y->data, (float)lo, (float)hi};
        seam_parallel_for(k->pool, x->numel, 16384, clip_range, &j);
    } else if (is_int) {
        for (int64_t i = 0; i < x->numel; i++) {
            int64_t v = cpu_get_i64(x->data, x->dtype, i);
            cpu_set_i64(y->data, y->dtype, i, v < ilo ? ilo : v > ihi ? ihi : v);
        }
    } else {
        for (int64_t i = 0; i < x->numel; i++) {
            double v = cpu_get(x->data, x->dtype, i);
            cpu_set(y->data, y->dtype, i, v < lo ? lo : v > hi ? hi : v);
        }
    }
    return SEAM_STATUS_OK;
}

/* Softmax family. From opset 13 the op works along one axis; before, on
 * the 2-D view [prod(dims[:axis]), prod(dims[axis:])] (default axis 1). */
typedef struct soft_job {
    int kind; /* 0 softmax, 1 log-softmax, 2 hardmax */
    const seam_tensor *x;
    seam_tensor *y;
    int64_t len, inner; /* the reduced length and the stride between its elements */
} soft_job;

/* One float32 row of Softmax (kind 0) or LogSoftmax (1) in loops that
 * vectorize: the max; e^(x - max) by exp_negabs (its argument is <= 0),
 * 0 below -87 where expf's results are below float's normal range anyway
 * (so a -inf logit, a masked position, weighs exactly 0); the sum in 8
 * double accumulators. False, with nothing written, for a row holding NaN
 * or without a finite max, which the caller computes as the spec says. */
CPU_HOT static bool soft_row_f32(int kind, const float *x, float *y, int64_t len) {
    float mx = -INFINITY;
    int nan = 0;
    for (int64_t i = 0; i < len; i++) {
        mx = x[i] > mx ? x[i] : mx;
        nan |= x[i] != x[i];
    }
    if (nan || !(mx > -INFINITY && mx < INFINITY)) return false;
    double acc[8] = {0};
    int64_t i = 0;
    for (; i < len; i++) { /* e into y (LogSoftmax overwrites it below) */
        float v = x[i] - mx, e = exp_negabs(v);
        uint32_t be, keep = -(uint32_t)(v >= -87.0f); /* on the bits: a float select makes GCC branch */
        memcpy(&be, &e, sizeof(be));
        be &= keep;
        memcpy(y + i, &be, sizeof(be));
    }
    for (i = 0; i + 8 <= len; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += y[i + k];
    for (; i < len; i++) acc[0] += y[i];
    double sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    if (kind == 0) {
        float inv = (float)(1.0 / sum);
        for (i = 0; i < len; i++) y[i] *= inv;
    } else {
        float ls = (float)log(sum);
        for (i = 0; i < len; i++) y[i] = x[i] - mx - ls;
    }
    return true;
}

static void soft_rows(void *arg, int64_t begin, int64_t end) {
    soft_job *j = arg;
    int32_t dt = j->x->dtype;
    int64_t len = j->len, inner = j->inner;
    for (int64_t r = begin; r < end; r++) {
        int64_t base = (r / inner) * len * inner + r % inner;
        if (dt == SEAM_DTYPE_FLOAT32 && inner == 1 && j->kind != 2 && soft_row_f32(j->kind, (const float *)j->x->data + base,
                                                                        (float *)j->y->data + base, len))
            continue;
        if (dt == SEAM_DTYPE_FLOAT32 && inner == 1 && j->kind != 2) { /* NaN or no finite max: the spec's way */
            const float *x = (const float *)j->x->data + base;
            float *y = (float *)j->y->data + base;
            float mx = -INFINITY;
            for (int64_t i = 0; i < len; i++) mx = x[i] > mx ? x[i] : mx;
            double sum = 0;
            for (int64_t i = 0; i < len; i++) {
                float e = expf(x[i] - mx);
                if (j->kind == 0) y[i] = e;
                sum += e;
            }
            if (j->kind == 0) {
                float inv = (float)(1.0 / sum);
                for (int64_t i = 0; i < len; i++) y[i] *= inv;
            } else {
                float ls = (float)log(sum);
                for (int64_t i = 0; i < len; i++) y[i] = x[i] - mx - ls;
            }
            continue;
        }
        double mx = -INFINITY;
        int64_t arg_max = 0;
        for (int64_t i = 0; i < len; i++) {
            double v = cpu_get(j->x->data, dt, base + i * inner);
            if (v > mx) mx = v, arg_max = i;
        }
        if (j->kind == 2) {
            for (int64_t i = 0; i < len; i++) cpu_set(j->y->data, dt, base + i * inner, i == arg_max);
            continue;
        }
        double sum = 0;
        for (int64_t i = 0; i < len; i++) sum += exp(cpu_get(j->x->data, dt, base + i * inner) - mx);
        for (int64_t i = 0; i < len; i++) {
            double v = cpu_get(j->x->data, dt, base + i * inner) - mx;
            cpu_set(j->y->data, dt, base + i * inner, j->kind == 0 ? exp(v) / sum : v - log(sum));
        }
    }
}

static seam_status run_softmax(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    soft_job j = {0, x, NULL, 1, 1};
    const char *op = k->n->op_type;
    j.kind = op[0] == 'L' ? 1 : op[0] == 'H' ? 2 : 0;
    bool new_style = k->n->opset >= 13;
    int64_t axis_attr = node_attr_int(k->n, "axis", new_style ? -1 : 1);
    int32_t rank = x->rank ? x->rank : 1;
    int32_t axis = op_axis(axis_attr, rank);
    if (axis < 0) return kernel_fail(k, "axis %lld is out of range for rank %d", (long long)axis_attr, x->rank);
    j.y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!j.y) return kernel_oom(k);
    if (x->numel == 0) return SEAM_STATUS_OK;
    if (x->rank == 0) {
        j.len = 1;
    } else if (new_style) {
        j.len = x->dims[axis];
        j.inner = cpu_span(x->dims, axis + 1, x->rank);
    } else {
        j.len = cpu_span(x->dims, axis, x->rank);
    }
    int64_t rows = x->numel / j.len;
    seam_parallel_for(k->pool, rows, 64, soft_rows, &j);
    return SEAM_STATUS_OK;
}

/* Identity, and Dropout at inference: a copy (the mask is all true). */
static seam_status run_identity(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    if (x->dtype == SEAM_DTYPE_STRING) return kernel_fail(k, "string tensors are not supported");
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    if (x->nbytes) memcpy(y->data, x->data, x->nbytes);
    if (kernel_has_out(k, 1)) {
        seam_tensor *m = kernel_out(k, 1, SEAM_DTYPE_BOOL, x->rank, x->dims);
        if (!m) return kernel_oom(k);
        memset(m->data, 1, (size_t)m->numel);
    }
    return SEAM_STATUS_OK;
}

/* Dropout: at inference (no training_mode, or false) a copy with an
 * all-true mask. In training mode each element is kept with probability
 * 1 - ratio and scaled by 1 / (1 - ratio); the mask comes from a
 * xorshift generator seeded by `seed` (0 when absent), so runs repeat, but
 * the stream matches no other runtime's. */
static seam_status run_dropout(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *tr = kernel_in(k, 1), *tm = kernel_in(k, 2);
    if (!x) return kernel_fail(k, "needs an input");
    bool training = tm && tm->numel == 1 && ((const uint8_t *)tm->data)[0];
    double ratio = k->n->opset >= 12 ? (tr && tr->numel == 1 ? cpu_get(tr->data, tr->dtype, 0) : 0.5)
                                     : node_attr_float(k->n, "ratio", 0.5f);
    if (!training || ratio == 0) return run_identity(k);
    if (!(ratio > 0 && ratio < 1)) return kernel_fail(k, "ratio %g must be in [0, 1)", ratio);
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    seam_tensor *m = kernel_has_out(k, 1) ? kernel_out(k, 1, SEAM_DTYPE_BOOL, x->rank, x->dims) : NULL;
    if (!y || (kernel_has_out(k, 1) && !m)) return kernel_oom(k);
    uint64_t st = 0x9e3779b97f4a7c15ull ^ (uint64_t)node_attr_int(k->n, "seed", 0);
    double scale = 1 / (1 - ratio);
    for (int64_t i = 0; i < x->numel; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        bool keep = (double)(st >> 11) * (1.0 / 9007199254740992.0) >= ratio;
        cpu_set(y->data, y->dtype, i, keep ? cpu_get(x->data, x->dtype, i) * scale : 0);
        if (m) ((uint8_t *)m->data)[i] = keep;
    }
    return SEAM_STATUS_OK;
}

/* NegativeLogLikelihoodLoss(input [N, C, d...], target [N, d...], weight [C])
 * and SoftmaxCrossEntropyLoss(scores, labels, weights), which is NLL over
 * log_softmax(scores) along axis 1. Ignored targets weigh 0; "mean" divides
 * by the total weight of the targets not ignored. */
static seam_status run_loss(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *t = kernel_in(k, 1), *w = kernel_in(k, 2);
    bool sce = k->n->op_type[0] == 'S';
    if (!x || !t || x->rank < 2 || t->rank != x->rank - 1 || !cpu_is_int(t->dtype))
        return kernel_fail(k, "needs input [N, C, ...] and integer target [N, ...]");
    if (x->dims[0] != t->dims[0]) return kernel_fail(k, "input and target disagree on N");
    for (int32_t d = 2; d < x->rank; d++)
        if (x->dims[d] != t->dims[d - 1]) return kernel_fail(k, "input and target disagree on dim %d", d);
    int64_t C = x->dims[1], N = x->dims[0], D = cpu_span(x->dims, 2, x->rank);
    if (w && (w->rank != 1 || w->dims[0] != C)) return kernel_fail(k, "weight must be [C]");
    /* "none", "sum" or (any other value, as inference reads it) "mean" */
    char red = node_attr_is(k->n, "reduction", "none") ? 'n' : node_attr_is(k->n, "reduction", "sum") ? 's' : 'm';
    const ir_attr *ia = node_attr(k->n, "ignore_index");
    bool has_ignore = ia && ia->kind == IR_ATTR_INT;
    int64_t ignore = has_ignore ? ia->i : 0;
    /* log-probabilities: the input itself, or log_softmax over C */
    double *lp = kernel_scratch(k, sizeof(double) * (size_t)(x->numel + t->numel + 1));
    if (!lp) return kernel_oom(k);
    double *per = lp + x->numel;
    for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++) {
            int64_t base = n * C * D + d;
            if (!sce) {
                for (int64_t c = 0; c < C; c++) lp[base + c * D] = cpu_get(x->data, x->dtype, base + c * D);
                continue;
            }
            double mx = -INFINITY, sum = 0;
            for (int64_t c = 0; c < C; c++) mx = fmax(mx, cpu_get(x->data, x->dtype, base + c * D));
            for (int64_t c = 0; c < C; c++) sum += exp(cpu_get(x->data, x->dtype, base + c * D) - mx);
            for (int64_t c = 0; c < C; c++) lp[base + c * D] = cpu_get(x->data, x->dtype, base + c * D) - mx - log(sum);
        }
    double total = 0, wsum = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++) {
            int64_t ti = n * D + d, cls = cpu_get_i64(t->data, t->dtype, ti);
            if (has_ignore && cls == ignore) {
                per[ti] = 0;
                continue;
            }
            if (cls < 0 || cls >= C) return kernel_fail(k, "target %lld is out of range [0, %lld)", (long long)cls, (long long)C);
            double wt = w ? cpu_get(w->data, w->dtype, cls) : 1;
            per[ti] = -lp[n * C * D + cls * D + d] * wt;
            total += per[ti];
            wsum += wt;
        }
    seam_tensor *y = red == 'n' ? kernel_out(k, 0, x->dtype, t->rank, t->dims) : kernel_out(k, 0, x->dtype, 0, NULL);
    if (!y) return kernel_oom(k);
    if (red == 'n') {
        for (int64_t i = 0; i < t->numel; i++) cpu_set(y->data, y->dtype, i, per[i]);
    } else {
        cpu_set(y->data, y->dtype, 0, red == 's' ? total : wsum != 0 ? total / wsum : 0);
    }
    if (sce && kernel_has_out(k, 1)) {
        seam_tensor *l = kernel_out(k, 1, x->dtype, x->rank, x->dims);
        if (!l) return kernel_oom(k);
        for (int64_t i = 0; i < x->numel; i++) cpu_set(l->data, l->dtype, i, lp[i]);
    }
    return SEAM_STATUS_OK;
}

#define ACT {run_act, check_float_input}
#define ACTN {run_act, check_numeric_input}
#define SOFT {run_softmax, check_float_input}

const seam_cpu_binding seam_cpu_activation[] = {
    {"", "Relu", 1, ACTN}, {"", "LeakyRelu", 1, ACTN}, {"", "Sigmoid", 1, ACT}, {"", "HardSigmoid", 1, ACT},
    {"", "HardSwish", 14, ACT}, {"", "Tanh", 1, ACT}, {"", "Elu", 1, ACT}, {"", "Selu", 1, ACT},
    {"", "Celu", 12, ACT}, {"", "ThresholdedRelu", 10, ACT}, {"", "Softplus", 1, ACT}, {"", "Softsign", 1, ACT},
    {"", "Gelu", 20, ACT}, {"", "Mish", 18, ACT}, {"", "Shrink", 9, ACTN},
    {"", "PRelu", 1, {run_prelu, check_numeric_input}}, {"", "Clip", 1, {run_clip, check_numeric_input}},
    {"", "Softmax", 1, SOFT}, {"", "LogSoftmax", 1, SOFT}, {"", "Hardmax", 1, SOFT},
    {"", "NegativeLogLikelihoodLoss", 12, {run_loss, check_float_input}},
    {"", "SoftmaxCrossEntropyLoss", 12, {run_loss, check_float_input}}, {"", "Dropout", 1, {run_dropout, check_float_input}},
};
const size_t seam_cpu_activation_count = sizeof(seam_cpu_activation) / sizeof(seam_cpu_activation[0]);
