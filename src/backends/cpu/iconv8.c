/* The int8 convolution as a u8 x s8 GEMM (iconv.h): AMX tiles where the
 * CPU and the kernel allow them, AVX512-VNNI's vpdpbusd where not.
 *
 * iconv.c's int16 GEMM multiplies x - x_zp by w - w_zp, two products per
 * int32 lane. Here the input goes in as it is, as uint8 (an int8 input as
 * x + 128, its zero point with it), the weight as int8 (a uint8 weight as
 * w - 128, its zero point with it), four products per lane (vpdpbusd;
 * tdpbsud on AMX tiles, sixteen rows of sixty-four at once), and the zero
 * points come after, per output channel m and position p:
 *
 *     sum (x - x_zp)(w - w_zp) = sum x w - w_zp sum x - x_zp sum w + K x_zp w_zp
 *
 * The last two terms go into each channel's bias; w_zp sum x (the column
 * sums of the block's im2col, only where some w_zp is not 0) is taken off
 * each sum before it is requantized. The padding holds x_zp: its
 * products cancel in the same sum. Every sum is exact: a product is at
 * most 255 * 128 and K at most 32768 (cpu_iconv_fits), so the raw sums
 * stay in int32, and the corrections are added in int32 lanes that wrap
 * (or in int64) to a result that is in int32 wherever the vector path is
 * taken (cpu_requant_int32): the int16 GEMM's result, bit for bit.
 *
 *     for each work item (group, block of I8_NB positions, slabs of channels):
 *       im2col: the raw input as quads along K, col[K / 4][I8_NB][4]
 *       the column sums, where a weight zero point is not 0
 *       for each slab: the kernel's sums [channels][I8_NB], then
 *       requantized into y (AVX-512, the arithmetic of cpu_requant) */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/iconv.h"
#include "core/tensor.h"

#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE__)
#pragma GCC optimize("O2") /* (the Debug and sanitizer builds: see gemm.c) */
#endif

#define I8_NB 64       /* output positions of a work item */
#define I8_SLAB_AMX 32 /* output channels of an AMX step: two A tiles */
#define I8_MR 8        /* output channels of a VNNI register block */

#if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 11 || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define I8_X86 1
#else
#define I8_X86 0
#endif

struct cpu_iconv8_w {
    int64_t M, group, Mg, K, K4; /* K4: quads per channel (AMX: a multiple of 16) */
    int64_t slabs;               /* per group: AMX steps of 32 channels, or VNNI panels of 8 */
    int64_t slab;                /* channels of a slab */
    bool amx;
    int8_t *w;     /* AMX: [group][Mgp][K4 * 4], Mgp = Mg rounded up to 16; VNNI: [group][panel][K4][I8_MR][4] */
    int32_t *wsum; /* [M]: sum over K of w (as int8) */
    int32_t *wz;   /* [M]: w's zero point (as int8) */
    bool has_wz;   /* whether any is not 0 */
};

static pthread_once_t i8_once = PTHREAD_ONCE_INIT;
static int i8_kind; /* 0: none; 1: AVX512-VNNI; 2: AMX */
static bool i8_vector_im2col;

#if I8_X86
/* Whether the kernel lets this process use the AMX tile data (Linux asks
 * for it once per process; oneDNN does the same). */
static bool amx_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25))) return false; /* AMX-TILE, AMX-INT8 */
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;                                /* OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
#ifdef SYS_arch_prctl
    if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) != 0) return false;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & (3u << 17)) == (3u << 17); /* XTILECFG, XTILEDATA enabled */
#else
    return false;
#endif
}
#endif

static void i8_init(void) {
#if I8_X86
    const char *e = getenv("SEAM_CPU_ICONV8"), *ic = getenv("SEAM_CPU_ICONV"), *im = getenv("SEAM_CPU_ICONV_IM2COL");
    if ((e && strcmp(e, "0") == 0) || (ic && (strcmp(ic, "0") == 0 || strcmp(ic, "avx2") == 0))) return;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl"))
        return;
    if (!(e && strcmp(e, "vnni") == 0) && amx_usable()) i8_kind = 2;
    else if (__builtin_cpu_supports("avx512vnni")) i8_kind = 1;
    i8_vector_im2col = !(im && strcmp(im, "plain") == 0);
#endif
}

