/* CPU kernels: LSTM, GRU and RNN, per the ONNX equations.
 *
 * Computed in float32 (float16 and float64 are converted at the edges): the
 * input projection X W^T for every step and direction is computed up
 * front (the packed GEMM on a W packed once per session, or sgemm in
 * column blocks over the pool); the biases are added in the step. The steps of
 * all directions then run as one parallel region (seam_parallel_steps),
 * each thread owning blocks of hidden units for every step, on R packed
 * once per session (run_step); the gates of the default activations on
 * vectorized functions, the others element by element. GRU without
 * linear_before_reset, whose R_h product needs the whole reset gate
 * first, adds H R^T with an sgemm per step instead.
 * Gate orders are ONNX's: LSTM i, o, f, c; GRU z, r, h. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "backends/cpu/cpu.h"
#include "backends/cpu/gemm.h"
#include "core/arena.h"
#include "core/pool.h"

/* ---- activation functions ---- */

/* The functions an activations list may name (compared without case, as
 * onnxruntime does) and whether each takes alpha / beta from the
 * activation_alpha / activation_beta lists. act_by_name gives the kind and
 * the defaults: those of the ONNX op of the same name. */
static const struct {
    const char *name;
    bool takes_a, takes_b;
} rnn_acts[] = {
    {"Sigmoid", false, false}, {"Tanh", false, false}, {"Relu", false, false}, {"HardSigmoid", true, true},
    {"LeakyRelu", true, false}, {"ThresholdedRelu", true, false}, {"ScaledTanh", true, true},
    {"Affine", true, true}, {"Elu", true, false}, {"Softsign", false, false}, {"Softplus", false, false},
};

static float apply(const act_params *a, float x) {
    switch (a->kind) {
    case ACT_SIGMOID: return x >= 0 ? 1 / (1 + expf(-x)) : expf(x) / (1 + expf(x));
    case ACT_TANH: return tanhf(x);
    case ACT_RELU: return x > 0 ? x : 0;
    case ACT_HARD_SIGMOID: return fmaxf(0, fminf(1, a->alpha * x + a->beta));
    case ACT_LEAKY_RELU: return x >= 0 ? x : a->alpha * x;
    case ACT_THRESHOLDED_RELU: return x > a->alpha ? x : 0;
    case ACT_SCALED_TANH: return a->alpha * tanhf(a->beta * x);
    case ACT_AFFINE: return a->alpha * x + a->beta;
    case ACT_ELU: return x >= 0 ? x : a->alpha * (expf(x) - 1);
    case ACT_SOFTSIGN: return x / (1 + fabsf(x));
    case ACT_SOFTPLUS: return x > 20 ? x : log1pf(expf(x)); /* exp would overflow; log1p(e^x) == x there */
    default: break; /* not in rnn_acts */
    }
    return x;
}

/* Reads the activations attribute into out[n_per_dir * dirs]: the defaults
 * when it is absent; a list for one direction serves both. Like
 * onnxruntime, the alpha and beta lists are consumed in order by only the
 * functions that take them. Returns false, naming the function in *bad, on
 * an unknown name. */
static bool read_acts(const ir_node *n, int32_t n_per_dir, int32_t dirs, act_params *out, const char **bad,
                      size_t *bad_len) {
    const ir_attr *a = node_attr(n, "activations");
    const float *al = NULL, *be = NULL;
    int32_t n_al = node_attr_floats(n, "activation_alpha", &al), n_be = node_attr_floats(n, "activation_beta", &be);
    int32_t total = n_per_dir * dirs, na = 0, nb = 0;
    bool is_rnn = strcmp(n->op_type, "RNN") == 0;
    if (!a || a->kind != IR_ATTR_STRINGS || a->n == 0) {
        for (int32_t i = 0; i < total; i++) /* LSTM f, g, h = Sigmoid, Tanh, Tanh; GRU f, g; RNN Tanh */
            out[i] = act_by_name(is_rnn || i % n_per_dir != 0 ? "Tanh" : "Sigmoid");
        return true;
    }
    for (int32_t i = 0; i < a->n; i++) {
        const ir_bytes *s = &a->strings[i];
        size_t q = 0, count = sizeof(rnn_acts) / sizeof(rnn_acts[0]);
        while (q < count && !(strlen(rnn_acts[q].name) == s->len &&
                              strncasecmp(rnn_acts[q].name, (const char *)s->data, s->len) == 0))
            q++;
        if (q == count) {
            *bad = (const char *)s->data;
            *bad_len = s->len;
            return false;
        }
        act_params v = act_by_name(rnn_acts[q].name);
        if (rnn_acts[q].takes_a && na < n_al) v.alpha = al[na++];
        if (rnn_acts[q].takes_b && nb < n_be) v.beta = be[nb++];
        if (i < total) out[i] = v;
    }
    for (int32_t i = a->n; i < total; i++) out[i] = out[i % a->n];
    return true;
}

/* ---- the recurrence ---- */

/* 1 forward, 2 reverse, 3 bidirectional; 0 for an unknown direction. */
static int direction(const ir_node *n) {
    if (!node_attr(n, "direction")) return 1;
    if (node_attr_is(n, "direction", "forward")) return 1;
    if (node_attr_is(n, "direction", "reverse")) return 2;
    if (node_attr_is(n, "direction", "bidirectional")) return 3;
    return 0;
}

/* a * b <= INT_MAX: every size here is also a BLAS int. */
static bool fits(int64_t a, int64_t b) { return a == 0 || b <= INT_MAX / a; }

static float *widen(const seam_tensor *t) {
    if (!t) return NULL;
    float *p = malloc(sizeof(float) * (size_t)(t->numel + 1));
    if (!p) return NULL;
    if (t->dtype == SEAM_DTYPE_FLOAT32 && t->numel > 0) memcpy(p, t->data, sizeof(float) * (size_t)t->numel);
    else
        for (int64_t i = 0; i < t->numel; i++) p[i] = (float)cpu_get(t->data, t->dtype, i);
    return p;
}

static inline float clipped(float v, float clip) { return clip > 0 ? fmaxf(-clip, fminf(clip, v)) : v; }

