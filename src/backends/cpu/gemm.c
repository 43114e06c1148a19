/* The packed AVX-512 GEMM (gemm.h): BLIS-style loops around a 14 x 32
 * register block.
 *
 *     for each task's columns, in blocks of NC:        (B block in L2)
 *       for each depth block of KC:
 *         pack B [kc, nc] into NR-column panels (from B or by im2col)
 *         for each group of MCP row panels:            (A block in L2)
 *           for each B panel of NR columns:            (B panel in L1)
 *             for each A panel of MR rows: the micro-kernel
 *
 * The first depth block writes C (with the bias), the others add to it;
 * after the last one, the fused activation goes over the A block's rows
 * of the B block's columns, still in L2. A plain B (a 1x1 conv's input)
 * may skip the packing: the micro-kernel then reads it in place.
 * At the end of the file, X W with W (MatMul's and Gemm's weight) packed
 * once and X packed as the product goes. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/gemm.h"
#include "core/arena.h"
#include "core/pool.h"

/* Optimized in every build: at -O0 (the Debug and sanitizer builds) the
 * micro-kernel keeps its accumulators in memory and runs convs some 20
 * times slower than OpenBLAS does there, which the tests that time runs
 * (placement by measurement) and their time limits notice. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE__)
#pragma GCC optimize("O2")
#endif

#define MR CPU_GEMM_MR
#define NR CPU_GEMM_NR
#define KC CPU_GEMM_KC
#define NC 512 /* columns of a B block: KC x NC floats = 512 KB */
#define MCP 8  /* row panels of an A block: 112 x KC floats = 112 KB */
#define DMCP 4 /* row panels a B panel read in place serves at a time */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GEMM_X86 1
#define GEMM_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma")))
#else
#define GEMM_X86 0
#define GEMM_TARGET
#endif

/* SEAM_CPU_PACKED_GEMM=0 in the environment turns the packed GEMM off, as
 * on a CPU without AVX-512 (for the tests of that path). Read once. */
#if GEMM_X86
static bool gemm_use_avx2; /* the AVX2 kernels (set once by gemm_init) */
#endif

/* 2: AVX-512, 1: AVX2 (and FMA), 0: none. SEAM_CPU_PACKED_GEMM=avx2
 * takes the AVX2 kernels on a CPU with both (for their tests). */
static int gemm_probe(void) {
    const char *e = getenv("SEAM_CPU_PACKED_GEMM");
    if (e && strcmp(e, "0") == 0) return 0;
#if GEMM_X86
    __builtin_cpu_init();
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx512 && !(e && strcmp(e, "avx2") == 0)) return 2;
    return avx2 ? 1 : 0;
#else
    return 0;
#endif
}

static pthread_once_t gemm_once = PTHREAD_ONCE_INIT;
static int gemm_isa;
static void gemm_init(void) {
    gemm_isa = gemm_probe();
#if GEMM_X86
    gemm_use_avx2 = gemm_isa == 1;
#endif
}

bool cpu_gemm_available(void) {
    pthread_once(&gemm_once, gemm_init);
    return gemm_isa > 0;
}

bool cpu_gemm_avx512(void) {
    pthread_once(&gemm_once, gemm_init);
    return gemm_isa == 2;
}

size_t cpu_gemm_packed_floats(int64_t m, int64_t k) {
    return (size_t)((m + MR - 1) / MR * MR * (k > 0 ? k : 1) + 15) & ~(size_t)15;
}

void cpu_gemm_pack_into(cpu_gemm_packed *p, float *data, const float *a, int64_t lda, int64_t m, int64_t k) {
    /* panels of equal height (32 rows: 11, 11, 10, not 14, 14, 4): a short
     * panel would run the kernel at a fraction of its speed */
    p->m = m, p->k = k, p->panels = (m + MR - 1) / MR;
    p->h = p->panels ? (m + p->panels - 1) / p->panels : 0;
    p->data = data;
    for (int64_t q = 0; q < p->panels; q++) {
        float *dst = p->data + q * k * MR;
        int64_t rows = m - q * p->h < p->h ? m - q * p->h : p->h;
        const float *src = a + q * p->h * lda;
        for (int64_t kk = 0; kk < k; kk++, dst += MR) {
            for (int64_t r = 0; r < rows; r++) dst[r] = src[r * lda + kk];
            for (int64_t r = rows; r < MR; r++) dst[r] = 0.0f;
        }
    }
}

cpu_gemm_packed *cpu_gemm_pack(const float *a, int64_t lda, int64_t m, int64_t k) {
    cpu_gemm_packed *p = calloc(1, sizeof(*p));
    float *data = p ? seam_alloc_resident(sizeof(float) * cpu_gemm_packed_floats(m, k)) : NULL;
    if (!data) {
        free(p);
        return NULL;
    }
    cpu_gemm_pack_into(p, data, a, lda, m, k);
    return p;
}

void cpu_gemm_packed_free(cpu_gemm_packed *p) {
    if (!p) return;
    free(p->data);
    free(p);
}

/* ---- packing B ---- */