const char *cpu_iconv8_kind(void) {
    pthread_once(&i8_once, i8_init);
    return i8_kind == 2 ? "amx" : i8_kind == 1 ? "avx512_vnni" : NULL;
}

static inline int32_t get8(const void *p, int32_t dt, int64_t i) {
    return dt == SEAM_DTYPE_UINT8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

cpu_iconv8_w *cpu_iconv8_pack(const void *w, int32_t wdt, const void *wz, int32_t zdt, int64_t zn, int64_t M,
                              int64_t group, int64_t K, int64_t kprod, bool kn) {
    int64_t Mg = M / group, Cg = kprod > 0 ? K / kprod : K;
    /* (one channel per group: the depthwise paths of iconv.c) */
    if (!cpu_iconv8_kind() || !cpu_iconv_fits(K) || Mg == 1) return NULL;
    bool amx = i8_kind == 2;
    int64_t K4 = amx ? (K + 63) / 64 * 16 : (K + 3) / 4;
    int64_t slab = amx ? I8_SLAB_AMX : I8_MR, rows = amx ? (Mg + 15) / 16 * 16 : (Mg + I8_MR - 1) / I8_MR * I8_MR;
    const int32_t shift = wdt == SEAM_DTYPE_UINT8 ? 128 : 0; /* (a uint8 weight as int8) */
    cpu_iconv8_w *p = calloc(1, sizeof(*p));
    size_t n = (size_t)(group * rows * K4 * 4);
    if (!p) return NULL;
    p->M = M, p->group = group, p->Mg = Mg, p->K = K, p->K4 = K4, p->amx = amx, p->slab = slab;
    p->slabs = (Mg + slab - 1) / slab;
    p->w = aligned_alloc(64, (n + 63) & ~(size_t)63);
    p->wsum = calloc((size_t)M, sizeof(int32_t));
    p->wz = calloc((size_t)M, sizeof(int32_t));
    if (!p->w || !p->wsum || !p->wz) {
        cpu_iconv8_free(p);
        return NULL;
    }
    memset(p->w, 0, n);
    for (int64_t g = 0; g < group; g++)
        for (int64_t ml = 0; ml < Mg; ml++) {
            int64_t m = g * Mg + ml;
            int32_t z = (wz ? get8(wz, zdt, zn == 1 ? 0 : m) : 0) - shift, sum = 0;
            for (int64_t kk = 0; kk < K; kk++) {
                /* K index kk is kernel element kk / Cg of channel kk % Cg (as cpu_iconv_w) */
                int64_t src = kn ? kk * M + m : m * K + kk % Cg * kprod + kk / Cg;
                int32_t v = get8(w, wdt, src) - shift;
                sum += v;
                int64_t at = amx ? (g * rows + ml) * K4 * 4 + kk
                                 : (((g * rows / I8_MR + ml / I8_MR) * K4 + kk / 4) * I8_MR + ml % I8_MR) * 4 + kk % 4;
                p->w[at] = (int8_t)v;
            }
            p->wsum[m] = sum, p->wz[m] = z;
            p->has_wz = p->has_wz || z != 0;
        }
    return p;
}

void cpu_iconv8_free(cpu_iconv8_w *w) {
    if (!w) return;
    free(w->w);
    free(w->wsum);
    free(w->wz);
    free(w);
}

#if I8_X86
/* ---- kernels: sums[r][l] (row stride I8_NB) for a slab's channels r by
 * the block's positions l, over K4 quads of col ([K4][I8_NB][4]) ---- */

typedef struct amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

/* tmm0-3: sums (16 channels x 16 positions each), tmm4-5: the slab's two
 * halves of 16 channels (A: 16 rows of 64 bytes of K), tmm6-7: 16
 * positions each (B: 16 quads of K by 16 positions of 4 bytes). */
/* (a constant in memory: ldtilecfg reads all 64 bytes, which an asm
 * operand on a local would not tell the compiler) */
static const amx_cfg amx_config = {.palette = 1,
                                   .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
                                   .rows = {16, 16, 16, 16, 16, 16, 16, 16}};

__attribute__((target("amx-tile,amx-int8"))) static void amx_begin(void) { _tile_loadconfig(&amx_config); }

__attribute__((target("amx-tile,amx-int8"))) static void amx_end(void) { _tile_release(); }

/* halves: 1 or 2 (16 or 32 channels of w, rows K4 * 4 bytes apart). */
__attribute__((target("amx-tile,amx-int8"))) static void amx_slab(const int8_t *w, int64_t K4, int halves,
                                                                  const uint8_t *col, int64_t np, int32_t *sums) {
    const int64_t ws = K4 * 4, cs = I8_NB * 4;
    for (int64_t h = 0; h * 32 < np; h++) {
        const uint8_t *b = col + h * 128;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        if (halves == 2)
            for (int64_t k = 0; k < K4; k += 16) {
                _tile_loadd(6, b + k * cs, cs);
                _tile_loadd(7, b + k * cs + 64, cs);
                _tile_loadd(4, w + k * 4, ws);
                _tile_loadd(5, w + 16 * ws + k * 4, ws);
                _tile_dpbsud(0, 4, 6);
                _tile_dpbsud(1, 4, 7);
                _tile_dpbsud(2, 5, 6);
                _tile_dpbsud(3, 5, 7);
            }
        else
            for (int64_t k = 0; k < K4; k += 16) {
                _tile_loadd(6, b + k * cs, cs);
                _tile_loadd(7, b + k * cs + 64, cs);
                _tile_loadd(4, w + k * 4, ws);
                _tile_dpbsud(0, 4, 6);
                _tile_dpbsud(1, 4, 7);
            }
        int32_t *s = sums + h * 32;
        _tile_stored(0, s, I8_NB * 4);
        _tile_stored(1, s + 16, I8_NB * 4);
        if (halves == 2) {
            _tile_stored(2, s + 16 * I8_NB, I8_NB * 4);
            _tile_stored(3, s + 16 * I8_NB + 16, I8_NB * 4);
        }
    }
}

/* I8_MR channels by 32 positions per pass: sixteen accumulators, two
 * vectors of x (16 positions of 4 bytes), a broadcast of 4 bytes of w'. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void vnni_panel(const int8_t *w, int64_t K4,
                                                                               const uint8_t *col, int64_t np,
                                                                               int32_t *sums) {
    for (int64_t h = 0; h * 32 < np; h++) {
        __m512i c[I8_MR][2];
        for (int r = 0; r < I8_MR; r++) c[r][0] = c[r][1] = _mm512_setzero_si512();
        const uint8_t *x = col + h * 128;
        for (int64_t q = 0; q < K4; q++) {
            __m512i x0 = _mm512_loadu_si512(x + q * I8_NB * 4), x1 = _mm512_loadu_si512(x + q * I8_NB * 4 + 64);
            const int32_t *wq = (const int32_t *)(const void *)(w + q * 4 * I8_MR);
            _Pragma("GCC unroll 8") for (int r = 0; r < I8_MR; r++) {
                __m512i b = _mm512_set1_epi32(wq[r]);
                c[r][0] = _mm512_dpbusd_epi32(c[r][0], x0, b);
                c[r][1] = _mm512_dpbusd_epi32(c[r][1], x1, b);
            }
        }
        for (int r = 0; r < I8_MR; r++) {
            _mm512_storeu_si512(sums + r * I8_NB + h * 32, c[r][0]);
            _mm512_storeu_si512(sums + r * I8_NB + h * 32 + 16, c[r][1]);
        }
    }
}

/* Four channels (x0, cstride apart) at 16 positions whose offsets are
 * consecutive from o: each 16 bytes, flipped (int8 to uint8), interleaved
 * into 16 quads at d. */
__attribute__((target("avx512f,avx512bw"))) static inline void quad16_of(__m128i c0, __m128i c1, __m128i c2, __m128i c3,
                                                                         uint8_t flip, uint8_t *d) {
    const __m128i f = _mm_set1_epi8((char)flip);
    c0 = _mm_xor_si128(c0, f), c1 = _mm_xor_si128(c1, f), c2 = _mm_xor_si128(c2, f), c3 = _mm_xor_si128(c3, f);
    __m128i a0 = _mm_unpacklo_epi8(c0, c1), a1 = _mm_unpackhi_epi8(c0, c1);
    __m128i b0 = _mm_unpacklo_epi8(c2, c3), b1 = _mm_unpackhi_epi8(c2, c3);
    _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(a0, b0));
    _mm_storeu_si128((__m128i *)(d + 16), _mm_unpackhi_epi16(a0, b0));
    _mm_storeu_si128((__m128i *)(d + 32), _mm_unpacklo_epi16(a1, b1));
    _mm_storeu_si128((__m128i *)(d + 48), _mm_unpackhi_epi16(a1, b1));
}