/* C = A B^T for row-major A [m, k] and B [n, k]. */
static void gemm_nt(int64_t m, int64_t n, int64_t kk, const float *a, const float *b, float *c) {
    if (m == 0 || n == 0) return;
    if (kk == 0) {
        memset(c, 0, sizeof(float) * (size_t)(m * n));
        return;
    }
    if (m == 1) { /* one row (a step at batch 1): a matrix-vector product */
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)kk, 1.0f, b, (int)kk, a, 1, 0.0f, c, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)kk, 1.0f, a, (int)kk, b, (int)kk, 0.0f, c,
                (int)n);
}

/* Hidden units per block of the packed R and of a step's work. */
#define UNITS 16
typedef float units_v __attribute__((vector_size(UNITS * sizeof(float))));

/* R packed for the step: per direction and block of UNITS hidden units,
 * [H][G][UNITS] (the block's rows of every gate, transposed; a last partial
 * block padded with zeros). A block's product with H is then H
 * row-times-scalar updates over one contiguous stream, and blocks split
 * over threads without a reduction across them. GRU without
 * linear_before_reset (split) multiplies R_h by (r . H), known only once
 * the z and r gates are: its R is packed as the z and r gates,
 * [D][nblk][H][2][UNITS], followed by R_h, [D][nblk][H][1][UNITS]. Made
 * once in check() when R is an initializer, else for the run. */
static float *pack_r(const seam_tensor *r, int32_t G, bool split) {
    int64_t D = r->dims[0], H = r->dims[2], nblk = (H + UNITS - 1) / UNITS;
    /* on 64 bytes: a block's rows are whole cache lines (a load that
     * straddles two lines halved the step's bandwidth from L2) */
    size_t bytes = sizeof(float) * (size_t)(D * nblk * H * G * UNITS + 16);
    float *rp = seam_alloc_resident(bytes);
    if (!rp) return NULL;
    memset(rp, 0, bytes);
    bool f32 = r->dtype == SEAM_DTYPE_FLOAT32;
    for (int64_t d = 0; d < D; d++)
        for (int32_t g = 0; g < G; g++) {
            /* the pack gate g is in: its start, gate count and index there */
            bool rh = split && g == 2;
            float *base = rh ? rp + D * nblk * H * 2 * UNITS : rp;
            int32_t ng = split ? (rh ? 1 : 2) : G, gi = rh ? 0 : g;
            for (int64_t u = 0; u < H; u++)
                for (int64_t kk = 0; kk < H; kk++) {
                    int64_t at = ((d * G + g) * H + u) * H + kk;
                    base[(((d * nblk + u / UNITS) * H + kk) * ng + gi) * UNITS + u % UNITS] =
                        f32 ? ((const float *)r->data)[at] : (float)cpu_get(r->data, r->dtype, at);
                }
        }
    return rp;
}

/* What check_recurrent prepares from initializers: the packed R, and W
 * packed for the packed GEMM (per direction, W_d^T as [In, GH]). */
typedef struct rnn_state {
    int64_t dims[3];
    float *rp;
    const void *from; /* the data of R it was packed from */
    int64_t wdims[3];
    cpu_gemm_wpacked *wp[2];
    const void *wfrom; /* the data of W */
} rnn_state;

static void free_rnn_state(void *p) {
    rnn_state *s = p;
    if (s) {
        free(s->rp);
        cpu_gemm_wpacked_free(s->wp[0]);
        cpu_gemm_wpacked_free(s->wp[1]);
    }
    free(s);
}

/* ---- the step: H R^T, the gates and the new H (and C) ----
 *
 * A layer's steps run as one region on the pool (seam_parallel_steps):
 * each thread owns a fixed range of (direction, block of UNITS hidden
 * units) for all steps, so its slice of the packed R stays in its core's
 * L2, and the threads meet at a barrier after each step. H is double
 * buffered (step s reads buffer s % 2 and writes the other), so one
 * barrier per step is enough; C and the output Y are written only by the
 * owner of the units. GRU without linear_before_reset takes two region
 * steps per step: the z and r gates and r . H, then (r . H) R_h^T and the
 * new H. Each unit's result is summed in the same order (over H, in
 * order) whatever thread, range or pairing computes it, so the thread
 * count never changes the bits. */
typedef struct steps_job {
    const float *rp;          /* packed R, every direction (pack_r) */
    const float *xp;          /* X W^T: [D][S][Bn][GH] */
    const float *bsum;        /* W_b + R_b per direction [D][GH] (GRU's R_bh out, see bias), or NULL */
    const float *bias;        /* B [D][2 GH] or NULL (GRU: R_bh, in the reset gate) */
    const float *P;           /* LSTM peepholes [D][3H] or NULL */
    float *hb;                /* H: [2][D][Bn][H] */
    float *cb;                /* LSTM C: [D][Bn][H] */
    float *zb, *rhb;          /* split GRU: z and r . H, [D][Bn][H] each */
    seam_tensor *y;           /* or NULL */
    const int64_t *len;       /* sequence_lens, or NULL */
    const act_params *acts;   /* n_act per direction */
    float clip;
    bool bf, plain, input_forget, split; /* split: GRU without linear_before_reset */
    int32_t G, n_act, dir; /* dir: 1 forward, 2 reverse, 3 bidirectional */
    int64_t S, Bn, H, GH, D, nblk;
} steps_job;

#if defined(__x86_64__) && defined(__GNUC__)
#define SIMD_TARGET __attribute__((target("avx512f,fma")))
#define HAVE_AVX512_PATH 1

/* acc_a[G][UNITS] = sum over k of h_a[k] ra[k][G][UNITS], and the same for
 * b when rb is set (two independent streams fill the FMA pipes). */