/* The output columns [lo, hi) of a row whose input column (q * sw +
 * base) is inside [0, W). */
static void im2col_bounds(int64_t W, int64_t OW, int64_t sw, int64_t base, int64_t *lo, int64_t *hi) {
    *lo = base >= 0 ? 0 : (-base + sw - 1) / sw, *hi = W - base > 0 ? (W - base + sw - 1) / sw : 0;
    if (*hi > OW) *hi = OW;
    if (*lo > *hi) *lo = *hi;
}

/* Output pixels [ow, ow1) of one row into d: input row srow where the
 * column is inside ([lo, hi)), zeros elsewhere. */
static inline void im2col_run(float *d, const float *srow, int64_t ow, int64_t ow1, int64_t lo, int64_t hi, int64_t sw,
                              int64_t base) {
    int64_t a = lo < ow ? ow : lo > ow1 ? ow1 : lo, b = hi < a ? a : hi > ow1 ? ow1 : hi;
    for (int64_t q = ow; q < a; q++) d[q - ow] = 0.0f;
    if (sw == 1 && b > a) memcpy(d + (a - ow), srow + a + base, sizeof(float) * (size_t)(b - a));
    else
        for (int64_t q = a; q < b; q++) d[q - ow] = srow[q * sw + base];
    for (int64_t q = b; q < ow1; q++) d[q - ow] = 0.0f;
}

/* cpu_im2col_row of a conv with 1 or 3 (any but 2) spatial axes: the
 * last axis as the 2-D path's W, the others as its H, their input index
 * found per run of output pixels along the last axis. */
static void im2col_row_nd(const conv_geom *w, const float *x, int64_t row, int64_t p0, int64_t nc, float *dst) {
    int32_t n = w->n, last = n - 1;
    int64_t kidx[CONV_MAX_SPATIAL], kprod = 1, in_prod = 1;
    for (int32_t d = 0; d < n; d++) kprod *= w->kernel[d], in_prod *= w->in[d];
    int64_t c = row / kprod, r = row % kprod;
    for (int32_t d = last; d >= 0; d--) kidx[d] = r % w->kernel[d], r /= w->kernel[d];
    const float *src = x + c * in_prod;
    int64_t W = w->in[last], OW = w->out[last], sw = w->stride[last];
    int64_t base = -w->pad_lo[last] + kidx[last] * w->dil[last];
    int64_t lo, hi;
    im2col_bounds(W, OW, sw, base, &lo, &hi);
    for (int64_t p = p0, end = p0 + nc; p < end;) {
        int64_t outer = p / OW, ow = p % OW, ow1 = OW - ow < end - p ? OW : ow + (end - p);
        float *d = dst + (p - p0);
        /* the input row of this run: inside, or a row of zeros */
        int64_t off = 0, scale = 1;
        bool inside = true;
        for (int32_t a = last - 1; a >= 0; a--) {
            int64_t o = outer % w->out[a], i = o * w->stride[a] - w->pad_lo[a] + kidx[a] * w->dil[a];
            outer /= w->out[a];
            inside &= i >= 0 && i < w->in[a];
            off += i * scale, scale *= w->in[a];
        }
        if (!inside) {
            memset(d, 0, sizeof(float) * (size_t)(ow1 - ow));
        } else {
            const float *srow = src + off * W;
            im2col_run(d, srow, ow, ow1, lo, hi, sw, base);
        }
        p += ow1 - ow;
    }
}

void cpu_im2col_row(const conv_geom *w, const float *x, int64_t row, int64_t p0, int64_t nc, float *dst) {
    if (w->n != 2) {
        im2col_row_nd(w, x, row, p0, nc, dst);
        return;
    }
    int64_t H = w->in[0], W = w->in[1], OW = w->out[1], KH = w->kernel[0], KW = w->kernel[1];
    int64_t kprod = KH * KW, c = row / kprod, ka = row % kprod / KW, kb = row % KW;
    int64_t sh = w->stride[0], sw = w->stride[1];
    const float *src = x + c * H * W;
    int64_t base = -w->pad_lo[1] + kb * w->dil[1];
    /* the output columns whose input column is inside: [lo, hi) */
    int64_t lo, hi;
    im2col_bounds(W, OW, sw, base, &lo, &hi);
    for (int64_t p = p0, end = p0 + nc; p < end;) {
        int64_t oh = p / OW, ow = p % OW, ow1 = OW - ow < end - p ? OW : ow + (end - p);
        float *d = dst + (p - p0); /* d[0] is pixel (oh, ow) */
        int64_t ih = oh * sh - w->pad_lo[0] + ka * w->dil[0];
        if (ih < 0 || ih >= H) {
            memset(d, 0, sizeof(float) * (size_t)(ow1 - ow));
        } else {
            const float *srow = src + ih * W;
            im2col_run(d, srow, ow, ow1, lo, hi, sw, base);
        }
        p += ow1 - ow;
    }
}

/* B rows [k0, k0 + kc), columns [n0, n0 + nc) into panels of NR columns:
 * panel j holds kc rows of NR (zeros past nc). row: nc floats of scratch. */