__attribute__((target("avx512f,avx512bw"))) static inline void quad16(const uint8_t *x0, int64_t cstride, int64_t o,
                                                                      uint8_t flip, uint8_t *d) {
    quad16_of(_mm_loadu_si128((const __m128i *)(x0 + o)), _mm_loadu_si128((const __m128i *)(x0 + cstride + o)),
              _mm_loadu_si128((const __m128i *)(x0 + 2 * cstride + o)),
              _mm_loadu_si128((const __m128i *)(x0 + 3 * cstride + o)), flip, d);
}

/* The even bytes of the 31 from p (a stride-2 conv's 16 positions; the
 * 32nd byte, which would be past the last one read, is not loaded). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m128i even16(const uint8_t *p) {
    const __m256i pick = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1, 0, 2, 4, 6, 8, 10,
                                          12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
    __m256i v = _mm256_shuffle_epi8(_mm256_maskz_loadu_epi8(0x7fffffffu, p), pick);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(v, 0x08)); /* qwords 0 and 2 */
}

/* quad16 for positions whose offsets step by 2 from o. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline void quad16_s2(const uint8_t *x0, int64_t cstride,
                                                                                 int64_t o, uint8_t flip, uint8_t *d) {
    quad16_of(even16(x0 + o), even16(x0 + cstride + o), even16(x0 + 2 * cstride + o), even16(x0 + 3 * cstride + o),
              flip, d);
}

#endif

typedef struct i8_job {
    const cpu_iconv_args *a;
    const cpu_iconv8_w *w;
    int64_t blocks, chunks, per_image;
    int64_t *bias;   /* [M]: the bias less x_zp sum w, plus K x_zp w_zp (x_zp flipped with x) */
    int32_t *bias32; /* [M]: the same, wrapped to int32 */
    bool *vec;       /* [M]: whether the sum plus the bias stays in int32 (cpu_requant_int32): the vector's add */
    bool all_vec;
    uint8_t xz, flip;
    bool failed;
} i8_job;

