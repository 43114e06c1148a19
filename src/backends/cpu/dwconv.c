/* The depthwise 2-D convolution (dwconv.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/dwconv.h"
#include "core/pool.h"

/* -std=c11 turns off contracting a * b + c into one FMA; the sums here
 * are the time, so the clones with FMA (below) use it */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DW_512 1
#define DW_512_TARGET __attribute__((target("avx512f,fma")))
#define DW_256_TARGET __attribute__((target("avx2,fma")))
#else
#define DW_512 0
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DW_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DW_HOT
#endif

/* Depthwise 2-D convolution (one input channel per group): a direct loop
 * per output channel. One sgemm per channel with M = 1 would be all
 * overhead.
 *
 * Each channel is first split into sh * sw zero-padded phase planes: phase
 * (r, c) holds the padded input's rows r, r + sh, ... and columns c, c + sw,
 * ... (with stride 1, the one padded plane). Output (oh, ow) then reads tap
 * (a, b) at phase ((a dh) % sh, (b dw) % sw), row oh + (a dh) / sh, column
 * ow + (b dw) / sw: every tap is a stride-1 read of contiguous memory, so
 * each plane is one flat loop over
 *     ext[i] = sum over taps (a, b) of k[a][b] * Q[phase(a, b)][i + off(a, b)]
 * (output (oh, ow) is ext[oh * PW + ow]; the PW - OW extra columns per row
 * are computed and dropped), which vectorizes even for 7x7 outputs. The
 * padding is written once per task and stays zero (it depends on the
 * geometry only); each channel writes just the interior. The bias and the
 * fused activation go over each output row while it is in L1. Every
 * channel is computed the same way whatever task runs it, so the result
 * does not depend on the thread count. On AVX-512 and AVX2 machines the
 * common geometries read the same phase planes with the "rows" below
 * instead of the flat loop. */
/* One channel's outputs from its phase planes (the rows below):
 * (planes, plane size, plane width, OH, OW, kernel, bias, y, post) */
typedef void (*dw_rows_fn)(const float *, int64_t, int64_t, int64_t, int64_t, const float *, float, float *,
                           const act_params *);

typedef struct dw_job {
    const float *x, *w, *bias; /* bias [M], (optional) */
    float *y;
    float *buf;                /* per task: the phase planes (+ slack), then ext */
    const conv_geom *win;
    const act_params *post;
    int64_t C, M, Mg, total, per_task, per_buf;
    int64_t PH, PW, slack;     /* one phase plane's rows and columns; columns read past the last plane */
    bool vec;                  /* small planes: DW_LANES channels at once (dw_lanes) */
    int64_t units;             /* channels (N * M), or blocks of DW_LANES of them */
    dw_rows_fn rows;           /* the rows for this geometry (AVX-512 or AVX2), or NULL */
    bool rows512;              /* they are AVX-512's (dw_phases' stride-2 split goes with them) */
} dw_job;

/* Small planes (7x7, 14x14: the late layers of mobilenet_v3, mnasnet,
 * efficientnet) go DW_LANES channels at once: the planes interleaved
 * channel-minor, so every tap is one vector load, one weight vector per
 * tap, and no wasted columns, copies or calls per channel (which cost
 * more than the arithmetic on a 7x7 plane). Sixteen lanes: one AVX-512
 * register (two AVX2 ones); the interleave in and out is done as two
 * 8x8 transposes, one per half. */
#define DW_LANES 16
#define DW_VEC_MAX_OUT 256 /* output pixels per channel */
/* where the rows are AVX2's: 14x14 planes of mobilenet_v2 (3x3, strides 1
 * and 2) took 67-80 us a conv of 384 channels on the rows against 118-154
 * on the lanes; 7x7 ones 144 on the lanes, 164 on the rows (2-core AMD
 * EPYC, AVX2) */
#define DW_VEC_MAX_OUT_AVX2 100
typedef float dw_vl __attribute__((vector_size(DW_LANES * sizeof(float))));
typedef int32_t dw_vli __attribute__((vector_size(DW_LANES * sizeof(int32_t))));
typedef float dw_v8 __attribute__((vector_size(8 * sizeof(float))));
typedef int32_t dw_v8i __attribute__((vector_size(8 * sizeof(int32_t))));

/* Two vectors' lanes picked by constant indices (0-7 from a, 8-15 from b):
 * GCC's and clang's spellings of one shuffle. */
#if defined(__clang__)
#define DW_SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define DW_SHUF(a, b, ...) __builtin_shuffle(a, b, (dw_v8i){__VA_ARGS__})
#endif

