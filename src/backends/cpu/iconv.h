/* The int8 convolution's fast path (iconv.c): QLinearConv and ConvInteger
 * as an int16 GEMM on AVX-512BW, exact. quant.c's int_conv calls it when
 * cpu_iconv_available() and the reduction fits (cpu_iconv_fits). */
#ifndef SEAM_CPU_ICONV_H
#define SEAM_CPU_ICONV_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/pool.h"
#include "ops/conv_geom.h"

/* The weight minus its zero point, as int16 pairs in the micro-kernel's
 * order: per group, panels of ICONV_MR output channels, K / 2 pairs each.
 * K is ordered kernel element major (index e * Cg + c for channel c at
 * kernel element e), so a pair is two channels at one kernel element,
 * next to each other in x wherever Cg is even. */
typedef struct cpu_iconv8_w cpu_iconv8_w;

typedef struct cpu_iconv_w {
    int64_t M, group, K, K2, panels; /* panels per group */
    int64_t kprod;                   /* kernel elements (1: a MatMul's B) */
    int16_t *w;
    cpu_iconv8_w *w8;                /* iconv8.c's pack, where the CPU and the weights allow it; NULL otherwise */
    const void *src, *zsrc;          /* what it was packed from (packed at session creation) */
} cpu_iconv_w;

/* Whether this CPU runs the fast path (AVX-512BW, or AVX2 at about half
 * its width); SEAM_CPU_ICONV=0 in the environment turns it off (for the
 * tests of the plain loop), SEAM_CPU_ICONV=avx2 picks the AVX2 kernel on
 * any CPU that has it (for its tests). */
bool cpu_iconv_available(void);

/* Whether a reduction of K products fits the path's int32 sums exactly. */
static inline bool cpu_iconv_fits(int64_t K) { return K > 0 && K <= 32768; }

/* w: [M, K] 8-bit (wdt; kn: [K, M], a MatMul's B, with kprod 1), K =
 * channels per group x kprod kernel elements, zero points wz (scalar or
 * one per output channel, zdt; NULL: 0). NULL when out of memory. */
cpu_iconv_w *cpu_iconv_pack(const void *w, int32_t wdt, const void *wz, int32_t zdt, int64_t zn, int64_t M,
                            int64_t group, int64_t K, int64_t kprod, bool kn);
void cpu_iconv_free(cpu_iconv_w *w);

/* Requantization, as ONNX Runtime does it (and every path here, so that
 * they give the same bits): the sum plus the bias, exact (int64), as
 * float, times the float scale, clamped to the 8-bit output's range less
 * the zero point (NaN to its low end), rounded half to even, plus the zero
 * point. Where no sum overflows int32 (ONNX Runtime's accumulator), that is
 * ONNX Runtime's result bit for bit; the vector forms in iconv.c do the
 * same lane by lane where the sum cannot leave int32 (cpu_requant_int32). */
static inline int32_t cpu_requant(int64_t acc, int64_t bias, float scale, int32_t zp, bool s8) {
    float lo = (float)((s8 ? -128 : 0) - zp), hi = (float)((s8 ? 127 : 255) - zp), v = (float)(acc + bias) * scale;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    return (int32_t)nearbyintf(v) + zp;
}

/* Whether a sum of K products of 8-bit values less their zero points
 * (each at most 255 * 255 in magnitude) plus bias stays in int32. */
static inline bool cpu_requant_int32(int64_t K, int64_t bias) {
    int64_t room = INT32_MAX - K * 65025;
    return room >= 0 && bias <= room && bias >= -room;
}

/* The requantization's scale: a_scale * b_scale / y_scale in float, as
 * ONNX Runtime computes it. */
static inline float cpu_requant_scale(double as, double bs, double ys) { return (float)as * (float)bs / (float)ys; }

typedef struct cpu_iconv_args {
    const void *x;           /* [N, C, in...], 8-bit */
    int32_t xdt, xzp;
    const conv_geom *win;
    const int64_t *koff;     /* [kprod][win->n]: each kernel element's offset per axis */
    int64_t N, C, Cg, kprod, in_prod, out_prod;
    const cpu_iconv_w *w;
    /* y[n, m, o] = cpu_requant(sum, bias[m], scale[m], zp, odt);
     * scale NULL: the int32 sum itself */
    const int64_t *bias;
    const float *scale;
    int32_t zp;
    int32_t odt;
    void *y;
} cpu_iconv_args;

/* Whether cpu_iconv_run takes the path for a few rows (a MatMul or a 1x1
 * conv of 1x1 images, at most ICONV_ROWS_MAX of them): any K is exact
 * there; everywhere else K must fit (cpu_iconv_fits). */
#define ICONV_ROWS_MAX 8
bool cpu_iconv_rows_fits(const cpu_iconv_args *a);

/* The im2cols' windows (iconv.c, iconv8.c), for np <= 64 output positions
 * from p0: each position's window start per spatial axis and its image's
 * first element in x (stepping through the positions, no division per
 * position); then, per kernel element kk, each position's offset in x,
 * -1 where the window reads padding. */
void cpu_iconv_starts(const cpu_iconv_args *a, int64_t p0, int64_t np, int64_t (*start)[CONV_MAX_SPATIAL], int64_t *img);
void cpu_iconv_offsets(const cpu_iconv_args *a, int64_t kk, int64_t (*start)[CONV_MAX_SPATIAL], const int64_t *img,
                       int64_t np, int64_t *off);

/* Runs the convolution; false when out of memory. */
bool cpu_iconv_run(seam_pool *pool, const cpu_iconv_args *a);

/* iconv8.c: the same convolution as a u8 x s8 GEMM on AMX tiles or
 * AVX512-VNNI, the zero points applied after (the result is the same, bit
 * for bit). cpu_iconv8_kind: "amx", "avx512_vnni", or NULL where the CPU
 * has neither (SEAM_CPU_ICONV8=0 turns it off, =vnni keeps to VNNI on an
 * AMX CPU: for the tests). cpu_iconv8_pack: NULL where the path does not
 * apply (the CPU, one channel per group, K over cpu_iconv_fits) or out of
 * memory; cpu_iconv_pack calls it. */
const char *cpu_iconv8_kind(void);
cpu_iconv8_w *cpu_iconv8_pack(const void *w, int32_t wdt, const void *wz, int32_t zdt, int64_t zn, int64_t M,
                              int64_t group, int64_t K, int64_t kprod, bool kn);
void cpu_iconv8_free(cpu_iconv8_w *w);
bool cpu_iconv8_run(seam_pool *pool, const cpu_iconv_args *a, const cpu_iconv8_w *w);

#endif