/* Whether the block's columns are rows of x: a pointwise conv (1x1,
 * stride 1, no padding), every position in one image. */
static bool pointwise(const cpu_iconv_args *a, int64_t p0, int64_t np) {
    const conv_geom *win = a->win;
    if (a->kprod != 1 || a->in_prod != a->out_prod || p0 % a->out_prod + np > a->out_prod) return false;
    for (int32_t d = 0; d < win->n; d++)
        if (win->stride[d] != 1 || win->pad_lo[d] != 0 || win->in[d] != win->out[d]) return false;
    return true;
}

/* The block's columns: col[q][l][b] = x at K index 4q + b of position
 * p0 + l, flipped to uint8; x_zp in the padding, past K and past np. */
static void i8_im2col(const i8_job *j, int64_t g, int64_t p0, int64_t np, uint8_t *col) {
    const cpu_iconv_args *a = j->a;
    const int64_t K4 = j->w->K4;
    const uint8_t *x = a->x, flip = j->flip;
    memset(col, j->xz, (size_t)(K4 * I8_NB * 4));
    if (a->out_prod == 1 && a->in_prod == 1 && a->kprod == 1 && a->Cg == a->C) { /* rows of x (a MatMul's) */
        int64_t C = a->C, full = C / 4;
        uint32_t f4 = flip * 0x01010101u;
        for (int64_t l = 0; l < np; l++) {
            const uint8_t *r = x + (p0 + l) * C;
            uint8_t *d = col + l * 4;
            for (int64_t q = 0; q < full; q++) {
                uint32_t v;
                memcpy(&v, r + 4 * q, 4);
                v ^= f4;
                memcpy(d + q * I8_NB * 4, &v, 4);
            }
            for (int64_t c = full * 4; c < C; c++) d[full * I8_NB * 4 + c % 4] = r[c] ^ flip;
        }
        return;
    }
    const uint8_t *xg = x + g * a->Cg * a->in_prod;
    const int64_t cs = a->in_prod, Cg = a->Cg;
#if I8_X86
    if (i8_vector_im2col && Cg % 4 == 0 && pointwise(a, p0, np)) { /* the columns are rows of x */
        const uint8_t *xb = xg + p0 / a->out_prod * a->C * a->in_prod + p0 % a->out_prod;
        for (int64_t c = 0; c < Cg; c += 4) {
            uint8_t *d = col + c / 4 * I8_NB * 4;
            int64_t l = 0;
            for (; l + 16 <= np; l += 16) quad16(xb + c * cs, cs, l, flip, d + l * 4);
            for (; l < np; l++)
                for (int b = 0; b < 4; b++) d[l * 4 + b] = xb[(c + b) * cs + l] ^ flip;
        }
        return;
    }
#endif
    int64_t start[I8_NB][CONV_MAX_SPATIAL], img[I8_NB], off[I8_NB];
    cpu_iconv_starts(a, p0, np, start, img);
    for (int64_t kk = 0; kk < a->kprod; kk++) {
        cpu_iconv_offsets(a, kk, start, img, np, off);
#if I8_X86
        if (i8_vector_im2col && Cg % 4 == 0) { /* every quad is four channels at this kernel element */
            for (int64_t l0 = 0; l0 < np; l0 += 16) {
                /* 16 positions reading consecutive bytes, or every other byte (stride 2) */
                int step = l0 + 16 <= np && off[l0] >= 0 && off[l0 + 1] - off[l0] <= 2 ? (int)(off[l0 + 1] - off[l0]) : 0;
                for (int64_t i = l0 + 1; step > 0 && i < l0 + 16; i++) step = off[i] == off[i - 1] + step ? step : 0;
                for (int64_t c = 0; c < Cg; c += 4) {
                    uint8_t *d = col + ((kk * Cg + c) / 4 * I8_NB + l0) * 4;
                    const uint8_t *xc = xg + c * cs;
                    if (step == 1 || step == 2) {
                        if (step == 1) quad16(xc, cs, off[l0], flip, d);
                        else quad16_s2(xc, cs, off[l0], flip, d);
                        continue;
                    }
                    int64_t l1 = l0 + 16 < np ? l0 + 16 : np;
                    for (int64_t l = l0; l < l1; l++)
                        if (off[l] >= 0)
                            for (int b = 0; b < 4; b++) d[(l - l0) * 4 + b] = xc[b * cs + off[l]] ^ flip;
                }
            }
            continue;
        }
#endif
        for (int64_t c = 0; c < Cg; c++) {
            int64_t kidx = kk * Cg + c; /* (kernel element major: cpu_iconv8_w) */
            uint8_t *d = col + (kidx / 4) * I8_NB * 4 + kidx % 4;
            const uint8_t *xc = xg + c * cs;
            for (int64_t l = 0; l < np; l++)
                if (off[l] >= 0) d[l * 4] = xc[off[l]] ^ flip;
        }
    }
}