/* r[i][j] <-> r[j][i] (unpack, shuffle, then swap the 128-bit halves) */
static inline __attribute__((always_inline)) void dw_transpose8(dw_v8 r[8]) {
    dw_v8 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = DW_SHUF(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = DW_SHUF(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = DW_SHUF(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 1] = DW_SHUF(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[i + 2] = DW_SHUF(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 3] = DW_SHUF(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = DW_SHUF(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[i + 4] = DW_SHUF(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* v + bias, then the post-op, on DW_LANES lanes (in place: a vector passed
 * by value would change the baseline clone's ABI); selects as masks, NaN
 * stays NaN as in cpu_post_apply. dw_postl_kind: the kinds it does. */
static bool dw_postl_kind(act_kind k) {
    return k == ACT_NONE || k == ACT_RELU || k == ACT_CLIP || k == ACT_LEAKY_RELU || k == ACT_HARD_SIGMOID ||
           k == ACT_HARD_SWISH;
}

#define DW_SEL(m, a, b) ((dw_vl)(((dw_vli)(a) & (m)) | ((dw_vli)(b) & ~(m)))) /* m ? a : b per lane */

static inline __attribute__((always_inline)) void dw_postl(dw_vl *p, const dw_vl *bias, const act_params *op) {
    const dw_vl zero = {0}, one = zero + 1;
    dw_vl v = *p + *bias, t;
    switch (op->kind) {
    case ACT_RELU: v = DW_SEL(v < zero, zero, v); break;
    case ACT_CLIP:
        v = DW_SEL(v < op->lo, zero + op->lo, v);
        v = DW_SEL(v > op->hi, zero + op->hi, v);
        break;
    case ACT_LEAKY_RELU: v = DW_SEL(v >= zero, v, op->alpha * v); break;
    case ACT_HARD_SIGMOID:
        v = op->alpha * v + op->beta;
        v = DW_SEL(v < zero, zero, v);
        v = DW_SEL(v > one, one, v);
        break;
    case ACT_HARD_SWISH:
        t = v * (1.0f / 6) + 0.5f;
        t = DW_SEL(t < zero, zero, t);
        v = v * DW_SEL(t > one, one, t);
        break;
    default: break;
    }
    *p = v;
}

/* Phase plane and buffer sizes for w; false when the planes would be too
 * large for a buffer per task (the caller then takes the im2col path). */
static bool dw_geometry(const conv_geom *w, dw_job *j, int64_t vec_max) {
    if (w->kernel[0] > 64 || w->kernel[1] > 64 || w->dil[0] > 64 || w->dil[1] > 64) return false;
    if (w->stride[0] > 64 || w->stride[1] > 64) return false;
    int64_t sh = w->stride[0], sw = w->stride[1], OH = w->out[0], OW = w->out[1], KH = w->kernel[0], KW = w->kernel[1];
    int64_t n;
    /* the whole padded plane the output reaches */
    int64_t FH = (OH - 1) * sh + (KH - 1) * w->dil[0] + 1, FW = (OW - 1) * sw + (KW - 1) * w->dil[1] + 1;
    j->vec = OH * OW <= vec_max && FH * FW <= 4096;
    if (j->vec) { /* the interleaved plane, the weights, the outputs */
        j->PH = FH, j->PW = FW, j->slack = 0;
        n = (FH * FW + KH * KW + OH * OW) * DW_LANES;
    } else {
        j->PH = OH + (KH - 1) * w->dil[0] / sh;
        j->PW = OW + (KW - 1) * w->dil[1] / sw;
        /* columns read past the last plane: the widest tap's (dw_one) or
         * a 16-column load's (the rows) */
        j->slack = (KW - 1) * w->dil[1] / sw;
        if (j->slack < 16) j->slack = 16;
        if (j->PH > (1 << 20) || j->PW > (1 << 20) || j->PH * j->PW > (1 << 21) || sh * sw * j->PH * j->PW > (1 << 22))
            return false;
        n = sh * sw * j->PH * j->PW + j->slack + OH * j->PW;
    }
    j->per_buf = (n + 15) & ~(int64_t)15; /* each task's buffer 64-byte aligned */
    return true;
}

/* dw_lanes' sums: S[oh OW + ow] = sum over taps of Kv[tap] * Pv[pixel],
 * blocks of 8 (or 4) output columns, one accumulator each; the last block
 * of a row overlaps the one before rather than take a slower tail (it
 * recomputes the same values). Called with constant sizes for the common
 * geometries, so the tap loops unroll into fixed offsets. */
static inline __attribute__((always_inline)) void dw_lane_sums(const dw_vl *Pv, const dw_vl *Kv, dw_vl *S, int64_t OH,
                                                               int64_t OW, int64_t FW, const int64_t KH,
                                                               const int64_t KW, const int64_t sh, const int64_t sw,
                                                               const int64_t dh, const int64_t dw, bool wide) {
    /* (8 accumulators of 16 lanes are 16 AVX2 registers, all there are:
     * they spilled, and a 5x5 conv of 672 channels at 10 x 10 ran at 7
     * GMAC/s; without AVX-512, blocks of 4) */
    int64_t blk = OW >= 8 && wide ? 8 : OW >= 4 ? 4 : 1;
    for (int64_t oh = 0; oh < OH; oh++) {
        const dw_vl *row = Pv + oh * sh * FW;
        dw_vl *srow = S + oh * OW;
        for (int64_t o0 = 0; o0 < OW; o0 += blk) {
            int64_t ow = o0 + blk <= OW ? o0 : OW - blk;
            if (blk == 8) {
                dw_vl a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
                for (int64_t a = 0; a < KH; a++) {
                    const dw_vl *p = row + a * dh * FW + ow * sw, *kr = Kv + a * KW;
                    for (int64_t b = 0; b < KW; b++) {
                        dw_vl kv = kr[b];
                        const dw_vl *q = p + b * dw;
                        a0 += kv * q[0], a1 += kv * q[sw], a2 += kv * q[2 * sw], a3 += kv * q[3 * sw];
                        a4 += kv * q[4 * sw], a5 += kv * q[5 * sw], a6 += kv * q[6 * sw], a7 += kv * q[7 * sw];
                    }
                }
                srow[ow] = a0, srow[ow + 1] = a1, srow[ow + 2] = a2, srow[ow + 3] = a3;
                srow[ow + 4] = a4, srow[ow + 5] = a5, srow[ow + 6] = a6, srow[ow + 7] = a7;
            } else if (blk == 4) {
                dw_vl a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
                for (int64_t a = 0; a < KH; a++) {
                    const dw_vl *p = row + a * dh * FW + ow * sw, *kr = Kv + a * KW;
                    for (int64_t b = 0; b < KW; b++) {
                        dw_vl kv = kr[b];
                        const dw_vl *q = p + b * dw;
                        a0 += kv * q[0], a1 += kv * q[sw], a2 += kv * q[2 * sw], a3 += kv * q[3 * sw];
                    }
                }
                srow[ow] = a0, srow[ow + 1] = a1, srow[ow + 2] = a2, srow[ow + 3] = a3;
            } else {
                dw_vl a0 = {0};
                for (int64_t a = 0; a < KH; a++) {
                    const dw_vl *p = row + a * dh * FW + ow * sw, *kr = Kv + a * KW;
                    for (int64_t b = 0; b < KW; b++) a0 += kr[b] * p[b * dw];
                }
                srow[ow] = a0;
            }
        }
    }
}

/* DW_LANES channels from nm0 on (fewer at the end) into the task's buffer
 * B: one vector per padded-plane pixel, lane l holding channel nm0 + l;
 * every output is the same sum in the same order in any lane. */
DW_HOT static void dw_lanes(const dw_job *j, float *B, int64_t nm0) {
    const conv_geom *w = j->win;
    int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1], KH = w->kernel[0], KW = w->kernel[1];
    int64_t sh = w->stride[0], sw = w->stride[1], dh = w->dil[0], dw = w->dil[1], FH = j->PH, FW = j->PW;
    int64_t pt = w->pad_lo[0], pl = w->pad_lo[1], T = KH * KW;
    int64_t lanes = j->total - nm0 < DW_LANES ? j->total - nm0 : DW_LANES;
    dw_vl *Pv = (dw_vl *)B, *Kv = Pv + FH * FW, *S = Kv + T;
    int64_t cols = W < FW - pl ? W : FW - pl, rows = H < FH - pt ? H : FH - pt;
    const float *xs[DW_LANES];
    for (int64_t l = 0; l < lanes; l++) {
        int64_t nm = nm0 + l, n = nm / j->M, m = nm % j->M, c = m / j->Mg;
        const float *k = j->w + m * T;
        xs[l] = j->x + (n * j->C + c) * H * W;
        for (int64_t t = 0; t < T; t++) Kv[t][l] = k[t];
    }
    /* the channels' planes interleaved, 8 pixels at once by a transpose
     * (each plane is contiguous: pixels in row-major order whatever the
     * row length; the last 8 overlap the ones before: the same values
     * again), each pixel then placed in the padded plane */
    int64_t HW = H * W;
    if (lanes == DW_LANES && HW >= 8 && cols > 0)
        for (int64_t p0 = 0; p0 < HW; p0 += 8) {
            int64_t p = p0 + 8 <= HW ? p0 : HW - 8, h = p / W, c = p % W, at[8];
            for (int i = 0; i < 8; i++) { /* where pixel p + i goes, or -1 (outside what the taps read) */
                at[i] = h < rows && c < cols ? (h + pt) * FW + c + pl : -1;
                if (++c == W) c = 0, h++;
            }
            for (int half = 0; half < 2; half++) {
                dw_v8 r[8];
                for (int l = 0; l < 8; l++) memcpy(&r[l], xs[8 * half + l] + p, sizeof(dw_v8));
                dw_transpose8(r);
                for (int i = 0; i < 8; i++)
                    if (at[i] >= 0) memcpy((float *)&Pv[at[i]] + 8 * half, &r[i], sizeof(dw_v8));
            }
        }
    else
        for (int64_t h = 0; h < rows && cols > 0; h++)
            for (int64_t l = 0; l < lanes; l++)
                for (int64_t q = 0; q < cols; q++) Pv[(h + pt) * FW + pl + q][l] = xs[l][h * W + q];
    bool wide = __builtin_cpu_supports("avx512f");
    if (KH == 3 && KW == 3 && dh == 1 && dw == 1 && sh == sw && sh <= 2)
        if (sh == 1) dw_lane_sums(Pv, Kv, S, OH, OW, FW, 3, 3, 1, 1, 1, 1, wide);
        else dw_lane_sums(Pv, Kv, S, OH, OW, FW, 3, 3, 2, 2, 1, 1, wide);
    else if (KH == 5 && KW == 5 && dh == 1 && dw == 1 && sh == sw && sh <= 2)
        if (sh == 1) dw_lane_sums(Pv, Kv, S, OH, OW, FW, 5, 5, 1, 1, 1, 1, wide);
        else dw_lane_sums(Pv, Kv, S, OH, OW, FW, 5, 5, 2, 2, 1, 1, wide);
    else dw_lane_sums(Pv, Kv, S, OH, OW, FW, KH, KW, sh, sw, dh, dw, wide);
    /* the bias and the activation on the lanes (cpu_post_apply's kinds but
     * SiLU), then out of the lanes, 8 pixels at once by a transpose */
    int64_t O = OH * OW;
    float *y0 = j->y + nm0 * O;
    bool in_lanes = dw_postl_kind(j->post->kind);
    if (in_lanes) {
        dw_vl bv = {0};
        for (int64_t l = 0; l < lanes && j->bias; l++) bv[l] = j->bias[(nm0 + l) % j->M];
        for (int64_t o = 0; o < O; o++) dw_postl(&S[o], &bv, j->post);
    }
    bool whole = lanes == DW_LANES && O >= 8;
    if (whole)
        for (int64_t o0 = 0; o0 < O; o0 += 8) {
            int64_t o = o0 + 8 <= O ? o0 : O - 8;
            for (int half = 0; half < 2; half++) {
                dw_v8 r[8];
                for (int i = 0; i < 8; i++) memcpy(&r[i], (const float *)&S[o + i] + 8 * half, sizeof(dw_v8));
                dw_transpose8(r);
                for (int l = 0; l < 8; l++) memcpy(y0 + (8 * half + l) * O + o, &r[l], sizeof(dw_v8));
            }
        }
    for (int64_t l = 0; l < lanes; l++) {
        float *y = y0 + l * O;
        if (!whole)
            for (int64_t o = 0; o < O; o++) y[o] = S[o][l];
        if (!in_lanes) cpu_post_apply(j->post, y, O, j->bias ? j->bias[(nm0 + l) % j->M] : 0.0f);
    }
}

#if DW_512
/* The lanes [lo, hi) of 16 (clamped) as a store mask. */
static inline __mmask16 dw_mask_range(int64_t lo, int64_t hi) {
    lo = lo < 0 ? 0 : lo, hi = hi > 16 ? 16 : hi;
    return hi <= lo ? 0 : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* One input row of W columns into the rows of both column phases of a
 * stride-2 split, read once: 32 columns at a time (masked at the row's
 * end, so no read past it) split by two permutes into the even and the
 * odd columns. Phase pc's column q is input column 2 q + base[pc]; only
 * q in [qlo[pc], qhi[pc]) is stored (masked stores, nothing else of the
 * plane is touched). */
static DW_512_TARGET void dw_split2_512(const float *src, int64_t W, float *const dst[2], const int64_t base[2],
                                        const int64_t qlo[2], const int64_t qhi[2]) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    int64_t par[2], shift[2];
    for (int pc = 0; pc < 2; pc++) par[pc] = base[pc] & 1, shift[pc] = (base[pc] - par[pc]) / 2;
    for (int64_t i = 0; 2 * i < W; i += 16) {
        __m512 a = _mm512_maskz_loadu_ps(dw_mask_range(0, W - 2 * i), src + 2 * i);
        __m512 b = _mm512_maskz_loadu_ps(dw_mask_range(0, W - 2 * i - 16), src + 2 * i + 16);
        __m512 v[2] = {_mm512_permutex2var_ps(a, ie, b), _mm512_permutex2var_ps(a, io, b)};
        for (int pc = 0; pc < 2; pc++) {
            int64_t q0 = i - shift[pc]; /* the plane column of lane 0 */
            __mmask16 m = dw_mask_range(qlo[pc] - q0, qhi[pc] - q0);
            if (m) _mm512_mask_storeu_ps(dst[pc] + q0, m, v[par[pc]]);
        }
    }
}
#endif

/* Lanes [lo, hi) of 8 (clamped) as an AVX2 mask. */
static inline __attribute__((always_inline)) DW_256_TARGET __m256i dw_mask8(int64_t lo, int64_t hi) {
    lo = lo < 0 ? 0 : lo > 8 ? 8 : lo, hi = hi < 0 ? 0 : hi > 8 ? 8 : hi;
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)hi), idx),
                            _mm256_cmpgt_epi32(idx, _mm256_set1_epi32((int32_t)lo - 1)));
}

/* dw_split2_512 on AVX2: 16 input columns at a time (masked loads at the
 * row's end), split into the even and the odd ones by a shuffle and a
 * permute, each stored into its phase's row (the lanes in range only). */
static DW_256_TARGET void dw_split2_256(const float *src, int64_t W, float *const dst[2], const int64_t base[2],
                                        const int64_t qlo[2], const int64_t qhi[2]) {
    int64_t par[2], shift[2];
    for (int pc = 0; pc < 2; pc++) par[pc] = base[pc] & 1, shift[pc] = (base[pc] - par[pc]) / 2;
    for (int64_t i = 0; 2 * i < W; i += 8) {
        bool whole = 2 * i + 16 <= W;
        __m256 a = whole ? _mm256_loadu_ps(src + 2 * i) : _mm256_maskload_ps(src + 2 * i, dw_mask8(0, W - 2 * i));
        __m256 b = whole ? _mm256_loadu_ps(src + 2 * i + 8) : _mm256_maskload_ps(src + 2 * i + 8, dw_mask8(0, W - 2 * i - 8));
        /* shuffle: [a0 a2 b0 b2 | a4 a6 b4 b6]; the permute puts the 64-bit pairs in order */
        __m256 e = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
        __m256 o = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
        __m256 v[2] = {e, o};
        for (int pc = 0; pc < 2; pc++) {
            int64_t q0 = i - shift[pc]; /* the plane column of lane 0 */
            int64_t lo = qlo[pc] - q0 > 0 ? qlo[pc] - q0 : 0, hi = qhi[pc] - q0 < 8 ? qhi[pc] - q0 : 8;
            if (lo == 0 && hi == 8) _mm256_storeu_ps(dst[pc] + q0, v[par[pc]]);
            else if (lo < hi) { /* (a masked store is slow on some CPUs: AMD's) */
                float t[8];
                _mm256_storeu_ps(t, v[par[pc]]);
                memcpy(dst[pc] + q0 + lo, t + lo, sizeof(float) * (size_t)(hi - lo));
            }
        }
    }
}

/* Channel nm's input into the interiors of the phase planes its taps read
 * (the padding around them is zero already). */
DW_HOT static void dw_phases(const dw_job *j, float *P, int64_t nm) {
    const conv_geom *w = j->win;
    int64_t H = w->in[0], W = w->in[1], KH = w->kernel[0], KW = w->kernel[1];
    int64_t sh = w->stride[0], sw = w->stride[1], dh = w->dil[0], dw = w->dil[1], PH = j->PH, PW = j->PW;
    int64_t pt = w->pad_lo[0], pl = w->pad_lo[1], PS = PH * PW;
    int64_t n = nm / j->M, m = nm % j->M, c = m / j->Mg;
    const float *x = j->x + (n * j->C + c) * H * W;
    for (int64_t pr = 0; pr < sh; pr++) {
        bool used = false;
        for (int64_t a = 0; a < KH && !used; a++) used = (a * dh) % sh == pr;
        if (!used) continue;
#if DW_512
        if (sw == 2 && j->rows) { /* (the rows imply AVX2 or AVX-512F, and 3x3 or 5x5: both column phases read) */
            int64_t base[2], qlo[2], qhi[2];
            for (int pc = 0; pc < 2; pc++) {
                base[pc] = pc - pl, qlo[pc] = base[pc] >= 0 ? 0 : (-base[pc] + 1) / 2;
                qhi[pc] = W - base[pc] > 0 ? (W - base[pc] + 1) / 2 : 0;
                if (qhi[pc] > PW) qhi[pc] = PW;
            }
            for (int64_t r = 0; r < PH; r++) {
                int64_t h = r * sh + pr - pt;
                if (h < 0 || h >= H) continue;
                float *const dst[2] = {P + (pr * 2) * PS + r * PW, P + (pr * 2 + 1) * PS + r * PW};
                if (j->rows512) dw_split2_512(x + h * W, W, dst, base, qlo, qhi);
                else dw_split2_256(x + h * W, W, dst, base, qlo, qhi);
            }
            continue;
        }
#endif
        for (int64_t pc = 0; pc < sw; pc++) {
            used = false;
            for (int64_t b = 0; b < KW && !used; b++) used = (b * dw) % sw == pc;
            if (!used) continue;
            float *Q = P + (pr * sw + pc) * PS;
            /* plane column q is input column q * sw + pc - pl: inside for q in [qlo, qhi) */
            int64_t base = pc - pl, qlo = base >= 0 ? 0 : (-base + sw - 1) / sw;
            int64_t qhi = W - base > 0 ? (W - base + sw - 1) / sw : 0;
            if (qhi > PW) qhi = PW;
            if (qlo >= qhi) continue;
            for (int64_t r = 0; r < PH; r++) {
                int64_t h = r * sh + pr - pt;
                if (h < 0 || h >= H) continue;
                const float *src = x + h * W + base;
                float *dst = Q + r * PW;
                if (sw == 1) memcpy(dst + qlo, src + qlo, sizeof(float) * (size_t)(qhi - qlo));
                else if (sw == 2)
                    for (int64_t q = qlo; q < qhi; q++) dst[q] = src[2 * q];
                else
                    for (int64_t q = qlo; q < qhi; q++) dst[q] = src[q * sw];
            }
        }
    }
}


/* AVX-512 rows (x86-64 with AVX-512F, picked at plan time): the common
 * geometries (3x3 and 5x5, strides 1 and 2 both ways, no dilation) read
 * the phase planes with 16-column loads and FMAs, DW_ROWS output rows at
 * once. Tap (a, b) of output row r reads phase plane (a % s, b % s) at row
 * r + a / s, column + b / s; every such load the rows of one block share
 * (row r, tap a and row r', tap a' with r + a / s = r' + a' / s in one
 * phase) is made once (the sizes are constants here, so the compiler
 * merges them): a 3x3 stride-1 block of four rows loads 6 input rows, not
 * 12. The bias starts the sums, the output goes straight to y (the last 16
 * columns masked), and the fused activation goes over each row while it
 * is in L1. Every output is the same sum in the same order wherever it is
 * computed, so the result does not depend on the thread count; a block of
 * the last rows overlaps the one before, storing only its new rows. */
#if DW_512
#define DW_ROWS 4

/* The post-ops in registers, each the operations cpu_post_apply does in
 * its order (the same bits; a multiply and an add are not fused): true if
 * kind is one of them. */
static bool dw_post_in_regs(const act_params *p) {
    return p && (p->kind == ACT_RELU || p->kind == ACT_CLIP || p->kind == ACT_LEAKY_RELU ||
                 p->kind == ACT_HARD_SIGMOID || p->kind == ACT_HARD_SWISH);
}

static inline __attribute__((always_inline)) DW_512_TARGET __m512 dw_clamp01(__m512 v) {
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, zero); /* v < 0 ? 0 : v (NaN stays) */
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, one, _CMP_GT_OQ), v, one);
}