static void pack_b(const cpu_gemm_b *b, int64_t k0, int64_t kc, int64_t n0, int64_t nc, float *dst, float *row) {
    int64_t panels = (nc + NR - 1) / NR;
    for (int64_t kk = 0; kk < kc; kk++) {
        const float *src;
        if (b->win) {
            cpu_im2col_row(b->win, b->b, k0 + kk, n0, nc, row);
            src = row;
        } else {
            src = b->b + (k0 + kk) * b->ldb + n0;
        }
        for (int64_t j = 0; j < panels; j++) {
            float *d = dst + (j * kc + kk) * NR;
            int64_t len = nc - j * NR < NR ? nc - j * NR : NR;
            memcpy(d, src + j * NR, sizeof(float) * (size_t)len);
            for (int64_t l = len; l < NR; l++) d[l] = 0.0f;
        }
    }
}

/* ---- the micro-kernel ---- */

#if GEMM_X86
/* C[mr, nr] (=, or += when !first) A panel [kc, MR] x B [kc, NR], plus
 * bias[row] when first and bias is set. B is a packed panel (rows of NR
 * floats, 64-byte aligned, zeros past nr) or, when DB, the plain matrix
 * itself (rows of ldb floats, any alignment: masked loads read only the
 * nr columns). MR_ (rows), NH (zmm columns, 1 or 2) and DB are constants
 * in each copy, so an edge tile computes only its own rows and columns. */
GEMM_TARGET static inline __attribute__((always_inline)) void
ukernel_body(int64_t kc, const float *a, const float *b, int64_t ldb, float *c, int64_t ldc, const int MR_,
             const int NH, const bool DB, int64_t nr, const float *bias, bool first) {
    __m512 acc[MR][2];
    __mmask16 m0 = nr >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? (__mmask16)0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
#pragma GCC unroll 14
    for (int i = 0; i < MR_; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    int64_t bstep = DB ? ldb : NR;
    for (int64_t kk = 0; kk < kc; kk++) {
        __m512 b0, b1;
        if (DB) {
            b0 = _mm512_maskz_loadu_ps(m0, b);
            b1 = NH > 1 ? _mm512_maskz_loadu_ps(m1, b + 16) : b0;
        } else {
            b0 = _mm512_load_ps(b);
            b1 = NH > 1 ? _mm512_load_ps(b + 16) : b0;
        }
#pragma GCC unroll 14
        for (int i = 0; i < MR_; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            if (NH > 1) acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += MR;
        b += bstep;
    }
#pragma GCC unroll 14
    for (int i = 0; i < MR_; i++) {
        float *ci = c + i * ldc;
        __m512 v0 = acc[i][0], v1 = acc[i][1];
        if (first) {
            if (bias) {
                __m512 bv = _mm512_set1_ps(bias[i]);
                v0 = _mm512_add_ps(v0, bv), v1 = _mm512_add_ps(v1, bv);
            }
        } else {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, ci));
            if (NH > 1) v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, ci + 16));
        }
        _mm512_mask_storeu_ps(ci, m0, v0);
        if (NH > 1) _mm512_mask_storeu_ps(ci + 16, m1, v1);
    }
}

#define UK(R, H, D)                                                                                                   \
    GEMM_TARGET static void uk_##R##_##H##_##D(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,     \
                                               int64_t ldc, int64_t nr, const float *bias, bool first) {              \
        ukernel_body(kc, a, b, ldb, c, ldc, R, H, D, nr, bias, first);                                                \
    }
#define UK2(R) UK(R, 1, 0) UK(R, 2, 0) UK(R, 1, 1) UK(R, 2, 1)
UK2(1) UK2(2) UK2(3) UK2(4) UK2(5) UK2(6) UK2(7) UK2(8) UK2(9) UK2(10) UK2(11) UK2(12) UK2(13) UK2(14)
typedef void (*ukernel_fn)(int64_t, const float *, const float *, int64_t, float *, int64_t, int64_t, const float *,
                           bool);
#define UKP(R) {{uk_##R##_1_0, uk_##R##_2_0}, {uk_##R##_1_1, uk_##R##_2_1}}
static const ukernel_fn ukernels[MR][2][2] = {UKP(1), UKP(2),  UKP(3),  UKP(4),  UKP(5),  UKP(6),  UKP(7),
                                              UKP(8), UKP(9), UKP(10), UKP(11), UKP(12), UKP(13), UKP(14)};

/* ---- the same on AVX2 (16 ymm registers) ----
 * The packed layouts stay (panels of MR rows, NR columns): the tile is
 * done in column groups of 16 (two ymm) by row chunks of at most 6 (12
 * accumulators, two vectors of B and a broadcast: 8 loads a step for 12
 * FMAs), each element the same FMA chain over k from zero as on AVX-512,
 * so the results are the same bits. */
#define GEMM_AVX2_TARGET __attribute__((target("avx2,fma")))
#define AVX2_ROWS 6