SIMD_TARGET static void accum_avx512(const float *ra, const float *ha, const float *rb, const float *hbr, int64_t H,
                                     int32_t G, float *acc_a, float *acc_b) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int64_t st = G * UNITS;
    if (rb && G == 4) {
        for (int64_t k = 0; k < H; k++, ra += st, rb += st) {
            __m512 x = _mm512_set1_ps(ha[k]), y = _mm512_set1_ps(hbr[k]);
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(ra), x, a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 16), x, a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 32), x, a2);
            a3 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 48), x, a3);
            b0 = _mm512_fmadd_ps(_mm512_loadu_ps(rb), y, b0);
            b1 = _mm512_fmadd_ps(_mm512_loadu_ps(rb + 16), y, b1);
            b2 = _mm512_fmadd_ps(_mm512_loadu_ps(rb + 32), y, b2);
            b3 = _mm512_fmadd_ps(_mm512_loadu_ps(rb + 48), y, b3);
        }
    } else if (rb && G == 3) {
        for (int64_t k = 0; k < H; k++, ra += st, rb += st) {
            __m512 x = _mm512_set1_ps(ha[k]), y = _mm512_set1_ps(hbr[k]);
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(ra), x, a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 16), x, a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 32), x, a2);
            b0 = _mm512_fmadd_ps(_mm512_loadu_ps(rb), y, b0);
            b1 = _mm512_fmadd_ps(_mm512_loadu_ps(rb + 16), y, b1);
            b2 = _mm512_fmadd_ps(_mm512_loadu_ps(rb + 32), y, b2);
        }
    } else if (G == 4) {
        for (int64_t k = 0; k < H; k++, ra += st) {
            __m512 x = _mm512_set1_ps(ha[k]);
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(ra), x, a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 16), x, a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 32), x, a2);
            a3 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 48), x, a3);
        }
    } else if (G == 3) {
        for (int64_t k = 0; k < H; k++, ra += st) {
            __m512 x = _mm512_set1_ps(ha[k]);
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(ra), x, a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 16), x, a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 32), x, a2);
        }
    } else if (rb && G == 2) {
        for (int64_t k = 0; k < H; k++, ra += st, rb += st) {
            __m512 x = _mm512_set1_ps(ha[k]), y = _mm512_set1_ps(hbr[k]);
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(ra), x, a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 16), x, a1);
            b0 = _mm512_fmadd_ps(_mm512_loadu_ps(rb), y, b0);
            b1 = _mm512_fmadd_ps(_mm512_loadu_ps(rb + 16), y, b1);
        }
    } else if (G == 2) {
        for (int64_t k = 0; k < H; k++, ra += st) {
            __m512 x = _mm512_set1_ps(ha[k]);
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(ra), x, a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(ra + 16), x, a1);
        }
    } else if (rb) { /* one gate: RNN, GRU's R_h */
        for (int64_t k = 0; k < H; k++, ra += st, rb += st) {
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(ra), _mm512_set1_ps(ha[k]), a0);
            b0 = _mm512_fmadd_ps(_mm512_loadu_ps(rb), _mm512_set1_ps(hbr[k]), b0);
        }
    } else {
        for (int64_t k = 0; k < H; k++, ra += st) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(ra), _mm512_set1_ps(ha[k]), a0);
    }
    __m512 av[4] = {a0, a1, a2, a3}, bv[4] = {b0, b1, b2, b3};
    for (int32_t g = 0; g < G; g++) {
        _mm512_storeu_ps(acc_a + g * UNITS, av[g]);
        if (rb) _mm512_storeu_ps(acc_b + g * UNITS, bv[g]);
    }
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_PATH 1
/* The same on AVX2 and FMA: each unit the same chain of FMAs over k in
 * order as accum_avx512 (the same bits), a gate's 16 units in two ymm,
 * the two streams one after the other (8 chains at a time for G = 4). */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) void
accum_avx2_g(const float *r, const float *h, int64_t H, const int G, float *acc) {
    __m256 c[4][2];
    for (int g = 0; g < G; g++) c[g][0] = c[g][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < H; k++, r += G * UNITS) {
        __m256 x = _mm256_broadcast_ss(h + k);
        for (int g = 0; g < G; g++) {
            c[g][0] = _mm256_fmadd_ps(_mm256_loadu_ps(r + g * UNITS), x, c[g][0]);
            c[g][1] = _mm256_fmadd_ps(_mm256_loadu_ps(r + g * UNITS + 8), x, c[g][1]);
        }
    }
    for (int g = 0; g < G; g++) {
        _mm256_storeu_ps(acc + g * UNITS, c[g][0]);
        _mm256_storeu_ps(acc + g * UNITS + 8, c[g][1]);
    }
}

__attribute__((target("avx2,fma"))) static void accum_avx2(const float *ra, const float *ha, const float *rb,
                                                          const float *hbr, int64_t H, int32_t G, float *acc_a,
                                                          float *acc_b) {
    for (int pass = 0; pass < (rb ? 2 : 1); pass++) {
        const float *r = pass ? rb : ra, *h = pass ? hbr : ha;
        float *acc = pass ? acc_b : acc_a;
        switch (G) {
        case 1: accum_avx2_g(r, h, H, 1, acc); break;
        case 2: accum_avx2_g(r, h, H, 2, acc); break;
        case 3: accum_avx2_g(r, h, H, 3, acc); break;
        default: accum_avx2_g(r, h, H, 4, acc); break;
        }
    }
}

/* SEAM_CPU_RNN=avx2 in the environment takes this path on a CPU with
 * AVX-512 too, SEAM_CPU_RNN=plain the plain loop on any (for their tests). */
static bool rnn_env_is(const char *v) {
    const char *e = getenv("SEAM_CPU_RNN");
    return e && strcmp(e, v) == 0;
}

static bool use_avx2(void) {
    static int have = -1; /* (a benign race: every thread computes the same) */
    int v = __atomic_load_n(&have, __ATOMIC_RELAXED);
    if (v < 0) {
        v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !rnn_env_is("plain");
        __atomic_store_n(&have, v, __ATOMIC_RELAXED);
    }
    return v;
}
#endif

/* The same without AVX-512 (UNITS-wide vectors of the compiler's own;
 * products and sums rounded separately), built for AVX2 too (CPU_HOT: two
 * ymm per vector rather than four xmm; no FMA, so the same bits). */
static void accum_plain(const float *ra, const float *ha, const float *rb, const float *hbr, int64_t H, int32_t G,
                        float *acc_a, float *acc_b) {
    for (int32_t pass = 0; pass < (rb ? 2 : 1); pass++) {
        const float *r = pass ? rb : ra, *h = pass ? hbr : ha;
        units_v a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, v;
        for (int64_t k = 0; k < H; k++, r += G * UNITS) {
            float x = h[k];
            memcpy(&v, r, sizeof(v));
            a0 += v * x;
            if (G > 1) {
                memcpy(&v, r + UNITS, sizeof(v));
                a1 += v * x;
            }
            if (G > 2) {
                memcpy(&v, r + 2 * UNITS, sizeof(v));
                a2 += v * x;
            }
            if (G == 4) {
                memcpy(&v, r + 3 * UNITS, sizeof(v));
                a3 += v * x;
            }
        }
        float *acc = pass ? acc_b : acc_a;
        units_v av[4] = {a0, a1, a2, a3};
        memcpy(acc, av, sizeof(float) * UNITS * (size_t)G);
    }
}