static inline __attribute__((always_inline)) DW_512_TARGET __m512 dw_post512(__m512 v, const act_params *p) {
    switch (p->kind) {
    case ACT_RELU: return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v,
                                               _mm512_setzero_ps());
    case ACT_CLIP:
        v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_set1_ps(p->lo), _CMP_LT_OQ), v, _mm512_set1_ps(p->lo));
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_set1_ps(p->hi), _CMP_GT_OQ), v,
                                    _mm512_set1_ps(p->hi));
    case ACT_LEAKY_RELU:
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ),
                                    _mm512_mul_ps(_mm512_set1_ps(p->alpha), v), v);
    case ACT_HARD_SIGMOID:
        return dw_clamp01(_mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(p->alpha), v), _mm512_set1_ps(p->beta)));
    case ACT_HARD_SWISH:
        return _mm512_mul_ps(v, dw_clamp01(_mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.0f / 6)),
                                                         _mm512_set1_ps(0.5f))));
    default: return v;
    }
}

/* Output rows [oh0, OH) in blocks of R (a constant after inlining, so the
 * sums stay in registers and the loads of one block merge) */
static inline __attribute__((always_inline)) DW_512_TARGET void
dw_rows512(const float *P, int64_t PS, int64_t PW, int64_t oh0, int64_t OH, int64_t OW, const float *k, float bv,
           float *y, const act_params *post, bool fuse, const int KH, const int KW, const int S, const int R) {
    for (; oh0 < OH; oh0 += R) {
        int64_t oh = oh0 + R <= OH ? oh0 : OH - R, skip = oh0 - oh;
        for (int64_t ow = 0; ow < OW; ow += 16) {
            __mmask16 mask = OW - ow >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (OW - ow)) - 1);
            __m512 acc[DW_ROWS];
            for (int r = 0; r < R; r++) acc[r] = _mm512_set1_ps(bv);
            for (int a = 0; a < KH; a++)
                for (int b = 0; b < KW; b++) {
                    const float *q = P + ((a % S) * S + b % S) * PS + (oh + a / S) * PW + ow + b / S;
                    __m512 kv = _mm512_set1_ps(k[a * KW + b]);
                    for (int r = 0; r < R; r++) acc[r] = _mm512_fmadd_ps(kv, _mm512_loadu_ps(q + r * PW), acc[r]);
                }
            for (int r = 0; r < R; r++)
                if (r >= skip)
                    _mm512_mask_storeu_ps(y + (oh + r) * OW + ow, mask, fuse ? dw_post512(acc[r], post) : acc[r]);
        }
        if (!fuse && post && post->kind != ACT_NONE) cpu_post_apply(post, y + oh0 * OW, (oh + R - oh0) * OW, 0.0f);
    }
}