static const int32_t avx2_lane_ids[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

GEMM_AVX2_TARGET static inline __attribute__((always_inline)) void
ukernel16_body(int64_t kc, const float *a, const float *b, int64_t bstep, float *c, int64_t ldc, const int R,
               const bool MASKED, int64_t nr, const float *bias, bool first) {
    __m256 acc[AVX2_ROWS][2];
    __m256i left = _mm256_set1_epi32((int32_t)(nr < 16 ? nr : 16));
    __m256i m0 = _mm256_cmpgt_epi32(left, _mm256_loadu_si256((const __m256i *)avx2_lane_ids));
    __m256i m1 = _mm256_cmpgt_epi32(left, _mm256_loadu_si256((const __m256i *)(avx2_lane_ids + 8)));
#pragma GCC unroll 6
    for (int i = 0; i < R; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    /* (a packed panel holds zeros past its columns: only B read in place
     * needs its loads masked; vmaskmovps in the loop took a 9-column tile,
     * a detector's 3 x 3 head conv, to half its speed on an AMD EPYC) */
    if (MASKED && bstep != NR) {
        for (int64_t kk = 0; kk < kc; kk++) {
            __m256 b0 = _mm256_maskload_ps(b, m0), b1 = _mm256_maskload_ps(b + 8, m1);
#pragma GCC unroll 6
            for (int i = 0; i < R; i++) {
                __m256 ai = _mm256_broadcast_ss(a + i);
                acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
            }
            a += MR;
            b += bstep;
        }
    } else {
        for (int64_t kk = 0; kk < kc; kk++) {
            __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
            for (int i = 0; i < R; i++) {
                __m256 ai = _mm256_broadcast_ss(a + i);
                acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
            }
            a += MR;
            b += bstep;
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < R; i++) {
        float *ci = c + i * ldc;
        __m256 v0 = acc[i][0], v1 = acc[i][1];
        if (first) {
            if (bias) {
                __m256 bv = _mm256_broadcast_ss(bias + i);
                v0 = _mm256_add_ps(v0, bv), v1 = _mm256_add_ps(v1, bv);
            }
        } else {
            v0 = _mm256_add_ps(v0, MASKED ? _mm256_maskload_ps(ci, m0) : _mm256_loadu_ps(ci));
            v1 = _mm256_add_ps(v1, MASKED ? _mm256_maskload_ps(ci + 8, m1) : _mm256_loadu_ps(ci + 8));
        }
        if (MASKED) {
            _mm256_maskstore_ps(ci, m0, v0);
            _mm256_maskstore_ps(ci + 8, m1, v1);
        } else {
            _mm256_storeu_ps(ci, v0);
            _mm256_storeu_ps(ci + 8, v1);
        }
    }
}

#define UK16(R, M)                                                                                                  \
    GEMM_AVX2_TARGET static void uk16_##R##_##M(int64_t kc, const float *a, const float *b, int64_t bstep, float *c, \
                                                int64_t ldc, int64_t nr, const float *bias, bool first) {            \
        ukernel16_body(kc, a, b, bstep, c, ldc, R, M, nr, bias, first);                                              \
    }
#define UK16P(R) UK16(R, 0) UK16(R, 1)
UK16P(1) UK16P(2) UK16P(3) UK16P(4) UK16P(5) UK16P(6)
typedef void (*ukernel16_fn)(int64_t, const float *, const float *, int64_t, float *, int64_t, int64_t, const float *,
                             bool);
#define UK16Q(R) {uk16_##R##_0, uk16_##R##_1}
static const ukernel16_fn ukernels16[AVX2_ROWS][2] = {UK16Q(1), UK16Q(2), UK16Q(3), UK16Q(4), UK16Q(5), UK16Q(6)};

static void ukernel_avx2(int64_t kc, const float *a, const float *b, int64_t ldb, float *c, int64_t ldc, int64_t mr,
                         int64_t nr, const float *bias, bool first) {
    int64_t bstep = ldb > 0 ? ldb : NR;
    /* rows in chunks of at most 6, as even as can be (14: 4 + 5 + 5) */
    /* (column groups outside: a group of B, 16 KB at kc = 256, stays in L1
     * for the row chunks) */
    int64_t chunks = (mr + AVX2_ROWS - 1) / AVX2_ROWS;
    for (int64_t j = 0; j < nr; j += 16) {
        int64_t left = nr - j;
        for (int64_t q = 0, r0 = 0; q < chunks; q++) {
            int64_t rows = (mr - r0) / (chunks - q);
            ukernels16[rows - 1][left < 16](kc, a + r0, b + j, bstep, c + r0 * ldc + j, ldc, left,
                                             bias ? bias + r0 : NULL, first);
            r0 += rows;
        }
    }
}

/* ldb > 0: B is the plain matrix (rows of ldb floats), else a packed panel */
static void ukernel(int64_t kc, const float *a, const float *b, int64_t ldb, float *c, int64_t ldc, int64_t mr,
                    int64_t nr, const float *bias, bool first) {
    if (gemm_use_avx2) {
        ukernel_avx2(kc, a, b, ldb, c, ldc, mr, nr, bias, first);
        return;
    }
    ukernels[mr - 1][ldb > 0][nr > 16](kc, a, b, ldb, c, ldc, nr, bias, first);
}

/* One or two rows (a matrix-vector product) times WP packed panels side
 * by side (pstride floats apart, all of them present: packed panels have
 * zeros past the matrix's columns), storing nr <= WP * NR columns: the
 * micro-kernel on one row would have two chains of dependent FMAs, this
 * has eight per row. Each element is the same FMA chain over k as in the
 * micro-kernel: the same bits. */
#define WP 4
GEMM_TARGET static inline __attribute__((always_inline)) void wkernel_body(int64_t kc, const float *a, const float *b,
                                                                        int64_t pstride, float *c, int64_t ldc,
                                                                        const int MR_, int64_t nr, bool first) {
    __m512 acc[2][2 * WP];
#pragma GCC unroll 8
    for (int v = 0; v < 2 * WP; v++) acc[0][v] = acc[1][v] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < kc; kk++) {
        __m512 bv[2 * WP];
#pragma GCC unroll 8
        for (int v = 0; v < 2 * WP; v++) bv[v] = _mm512_load_ps(b + (v / 2) * pstride + (v % 2) * 16);
#pragma GCC unroll 2
        for (int i = 0; i < MR_; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 8
            for (int v = 0; v < 2 * WP; v++) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
        }
        a += MR;
        b += NR;
    }
#pragma GCC unroll 2
    for (int i = 0; i < MR_; i++)
#pragma GCC unroll 8
        for (int v = 0; v < 2 * WP; v++) {
            int64_t left = nr - 16 * v;
            if (left <= 0) break;
            __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
            float *ci = c + i * ldc + 16 * v;
            __m512 r = acc[i][v];
            if (!first) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, ci));
            _mm512_mask_storeu_ps(ci, m, r);
        }
}
GEMM_TARGET static void wk_1(int64_t kc, const float *a, const float *b, int64_t ps, float *c, int64_t ldc, int64_t nr,
                             bool first) {
    wkernel_body(kc, a, b, ps, c, ldc, 1, nr, first);
}
GEMM_TARGET static void wk_2(int64_t kc, const float *a, const float *b, int64_t ps, float *c, int64_t ldc, int64_t nr,
                             bool first) {
    wkernel_body(kc, a, b, ps, c, ldc, 2, nr, first);
}
#define HAVE_WKERNEL 1
static void wkernel(int64_t kc, const float *a, const float *b, int64_t pstride, float *c, int64_t ldc, int64_t mr,
                    int64_t nr, bool first) {
    if (gemm_use_avx2) { /* panel by panel: the same chains */
        for (int64_t p = 0; p < WP && p * NR < nr; p++)
            ukernel_avx2(kc, a, b + p * pstride, 0, c + p * NR, ldc, mr, nr - p * NR < NR ? nr - p * NR : NR, NULL, first);
        return;
    }
    (mr == 1 ? wk_1 : wk_2)(kc, a, b, pstride, c, ldc, nr, first);
}
#else
static void ukernel(int64_t kc, const float *a, const float *b, int64_t ldb, float *c, int64_t ldc, int64_t mr,
                    int64_t nr, const float *bias, bool first) {
    int64_t bs = ldb > 0 ? ldb : NR;
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) {
            float s = 0;
            for (int64_t kk = 0; kk < kc; kk++) s += a[kk * MR + i] * b[kk * bs + j];
            c[i * ldc + j] = first ? s + (bias ? bias[i] : 0.0f) : c[i * ldc + j] + s;
        }
}
#endif