static inline void put8(void *y, int32_t odt, int64_t i, int32_t v) {
    if (odt == SEAM_DTYPE_INT8) ((int8_t *)y)[i] = (int8_t)v;
    else ((uint8_t *)y)[i] = (uint8_t)v;
}

#if I8_X86
/* cpu_requant on 16 lanes (mask k): the int32 add (wrapping: the true sum
 * plus the bias is in int32, j->vec), the float multiply, the clamp (max
 * first: NaN to the low end), rounding half to even (the default mode, as
 * nearbyintf), the zero point, the low byte. */
__attribute__((target("avx512f,avx512bw"))) static inline void rq16(__m512i s, __m512i b, __m512 sc, int32_t zp,
                                                                    bool s8, __mmask16 k, void *y) {
    __m512 lo = _mm512_set1_ps((float)((s8 ? -128 : 0) - zp)), hi = _mm512_set1_ps((float)((s8 ? 127 : 255) - zp));
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s, b)), sc);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    _mm512_mask_cvtepi32_storeu_epi8(y, k, _mm512_add_epi32(_mm512_cvtps_epi32(v), _mm512_set1_epi32(zp)));
}

/* n sums of channel m, consecutive in y from at; sx: their positions'
 * column sums (NULL: every w_zp is 0). */
__attribute__((target("avx512f,avx512bw"))) static void store_row(const i8_job *j, const int32_t *s, const int32_t *sx,
                                                                  int64_t n, int64_t m, int64_t at) {
    const cpu_iconv_args *a = j->a;
    const int32_t wz = sx ? j->w->wz[m] : 0;
    if (!a->scale) { /* the int32 sums: the raw sum plus the corrections, wrapping */
        int32_t *y = (int32_t *)a->y + at;
        for (int64_t l = 0; l < n; l++)
            y[l] = (int32_t)((uint32_t)s[l] + (uint32_t)j->bias32[m] - (uint32_t)wz * (uint32_t)(sx ? sx[l] : 0));
        return;
    }
    bool s8 = a->odt == SEAM_DTYPE_INT8;
    char *y = (char *)a->y + at;
    if (!j->vec[m]) {
        for (int64_t l = 0; l < n; l++)
            put8(y, a->odt, l, cpu_requant((int64_t)s[l] - (int64_t)wz * (sx ? sx[l] : 0), j->bias[m], a->scale[m], a->zp, s8));
        return;
    }
    __m512i b = _mm512_set1_epi32(j->bias32[m]), vz = _mm512_set1_epi32(wz);
    __m512 sc = _mm512_set1_ps(a->scale[m]);
    for (int64_t l = 0; l < n; l += 16) {
        __mmask16 k = n - l >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - l)) - 1);
        __m512i v = _mm512_maskz_loadu_epi32(k, s + l);
        if (sx) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(vz, _mm512_maskz_loadu_epi32(k, sx + l)));
        rq16(v, b, sc, a->zp, s8, k, y + l);
    }
}