#define DW_ROWS_FN(KH, KW, S)                                                                                       \
    static DW_512_TARGET void dw_rows512_##KH##KW##S(const float *P, int64_t PS, int64_t PW, int64_t OH, int64_t OW, \
                                                    const float *k, float bv, float *y, const act_params *post) {  \
        bool fuse = dw_post_in_regs(post);                                                                          \
        if (OH >= DW_ROWS) dw_rows512(P, PS, PW, 0, OH, OW, k, bv, y, post, fuse, KH, KW, S, DW_ROWS);             \
        else dw_rows512(P, PS, PW, 0, OH, OW, k, bv, y, post, fuse, KH, KW, S, 1);                                 \
    }
DW_ROWS_FN(3, 3, 1)
DW_ROWS_FN(3, 3, 2)
DW_ROWS_FN(5, 5, 1)
DW_ROWS_FN(5, 5, 2)
#undef DW_ROWS_FN

/* The same rows on AVX2 (and FMA): 8 columns a vector, of the last ones
 * only those in the row stored (their loads read past the row into the
 * next, or into the planes' slack, and are dropped); the post-op over
 * each block's rows after (cpu_post_apply, as dw_rows512 does for the
 * kinds it does not fuse). */
static inline __attribute__((always_inline)) DW_256_TARGET void
dw_rows256(const float *P, int64_t PS, int64_t PW, int64_t OH, int64_t OW, const float *k, float bv, float *y,
           const act_params *post, const int KH, const int KW, const int S, const int R) {
    for (int64_t oh0 = 0; oh0 < OH; oh0 += R) {
        int64_t oh = oh0 + R <= OH ? oh0 : OH - R, skip = oh0 - oh;
        for (int64_t ow = 0; ow < OW; ow += 8) {
            __m256 acc[DW_ROWS];
            for (int r = 0; r < R; r++) acc[r] = _mm256_set1_ps(bv);
            for (int a = 0; a < KH; a++)
                for (int b = 0; b < KW; b++) {
                    const float *q = P + ((a % S) * S + b % S) * PS + (oh + a / S) * PW + ow + b / S;
                    __m256 kv = _mm256_set1_ps(k[a * KW + b]);
                    for (int r = 0; r < R; r++) acc[r] = _mm256_fmadd_ps(kv, _mm256_loadu_ps(q + r * PW), acc[r]);
                }
            if (OW - ow >= 8) {
                for (int r = 0; r < R; r++)
                    if (r >= skip) _mm256_storeu_ps(y + (oh + r) * OW + ow, acc[r]);
            } else { /* (a masked store is slow on some CPUs: AMD's) */
                float t[8];
                for (int r = 0; r < R; r++)
                    if (r >= skip) {
                        _mm256_storeu_ps(t, acc[r]);
                        memcpy(y + (oh + r) * OW + ow, t, sizeof(float) * (size_t)(OW - ow));
                    }
            }
        }
        if (post && post->kind != ACT_NONE) cpu_post_apply(post, y + oh0 * OW, (oh + R - oh0) * OW, 0.0f);
    }
}