/* ---- the driver ---- */

typedef struct gemm_run {
    const cpu_gemm_packed *a;
    const cpu_gemm_b *b;
    int64_t n, ldc;
    float *c;
    const float *bias;
    const act_params *post;
    float *scratch;
    size_t per_task;     /* floats of scratch per task */
    bool direct;         /* the micro-kernel reads B itself (no packed panels) */
    bool by_rows;        /* tasks split the row panels, else the columns */
    int64_t per;         /* row panels or columns per task */
    int64_t tasks;
} gemm_run;

/* Columns [j0, j1) and row panels [q0, q1) of C. */
static void gemm_block(const gemm_run *r, int64_t q0, int64_t q1, int64_t j0, int64_t j1, float *buf) {
    const cpu_gemm_packed *a = r->a;
    int64_t K = a->k, M = a->m;
    float *row = buf + (size_t)KC * NC;
    bool post = r->post && r->post->kind != ACT_NONE;
    for (int64_t jc = j0; jc < j1; jc += NC) {
        int64_t nc = j1 - jc < NC ? j1 - jc : NC;
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = K - pc < KC ? K - pc : KC;
            bool first = pc == 0, last = pc + kc >= K;
            if (!r->direct) pack_b(r->b, pc, kc, jc, nc, buf, row);
            for (int64_t ic = q0; ic < q1; ic += MCP) {
                int64_t ic1 = q1 - ic < MCP ? q1 : ic + MCP;
                if (r->direct) {
                    /* B read in place: its rows lie a row of pixels apart
                     * (often a multiple of 4 KB), so they share a few cache
                     * sets with the C tiles; a B panel serves DMCP A panels
                     * at a time, whose C tiles then fit beside it */
                    for (int64_t qd = ic; qd < ic1; qd += DMCP) {
                        int64_t qd1 = ic1 - qd < DMCP ? ic1 : qd + DMCP;
                        for (int64_t jr = 0; jr < nc; jr += NR) {
                            int64_t nr = nc - jr < NR ? nc - jr : NR;
                            const float *bp = r->b->b + pc * r->b->ldb + jc + jr;
                            for (int64_t q = qd; q < qd1; q++) {
                                int64_t i0 = q * a->h, mr = M - i0 < a->h ? M - i0 : a->h;
                                if (mr <= 0) break;
                                ukernel(kc, a->data + (q * K + pc) * MR, bp, r->b->ldb, r->c + i0 * r->ldc + jc + jr,
                                        r->ldc, mr, nr, r->bias ? r->bias + i0 : NULL, first);
                            }
                        }
                    }
                } else {
                    for (int64_t jr = 0; jr < nc; jr += NR) {
                        int64_t nr = nc - jr < NR ? nc - jr : NR;
                        const float *bp = buf + jr * kc;
                        for (int64_t q = ic; q < ic1; q++) {
                            int64_t i0 = q * a->h, mr = M - i0 < a->h ? M - i0 : a->h;
                            if (mr <= 0) break;
                            ukernel(kc, a->data + (q * K + pc) * MR, bp, 0, r->c + i0 * r->ldc + jc + jr, r->ldc, mr,
                                    nr, r->bias ? r->bias + i0 : NULL, first);
                        }
                    }
                }
                /* the activation over the block's rows, while they are in L2
                 * (whole rows: a call per tile row would cost more than it does) */
                for (int64_t i = ic * a->h; last && post && i < ic1 * a->h && i < M; i++)
                    cpu_post_apply(r->post, r->c + i * r->ldc + jc, nc, 0.0f);
            }
        }
    }
    /* K = 0: C is the bias (and the activation of it) */
    if (K == 0)
        for (int64_t i = q0 * a->h; i < q1 * a->h && i < M; i++) {
            float *ci = r->c + i * r->ldc + j0;
            for (int64_t j = 0; j < j1 - j0; j++) ci[j] = 0.0f;
            cpu_post_apply(r->post ? r->post : &(act_params){ACT_NONE, 0, 0, 0, 0, 0}, ci, j1 - j0,
                           r->bias ? r->bias[i] : 0.0f);
        }
}