/* Positions of 1x1 images (a MatMul's rows): output (p, m) is y[p * M +
 * m], so per position the slab's nm channels go out together. */
__attribute__((target("avx512f,avx512bw"))) static void store_cols(const i8_job *j, const int32_t *s, const int32_t *sx,
                                                                   int64_t npos, int64_t p, int64_t m0, int64_t nm) {
    const cpu_iconv_args *a = j->a;
    int64_t M = a->w->M;
    bool s8 = a->odt == SEAM_DTYPE_INT8;
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(I8_NB));
    for (int64_t q = 0; q < npos; q++) {
        int64_t at = (p + q) * M + m0;
        for (int64_t r0 = 0; r0 < nm; r0 += 16) {
            int64_t cnt = nm - r0 < 16 ? nm - r0 : 16;
            __mmask16 k = cnt == 16 ? (__mmask16)0xffff : (__mmask16)((1u << cnt) - 1);
            /* the 16 channels' sums at position q (rows I8_NB apart) */
            __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, idx, s + r0 * I8_NB + q, 4);
            __m512i b = _mm512_maskz_loadu_epi32(k, j->bias32 + m0 + r0);
            if (sx) /* less w_zp times the position's column sum (wrapping; exact where it matters) */
                v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(k, j->w->wz + m0 + r0), _mm512_set1_epi32(sx[q])));
            if (!a->scale) { /* the int32 sums: the raw sum plus the (wrapped) correction */
                _mm512_mask_storeu_epi32((int32_t *)a->y + at + r0, k, _mm512_add_epi32(v, b));
                continue;
            }
            if (!j->all_vec) {
                int32_t t[16];
                _mm512_storeu_si512(t, v);
                for (int64_t r = 0; r < cnt; r++) {
                    int64_t m = m0 + r0 + r;
                    int64_t acc = (int64_t)t[r]; /* (the wrapped correction: t[r] is exact where it is taken) */
                    if (sx) acc = (int64_t)s[(r0 + r) * I8_NB + q] - (int64_t)j->w->wz[m] * sx[q];
                    put8(a->y, a->odt, at + r0 + r, cpu_requant(acc, j->bias[m], a->scale[m], a->zp, s8));
                }
                continue;
            }
            rq16(v, b, _mm512_maskz_loadu_ps(k, a->scale + m0 + r0), a->zp, s8, k, (char *)a->y + at + r0);
        }
    }
}