#define DW_ROWS_FN(KH, KW, S)                                                                                       \
    static DW_256_TARGET void dw_rows256_##KH##KW##S(const float *P, int64_t PS, int64_t PW, int64_t OH, int64_t OW, \
                                                    const float *k, float bv, float *y, const act_params *post) {  \
        if (OH >= DW_ROWS) dw_rows256(P, PS, PW, OH, OW, k, bv, y, post, KH, KW, S, DW_ROWS);                      \
        else dw_rows256(P, PS, PW, OH, OW, k, bv, y, post, KH, KW, S, 1);                                          \
    }
DW_ROWS_FN(3, 3, 1)
DW_ROWS_FN(3, 3, 2)
DW_ROWS_FN(5, 5, 1)
DW_ROWS_FN(5, 5, 2)
#undef DW_ROWS_FN

/* The rows for geometry w, or NULL (another shape, or neither AVX-512F
 * nor AVX2 with FMA); *is512 says which. SEAM_CPU_DW=avx2 takes the AVX2
 * rows on any CPU that has them, SEAM_CPU_DW=flat neither (for the
 * tests: every path against the same references). */
static dw_rows_fn dw_rows_for(const conv_geom *w, bool *is512) {
    __builtin_cpu_init();
    const char *e = getenv("SEAM_CPU_DW");
    if (e && strcmp(e, "flat") == 0) return NULL;
    bool use512 = __builtin_cpu_supports("avx512f") && !(e && strcmp(e, "avx2") == 0);
    if (!__builtin_cpu_supports("fma") || (!use512 && !__builtin_cpu_supports("avx2"))) return NULL;
    int64_t k = w->kernel[0], s = w->stride[0];
    if (w->kernel[1] != k || w->stride[1] != s || w->dil[0] != 1 || w->dil[1] != 1) return NULL;
    if (is512) *is512 = use512;
    if (k == 3) return s == 1 ? (use512 ? dw_rows512_331 : dw_rows256_331) : s == 2 ? (use512 ? dw_rows512_332 : dw_rows256_332) : NULL;
    if (k == 5) return s == 1 ? (use512 ? dw_rows512_551 : dw_rows256_551) : s == 2 ? (use512 ? dw_rows512_552 : dw_rows256_552) : NULL;
    return NULL;
}
#endif