static bool use_avx512(void) {
#ifdef HAVE_AVX512_PATH
    static int have = -1; /* (a benign race: every thread computes the same) */
    int v = __atomic_load_n(&have, __ATOMIC_RELAXED);
    if (v < 0) {
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma") && !rnn_env_is("plain") &&
            !rnn_env_is("avx2");
        __atomic_store_n(&have, v, __ATOMIC_RELAXED);
    }
    return v;
#else
    return false;
#endif
}

#ifdef HAVE_AVX512_PATH
/* cpu_sigmoid_f32's and cpu_tanh_f32's arithmetic (activation.c) on 16
 * lanes, operation for operation (no fused multiply-adds: those are
 * compiled without contraction), for a whole block of LSTM units at once:
 * the element-by-element gates with their function calls took a third of
 * the step. */
SIMD_TARGET static inline __m512 v_exp_negabs(__m512 x) {
    __m512i ab = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF));
    ab = _mm512_min_epu32(ab, _mm512_set1_epi32(0x42AE0000)); /* 87.0f */
    __m512 c = _mm512_castsi512_ps(_mm512_or_si512(ab, _mm512_set1_epi32((int32_t)0x80000000u)));
    __m512 t = _mm512_add_ps(_mm512_mul_ps(c, _mm512_set1_ps(1.44269504f)), _mm512_set1_ps(12582912.0f));
    __m512 n = _mm512_sub_ps(t, _mm512_set1_ps(12582912.0f));
    __m512 r = _mm512_sub_ps(_mm512_sub_ps(c, _mm512_mul_ps(n, _mm512_set1_ps(0.693145752f))),
                             _mm512_mul_ps(n, _mm512_set1_ps(1.42860677e-6f)));
    static const float coef[7] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f};
    __m512 p = _mm512_set1_ps(coef[0]);
    for (int q = 1; q < 7; q++) p = _mm512_add_ps(_mm512_set1_ps(coef[q]), _mm512_mul_ps(r, p));
    p = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_mul_ps(r, p));
    __m512i bits = _mm512_slli_epi32(
        _mm512_add_epi32(_mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(0x4B400000)), _mm512_set1_epi32(127)),
        23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
}

SIMD_TARGET static inline __m512 v_sigmoid(__m512 v) {
    __m512 e = v_exp_negabs(v), one = _mm512_set1_ps(1.0f);
    __mmask16 pos = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ);
    __m512 y = _mm512_div_ps(_mm512_mask_mov_ps(e, pos, one), _mm512_add_ps(one, e));
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v); /* NaN stays NaN */
}

SIMD_TARGET static inline __m512 v_tanh(__m512 v) {
    __m512i sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int32_t)0x80000000u));
    __m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(v)));
    __m512 one = _mm512_set1_ps(1.0f), e = v_exp_negabs(_mm512_mul_ps(_mm512_set1_ps(2.0f), a));
    __m512 x2 = _mm512_mul_ps(v, v);
    __m512 big = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
    __m512 sm = _mm512_add_ps(_mm512_set1_ps(2.0f / 15), _mm512_mul_ps(x2, _mm512_set1_ps(-17.0f / 315)));
    sm = _mm512_add_ps(_mm512_set1_ps(-1.0f / 3), _mm512_mul_ps(x2, sm));
    sm = _mm512_mul_ps(a, _mm512_add_ps(one, _mm512_mul_ps(x2, sm)));
    __m512 y = _mm512_mask_mov_ps(big, _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.1f), _CMP_LT_OQ), sm);
    y = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sign));
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
}

/* A whole block of LSTM units with the default activations: gates
 * i, o, f, c from X W^T (xw, gates H apart), the biases (bs, or NULL) and
 * H R^T (acc, [4][UNITS]); C updated in place, the new H into nh. */
SIMD_TARGET static void lstm_gates_avx512(const float *xw, int64_t H, const float *bs, const float *acc, float *c,
                                          float *nh) {
    __m512 g[4];
    for (int q = 0; q < 4; q++) {
        __m512 x = _mm512_loadu_ps(xw + q * H);
        if (bs) x = _mm512_add_ps(x, _mm512_loadu_ps(bs + q * H));
        g[q] = _mm512_add_ps(x, _mm512_loadu_ps(acc + q * UNITS));
    }
    __m512 i = v_sigmoid(g[0]), o = v_sigmoid(g[1]), f = v_sigmoid(g[2]), ct = v_tanh(g[3]);
    __m512 cn = _mm512_add_ps(_mm512_mul_ps(f, _mm512_loadu_ps(c)), _mm512_mul_ps(i, ct));
    _mm512_storeu_ps(c, cn);
    _mm512_storeu_ps(nh, _mm512_mul_ps(o, v_tanh(cn)));
}
#endif

/* One unit block's gates for batch row bb at time t, from acc = its H R^T
 * ([G][UNITS]): the new H (and C), and Y. */
typedef struct step_item {
    int64_t d, u0, bb;
} step_item;

