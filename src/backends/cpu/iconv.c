/* The int8 convolution as an int16 GEMM on AVX-512BW or AVX2 (iconv.h):
 *
 *     for each work item (image, group, block of ICONV_NB output positions):
 *       im2col: x - x_zp as int16 pairs along K, [NB / 32][K / 2][32][2]
 *       for each panel of ICONV_MR output channels (w packed once):
 *         for each 32 positions: the micro-kernel, the whole K in registers
 *         requantize the MR x 32 sums into y
 *
 * The micro-kernel multiplies pairs of int16 (x - x_zp and w - w_zp, each
 * in [-255, 255]) and adds both products to an int32 lane: vpdpwssd with
 * AVX512-VNNI, vpmaddwd + vpaddd without (and on AVX2). Every sum is exact while K <=
 * 32768 (cpu_iconv_fits: 32768 * 255 * 255 < 2^31), so the result is
 * quant.c's plain loop's, bit for bit, at GEMM speed. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/dwconv.h"
#include "backends/cpu/iconv.h"
#include "core/tensor.h"

#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE__)
#pragma GCC optimize("O2") /* (the Debug and sanitizer builds: see gemm.c) */
#endif

#define ICONV_MR 8   /* output channels of a register block */
#define ICONV_NR 32  /* output positions of a register block: two vectors */
#define ICONV_NB 64  /* output positions of a work item */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ICONV_X86 1
#else
#define ICONV_X86 0
#endif

typedef void (*iconv_kernel_fn)(const int16_t *w, const int16_t *x, int64_t k2, int32_t *out);

#if ICONV_X86
/* The sums of ICONV_MR rows of w by 32 columns of x, over k2 pairs, into
 * out[ICONV_MR][32]. */
#define ICONV_KERNEL(name, tgt, step)                                                                             \
    __attribute__((target(tgt))) static void name(const int16_t *w, const int16_t *x, int64_t k2, int32_t *out) { \
        __m512i c[ICONV_MR][2];                                                                                      \
        for (int r = 0; r < ICONV_MR; r++) c[r][0] = c[r][1] = _mm512_setzero_si512();                              \
        for (int64_t q = 0; q < k2; q++) {                                                                           \
            __m512i x0 = _mm512_loadu_si512(x + q * 64), x1 = _mm512_loadu_si512(x + q * 64 + 32);                  \
            const int32_t *wq = (const int32_t *)(const void *)(w + q * 2 * ICONV_MR);                               \
            _Pragma("GCC unroll 8") for (int r = 0; r < ICONV_MR; r++) {                                             \
                __m512i b = _mm512_set1_epi32(wq[r]);                                                                \
                c[r][0] = step(c[r][0], x0, b);                                                                      \
                c[r][1] = step(c[r][1], x1, b);                                                                      \
            }                                                                                                        \
        }                                                                                                            \
        for (int r = 0; r < ICONV_MR; r++) {                                                                         \
            _mm512_storeu_si512(out + r * 32, c[r][0]);                                                              \
            _mm512_storeu_si512(out + r * 32 + 16, c[r][1]);                                                         \
        }                                                                                                            \
    }

#define ICONV_MADD(c, x, b) _mm512_add_epi32((c), _mm512_madd_epi16((x), (b)))
#define ICONV_DPWSSD(c, x, b) _mm512_dpwssd_epi32((c), (x), (b))
ICONV_KERNEL(iconv_kernel_bw, "avx512f,avx512bw", ICONV_MADD)
ICONV_KERNEL(iconv_kernel_vnni, "avx512f,avx512bw,avx512vnni", ICONV_DPWSSD)

/* AVX2 (16 vector registers): the same sums in quarters, 4 rows by 16
 * columns (8 accumulators, two vectors of x, a broadcast of w) each, over
 * the whole K: the panels are read twice, the work is the same. */
__attribute__((target("avx2"))) static void iconv_kernel_avx2(const int16_t *w, const int16_t *x, int64_t k2, int32_t *out) {
    for (int r0 = 0; r0 < ICONV_MR; r0 += 4)
        for (int c0 = 0; c0 < ICONV_NR; c0 += 16) {
            __m256i c[4][2];
            for (int r = 0; r < 4; r++) c[r][0] = c[r][1] = _mm256_setzero_si256();
            const int16_t *xq = x + 2 * c0;
            const int32_t *wq = (const int32_t *)(const void *)w + r0;
            for (int64_t q = 0; q < k2; q++, xq += 2 * ICONV_NR, wq += ICONV_MR) {
                __m256i x0 = _mm256_loadu_si256((const __m256i *)xq), x1 = _mm256_loadu_si256((const __m256i *)(xq + 16));
                _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
                    __m256i b = _mm256_set1_epi32(wq[r]);
                    c[r][0] = _mm256_add_epi32(c[r][0], _mm256_madd_epi16(x0, b));
                    c[r][1] = _mm256_add_epi32(c[r][1], _mm256_madd_epi16(x1, b));
                }
            }
            for (int r = 0; r < 4; r++) {
                _mm256_storeu_si256((__m256i *)(out + (r0 + r) * ICONV_NR + c0), c[r][0]);
                _mm256_storeu_si256((__m256i *)(out + (r0 + r) * ICONV_NR + c0 + 8), c[r][1]);
            }
        }
}
#endif

static pthread_once_t iconv_once = PTHREAD_ONCE_INIT;
static iconv_kernel_fn iconv_kernel;
static bool iconv_vector_im2col; /* AVX2 (SEAM_CPU_ICONV_IM2COL=plain: the scalar gather, for the tests) */