DW_HOT static void dw_one(const dw_job *j, float *P, int64_t nm) {
    const conv_geom *w = j->win;
    int64_t OH = w->out[0], OW = w->out[1], KH = w->kernel[0], KW = w->kernel[1];
    int64_t sh = w->stride[0], sw = w->stride[1], dh = w->dil[0], dw = w->dil[1], PW = j->PW, PS = j->PH * PW;
    int64_t m = nm % j->M;
    const float *k = j->w + m * KH * KW;
    float *y = j->y + nm * OH * OW;
    float bv = j->bias ? j->bias[m] : 0.0f;
    dw_phases(j, P, nm);
    if (j->rows) {
        j->rows(P, PS, PW, OH, OW, k, bv, y, j->post);
        return;
    }
#define DW_TAP(a, b) (P + ((a) * dh % sh * sw + (b) * dw % sw) * PS + (a) * dh / sh * PW + (b) * dw / sw)
    float *restrict ext = P + sh * sw * PS + j->slack; /* (restrict: no alias checks that stop the vectorizer) */
    int64_t L = OH * PW;
    if (KH == 3 && KW == 3 && sw == 1) { /* a row's taps at offsets: fewer pointers than registers */
        const float *restrict p0 = DW_TAP(0, 0), *restrict p1 = DW_TAP(1, 0), *restrict p2 = DW_TAP(2, 0);
        for (int64_t i = 0; i < L; i++)
            ext[i] = k[0] * p0[i] + k[1] * p0[i + dw] + k[2] * p0[i + 2 * dw] + k[3] * p1[i] + k[4] * p1[i + dw] +
                     k[5] * p1[i + 2 * dw] + k[6] * p2[i] + k[7] * p2[i + dw] + k[8] * p2[i + 2 * dw];
    } else if (KH == 3 && KW == 3) {
        const float *restrict t0 = DW_TAP(0, 0), *restrict t1 = DW_TAP(0, 1), *restrict t2 = DW_TAP(0, 2),
                              *restrict t3 = DW_TAP(1, 0), *restrict t4 = DW_TAP(1, 1), *restrict t5 = DW_TAP(1, 2),
                              *restrict t6 = DW_TAP(2, 0), *restrict t7 = DW_TAP(2, 1), *restrict t8 = DW_TAP(2, 2);
        float k0 = k[0], k1 = k[1], k2 = k[2], k3 = k[3], k4 = k[4], k5 = k[5], k6 = k[6], k7 = k[7], k8 = k[8];
        for (int64_t i = 0; i < L; i++)
            ext[i] = k0 * t0[i] + k1 * t1[i] + k2 * t2[i] + k3 * t3[i] + k4 * t4[i] + k5 * t5[i] + k6 * t6[i] +
                     k7 * t7[i] + k8 * t8[i];
    } else if (KW == 5) { /* (mobilenet_v3, efficientnet) a kernel row per pass */
        for (int64_t i = 0; i < L; i++) ext[i] = 0;
        for (int64_t a = 0; a < KH; a++) {
            const float *restrict q0 = DW_TAP(a, 0), *restrict q1 = DW_TAP(a, 1), *restrict q2 = DW_TAP(a, 2),
                                  *restrict q3 = DW_TAP(a, 3), *restrict q4 = DW_TAP(a, 4), *kr = k + a * 5;
            float k0 = kr[0], k1 = kr[1], k2 = kr[2], k3 = kr[3], k4 = kr[4];
            for (int64_t i = 0; i < L; i++)
                ext[i] += k0 * q0[i] + k1 * q1[i] + k2 * q2[i] + k3 * q3[i] + k4 * q4[i];
        }
    } else {
        for (int64_t i = 0; i < L; i++) ext[i] = 0;
        for (int64_t a = 0; a < KH; a++)
            for (int64_t b = 0; b < KW; b++) {
                float kv = k[a * KW + b];
                const float *restrict sp = DW_TAP(a, b);
                for (int64_t i = 0; i < L; i++) ext[i] += kv * sp[i];
            }
    }
#undef DW_TAP
    for (int64_t oh = 0; oh < OH; oh++) {
        memcpy(y + oh * OW, ext + oh * PW, sizeof(float) * (size_t)OW);
        cpu_post_apply(j->post, y + oh * OW, OW, bv);
    }
}