static void finish(const steps_job *j, int64_t s, int32_t phase, const step_item *it, float *acc) {
    int64_t H = j->H, GH = j->GH, Bn = j->Bn, S = j->S, d = it->d, u0 = it->u0, bb = it->bb;
    int64_t nb = H - u0 < UNITS ? H - u0 : UNITS;
    bool backward = j->dir == 2 || (j->dir == 3 && d == 1);
    int64_t t = backward ? S - 1 - s : s;
    const float *xw = j->xp + ((d * S + t) * Bn + bb) * GH + u0;
    const float *bs = j->bsum ? j->bsum + d * GH + u0 : NULL;
    const float *h = j->hb + (((s & 1) * j->D + d) * Bn + bb) * H + u0;
    float *nh = j->hb + ((((s + 1) & 1) * j->D + d) * Bn + bb) * H + u0;
    float *c = j->cb ? j->cb + (d * Bn + bb) * H + u0 : NULL;
    const act_params *fa = &j->acts[d * j->n_act];
    float clip = j->clip;
#ifdef HAVE_AVX512_PATH
    if (j->plain && j->G == 4 && nb == UNITS && use_avx512()) {
        lstm_gates_avx512(xw, H, bs, acc, c, nh);
        goto out;
    }
#endif
    /* the gates' X W^T + biases, [G][UNITS] */
    float gxl[4 * UNITS];
    for (int32_t g = 0; g < j->G; g++)
        for (int64_t i = 0; i < nb; i++) gxl[g * UNITS + i] = bs ? xw[g * H + i] + bs[g * H + i] : xw[g * H + i];
    const float *gx = gxl;
    if (j->split) {
        float *z = j->zb + (d * Bn + bb) * H + u0, *rh = j->rhb + (d * Bn + bb) * H + u0;
        if (phase == 0) { /* acc: the z and r gates' H R^T */
            for (int64_t i = 0; i < nb; i++) {
                z[i] = apply(&fa[0], clipped(gx[i] + acc[i], clip));
                rh[i] = apply(&fa[0], clipped(gx[UNITS + i] + acc[UNITS + i], clip)) * h[i];
            }
            return;
        }
        for (int64_t i = 0; i < nb; i++) { /* acc: (r . H) R_h^T; R_bh is in gx */
            float ht = apply(&fa[1], clipped(gx[2 * UNITS + i] + acc[i], clip));
            nh[i] = (1 - z[i]) * ht + z[i] * h[i];
        }
    } else if (j->plain) {
        float gates[5 * UNITS];
        if (nb < UNITS) memset(gates, 0, sizeof(gates)); /* the lanes past nb go through sigmoid too */
        if (j->G == 4) { /* i, o, f, c */
            float *tc = gates + 4 * UNITS;
            for (int32_t g = 0; g < 4; g++)
                for (int64_t i = 0; i < nb; i++) gates[g * UNITS + i] = gx[g * UNITS + i] + acc[g * UNITS + i];
            cpu_sigmoid_f32(gates, gates, 3 * UNITS);
            cpu_tanh_f32(gates + 3 * UNITS, gates + 3 * UNITS, nb);
            for (int64_t i = 0; i < nb; i++) c[i] = tc[i] = gates[2 * UNITS + i] * c[i] + gates[i] * gates[3 * UNITS + i];
            cpu_tanh_f32(tc, tc, nb);
            for (int64_t i = 0; i < nb; i++) nh[i] = gates[UNITS + i] * tc[i];
        } else if (j->G == 3) { /* z, r, h with linear_before_reset */
            const float *rbh = j->bias ? j->bias + d * 2 * GH + GH + 2 * H + u0 : NULL;
            float *ht = gates + 2 * UNITS;
            for (int32_t g = 0; g < 2; g++)
                for (int64_t i = 0; i < nb; i++) gates[g * UNITS + i] = gx[g * UNITS + i] + acc[g * UNITS + i];
            cpu_sigmoid_f32(gates, gates, 2 * UNITS);
            for (int64_t i = 0; i < nb; i++)
                ht[i] = gx[2 * UNITS + i] + gates[UNITS + i] * (acc[2 * UNITS + i] + (rbh ? rbh[i] : 0));
            cpu_tanh_f32(ht, ht, nb);
            for (int64_t i = 0; i < nb; i++) nh[i] = (1 - gates[i]) * ht[i] + gates[i] * h[i];
        } else {
            for (int64_t i = 0; i < nb; i++) gates[i] = gx[i] + acc[i];
            cpu_tanh_f32(gates, nh, nb);
        }
    } else if (j->G == 4) {
        const float *Pd = j->P ? j->P + d * 3 * H + u0 : NULL;
        for (int64_t i = 0; i < nb; i++) {
            float cprev = c[i];
            float ip = gx[i] + acc[i] + (Pd ? Pd[i] * cprev : 0);
            float fp = gx[2 * UNITS + i] + acc[2 * UNITS + i] + (Pd ? Pd[2 * H + i] * cprev : 0);
            float it_ = apply(&fa[0], clipped(ip, clip));
            float ft = j->input_forget ? 1 - it_ : apply(&fa[0], clipped(fp, clip));
            float ct = apply(&fa[1], clipped(gx[3 * UNITS + i] + acc[3 * UNITS + i], clip));
            float cn = ft * cprev + it_ * ct;
            float op_ = gx[UNITS + i] + acc[UNITS + i] + (Pd ? Pd[H + i] * cn : 0);
            c[i] = cn;
            nh[i] = apply(&fa[0], clipped(op_, clip)) * apply(&fa[2], cn);
        }
    } else if (j->G == 3) {
        const float *rbh = j->bias ? j->bias + d * 2 * GH + GH + 2 * H + u0 : NULL;
        for (int64_t i = 0; i < nb; i++) {
            float zt = apply(&fa[0], clipped(gx[i] + acc[i], clip));
            float rt = apply(&fa[0], clipped(gx[UNITS + i] + acc[UNITS + i], clip));
            float ht = apply(&fa[1], clipped(gx[2 * UNITS + i] + rt * (acc[2 * UNITS + i] + (rbh ? rbh[i] : 0)), clip));
            nh[i] = (1 - zt) * ht + zt * h[i];
        }
    } else {
        for (int64_t i = 0; i < nb; i++) nh[i] = apply(&fa[0], clipped(gx[i] + acc[i], clip));
    }
#ifdef HAVE_AVX512_PATH
out:
#endif
    if (j->y) {
        int64_t at = (j->bf ? (bb * S + t) * j->D + d : (t * j->D + d) * Bn + bb) * H + u0;
        if (j->y->dtype == SEAM_DTYPE_FLOAT32) memcpy((float *)j->y->data + at, nh, sizeof(float) * (size_t)nb);
        else
            for (int64_t i = 0; i < nb; i++) cpu_st(j->y->data, j->y->dtype, at + i, nh[i]);
    }
}

/* H R^T and the gates for n (1 or 2) items of step s (its phase, for
 * the split GRU). */