static void gemm_tasks(void *arg, int64_t begin, int64_t end) {
    const gemm_run *r = arg;
    for (int64_t t = begin; t < end; t++) {
        float *buf = r->scratch + (size_t)t * r->per_task;
        if (r->by_rows) {
            int64_t q0 = t * r->per, q1 = q0 + r->per < r->a->panels ? q0 + r->per : r->a->panels;
            if (q0 < q1) gemm_block(r, q0, q1, 0, r->n, buf);
        } else {
            int64_t j0 = t * r->per, j1 = j0 + r->per < r->n ? j0 + r->per : r->n;
            if (j0 < j1) gemm_block(r, 0, r->a->panels, j0, j1, buf);
        }
    }
}

/* How the work splits: over columns in multiples of NR when there are
 * enough of them, else over row panels. (The split changes no result.) */
static void plan(gemm_run *r, int64_t panels, int32_t threads) {
    int64_t col_units = (r->n + NR - 1) / NR;
    int64_t t = threads > 1 ? threads : 1;
    r->by_rows = col_units < 2 * t && panels >= 2 * t;
    int64_t units = r->by_rows ? panels : col_units;
    r->tasks = units < t ? units : t;
    if (r->tasks < 1) r->tasks = 1;
    int64_t per_units = (units + r->tasks - 1) / r->tasks;
    r->per = r->by_rows ? per_units : per_units * NR;
    r->tasks = (units + per_units - 1) / per_units;
    if (r->tasks < 1) r->tasks = 1;
    r->per_task = ((size_t)KC * NC + NC + 15) & ~(size_t)15;
}

/* Measured (bench/results/cpugemm2.md): reading B in place is as fast as
 * packing it or faster everywhere (up to 1.5x with few rows: the packing
 * pass costs as much as the product when K is short) but on few columns
 * with many rows, where the packed panels are reused most and reading 49
 * columns in place means a masked second load per row. */
bool cpu_gemm_direct_b(int64_t m, int64_t k, int64_t n) {
    (void)k;
    return m < 256 || n >= 128;
}

size_t cpu_gemm_scratch(int64_t m, int64_t n, int32_t threads) {
    gemm_run r = {.n = n};
    plan(&r, (m + MR - 1) / MR, threads);
    return (size_t)r.tasks * r.per_task + 16;
}

void cpu_gemm_run(seam_pool *pool, const cpu_gemm_packed *a, const cpu_gemm_b *b, int64_t n, float *c, int64_t ldc,
                  const float *bias, const act_params *post, float *scratch) {
    cpu_gemm_run_mode(pool, a, b, n, c, ldc, bias, post, scratch, CPU_GEMM_B_AUTO);
}