static void dw_tasks(void *arg, int64_t begin, int64_t end) {
    const dw_job *j = arg;
    for (int64_t t = begin; t < end; t++) {
        float *P = j->buf + t * j->per_buf;
        /* the padding (the planes; dw_lanes: the interleaved plane and the
         * weights, whose lanes past the last channel must stay finite) */
        int64_t zero = j->vec ? (j->PH * j->PW + j->win->kernel[0] * j->win->kernel[1]) * DW_LANES
                              : j->win->stride[0] * j->win->stride[1] * j->PH * j->PW + j->slack;
        memset(P, 0, sizeof(float) * (size_t)zero);
        int64_t u1 = (t + 1) * j->per_task < j->units ? (t + 1) * j->per_task : j->units;
        for (int64_t u = t * j->per_task; u < u1; u++)
            if (j->vec) dw_lanes(j, P, u * DW_LANES);
            else dw_one(j, P, u);
    }
}


bool cpu_dw_plan_make(cpu_dw_plan *p, const conv_geom *w, int64_t N, int64_t C, int64_t M, int32_t threads) {
    dw_job j = {0};
    if (w->n != 2 || C < 1 || M % C) return false;
    int64_t vec_max = DW_VEC_MAX_OUT;
#if DW_512
    bool is512 = false;
    if (dw_rows_for(w, &is512) && !is512) vec_max = DW_VEC_MAX_OUT_AVX2;
#endif
    if (!dw_geometry(w, &j, vec_max)) return false;
    *p = (cpu_dw_plan){.win = w, .N = N, .C = C, .M = M, .PH = j.PH, .PW = j.PW, .slack = j.slack,
                       .per_buf = j.per_buf, .vec = j.vec};
#if DW_512
    p->rows = !j.vec && dw_rows_for(w, NULL) != NULL;
#endif
    p->units = j.vec ? (N * M + DW_LANES - 1) / DW_LANES : N * M;
    /* a few tasks per thread, each with its planes (how many changes
     * nothing in the result), with at most 64 MB of planes in all */
    int64_t tasks = 4 * (int64_t)(threads > 0 ? threads : 1);
    if (tasks * p->per_buf > ((int64_t)1 << 24)) tasks = ((int64_t)1 << 24) / p->per_buf > 1 ? ((int64_t)1 << 24) / p->per_buf : 1;
    if (tasks > p->units) tasks = p->units > 0 ? p->units : 1;
    p->per_task = (p->units + tasks - 1) / tasks;
    p->tasks = p->per_task > 0 ? (p->units + p->per_task - 1) / p->per_task : 0;
    return true;
}

size_t cpu_dw_scratch(const cpu_dw_plan *p) { return sizeof(float) * (size_t)(p->tasks * p->per_buf) + 64; }

void cpu_dw_run(const cpu_dw_plan *p, seam_pool *pool, const float *x, const float *w, const float *bias,
                const act_params *post, float *y, void *scratch) {
    if (p->tasks == 0) return;
    static const act_params none = {ACT_NONE, 0, 0, 0, 0, 0};
    if (!post) post = &none;
    dw_job j = {.x = x, .w = w, .bias = bias, .y = y, .win = p->win, .post = post, .C = p->C, .M = p->M,
                .Mg = p->M / p->C, .total = p->N * p->M, .per_task = p->per_task, .per_buf = p->per_buf,
                .PH = p->PH, .PW = p->PW, .slack = p->slack, .vec = p->vec, .units = p->units,
                .rows = NULL};
#if DW_512
    if (p->rows) j.rows = dw_rows_for(p->win, &j.rows512);
#endif
    j.buf = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    seam_parallel_for(pool, p->tasks, 1, dw_tasks, &j);
}