static void run_items(const steps_job *j, int64_t s, int32_t phase, const step_item *it, int n) {
    float acc[2][4 * UNITS];
    const float *r[2] = {NULL, NULL}, *h[2] = {NULL, NULL};
    /* the gates of the pack read, and where the pack starts (pack_r) */
    int32_t G = j->split ? (phase ? 1 : 2) : j->G;
    const float *pack = j->split && phase ? j->rp + j->D * j->nblk * j->H * 2 * UNITS : j->rp;
    for (int i = 0; i < n; i++) {
        /* block u0 / UNITS of direction d: H * G * UNITS floats each */
        r[i] = pack + (it[i].d * j->nblk * UNITS + it[i].u0) * j->H * G;
        int64_t row = it[i].d * j->Bn + it[i].bb; /* the whole row of H, or of r . H */
        h[i] = j->split && phase ? j->rhb + row * j->H : j->hb + ((s & 1) * j->D * j->Bn + row) * j->H;
    }
#ifdef HAVE_AVX512_PATH
    if (use_avx512()) accum_avx512(r[0], h[0], r[1], h[1], j->H, G, acc[0], acc[1]);
    else
#endif
#ifdef HAVE_AVX2_PATH
        if (use_avx2()) accum_avx2(r[0], h[0], r[1], h[1], j->H, G, acc[0], acc[1]);
    else
#endif
        accum_plain(r[0], h[0], r[1], h[1], j->H, G, acc[0], acc[1]);
    for (int i = 0; i < n; i++) finish(j, s, phase, &it[i], acc[i]);
}

/* Region step rs for the (direction, unit block) pairs [q0, q1): every
 * batch row, two (block, row) items at a time. */
static void run_step(void *arg, int64_t rs, int64_t q0, int64_t q1) {
    const steps_job *j = arg;
    int64_t H = j->H, Bn = j->Bn, s = j->split ? rs >> 1 : rs;
    int32_t phase = j->split ? (int32_t)(rs & 1) : 1;
    step_item pend[2];
    int np = 0;
    for (int64_t q = q0; q < q1; q++) {
        int64_t d = q / j->nblk, u0 = (q % j->nblk) * UNITS, nb = H - u0 < UNITS ? H - u0 : UNITS;
        bool backward = j->dir == 2 || (j->dir == 3 && d == 1);
        int64_t t = backward ? j->S - 1 - s : s;
        for (int64_t bb = 0; bb < Bn; bb++) {
            if (j->len && t >= j->len[bb]) { /* its sequence has ended: H (and C) stay, Y stays 0 */
                if (!phase) continue;
                const float *h = j->hb + (((s & 1) * j->D + d) * Bn + bb) * H + u0;
                float *nh = j->hb + ((((s + 1) & 1) * j->D + d) * Bn + bb) * H + u0;
                memcpy(nh, h, sizeof(float) * (size_t)nb);
                continue;
            }
            pend[np++] = (step_item){d, u0, bb};
            if (np == 2) {
                run_items(j, s, phase, pend, 2);
                np = 0;
            }
        }
    }
    if (np) run_items(j, s, phase, pend, 1);
}

/* X W^T for every step, in column blocks of PROJ_COLS over the pool: each
 * block is one sgemm whatever thread runs it. */
#define PROJ_COLS 128
typedef struct proj_job {
    int64_t m, n, kk;
    const float *a, *b;
    float *c;
} proj_job;

static void proj_blocks(void *arg, int64_t begin, int64_t end) {
    const proj_job *j = arg;
    for (int64_t q = begin; q < end; q++) {
        int64_t c0 = q * PROJ_COLS, nc = j->n - c0 < PROJ_COLS ? j->n - c0 : PROJ_COLS;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->m, (int)nc, (int)j->kk, 1.0f, j->a, (int)j->kk,
                    j->b + c0 * j->kk, (int)j->kk, 0.0f, j->c + c0, (int)j->n);
    }
}