void cpu_gemm_run_mode(seam_pool *pool, const cpu_gemm_packed *a, const cpu_gemm_b *b, int64_t n, float *c,
                       int64_t ldc, const float *bias, const act_params *post, float *scratch, int mode) {
    if (a->m == 0 || n == 0) return;
    gemm_run r = {a, b, n, ldc, c, bias, post, NULL, 0, false, false, 0, 0};
    r.direct = !b->win && (mode == CPU_GEMM_B_DIRECT || (mode == CPU_GEMM_B_AUTO && cpu_gemm_direct_b(a->m, a->k, n)));
    plan(&r, a->panels, seam_pool_threads(pool));
    r.scratch = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    if (r.tasks == 1) gemm_tasks(&r, 0, 1);
    else seam_parallel_for(pool, r.tasks, 1, gemm_tasks, &r);
}

/* ---- X W with W packed (MatMul and Gemm with a constant weight) ----
 *
 *     for each task's columns, in blocks of NC:
 *       for each depth block of KC:          (W's panels: packed already)
 *         for each block of XMC rows of X:   pack them (times alpha) as A panels
 *           for each W panel of NR columns, for each A panel: the micro-kernel
 *
 * W is read once per block of XMC rows; X is packed once per NC columns
 * (a small part of the work: 1 / NC of the multiply-adds). */

#define XMC (MCP * MR) /* rows of X packed at a time */

size_t cpu_gemm_wpacked_floats(int64_t k, int64_t n) {
    return (size_t)((n + NR - 1) / NR * NR * (k > 0 ? k : 1) + 15) & ~(size_t)15;
}

void cpu_gemm_wpack_into(cpu_gemm_wpacked *p, float *data, const float *w, int64_t k, int64_t n, bool trans) {
    p->k = k, p->n = n, p->panels = (n + NR - 1) / NR, p->data = data;
    for (int64_t pc = 0; pc < k; pc += KC) {
        int64_t kc = k - pc < KC ? k - pc : KC;
        float *blk = data + pc * p->panels * NR;
        for (int64_t j = 0; j < p->panels; j++) {
            float *dst = blk + j * kc * NR;
            int64_t cols = n - j * NR < NR ? n - j * NR : NR;
            if (trans) { /* W is [n, k]: its rows are the columns, read along */
                for (int64_t l = 0; l < cols; l++) {
                    const float *src = w + (j * NR + l) * k + pc;
                    for (int64_t kk = 0; kk < kc; kk++) dst[kk * NR + l] = src[kk];
                }
                for (int64_t kk = 0; kk < kc; kk++)
                    for (int64_t l = cols; l < NR; l++) dst[kk * NR + l] = 0.0f;
            } else {
                for (int64_t kk = 0; kk < kc; kk++) {
                    memcpy(dst + kk * NR, w + (pc + kk) * n + j * NR, sizeof(float) * (size_t)cols);
                    for (int64_t l = cols; l < NR; l++) dst[kk * NR + l] = 0.0f;
                }
            }
        }
    }
}

cpu_gemm_wpacked *cpu_gemm_wpack(const float *w, int64_t k, int64_t n, bool trans) {
    cpu_gemm_wpacked *p = calloc(1, sizeof(*p));
    float *data = p ? seam_alloc_resident(sizeof(float) * cpu_gemm_wpacked_floats(k, n)) : NULL;
    if (!data) {
        free(p);
        return NULL;
    }
    cpu_gemm_wpack_into(p, data, w, k, n, trans);
    return p;
}

void cpu_gemm_wpacked_free(cpu_gemm_wpacked *p) {
    if (!p) return;
    free(p->data);
    free(p);
}

typedef struct xw_run {
    const cpu_gemm_x *x;
    const cpu_gemm_wpacked *w;
    int64_t m, ldc;
    float *c;
    bool accumulate;
    const act_params *post;
    float *scratch;
    size_t per_task;
    bool by_rows;
    int64_t per, tasks;
} xw_run;

/* Rows [i0, i0 + mc) and depth [pc, pc + kc) of alpha X as `panels` A
 * panels of h rows (equal heights, as cpu_gemm_pack_into makes them). */
static void pack_x(const cpu_gemm_x *x, int64_t i0, int64_t mc, int64_t pc, int64_t kc, int64_t panels, int64_t h,
                   float *dst) {
    for (int64_t q = 0; q < panels; q++, dst += kc * MR) {
        int64_t r0 = i0 + q * h, rows = mc - q * h < h ? mc - q * h : h;
        for (int64_t r = 0; r < rows; r++) {
            if (x->trans) { /* X is [K, M]: element (i, kk) at kk * ldx + i */
                const float *src = x->x + pc * x->ldx + r0 + r;
                for (int64_t kk = 0; kk < kc; kk++) dst[kk * MR + r] = x->alpha * src[kk * x->ldx];
            } else {
                const float *src = x->x + (r0 + r) * x->ldx + pc;
                for (int64_t kk = 0; kk < kc; kk++) dst[kk * MR + r] = x->alpha * src[kk];
            }
        }
        /* (no zeros past the rows: a kernel of `rows` rows reads only them) */
    }
}