/* Each position's sum of its K input values (uint8, padding as x_zp):
 * the quads' bytes added in pairs (vpmaddubsw by 1s), the pairs in int32
 * (vpmaddwd by 1s); the K tail's x_zp taken off. */
__attribute__((target("avx512f,avx512bw"))) static void col_sums(const uint8_t *col, int64_t K4, int64_t K, uint8_t xz,
                                                                 int32_t *sx) {
    const __m512i one8 = _mm512_set1_epi8(1), one16 = _mm512_set1_epi16(1);
    for (int h = 0; h < I8_NB / 16; h++) {
        __m512i acc = _mm512_setzero_si512();
        for (int64_t q = 0; q < K4; q++)
            acc = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_loadu_si512(col + (q * I8_NB + h * 16) * 4), one8), one16));
        _mm512_storeu_si512(sx + h * 16, _mm512_sub_epi32(acc, _mm512_set1_epi32((int32_t)((K4 * 4 - K) * xz))));
    }
}

static void i8_store(const i8_job *j, const int32_t *sums, const int32_t *sx, int64_t g, int64_t ml0, int64_t nm,
                     int64_t p0, int64_t np) {
    const cpu_iconv_args *a = j->a;
    int64_t Mg = j->w->Mg, M = j->w->M;
    if (a->out_prod == 1) {
        store_cols(j, sums, sx, np, p0, g * Mg + ml0, nm);
        return;
    }
    for (int64_t q = 0; q < np;) { /* runs of one image */
        int64_t p = p0 + q, n = p / a->out_prod, o = p % a->out_prod;
        int64_t len = a->out_prod - o < np - q ? a->out_prod - o : np - q;
        for (int64_t r = 0; r < nm; r++) {
            int64_t m = g * Mg + ml0 + r;
            store_row(j, sums + r * I8_NB + q, sx ? sx + q : NULL, len, m, (n * M + m) * a->out_prod + o);
        }
        q += len;
    }
}