static seam_status run_recurrent(seam_kernel *k) {
    cpu_blas_single_thread(); /* sgemm is called from seam's pool */
    const char *op = k->n->op_type;
    int32_t G = op[0] == 'L' ? 4 : op[0] == 'G' ? 3 : 1; /* gates */
    int32_t n_act = op[0] == 'L' ? 3 : op[0] == 'G' ? 2 : 1;
    const seam_tensor *x = kernel_in(k, 0), *w = kernel_in(k, 1), *r = kernel_in(k, 2), *b = kernel_in(k, 3);
    const seam_tensor *sl = kernel_in(k, 4), *h0 = kernel_in(k, 5), *c0 = G == 4 ? kernel_in(k, 6) : NULL;
    const seam_tensor *p = G == 4 ? kernel_in(k, 7) : NULL;
    if (!x || !w || !r || x->rank != 3 || w->rank != 3 || r->rank != 3)
        return kernel_fail(k, "needs X, W and R of rank 3");
    int64_t layout = node_attr_int(k->n, "layout", 0);
    int dir = direction(k->n);
    if (layout != 0 && layout != 1) return kernel_fail(k, "layout must be 0 or 1, not %lld", (long long)layout);
    if (!dir) return kernel_fail(k, "direction must be forward, reverse or bidirectional");
    bool bf = layout == 1, bidi = dir == 3;
    int64_t S = x->dims[bf ? 1 : 0], Bn = x->dims[bf ? 0 : 1], In = x->dims[2];
    int64_t D = w->dims[0], H = r->dims[2];
    /* empty tensors can carry any dims: bound them before multiplying */
    if (S > INT_MAX || Bn > INT_MAX || In > INT_MAX || H > INT_MAX / 4 || !fits(S, Bn) || !fits(S * Bn, In) ||
        !fits(S * Bn, G * H) || !fits(Bn, G * H))
        return kernel_fail(k, "sequence, batch, input or hidden size is too large");
    int64_t GH = G * H;
    if (D != (bidi ? 2 : 1) || w->dims[1] != GH || w->dims[2] != In || r->dims[0] != D || r->dims[1] != GH)
        return kernel_fail(k, "W must be [%d, %lld, %lld] and R [%d, %lld, %lld]", bidi ? 2 : 1, (long long)GH,
                           (long long)In, bidi ? 2 : 1, (long long)GH, (long long)H);
    int64_t hs = node_attr_int(k->n, "hidden_size", H);
    if (hs != H) return kernel_fail(k, "hidden_size %lld disagrees with R", (long long)hs);
    if (b && b->numel != D * 2 * GH) return kernel_fail(k, "B must be [%lld, %lld]", (long long)D, (long long)(2 * GH));
    if ((h0 && h0->numel != D * Bn * H) || (c0 && c0->numel != D * Bn * H))
        return kernel_fail(k, "initial_h and initial_c must have %lld elements", (long long)(D * Bn * H));
    if (p && p->numel != D * 3 * H) return kernel_fail(k, "P must be [%lld, %lld]", (long long)D, (long long)(3 * H));
    if (sl && sl->numel != Bn) return kernel_fail(k, "sequence_lens must have one entry per batch");
    for (int64_t bb = 0; sl && bb < Bn; bb++) {
        int64_t len = cpu_get_i64(sl->data, sl->dtype, bb);
        if (len < 0 || len > S)
            return kernel_fail(k, "sequence length %lld is out of range [0, %lld]", (long long)len, (long long)S);
    }
    act_params acts[6];
    const char *bad = NULL;
    size_t bad_len = 0;
    if (!read_acts(k->n, n_act, (int32_t)D, acts, &bad, &bad_len))
        return kernel_fail(k, "unknown activation '%.*s'", (int)bad_len, bad);
    float clip = node_attr_float(k->n, "clip", 0);
    bool input_forget = node_attr_int(k->n, "input_forget", 0) != 0;
    bool lbr = node_attr_int(k->n, "linear_before_reset", 0) != 0;
    /* GRU without linear_before_reset multiplies R_h by (r . H), not H:
     * two region steps per step */
    bool split = G == 3 && !lbr;
    /* the default activations, no clip, no peepholes, no input_forget
     * (what torch exports): the gates on vectorized functions */
    bool plain = !p && clip <= 0 && !input_forget;
    for (int32_t q = 0; plain && q < (int32_t)D * n_act; q++)
        plain = acts[q].kind == (q % n_act == 0 && G > 1 ? ACT_SIGMOID : ACT_TANH);

    int64_t ydims[4], hdims[3];
    if (bf) ydims[0] = Bn, ydims[1] = S, ydims[2] = D, ydims[3] = H, hdims[0] = Bn, hdims[1] = D, hdims[2] = H;
    else ydims[0] = S, ydims[1] = D, ydims[2] = Bn, ydims[3] = H, hdims[0] = D, hdims[1] = Bn, hdims[2] = H;
    seam_tensor *y = kernel_has_out(k, 0) ? kernel_out(k, 0, x->dtype, 4, ydims) : NULL;
    seam_tensor *yh = kernel_has_out(k, 1) ? kernel_out(k, 1, x->dtype, 3, hdims) : NULL;
    seam_tensor *yc = G == 4 && kernel_has_out(k, 2) ? kernel_out(k, 2, x->dtype, 3, hdims) : NULL;
    if ((kernel_has_out(k, 0) && !y) || (kernel_has_out(k, 1) && !yh) || (G == 4 && kernel_has_out(k, 2) && !yc))
        return kernel_oom(k);
    if (y) memset(y->data, 0, y->nbytes); /* steps past a sequence's end stay 0 */

    /* R packed in check when it is that initializer, else here */
    const rnn_state *rs = k->state;
    bool wpacked = rs && rs->wp[0] && rs->wfrom == w->data && rs->wdims[0] == w->dims[0] &&
                   rs->wdims[1] == w->dims[1] && rs->wdims[2] == w->dims[2];
    bool packed = rs && rs->rp && rs->from == r->data && rs->dims[0] == r->dims[0] && rs->dims[1] == r->dims[1] &&
                  rs->dims[2] == r->dims[2];
    float *rtc = !packed ? pack_r(r, G, split) : NULL;
    const float *rpk = packed ? rs->rp : rtc;
    /* float32 W is read in place */
    float *Wc = w->dtype != SEAM_DTYPE_FLOAT32 ? widen(w) : NULL;
    const float *W = Wc ? Wc : w->data;
    int64_t *lens = sl ? malloc(sizeof(int64_t) * (size_t)(Bn + 1)) : NULL;
    for (int64_t bb = 0; lens && bb < Bn; bb++) lens[bb] = cpu_get_i64(sl->data, sl->dtype, bb);
    float *X = widen(x), *Bv = widen(b), *P = widen(p), *H0 = widen(h0), *C0 = widen(c0);
    size_t bh = sizeof(float) * (size_t)(Bn * H + 1);
    float *xt = malloc(sizeof(float) * (size_t)(S * Bn * In + 1));  /* X as [S, B, In] */
    float *xp = malloc(sizeof(float) * (size_t)(D * S * Bn * GH + 1)); /* X W^T, every step */
    float *bsum = Bv ? malloc(sizeof(float) * (size_t)(D * GH + 1)) : NULL;
    float *hb = malloc(2 * (size_t)D * bh), *cb = malloc((size_t)D * bh);           /* H (twice), C */
    float *zb = split ? malloc((size_t)D * bh) : NULL, *rhb = split ? malloc((size_t)D * bh) : NULL; /* z, r . H */
    float *gscr = wpacked ? kernel_scratch(k, sizeof(float) * (cpu_gemm_xw_scratch(S * Bn, GH,
                                                                                    seam_pool_threads(k->pool)) + 16))
                          : NULL;
    seam_status st = SEAM_STATUS_OK;
    if ((wpacked && !gscr) || !X || (w->dtype != SEAM_DTYPE_FLOAT32 && !Wc) || !rpk || (sl && !lens) || (b && !Bv) || (p && !P) ||
        (h0 && !H0) || (c0 && !C0) || (Bv && !bsum) || !xt || !xp || !hb || !cb || (split && (!zb || !rhb))) {
        st = kernel_oom(k);
        goto done;
    }
    for (int64_t s = 0; s < S; s++)
        for (int64_t bb = 0; bb < Bn; bb++)
            memcpy(xt + (s * Bn + bb) * In, X + (bf ? bb * S + s : s * Bn + bb) * In, sizeof(float) * (size_t)In);

    /* X W^T for every step, per direction, and both biases summed (added
     * to it in the step); GRU's R_bh with linear_before_reset stays out
     * (the reset gate multiplies it) */
    for (int64_t d = 0; d < D; d++) {
        const float *Wd = W + d * GH * In;
        const float *Wb = Bv ? Bv + d * 2 * GH : NULL, *Rb = Bv ? Bv + d * 2 * GH + GH : NULL;
        float *xpd = xp + d * S * Bn * GH;
        if (wpacked && In > 0) {
            cpu_gemm_x xv = {xt, In, false, 1.0f};
            cpu_gemm_xw_run(k->pool, &xv, S * Bn, rs->wp[d], xpd, GH, false, NULL, gscr);
        } else if (S * Bn > 1 && GH > PROJ_COLS && In > 0) {
            proj_job pj = {S * Bn, GH, In, xt, Wd, xpd};
            seam_parallel_for(k->pool, (GH + PROJ_COLS - 1) / PROJ_COLS, 1, proj_blocks, &pj);
        } else {
            gemm_nt(S * Bn, GH, In, xt, Wd, xpd);
        }
        for (int64_t q = 0; Bv && q < GH; q++) bsum[d * GH + q] = Wb[q] + (G == 3 && lbr && q >= 2 * H ? 0 : Rb[q]);
    }

    for (int64_t d = 0; d < D; d++)
        for (int64_t bb = 0; bb < Bn; bb++)
            for (int64_t j = 0; j < H; j++) {
                int64_t at = bf ? (bb * D + d) * H + j : (d * Bn + bb) * H + j;
                hb[(d * Bn + bb) * H + j] = H0 ? H0[at] : 0;
                cb[(d * Bn + bb) * H + j] = C0 ? C0[at] : 0;
            }
    steps_job sj = {.rp = rpk, .xp = xp, .bsum = bsum, .bias = Bv, .P = P, .hb = hb, .cb = G == 4 ? cb : NULL, .zb = zb,
                    .rhb = rhb, .y = y, .len = lens, .acts = acts, .clip = clip, .bf = bf, .plain = plain,
                    .input_forget = input_forget, .split = split, .G = G, .n_act = n_act, .dir = dir, .S = S,
                    .Bn = Bn, .H = H, .GH = GH, .D = D, .nblk = (H + UNITS - 1) / UNITS};
    int64_t n_steps = split ? 2 * S : S;
    /* a step of fewer multiply-adds than this runs on one thread: the
     * barrier would cost more than the split saves */
    if (D * Bn * G * H * H < 16384) {
        for (int64_t s = 0; Bn > 0 && s < n_steps; s++) run_step(&sj, s, 0, D * sj.nblk);
    } else {
        seam_parallel_steps(k->pool, n_steps, D * sj.nblk, run_step, &sj);
    }
    const float *hfin = hb + (S & 1) * D * Bn * H; /* the buffer step S - 1 wrote (or H0) */
    for (int64_t d = 0; d < D; d++)
        for (int64_t bb = 0; bb < Bn; bb++)
            for (int64_t j = 0; j < H; j++) {
                int64_t at = bf ? (bb * D + d) * H + j : (d * Bn + bb) * H + j;
                if (yh) cpu_st(yh->data, yh->dtype, at, hfin[(d * Bn + bb) * H + j]);
                if (yc) cpu_st(yc->data, yc->dtype, at, cb[(d * Bn + bb) * H + j]);
            }
done:
    free(rtc), free(Wc), free(lens);
    free(X), free(Bv), free(P), free(H0), free(C0);
    free(hb), free(cb), free(zb), free(rhb);
    free(xt), free(xp), free(bsum);
    return st;
}