/* Rows [i0, i1) and columns [j0, j1) of C. */
static void xw_block(const xw_run *r, int64_t i0, int64_t i1, int64_t j0, int64_t j1, float *buf) {
    const cpu_gemm_wpacked *w = r->w;
    int64_t K = w->k;
    bool post = r->post && r->post->kind != ACT_NONE;
    for (int64_t jc = j0; jc < j1; jc += NC) {
        int64_t nc = j1 - jc < NC ? j1 - jc : NC;
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = K - pc < KC ? K - pc : KC;
            bool first = pc == 0 && !r->accumulate, last = pc + kc >= K;
            const float *wblk = w->data + pc * w->panels * NR;
            for (int64_t ic = i0; ic < i1; ic += XMC) {
                int64_t mc = i1 - ic < XMC ? i1 - ic : XMC, panels = (mc + MR - 1) / MR, h = (mc + panels - 1) / panels;
                pack_x(r->x, ic, mc, pc, kc, panels, h, buf);
                int64_t jr = 0;
#ifdef HAVE_WKERNEL
                /* one or two rows: WP panels at a time (jc is a multiple of NR) */
                if (h <= 2)
                    for (; (jc + jr) / NR + WP <= w->panels && jr < nc; jr += WP * NR)
                        wkernel(kc, buf, wblk + (jc + jr) / NR * kc * NR, kc * NR, r->c + ic * r->ldc + jc + jr, r->ldc,
                                mc, nc - jr < WP * NR ? nc - jr : WP * NR, first);
#endif
                for (; jr < nc; jr += NR) {
                    int64_t nr = nc - jr < NR ? nc - jr : NR;
                    const float *bp = wblk + (jc + jr) / NR * kc * NR;
                    for (int64_t q = 0; q < panels; q++) {
                        int64_t mr = mc - q * h < h ? mc - q * h : h;
                        ukernel(kc, buf + q * kc * MR, bp, 0, r->c + (ic + q * h) * r->ldc + jc + jr, r->ldc, mr, nr,
                                NULL, first);
                    }
                }
                for (int64_t i = ic; last && post && i < ic + mc; i++)
                    cpu_post_apply(r->post, r->c + i * r->ldc + jc, nc, 0.0f);
            }
        }
    }
    if (K == 0)
        for (int64_t i = i0; i < i1; i++) {
            float *ci = r->c + i * r->ldc + j0;
            if (!r->accumulate)
                for (int64_t j = 0; j < j1 - j0; j++) ci[j] = 0.0f;
            if (post) cpu_post_apply(r->post, ci, j1 - j0, 0.0f);
        }
}

static void xw_tasks(void *arg, int64_t begin, int64_t end) {
    const xw_run *r = arg;
    for (int64_t t = begin; t < end; t++) {
        float *buf = r->scratch + (size_t)t * r->per_task;
        if (r->by_rows) {
            int64_t i0 = t * r->per, i1 = i0 + r->per < r->m ? i0 + r->per : r->m;
            if (i0 < i1) xw_block(r, i0, i1, 0, r->w->n, buf);
        } else {
            int64_t j0 = t * r->per, j1 = j0 + r->per < r->w->n ? j0 + r->per : r->w->n;
            if (j0 < j1) xw_block(r, 0, r->m, j0, j1, buf);
        }
    }
}

/* Over columns in multiples of NR when there are enough of them, else
 * over rows in multiples of MR. (The split changes no result.) */
static void xw_plan(xw_run *r, int64_t n, int32_t threads) {
    int64_t col_units = (n + NR - 1) / NR, row_units = (r->m + MR - 1) / MR;
    int64_t t = threads > 1 ? threads : 1;
    r->by_rows = col_units < 2 * t && row_units >= 2 * t;
    int64_t units = r->by_rows ? row_units : col_units;
    r->tasks = units < t ? units : t;
    if (r->tasks < 1) r->tasks = 1;
    int64_t per_units = (units + r->tasks - 1) / r->tasks;
    r->per = per_units * (r->by_rows ? MR : NR);
    r->tasks = (units + per_units - 1) / per_units;
    if (r->tasks < 1) r->tasks = 1;
    r->per_task = ((size_t)XMC * KC + 15) & ~(size_t)15;
}

size_t cpu_gemm_xw_scratch(int64_t m, int64_t n, int32_t threads) {
    xw_run r = {.m = m};
    xw_plan(&r, n, threads);
    return (size_t)r.tasks * r.per_task + 16;
}

void cpu_gemm_xw_run(seam_pool *pool, const cpu_gemm_x *x, int64_t m, const cpu_gemm_wpacked *w, float *c, int64_t ldc,
                     bool accumulate, const act_params *post, float *scratch) {
    if (m == 0 || w->n == 0) return;
    xw_run r = {x, w, m, ldc, c, accumulate, post, NULL, 0, false, 0, 0};
    xw_plan(&r, w->n, seam_pool_threads(pool));
    r.scratch = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    if (r.tasks == 1) xw_tasks(&r, 0, 1);
    else seam_parallel_for(pool, r.tasks, 1, xw_tasks, &r);
}