static void iconv_init(void) {
    const char *e = getenv("SEAM_CPU_ICONV");
    if (e && strcmp(e, "0") == 0) return;
#if ICONV_X86
    __builtin_cpu_init();
    bool avx2_only = e && strcmp(e, "avx2") == 0; /* the AVX2 kernel on any CPU (for its tests) */
    if (!avx2_only && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
        iconv_kernel = __builtin_cpu_supports("avx512vnni") ? iconv_kernel_vnni : iconv_kernel_bw;
    else if (__builtin_cpu_supports("avx2"))
        iconv_kernel = iconv_kernel_avx2;
    const char *ic = getenv("SEAM_CPU_ICONV_IM2COL");
    iconv_vector_im2col = iconv_kernel && __builtin_cpu_supports("avx2") && !(ic && strcmp(ic, "plain") == 0);
#endif
}

bool cpu_iconv_available(void) {
    pthread_once(&iconv_once, iconv_init);
    return iconv_kernel != NULL;
}

static inline int32_t get8(const void *p, int32_t dt, int64_t i) {
    return dt == SEAM_DTYPE_UINT8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

cpu_iconv_w *cpu_iconv_pack(const void *w, int32_t wdt, const void *wz, int32_t zdt, int64_t zn, int64_t M,
                            int64_t group, int64_t K, int64_t kprod, bool kn) {
    cpu_iconv_w *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    int64_t Mg = M / group, Cg = kprod > 0 ? K / kprod : K;
    p->M = M, p->group = group, p->K = K, p->K2 = (K + 1) / 2, p->panels = (Mg + ICONV_MR - 1) / ICONV_MR;
    p->kprod = kprod;
    size_t n = (size_t)(group * p->panels * p->K2 * 2 * ICONV_MR);
    p->w = aligned_alloc(64, (n * sizeof(int16_t) + 63) & ~(size_t)63);
    if (!p->w) {
        free(p);
        return NULL;
    }
    int16_t *d = p->w;
    for (int64_t g = 0; g < group; g++)
        for (int64_t pn = 0; pn < p->panels; pn++)
            for (int64_t q = 0; q < p->K2; q++)
                for (int64_t r = 0; r < ICONV_MR; r++)
                    for (int64_t h = 0; h < 2; h++) {
                        int64_t ml = pn * ICONV_MR + r, m = g * Mg + ml, kk = 2 * q + h;
                        int32_t z = wz ? get8(wz, zdt, zn == 1 ? 0 : m) : 0;
                        /* K index kk is kernel element kk / Cg of channel kk % Cg (w's order: channel major) */
                        int64_t src = kn ? kk * M + m : m * K + kk % Cg * kprod + kk / Cg;
                        *d++ = (int16_t)(ml < Mg && kk < K ? get8(w, wdt, src) - z : 0);
                    }
    p->w8 = cpu_iconv8_pack(w, wdt, wz, zdt, zn, M, group, K, kprod, kn);
    return p;
}

void cpu_iconv_free(cpu_iconv_w *w) {
    if (!w) return;
    cpu_iconv8_free(w->w8);
    free(w->w);
    free(w);
}

typedef struct iconv_job {
    const cpu_iconv_args *a;
    int64_t blocks, Mg, chunks;
    bool failed;
    bool vector_requant; /* requant_avx2, else cpu_requant one by one */
} iconv_job;

/* x - x_zp for positions [o0, o0 + ICONV_NB) of image n, group g, as
 * int16 pairs: col[panel][q][lane][h] holds K index 2q + h (c * kprod +
 * kk) of position o0 + panel * 32 + lane; padding, positions past the end
 * and the odd K's last half are 0. Per kernel element, each position's
 * offset in x is found once (off, -1 in the padding), then every channel
 * reads its row of x at those offsets: positions next to each other read
 * x next to each other (stride-1 convs) and write col 4 bytes apart. */
/* One channel's values at the positions' offsets (off < 0: padding, left
 * 0), minus the zero point, into every other int16 of dst's panels. */
#define ICONV_GATHER(name, type)                                                                               \
    static void name(const type *restrict xr, const int64_t *restrict off, int64_t np, int32_t zp,            \
                     int16_t *restrict dst, int64_t K2) {                                                     \
        for (int64_t l0 = 0; l0 < np; l0 += ICONV_NR) {                                                       \
            int16_t *d = dst + (l0 / ICONV_NR) * K2 * 64;                                                     \
            int64_t ln = np - l0 < ICONV_NR ? np - l0 : ICONV_NR;                                             \
            for (int64_t l = 0; l < ln; l++)                                                                   \
                if (off[l0 + l] >= 0) d[l * 2] = (int16_t)(xr[off[l0 + l]] - zp);                             \
        }                                                                                                      \
    }
ICONV_GATHER(gather_u8, uint8_t)
ICONV_GATHER(gather_s8, int8_t)

#if ICONV_X86
/* A pointwise conv's (1x1, stride 1, no padding) columns are rows of x:
 * K indices 2q and 2q + 1 are channels 2q and 2q + 1 at the same
 * positions, next to each other in x. Per pair of channels, 32 bytes of
 * each are widened to int16, less the zero point, and interleaved: 128
 * bytes of col at once instead of 64 scalar gathers. xc: channel 0 of
 * the group at the block's first position; a position past np, or the
 * odd K's last half, is 0 (the caller's memset). */
__attribute__((target("avx2"))) static void im2col_pointwise_avx2(const void *xc, bool s8, int64_t cstride, int64_t Cg,
                                                                 int64_t np, int32_t zp, int16_t *col, int64_t K2) {
    const __m256i vz = _mm256_set1_epi16((int16_t)zp);
    for (int64_t q = 0; q < K2; q++) {
        const uint8_t *r0 = (const uint8_t *)xc + 2 * q * cstride;
        const uint8_t *r1 = 2 * q + 1 < Cg ? r0 + cstride : NULL;
        for (int64_t l0 = 0; l0 < np; l0 += ICONV_NR) {
            int16_t *d = col + (l0 / ICONV_NR) * K2 * 64 + q * 64;
            if (np - l0 < ICONV_NR) { /* the block's last, partial panel */
                for (int64_t l = 0; l < np - l0; l++) {
                    d[2 * l] = (int16_t)((s8 ? (int32_t)(int8_t)r0[l0 + l] : (int32_t)r0[l0 + l]) - zp);
                    if (r1) d[2 * l + 1] = (int16_t)((s8 ? (int32_t)(int8_t)r1[l0 + l] : (int32_t)r1[l0 + l]) - zp);
                }
                continue;
            }
            __m256i b0 = _mm256_loadu_si256((const __m256i *)(r0 + l0));
            __m256i b1 = r1 ? _mm256_loadu_si256((const __m256i *)(r1 + l0)) : _mm256_setzero_si256();
            for (int h = 0; h < 2; h++) { /* positions 16h .. 16h + 15 */
                __m128i c0 = h ? _mm256_extracti128_si256(b0, 1) : _mm256_castsi256_si128(b0);
                __m128i c1 = h ? _mm256_extracti128_si256(b1, 1) : _mm256_castsi256_si128(b1);
                __m256i w0 = s8 ? _mm256_cvtepi8_epi16(c0) : _mm256_cvtepu8_epi16(c0);
                __m256i w1 = s8 ? _mm256_cvtepi8_epi16(c1) : _mm256_cvtepu8_epi16(c1);
                w0 = _mm256_sub_epi16(w0, vz);
                w1 = r1 ? _mm256_sub_epi16(w1, vz) : _mm256_setzero_si256();
                /* (unpack works within 128-bit halves: lo holds positions 0-3 and 8-11, hi 4-7 and 12-15) */
                __m256i lo = _mm256_unpacklo_epi16(w0, w1), hi = _mm256_unpackhi_epi16(w0, w1);
                _mm256_storeu_si256((__m256i *)(d + 32 * h), _mm256_permute2x128_si256(lo, hi, 0x20));
                _mm256_storeu_si256((__m256i *)(d + 32 * h + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
            }
        }
    }
}
#endif

#if ICONV_X86
/* 1x1 images (a MatMul's rows): position l's K values are row l of x, so
 * its pairs are next to each other and the panels want them transposed.
 * Per 8 rows by 16 K values: each row's 16 bytes widened to int16 less
 * the zero point (8 pairs, as int32), an 8 x 8 transpose of the int32
 * pairs, and one 32-byte store per pair index for the 8 positions. K
 * values past the end (and rows past np) are 0. */
__attribute__((target("avx2"))) static void im2col_rows_avx2(const void *x, bool s8, int64_t K, int64_t np, int32_t zp,
                                                            int16_t *col, int64_t K2) {
    const __m256i vz = _mm256_set1_epi16((int16_t)zp);
    const __m256i idx = _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t l0 = 0; l0 < np; l0 += 8) {
        int64_t nl = np - l0 < 8 ? np - l0 : 8;
        int16_t *dbase = col + (l0 / ICONV_NR) * K2 * 64 + (l0 % ICONV_NR) * 2;
        for (int64_t q0 = 0; q0 < K2; q0 += 8) {
            int64_t kk = 2 * q0, nk = K - kk < 16 ? K - kk : 16;
            __m256i keep = _mm256_cmpgt_epi16(_mm256_set1_epi16((int16_t)nk), idx);
            __m256i r[8];
            for (int64_t l = 0; l < 8; l++) {
                if (l >= nl) {
                    r[l] = _mm256_setzero_si256();
                    continue;
                }
                const uint8_t *src = (const uint8_t *)x + (l0 + l) * K + kk;
                __m128i b;
                if (nk == 16) {
                    b = _mm_loadu_si128((const __m128i *)src);
                } else {
                    uint8_t tmp[16] = {0};
                    memcpy(tmp, src, (size_t)nk);
                    b = _mm_loadu_si128((const __m128i *)tmp);
                }
                __m256i w = _mm256_sub_epi16(s8 ? _mm256_cvtepi8_epi16(b) : _mm256_cvtepu8_epi16(b), vz);
                r[l] = _mm256_and_si256(w, keep);
            }
            /* the 8 x 8 transpose of int32: r[q] becomes pair q0 + q of rows l0 .. l0 + 7 */
            __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
            __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
            __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
            __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
            __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
            __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
            __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
            __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
            __m256i o[8] = {_mm256_permute2x128_si256(u0, u4, 0x20), _mm256_permute2x128_si256(u1, u5, 0x20),
                            _mm256_permute2x128_si256(u2, u6, 0x20), _mm256_permute2x128_si256(u3, u7, 0x20),
                            _mm256_permute2x128_si256(u0, u4, 0x31), _mm256_permute2x128_si256(u1, u5, 0x31),
                            _mm256_permute2x128_si256(u2, u6, 0x31), _mm256_permute2x128_si256(u3, u7, 0x31)};
            for (int64_t q = 0; q < 8 && q0 + q < K2; q++) _mm256_storeu_si256((__m256i *)(dbase + (q0 + q) * 64), o[q]);
        }
    }
}
#endif

/* Which aligned chunks of 16 positions read 16 consecutive bytes of x
 * (none in the padding): ok16[l / 16]. Offsets of one kernel element
 * rise with the position, so 15 steps of exactly 1 are the test. */
static void pair_chunks(const int64_t *off, int64_t np, bool *ok16) {
    for (int64_t l = 0; l < ICONV_NB; l += 16) {
        bool ok = l + 16 <= np;
        for (int64_t i = l; ok && i < l + 16; i++) ok = off[i] >= 0 && (i == l || off[i] == off[i - 1] + 1);
        ok16[l / 16] = ok;
    }
}

#if ICONV_X86
/* Channels c and c + 1 (x0, x0 + cstride) at the positions' offsets, less
 * the zero point, into pair dst of every panel: chunks of 16 positions
 * that read consecutive bytes as vectors (widen, interleave), the rest
 * one by one; padding stays 0. */
__attribute__((target("avx2"))) static void gather_pair_avx2(const uint8_t *x0, int64_t cstride, bool s8,
                                                            const int64_t *off, const bool *ok16, int64_t np, int32_t zp,
                                                            int16_t *dst, int64_t K2) {
    const uint8_t *x1 = x0 + cstride;
    const __m256i vz = _mm256_set1_epi16((int16_t)zp);
    for (int64_t l0 = 0; l0 < np; l0 += 16) {
        int16_t *d = dst + (l0 / ICONV_NR) * K2 * 64 + (l0 % ICONV_NR) * 2;
        if (ok16[l0 / 16]) {
            __m128i c0 = _mm_loadu_si128((const __m128i *)(x0 + off[l0])), c1 = _mm_loadu_si128((const __m128i *)(x1 + off[l0]));
            __m256i w0 = _mm256_sub_epi16(s8 ? _mm256_cvtepi8_epi16(c0) : _mm256_cvtepu8_epi16(c0), vz);
            __m256i w1 = _mm256_sub_epi16(s8 ? _mm256_cvtepi8_epi16(c1) : _mm256_cvtepu8_epi16(c1), vz);
            __m256i lo = _mm256_unpacklo_epi16(w0, w1), hi = _mm256_unpackhi_epi16(w0, w1);
            _mm256_storeu_si256((__m256i *)d, _mm256_permute2x128_si256(lo, hi, 0x20));
            _mm256_storeu_si256((__m256i *)(d + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
            continue;
        }
        int64_t l1 = l0 + 16 < np ? l0 + 16 : np;
        for (int64_t l = l0; l < l1; l++) {
            int64_t o = off[l];
            if (o < 0) continue;
            int16_t *e = d + (l - l0) * 2;
            e[0] = (int16_t)((s8 ? (int32_t)(int8_t)x0[o] : (int32_t)x0[o]) - zp);
            e[1] = (int16_t)((s8 ? (int32_t)(int8_t)x1[o] : (int32_t)x1[o]) - zp);
        }
    }
}
#endif

/* Whether the block's columns are rows of x (a pointwise conv, every
 * position of the block in one image): im2col_pointwise_avx2. */
static bool iconv_pointwise(const cpu_iconv_args *a, int64_t p0, int64_t np) {
    const conv_geom *win = a->win;
    if (a->kprod != 1 || a->in_prod != a->out_prod || p0 % a->out_prod + np > a->out_prod) return false;
    for (int32_t d = 0; d < win->n; d++)
        if (win->stride[d] != 1 || win->pad_lo[d] != 0 || win->in[d] != win->out[d]) return false;
    return true;
}

void cpu_iconv_starts(const cpu_iconv_args *a, int64_t p0, int64_t np, int64_t (*start)[CONV_MAX_SPATIAL], int64_t *img) {
    const conv_geom *win = a->win;
    int64_t pos[CONV_MAX_SPATIAL], n = p0 / a->out_prod, rem = p0 % a->out_prod;
    for (int32_t d = win->n - 1; d >= 0; d--) pos[d] = rem % win->out[d], rem /= win->out[d];
    for (int64_t l = 0; l < np; l++) {
        img[l] = n * a->C * a->in_prod; /* (positions of a block may span images: group 1) */
        for (int32_t d = 0; d < win->n; d++) start[l][d] = pos[d] * win->stride[d] - win->pad_lo[d];
        int32_t d = win->n - 1;
        for (; d >= 0 && ++pos[d] == win->out[d]; d--) pos[d] = 0;
        n += d < 0;
    }
}

void cpu_iconv_offsets(const cpu_iconv_args *a, int64_t kk, int64_t (*start)[CONV_MAX_SPATIAL], const int64_t *img,
                       int64_t np, int64_t *off) {
    const conv_geom *win = a->win;
    for (int64_t l = 0; l < np; l++) {
        int64_t o = 0;
        for (int32_t d = 0; d < win->n; d++) {
            int64_t at = start[l][d] + a->koff[kk * win->n + d];
            if (at < 0 || at >= win->in[d]) {
                o = -1;
                break;
            }
            o = o * win->in[d] + at;
        }
        off[l] = o < 0 ? -1 : img[l] + o;
    }
}

static void iconv_im2col(const cpu_iconv_args *a, int64_t g, int64_t p0, int64_t np, int16_t *col, int64_t K2) {
    memset(col, 0, sizeof(int16_t) * (size_t)(ICONV_NB / ICONV_NR * K2 * 64));
#if ICONV_X86
    if (iconv_vector_im2col && a->out_prod == 1 && a->in_prod == 1 && a->kprod == 1 && a->Cg == a->C) {
        im2col_rows_avx2((const char *)a->x + p0 * a->C, a->xdt == SEAM_DTYPE_INT8, a->C, np, a->xzp, col, K2);
        return;
    }
    if (iconv_vector_im2col && iconv_pointwise(a, p0, np)) {
        int64_t n = p0 / a->out_prod, o = p0 % a->out_prod;
        const char *xc = (const char *)a->x + (n * a->C + g * a->Cg) * a->in_prod + o; /* (8-bit x) */
        im2col_pointwise_avx2(xc, a->xdt == SEAM_DTYPE_INT8, a->in_prod, a->Cg, np, a->xzp, col, K2);
        return;
    }
#endif
    int64_t start[ICONV_NB][CONV_MAX_SPATIAL], img[ICONV_NB], off[ICONV_NB];
    cpu_iconv_starts(a, p0, np, start, img);
    const int64_t base = g * a->Cg * a->in_prod;
    const int32_t zp = a->xzp;
    bool ok16[ICONV_NB / 16];
    for (int64_t kk = 0; kk < a->kprod; kk++) {
        cpu_iconv_offsets(a, kk, start, img, np, off);
#if ICONV_X86
        if (iconv_vector_im2col && a->Cg % 2 == 0) { /* every pair is two channels at this kernel element */
            pair_chunks(off, np, ok16);
            for (int64_t c = 0; c < a->Cg; c += 2)
                gather_pair_avx2((const uint8_t *)a->x + base + c * a->in_prod, a->in_prod, a->xdt == SEAM_DTYPE_INT8, off,
                                 ok16, np, zp, col + ((kk * a->Cg + c) >> 1) * 64, K2);
            continue;
        }
#endif
        for (int64_t c = 0; c < a->Cg; c++) {
            int64_t kidx = kk * a->Cg + c; /* (kernel element major: cpu_iconv_w) */
            int16_t *dst = col + (kidx >> 1) * 64 + (kidx & 1);
            if (a->xdt == SEAM_DTYPE_UINT8) gather_u8((const uint8_t *)a->x + base + c * a->in_prod, off, np, zp, dst, K2);
            else gather_s8((const int8_t *)a->x + base + c * a->in_prod, off, np, zp, dst, K2);
        }
    }
}

static inline void put(void *y, int32_t odt, int64_t i, int32_t v) {
    if (odt == SEAM_DTYPE_INT8) ((int8_t *)y)[i] = (int8_t)v;
    else ((uint8_t *)y)[i] = (uint8_t)v;
}

#if ICONV_X86
/* cpu_requant on eight sums s8v into eight 8-bit outputs at y, each lane
 * with its own bias and scale (sum + bias within int32: the caller checks
 * cpu_requant_int32): the int32 add, the float
 * multiply, the clamp to [lo - zp, hi - zp] (max first, so NaN goes to
 * lo), rounding by the default mode (half to even, as nearbyintf), then
 * zp added in int16 and narrowed. */
__attribute__((target("avx2"))) static inline void requant8_core(__m256i s8v, __m256i vb, __m256 vs, int32_t zp, bool s8,
                                                                void *y) {
    __m256 vlo = _mm256_set1_ps((float)((s8 ? -128 : 0) - zp)), vhi = _mm256_set1_ps((float)((s8 ? 127 : 255) - zp));
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s8v, vb)), vs);
    v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);
    __m256i q = _mm256_cvtps_epi32(v);
    __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    h = _mm_add_epi16(h, _mm_set1_epi16((int16_t)zp));
    _mm_storel_epi64((__m128i *)y, s8 ? _mm_packs_epi16(h, h) : _mm_packus_epi16(h, h));
}

/* cpu_requant over n sums of one output row (one bias and scale). */
__attribute__((target("avx2"))) static void requant_avx2(const int32_t *s, int64_t n, int64_t bias, float sc, int32_t zp,
                                                        int32_t odt, void *y) {
    bool s8 = odt == SEAM_DTYPE_INT8;
    __m256i vb = _mm256_set1_epi32((int32_t)bias);
    __m256 vs = _mm256_set1_ps(sc);
    int64_t l = 0;
    for (; l + 8 <= n; l += 8) requant8_core(_mm256_loadu_si256((const __m256i *)(s + l)), vb, vs, zp, s8, (char *)y + l);
    for (; l < n; l++) put(y, odt, l, cpu_requant(s[l], bias, sc, zp, s8));
}
#endif

static void iconv_store(const iconv_job *j, const int32_t *s, int64_t n, int64_t m, int64_t at);
static void iconv_store_rows(const iconv_job *j, const int32_t *s, int64_t npos, int64_t p, int64_t m0, int64_t nm);

/* Work item: (group, block of positions, chunk of output channel panels).
 * With one group a block runs over the positions of all images (a batch
 * of 1x1 outputs, a Gemm unit's rows, fills the kernel's 32 columns);
 * with groups, a block stays in one image. When there are fewer blocks
 * than threads, the panels are split too (each part doing the block's
 * im2col itself). */
static void iconv_items(void *arg, int64_t begin, int64_t end) {
    iconv_job *j = arg;
    const cpu_iconv_args *a = j->a;
    const cpu_iconv_w *w = a->w;
    int64_t K2 = w->K2, M = w->M;
    int16_t *col = aligned_alloc(64, sizeof(int16_t) * (size_t)(ICONV_NB / ICONV_NR * K2 * 64));
    if (!col) {
        __atomic_store_n(&j->failed, true, __ATOMIC_RELAXED);
        return;
    }
    int32_t sums[ICONV_MR * ICONV_NR];
    int64_t per_image = (a->out_prod + ICONV_NB - 1) / ICONV_NB;
    for (int64_t item = begin; item < end; item++) {
        int64_t chunk = item % j->chunks, rest = item / j->chunks, blk = rest % j->blocks, g = rest / j->blocks;
        int64_t p0, np;
        if (w->group == 1) {
            p0 = blk * ICONV_NB;
            np = a->N * a->out_prod - p0 < ICONV_NB ? a->N * a->out_prod - p0 : ICONV_NB;
        } else {
            int64_t n = blk / per_image, o0 = blk % per_image * ICONV_NB;
            p0 = n * a->out_prod + o0;
            np = a->out_prod - o0 < ICONV_NB ? a->out_prod - o0 : ICONV_NB;
        }
        iconv_im2col(a, g, p0, np, col, K2);
        int64_t pc = (w->panels + j->chunks - 1) / j->chunks, pn0 = chunk * pc;
        int64_t pn1 = pn0 + pc < w->panels ? pn0 + pc : w->panels;
        for (int64_t pn = pn0; pn < pn1; pn++) {
            const int16_t *wp = w->w + (g * w->panels + pn) * K2 * 2 * ICONV_MR;
            for (int64_t sub = 0; sub * ICONV_NR < np; sub++) {
                iconv_kernel(wp, col + sub * K2 * 64, K2, sums);
                int64_t q0 = sub * ICONV_NR, q1 = q0 + ICONV_NR < np ? q0 + ICONV_NR : np;
                if (a->out_prod == 1) { /* 1x1 images (a MatMul's rows): the panel's channels are next to each other in y */
                    int64_t m0 = g * j->Mg + pn * ICONV_MR, nm = j->Mg - pn * ICONV_MR;
                    iconv_store_rows(j, sums, q1 - q0, p0 + q0, m0, nm < ICONV_MR ? nm : ICONV_MR);
                    continue;
                }
                for (int64_t q = q0; q < q1;) { /* runs of one image */
                    int64_t p = p0 + q, n = p / a->out_prod, o = p % a->out_prod;
                    int64_t len = a->out_prod - o < q1 - q ? a->out_prod - o : q1 - q;
                    for (int64_t r = 0; r < ICONV_MR; r++) {
                        int64_t ml = pn * ICONV_MR + r, m = g * j->Mg + ml;
                        if (ml >= j->Mg) break;
                        iconv_store(j, sums + r * ICONV_NR + (q - q0), len, m, (n * M + m) * a->out_prod + o);
                    }
                    q += len;
                }
            }
        }
    }
    free(col);
}

/* ---- depthwise (one input and one output channel per group), 2-D ----
 * A GEMM of one row would waste 7 of the kernel's 8 rows: instead, per
 * plane, each kernel element adds its weight times the input row to the
 * int32 sums of an output row, over the columns whose window element is
 * inside the input (a loop the compiler vectorizes for stride 1). */

static int16_t packed_w(const cpu_iconv_w *w, int64_t g, int64_t kidx) {
    return w->w[(g * w->panels * w->K2 + kidx / 2) * 2 * ICONV_MR + (kidx & 1)];
}

/* Requantizes (or copies, for int32) n sums into y at element at. */
static void iconv_store(const iconv_job *j, const int32_t *s, int64_t n, int64_t m, int64_t at) {
    const cpu_iconv_args *a = j->a;
    if (!a->scale) {
        memcpy((int32_t *)a->y + at, s, sizeof(int32_t) * (size_t)n);
        return;
    }
    int64_t bias = a->bias ? a->bias[m] : 0;
    float sc = a->scale[m];
#if ICONV_X86
    if (j->vector_requant && cpu_requant_int32(a->w->K, bias)) {
        requant_avx2(s, n, bias, sc, a->zp, a->odt, (char *)a->y + at);
        return;
    }
#endif
    for (int64_t l = 0; l < n; l++) put(a->y, a->odt, at + l, cpu_requant(s[l], bias, sc, a->zp, a->odt == SEAM_DTYPE_INT8));
}

#if ICONV_X86
/* requant_avx2 across eight output channels (each its own bias and
 * scale) of one position: the same arithmetic, lane by lane. */
__attribute__((target("avx2"))) static void requant8_avx2(const int32_t *v8, const int32_t *bias, const float *sc,
                                                         int32_t zp, int32_t odt, void *y) {
    requant8_core(_mm256_loadu_si256((const __m256i *)v8), _mm256_loadu_si256((const __m256i *)bias), _mm256_loadu_ps(sc),
                  zp, odt == SEAM_DTYPE_INT8, y);
}
#endif

/* The sums of a panel (nm <= ICONV_MR channels from m0) at npos 1x1
 * images from p: output (p + q, m) is y[(p + q) * M + m], so each
 * position's channels are stored together (iconv_store would take one
 * call per element). */
static void iconv_store_rows(const iconv_job *j, const int32_t *s, int64_t npos, int64_t p, int64_t m0, int64_t nm) {
    const cpu_iconv_args *a = j->a;
    int64_t M = a->w->M;
    int64_t bias[ICONV_MR] = {0};
    int32_t bias32[ICONV_MR] = {0}; /* (for the vector's int32 add: where every bias fits, in32) */
    float sc[ICONV_MR] = {0};
    bool in32 = true;
    for (int64_t r = 0; r < nm; r++) {
        bias[r] = a->bias ? a->bias[m0 + r] : 0;
        sc[r] = a->scale ? a->scale[m0 + r] : 0;
        in32 = in32 && cpu_requant_int32(a->w->K, bias[r]);
        bias32[r] = in32 ? (int32_t)bias[r] : 0;
    }
    for (int64_t q = 0; q < npos; q++) {
        int64_t at = (p + q) * M + m0;
        int32_t v[ICONV_MR];
        for (int64_t r = 0; r < ICONV_MR; r++) v[r] = s[r * ICONV_NR + q];
        if (!a->scale) {
            memcpy((int32_t *)a->y + at, v, sizeof(int32_t) * (size_t)nm);
            continue;
        }
#if ICONV_X86
        if (j->vector_requant && nm == ICONV_MR && in32) {
            requant8_avx2(v, bias32, sc, a->zp, a->odt, (char *)a->y + at);
            continue;
        }
#endif
        for (int64_t r = 0; r < nm; r++) put(a->y, a->odt, at + r, cpu_requant(v[r], bias[r], sc[r], a->zp, a->odt == SEAM_DTYPE_INT8));
    }
}

#define ICONV_DW_ROW(name, type)                                                                               \
    static void name(const type *restrict xr, int32_t *restrict acc, int64_t lo, int64_t hi, int64_t sw,     \
                     int64_t iw0, int32_t zp, int32_t wv) {                                                   \
        if (sw == 1)                                                                                           \
            for (int64_t ow = lo; ow < hi; ow++) acc[ow] += ((int32_t)xr[iw0 + ow] - zp) * wv;                \
        else                                                                                                   \
            for (int64_t ow = lo; ow < hi; ow++) acc[ow] += ((int32_t)xr[iw0 + ow * sw] - zp) * wv;           \
    }
ICONV_DW_ROW(dw_row_u8, uint8_t)
ICONV_DW_ROW(dw_row_s8, int8_t)

static void iconv_dw_planes(void *arg, int64_t begin, int64_t end) {
    iconv_job *j = arg;
    const cpu_iconv_args *a = j->a;
    const conv_geom *win = a->win;
    int64_t OH = win->out[0], OW = win->out[1], IH = win->in[0], IW = win->in[1];
    int32_t *acc = malloc(sizeof(int32_t) * (size_t)(OH * OW));
    if (!acc) {
        __atomic_store_n(&j->failed, true, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t plane = begin; plane < end; plane++) {
        int64_t c = plane % a->C;
        memset(acc, 0, sizeof(int32_t) * (size_t)(OH * OW));
        for (int64_t kk = 0; kk < a->kprod; kk++) {
            int32_t wv = packed_w(a->w, c, kk);
            int64_t kh = a->koff[kk * 2], kw = a->koff[kk * 2 + 1];
            /* the columns ow whose input column ow * sw + kw - pad_w is inside */
            int64_t iw0 = kw - win->pad_lo[1], sw = win->stride[1];
            int64_t lo = iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw, hi = IW - 1 - iw0 >= 0 ? (IW - 1 - iw0) / sw + 1 : 0;
            hi = hi < OW ? hi : OW;
            if (!wv || lo >= hi) continue;
            for (int64_t oh = 0; oh < OH; oh++) {
                int64_t ih = oh * win->stride[0] + kh - win->pad_lo[0];
                if (ih < 0 || ih >= IH) continue;
                int64_t row = plane * a->in_prod + ih * IW;
                if (a->xdt == SEAM_DTYPE_UINT8) dw_row_u8((const uint8_t *)a->x + row, acc + oh * OW, lo, hi, sw, iw0, a->xzp, wv);
                else dw_row_s8((const int8_t *)a->x + row, acc + oh * OW, lo, hi, sw, iw0, a->xzp, wv);
            }
        }
        iconv_store(j, acc, OH * OW, c, plane * a->out_prod);
    }
    free(acc);
}

/* The float path below sums each window's products in float: exact, as
 * each is at most 255 * 255 and a window holds at most DW_MAX_TAPS of
 * them, below 2^24. */
#define DW_MAX_TAPS 256

/* SEAM_CPU_IDW=planes keeps every plane on the int32 planes (for the
 * tests: both paths must give the same bits). */
static bool dw_float_on(void) {
    static int on = -1;
    if (__atomic_load_n(&on, __ATOMIC_RELAXED) < 0) {
        const char *e = getenv("SEAM_CPU_IDW");
        __atomic_store_n(&on, !(e && strcmp(e, "planes") == 0), __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&on, __ATOMIC_RELAXED) != 0;
}

/* ---- depthwise, 2-D: the float kernel, exactly ----
 * The planes above add int32 rows with a loop the compiler vectorizes
 * poorly (a multiply of int32 lanes, strided reads for stride 2): 4x the
 * float depthwise kernel's time (dwconv.c) on mobilenet's planes; on
 * planes of a few pixels they spend their time on loop control (960
 * planes of 2 x 2 took 74 us), where the float kernel takes 16 channels
 * at once (its lanes). A pixel-major loop of 8 channels of this file's
 * own (until 2026-11-29) took 136-140 us for mobilenet_v2's 960 x 7 x 7
 * convs against the float kernel's 92-94 (2-core AVX2 EPYC). Here a
 * block of DW_FLOAT_CH channels of one image is converted to float (x -
 * x_zp; the weights w - w_zp) and goes through that kernel: every product
 * is an integer of at most 255 * 255 and a window holds at most
 * DW_MAX_TAPS of them, so every partial sum is an integer below 2^24 and
 * exact in float whatever the order; the sums then go through iconv_store
 * as the planes' do: the same bits. */
#define DW_FLOAT_CH 16

typedef struct dw_float_job {
    iconv_job *j;
    cpu_dw_plan full, last; /* blocks of DW_FLOAT_CH channels; the last block, if smaller */
    int64_t blocks, last_cnt;
    const float *wf;        /* [C][kprod]: w - w_zp */
} dw_float_job;

static bool dw_float_plans(dw_float_job *d, const cpu_iconv_args *a) {
    int64_t C = a->C;
    d->blocks = (C + DW_FLOAT_CH - 1) / DW_FLOAT_CH;
    d->last_cnt = C - (d->blocks - 1) * DW_FLOAT_CH;
    int64_t full = C < DW_FLOAT_CH ? C : DW_FLOAT_CH;
    return a->kprod <= DW_MAX_TAPS && cpu_dw_plan_make(&d->full, a->win, 1, full, full, 1) &&
           cpu_dw_plan_make(&d->last, a->win, 1, d->last_cnt, d->last_cnt, 1);
}

CPU_HOT static void dw_to_float(const void *x, int32_t xdt, int32_t zp, int64_t n, float *out) {
    if (xdt == SEAM_DTYPE_UINT8)
        for (int64_t i = 0; i < n; i++) out[i] = (float)(((const uint8_t *)x)[i] - zp);
    else
        for (int64_t i = 0; i < n; i++) out[i] = (float)(((const int8_t *)x)[i] - zp);
}

CPU_HOT static void dw_to_int(const float *s, int64_t n, int32_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = (int32_t)s[i];
}

static void iconv_dw_float(void *arg, int64_t begin, int64_t end) {
    dw_float_job *d = arg;
    const cpu_iconv_args *a = d->j->a;
    int64_t P = a->in_prod, Q = a->out_prod, full = d->full.C;
    size_t scratch = cpu_dw_scratch(&d->full) > cpu_dw_scratch(&d->last) ? cpu_dw_scratch(&d->full) : cpu_dw_scratch(&d->last);
    float *xf = malloc(sizeof(float) * (size_t)(full * (P + Q))), *yf = xf ? xf + full * P : NULL;
    int32_t *sums = malloc(sizeof(int32_t) * (size_t)Q);
    void *sc = malloc(scratch);
    if (!xf || !sums || !sc) {
        free(xf), free(sums), free(sc);
        __atomic_store_n(&d->j->failed, true, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t item = begin; item < end; item++) {
        int64_t n = item / d->blocks, b = item % d->blocks, c0 = b * DW_FLOAT_CH;
        bool last = b == d->blocks - 1;
        int64_t cnt = last ? d->last_cnt : full;
        dw_to_float((const char *)a->x + (n * a->C + c0) * P /* (8-bit x) */, a->xdt, a->xzp, cnt * P, xf);
        cpu_dw_run(last ? &d->last : &d->full, NULL, xf, d->wf + c0 * a->kprod, NULL, NULL, yf, sc);
        for (int64_t l = 0; l < cnt; l++) {
            dw_to_int(yf + l * Q, Q, sums);
            iconv_store(d->j, sums, Q, c0 + l, (n * a->C + c0 + l) * a->out_prod);
        }
    }
    free(xf), free(sums), free(sc);
}

/* ---- a few rows (a MatMul or Gemm of batch 1..ICONV_ROWS_MAX) ----
 * The GEMM above fills 32 columns of positions: with one row, 31 of 32
 * products are padding, and its int32 sums limit K to 32768 (a classifier
 * over a flattened feature map has K = 100352). Here each panel of the
 * packed weight is read once for every row: per pair q, the panel's 16
 * int16 (8 output channels x 2 K indices) times the row's pair,
 * broadcast, is one vpmaddwd giving the 8 channels' partial sums. The
 * int32 sums are moved into int64 every ICONV_FLUSH pairs, so any K is
 * exact. Work items are (panel, slice of K); the slices' sums are added
 * in a fixed order, so the result does not depend on the thread count. */
#define ICONV_FLUSH 16384 /* pairs: 16384 * 2 * 255 * 255 < 2^31 */
#define ICONV_KSLICE 8192 /* pairs of K per work item, when the panels are too few to share out */

#if ICONV_X86
__attribute__((target("avx2"))) static void iconv_rows_avx2(const int16_t *w, const int16_t *x, int64_t rows, int64_t K2x,
                                                            int64_t q0, int64_t q1, int64_t *out) {
    for (int64_t r0 = 0; r0 < rows; r0 += 4) {
        int64_t nr = rows - r0 < 4 ? rows - r0 : 4;
        /* (rows past the last repeat it: their sums are not kept) */
        const int16_t *x0 = x + r0 * 2 * K2x, *x1 = x0 + (nr > 1 ? 2 * K2x : 0), *x2 = x0 + (nr > 2 ? 4 * K2x : 0),
                      *x3 = x0 + (nr > 3 ? 6 * K2x : 0);
        for (int64_t f0 = q0; f0 < q1; f0 += ICONV_FLUSH) {
            int64_t f1 = f0 + ICONV_FLUSH < q1 ? f0 + ICONV_FLUSH : q1;
            __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
            for (int64_t q = f0; q < f1; q++) {
                __m256i wv = _mm256_load_si256((const __m256i *)(w + q * 2 * ICONV_MR));
                int32_t p0, p1, p2, p3; /* (the row's pair q, as one int32 to broadcast) */
                memcpy(&p0, x0 + 2 * q, 4), memcpy(&p1, x1 + 2 * q, 4), memcpy(&p2, x2 + 2 * q, 4), memcpy(&p3, x3 + 2 * q, 4);
                c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(wv, _mm256_set1_epi32(p0)));
                c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(wv, _mm256_set1_epi32(p1)));
                c2 = _mm256_add_epi32(c2, _mm256_madd_epi16(wv, _mm256_set1_epi32(p2)));
                c3 = _mm256_add_epi32(c3, _mm256_madd_epi16(wv, _mm256_set1_epi32(p3)));
            }
            int32_t s[4][ICONV_MR];
            _mm256_storeu_si256((__m256i *)s[0], c0);
            _mm256_storeu_si256((__m256i *)s[1], c1);
            _mm256_storeu_si256((__m256i *)s[2], c2);
            _mm256_storeu_si256((__m256i *)s[3], c3);
            for (int64_t r = 0; r < nr; r++)
                for (int m = 0; m < ICONV_MR; m++) out[(r0 + r) * ICONV_MR + m] += s[r][m];
        }
    }
}
#endif

typedef struct iconv_rows_job {
    const cpu_iconv_args *a;
    const int16_t *x;   /* the rows, x - x_zp, K2 pairs each */
    int64_t rows, slices, per_slice;
    int64_t *part;      /* [panel][slice][rows][ICONV_MR] */
} iconv_rows_job;

static void iconv_rows_items(void *arg, int64_t begin, int64_t end) {
    iconv_rows_job *j = arg;
    const cpu_iconv_w *w = j->a->w;
    for (int64_t item = begin; item < end; item++) {
        int64_t pn = item / j->slices, sl = item % j->slices;
        int64_t q0 = sl * j->per_slice, q1 = q0 + j->per_slice < w->K2 ? q0 + j->per_slice : w->K2;
        int64_t *out = j->part + item * j->rows * ICONV_MR;
        memset(out, 0, sizeof(int64_t) * (size_t)(j->rows * ICONV_MR));
#if ICONV_X86 /* (the path exists only where AVX2 does: cpu_iconv_available) */
        iconv_rows_avx2(w->w + pn * w->K2 * 2 * ICONV_MR, j->x, j->rows, w->K2, q0, q1, out);
#else
        (void)pn, (void)q1, (void)out;
#endif
    }
}

/* (a conv of a few output positions, ResNet's last layers at a small
 * input: 2 x 2 of 32 columns was an eighth of the GEMM's products, 13
 * GOP/s; each position is a row of its window's values here) */
bool cpu_iconv_rows_fits(const cpu_iconv_args *a) {
    return a->w->group == 1 && a->N * a->out_prod <= ICONV_ROWS_MAX;
}

/* Row r (image r / out_prod, output position r % out_prod) of x - x_zp in
 * the packed weight's K order (kernel element major: index e * Cg + c),
 * 0 where the window reads padding. */
static void rows_im2col(const cpu_iconv_args *a, int64_t r, int16_t *d) {
    const conv_geom *win = a->win;
    int64_t n = r / a->out_prod, o = r % a->out_prod, Cg = a->Cg, od[CONV_MAX_SPATIAL];
    for (int32_t k = win->n - 1; k >= 0; k--) od[k] = o % win->out[k], o /= win->out[k];
    for (int64_t e = 0; e < a->kprod; e++) {
        int64_t off = 0;
        bool inside = true;
        for (int32_t k = 0; k < win->n && inside; k++) {
            int64_t at = od[k] * win->stride[k] - win->pad_lo[k] + a->koff[e * win->n + k];
            inside = at >= 0 && at < win->in[k];
            off = off * win->in[k] + at;
        }
        for (int64_t c = 0; c < Cg; c++)
            d[e * Cg + c] = !inside ? 0 : (int16_t)(get8(a->x, a->xdt, (n * a->C + c) * a->in_prod + off) - a->xzp);
    }
}

static bool iconv_rows_run(seam_pool *pool, const cpu_iconv_args *a) {
    const cpu_iconv_w *w = a->w;
    int64_t rows = a->N * a->out_prod, K = w->K, K2 = w->K2, M = w->M, P = a->out_prod;
    iconv_rows_job j = {.a = a, .rows = rows};
    int64_t want = 2 * (int64_t)(pool ? seam_pool_threads(pool) : 1);
    j.slices = w->panels >= want ? 1 : (want + w->panels - 1) / w->panels;
    int64_t most = (K2 + ICONV_KSLICE - 1) / ICONV_KSLICE; /* slices of at least ICONV_KSLICE pairs */
    j.slices = j.slices < most ? j.slices : most < 1 ? 1 : most;
    j.per_slice = (K2 + j.slices - 1) / j.slices;
    int16_t *x16 = malloc(sizeof(int16_t) * (size_t)(rows * K2 * 2));
    j.part = malloc(sizeof(int64_t) * (size_t)(w->panels * j.slices * rows * ICONV_MR));
    if (!x16 || !j.part) return free(x16), free(j.part), false;
    for (int64_t r = 0; r < rows; r++) {
        int16_t *d = x16 + r * K2 * 2;
        if (a->kprod != 1 || P != 1) rows_im2col(a, r, d);
        else if (a->xdt == SEAM_DTYPE_UINT8)
            for (int64_t p = 0; p < K; p++) d[p] = (int16_t)(((const uint8_t *)a->x)[r * K + p] - a->xzp);
        else
            for (int64_t p = 0; p < K; p++) d[p] = (int16_t)(((const int8_t *)a->x)[r * K + p] - a->xzp);
        if (K & 1) d[K] = 0;
    }
    j.x = x16;
    seam_parallel_for(pool, w->panels * j.slices, 1, iconv_rows_items, &j);
    /* the slices in order, then y[r, m] as iconv_store would write it */
    for (int64_t pn = 0; pn < w->panels; pn++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t l = 0; l < ICONV_MR && pn * ICONV_MR + l < M; l++) {
                int64_t m = pn * ICONV_MR + l, t = 0;
                for (int64_t sl = 0; sl < j.slices; sl++) t += j.part[((pn * j.slices + sl) * rows + r) * ICONV_MR + l];
                int64_t at = (r / P * M + m) * P + r % P; /* y[n, m, o] */
                if (!a->scale) {
                    ((int32_t *)a->y)[at] = (int32_t)(uint32_t)(uint64_t)t; /* (wraps, as int32 output does) */
                    continue;
                }
                put(a->y, a->odt, at, cpu_requant(t, a->bias ? a->bias[m] : 0, a->scale[m], a->zp, a->odt == SEAM_DTYPE_INT8));
            }
    free(x16), free(j.part);
    return true;
}

bool cpu_iconv_run(seam_pool *pool, const cpu_iconv_args *a) {
    const cpu_iconv_w *w = a->w;
    int64_t blocks = w->group == 1 ? (a->N * a->out_prod + ICONV_NB - 1) / ICONV_NB
                                   : a->N * ((a->out_prod + ICONV_NB - 1) / ICONV_NB);
    int64_t want = 2 * (int64_t)(pool ? seam_pool_threads(pool) : 1), items = blocks * w->group;
    int64_t chunks = items >= want ? 1 : (want + items - 1) / items;
    chunks = chunks < w->panels ? chunks : w->panels;
    iconv_job j = {a, blocks, w->M / w->group, chunks < 1 ? 1 : chunks, false, false};
#if ICONV_X86
    j.vector_requant = __builtin_cpu_supports("avx2"); /* (every CPU the kernels run on) */
#endif
    if (cpu_iconv_rows_fits(a)) return iconv_rows_run(pool, a);
    dw_float_job df = {.j = &j};
    bool dw = a->win->n == 2 && a->Cg == 1 && a->w->group == a->C && a->w->M == a->C;
    if (dw && dw_float_on() && dw_float_plans(&df, a)) {
        float *wf = malloc(sizeof(float) * (size_t)(a->C * a->kprod));
        if (!wf) return false;
        for (int64_t c = 0; c < a->C; c++)
            for (int64_t kk = 0; kk < a->kprod; kk++) wf[c * a->kprod + kk] = (float)packed_w(a->w, c, kk);
        df.wf = wf;
        seam_parallel_for(pool, a->N * df.blocks, 1, iconv_dw_float, &df);
        free(wf);
    } else if (dw)
        seam_parallel_for(pool, a->N * a->C, 1, iconv_dw_planes, &j);
    else if (w->w8)
        return cpu_iconv8_run(pool, a, w->w8);
    else
        seam_parallel_for(pool, j.blocks * w->group * j.chunks, 1, iconv_items, &j);
    return !__atomic_load_n(&j.failed, __ATOMIC_RELAXED);
}