static seam_status check_recurrent(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && dt != SEAM_DTYPE_FLOAT32 && dt != SEAM_DTYPE_FLOAT64 && dt != SEAM_DTYPE_FLOAT16)
        return check_refuse(c, "%s on %s is not supported", c->n->op_type, seam_dtype_name(dt));
    if (!direction(c->n)) return check_refuse(c, "direction must be forward, reverse or bidirectional");
    int64_t layout = node_attr_int(c->n, "layout", 0);
    if (layout != 0 && layout != 1) return check_refuse(c, "layout %lld is not supported", (long long)layout);
    act_params acts[6];
    const char *bad = NULL;
    size_t bad_len = 0;
    int32_t n_act = c->n->op_type[0] == 'L' ? 3 : c->n->op_type[0] == 'G' ? 2 : 1;
    if (!read_acts(c->n, n_act, 2, acts, &bad, &bad_len))
        return check_refuse(c, "activation '%.*s' is not supported", (int)bad_len, bad);
    /* R and W from initializers: packed once here */
    const ir_tensor *ri = cpu_constant_input(c, 2), *wi = cpu_constant_input(c, 1);
    int32_t G = n_act == 3 ? 4 : n_act == 2 ? 3 : 1;
    bool split = G == 3 && node_attr_int(c->n, "linear_before_reset", 0) == 0;
    bool r_ok = ri && ri->rank == 3 && ri->numel > 0 && ri->dims[1] == G * ri->dims[2] && cpu_is_float(ri->dtype) &&
                ri->data;
    /* float32 W [D, GH, In] for the packed GEMM (X is float32 or widened) */
    bool w_ok = wi && wi->rank == 3 && wi->numel > 0 && wi->dtype == SEAM_DTYPE_FLOAT32 && wi->data &&
                (wi->dims[0] == 1 || wi->dims[0] == 2) && wi->dims[1] % G == 0 && wi->dims[1] < INT_MAX &&
                wi->dims[2] < INT_MAX && (size_t)wi->numel * sizeof(float) == wi->nbytes && cpu_gemm_available();
    if (!r_ok && !w_ok) return SEAM_STATUS_OK;
    rnn_state *s = calloc(1, sizeof(*s));
    bool oom = !s;
    if (s && r_ok) {
        seam_tensor rt = {.dtype = ri->dtype, .rank = 3, .numel = ri->numel, .data = ri->data};
        for (int32_t d = 0; d < 3; d++) rt.dims[d] = ri->dims[d];
        oom = !(s->rp = pack_r(&rt, G, split));
        memcpy(s->dims, rt.dims, sizeof(s->dims));
        s->from = ri->data;
    }
    for (int64_t d = 0; s && !oom && w_ok && d < wi->dims[0]; d++) {
        int64_t GH = wi->dims[1], In = wi->dims[2];
        oom = !(s->wp[d] = cpu_gemm_wpack((const float *)wi->data + d * GH * In, In, GH, true));
    }
    if (oom) {
        free_rnn_state(s);
        snprintf(c->reason, c->reason_size, "out of memory");
        return SEAM_STATUS_OUT_OF_MEMORY;
    }
    if (w_ok) {
        memcpy(s->wdims, wi->dims, sizeof(s->wdims));
        s->wfrom = wi->data;
    }
    *c->state = s;
    *c->free_state = free_rnn_state;
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_rnn[] = {
    {"", "LSTM", 1, {run_recurrent, check_recurrent}},
    {"", "GRU", 1, {run_recurrent, check_recurrent}},
    {"", "RNN", 1, {run_recurrent, check_recurrent}},
};
const size_t seam_cpu_rnn_count = sizeof(seam_cpu_rnn) / sizeof(seam_cpu_rnn[0]);