static void i8_items(void *arg, int64_t begin, int64_t end) {
    i8_job *j = arg;
    const cpu_iconv_args *a = j->a;
    const cpu_iconv8_w *w = j->w;
    uint8_t *col = aligned_alloc(64, (size_t)(w->K4 * I8_NB * 4));
    int32_t *sums = aligned_alloc(64, sizeof(int32_t) * (size_t)(w->slab * I8_NB)), sx[I8_NB];
    if (!col || !sums) {
        free(col), free(sums);
        __atomic_store_n(&j->failed, true, __ATOMIC_RELAXED);
        return;
    }
    if (w->amx) amx_begin();
    int64_t rows = w->amx ? (w->Mg + 15) / 16 * 16 : (w->Mg + I8_MR - 1) / I8_MR * I8_MR;
    for (int64_t item = begin; item < end; item++) {
        int64_t chunk = item % j->chunks, rest = item / j->chunks, blk = rest % j->blocks, g = rest / j->blocks;
        int64_t p0, np;
        if (w->group == 1) {
            p0 = blk * I8_NB;
            np = a->N * a->out_prod - p0 < I8_NB ? a->N * a->out_prod - p0 : I8_NB;
        } else {
            int64_t n = blk / j->per_image, o0 = blk % j->per_image * I8_NB;
            p0 = n * a->out_prod + o0;
            np = a->out_prod - o0 < I8_NB ? a->out_prod - o0 : I8_NB;
        }
        i8_im2col(j, g, p0, np, col);
        if (w->has_wz) col_sums(col, w->K4, w->K, j->xz, sx);
        int64_t pc = (w->slabs + j->chunks - 1) / j->chunks, s0 = chunk * pc, s1 = s0 + pc < w->slabs ? s0 + pc : w->slabs;
        for (int64_t s = s0; s < s1; s++) {
            int64_t ml0 = s * w->slab, nm = w->Mg - ml0 < w->slab ? w->Mg - ml0 : w->slab;
            if (w->amx)
                amx_slab(w->w + (g * rows + ml0) * w->K4 * 4, w->K4, nm > 16 ? 2 : 1, col, np, sums);
            else
                vnni_panel(w->w + (g * rows + ml0) * w->K4 * 4, w->K4, col, np, sums);
            i8_store(j, sums, w->has_wz ? sx : NULL, g, ml0, nm, p0, np);
        }
    }
    if (w->amx) amx_end();
    free(col), free(sums);
}
#endif

bool cpu_iconv8_run(seam_pool *pool, const cpu_iconv_args *a, const cpu_iconv8_w *w) {
#if I8_X86
    int64_t M = w->M;
    i8_job j = {.a = a, .w = w, .all_vec = true};
    j.flip = a->xdt == SEAM_DTYPE_INT8 ? 0x80 : 0;
    j.xz = (uint8_t)(a->xzp + (j.flip ? 128 : 0));
    j.per_image = (a->out_prod + I8_NB - 1) / I8_NB;
    j.blocks = w->group == 1 ? (a->N * a->out_prod + I8_NB - 1) / I8_NB : a->N * j.per_image;
    int64_t want = 2 * (int64_t)(pool ? seam_pool_threads(pool) : 1), items = j.blocks * w->group;
    j.chunks = items >= want ? 1 : (want + items - 1) / items;
    j.chunks = j.chunks < w->slabs ? j.chunks : w->slabs;
    j.chunks = j.chunks < 1 ? 1 : j.chunks;
    j.bias = malloc(sizeof(int64_t) * (size_t)M);
    j.bias32 = malloc(sizeof(int32_t) * (size_t)M);
    j.vec = malloc(sizeof(bool) * (size_t)M);
    if (!j.bias || !j.bias32 || !j.vec) return free(j.bias), free(j.bias32), free(j.vec), false;
    for (int64_t m = 0; m < M; m++) {
        int64_t b = a->bias ? a->bias[m] : 0;
        j.bias[m] = b - (int64_t)j.xz * w->wsum[m] + w->K * j.xz * (int64_t)w->wz[m];
        j.bias32[m] = (int32_t)(uint32_t)(uint64_t)j.bias[m];
        j.vec[m] = cpu_requant_int32(w->K, b);
        j.all_vec = j.all_vec && j.vec[m];
    }
    seam_parallel_for(pool, items * j.chunks, 1, i8_items, &j);
    free(j.bias), free(j.bias32), free(j.vec);
    return !__atomic_load_n(&j.failed, __ATOMIC_RELAXED);
#else
    (void)pool, (void)a, (void)w;
    return false;
#endif
}
