/* Grouped 2-D convolutions with few channels a group (gconv.h). */
#include <stdint.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/gconv.h"
#include "backends/cpu/gemm.h"
#include "core/pool.h"

/* Optimized in every build, as gemm.c is: at -O0 the accumulators live in
 * memory and the tests that time runs notice. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE__)
#pragma GCC optimize("O2")
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#define GC_X86 1
#define GC_TARGET __attribute__((target("avx512f,fma")))
#define GC_TARGET2 __attribute__((target("avx2,fma")))
#else
#define GC_X86 0
#endif

#define GC_MB 8                        /* output channels of a block */
#define GC_NV 32                       /* outputs of a block: two vectors */
#define GC_MAX_TAPS 64                 /* kernels up to 8 x 8 */
#define GC_MAX_TASK_FLOATS (2 << 20)   /* one task's planes and staging: 8 MB */

static int64_t rup(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* The sizes of a run, from the geometry and the channel counts. */
typedef struct gc_plan {
    int64_t H, W, OH, OW, sh, sw, pt, pl, PH, PW, plane, planes;
    int64_t nk;              /* taps */
    int64_t offs[GC_MAX_TAPS]; /* each tap's offset in a channel's planes */
    int64_t chan;            /* floats of one channel's planes, with the slack the last block reads */
    int64_t nf;              /* outputs computed per channel: OH * PW, rounded up to GC_NV */
    int64_t per_task;        /* floats: Cg channels' planes, then Mg channels' outputs */
} gc_plan;

static bool plan_of(const conv_geom *g, int64_t Cg, int64_t Mg, gc_plan *q) {
    if (g->n != 2) return false;
    q->H = g->in[0], q->W = g->in[1], q->OH = g->out[0], q->OW = g->out[1];
    q->sh = g->stride[0], q->sw = g->stride[1], q->pt = g->pad_lo[0], q->pl = g->pad_lo[1];
    int64_t KH = g->kernel[0], KW = g->kernel[1];
    if (q->OH < 1 || q->OW < 1 || KH * KW > GC_MAX_TAPS || q->pt < 0 || q->pl < 0 || g->pad_hi[0] < 0 ||
        g->pad_hi[1] < 0 || q->sh > 4 || q->sw > 4)
        return false;
    int64_t Hp = q->H + q->pt + g->pad_hi[0], Wp = q->W + q->pl + g->pad_hi[1];
    q->PH = (Hp + q->sh - 1) / q->sh, q->PW = (Wp + q->sw - 1) / q->sw;
    q->plane = q->PH * q->PW, q->planes = q->sh * q->sw;
    q->nk = KH * KW;
    int64_t max_off = 0;
    for (int64_t a = 0; a < KH; a++)
        for (int64_t b = 0; b < KW; b++) {
            int64_t ra = a * g->dil[0], rb = b * g->dil[1];
            int64_t off = ((ra % q->sh) * q->sw + rb % q->sw) * q->plane + (ra / q->sh) * q->PW + rb / q->sw;
            q->offs[a * KW + b] = off;
            if (off > max_off) max_off = off;
        }
    q->nf = rup(q->OH * q->PW, GC_NV);
    int64_t need = q->planes * q->plane > max_off + q->nf ? q->planes * q->plane : max_off + q->nf;
    q->chan = rup(need + 16, 16);
    q->per_task = Cg * q->chan + Mg * q->nf + 16;
    return q->per_task <= GC_MAX_TASK_FLOATS;
}

/* The kernels this CPU runs: 2 AVX-512, 1 AVX2 and FMA, 0 none (then the
 * callers' im2col and sgemm). SEAM_CPU_GCONV=avx2 takes the AVX2 one on
 * any CPU that has it (its tests compare the two bit for bit), =0 none. */
static int gc_isa_state;
#if GC_X86
static pthread_once_t gc_once = PTHREAD_ONCE_INIT;
static void gc_probe(void) {
    const char *e = getenv("SEAM_CPU_GCONV");
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (e && !strcmp(e, "0")) gc_isa_state = 0;
    else if (e && !strcmp(e, "avx2")) gc_isa_state = avx2 ? 1 : 0;
    else gc_isa_state = cpu_gemm_avx512() ? 2 : avx2 ? 1 : 0;
}
#endif

static int gc_isa(void) {
#if GC_X86
    pthread_once(&gc_once, gc_probe);
#endif
    return gc_isa_state;
}

bool cpu_gconv_fits(const conv_geom *g, int64_t group, int64_t Cg, int64_t Mg) {
    gc_plan q;
    return GC_X86 && group > 1 && Cg > 1 && Mg >= 1 && Mg <= 64 && gc_isa() > 0 && plan_of(g, Cg, Mg, &q);
}

static int64_t task_count(int64_t group, int32_t threads) {
    int64_t t = threads > 1 ? threads : 1;
    return t < group ? t : group;
}

size_t cpu_gconv_scratch(const conv_geom *g, int64_t Cg, int64_t Mg, int32_t threads) {
    gc_plan q;
    if (!plan_of(g, Cg, Mg, &q)) return 0;
    return sizeof(float) * (size_t)(task_count(INT64_MAX, threads) * q.per_task + 16);
}

typedef struct gc_job {
    const gc_plan *q;
    const float *x, *w, *bias; /* one image's x [group * Cg, H, W]; w; bias (or NULL) */
    float *y;                  /* the image's y [group * Mg, OH, OW] */
    const act_params *post;
    float *scratch;
    int64_t group, Cg, Mg, tasks;
    int isa;                   /* gc_isa() */
} gc_job;

/* Channel c's zero-padded phase planes: plane (r, s) row i, column j holds
 * the padded input's row i sh + r, column j sw + s. */
static void fill_planes(const gc_plan *q, const float *xc, float *dst) {
    memset(dst, 0, sizeof(float) * (size_t)q->chan);
    for (int64_t r = 0; r < q->sh; r++)
        for (int64_t s = 0; s < q->sw; s++) {
            float *pq = dst + (r * q->sw + s) * q->plane;
            for (int64_t i = 0; i < q->PH; i++) {
                int64_t ih = i * q->sh + r - q->pt;
                if (ih < 0 || ih >= q->H) continue;
                const float *row = xc + ih * q->W;
                float *d = pq + i * q->PW;
                if (q->sw == 1) { /* columns [pl, pl + W) of the padded row */
                    int64_t n = q->PW - q->pl < q->W ? q->PW - q->pl : q->W;
                    if (n > 0) memcpy(d + q->pl, row, sizeof(float) * (size_t)n);
                    continue;
                }
                for (int64_t j = 0; j < q->PW; j++) {
                    int64_t iw = j * q->sw + s - q->pl;
                    if (iw >= 0 && iw < q->W) d[j] = row[iw];
                }
            }
        }
}

#if GC_X86
/* ext[m][i] for MB output channels (w: the first one's [Cg][nk], wst
 * floats between channels) over all nf outputs: GC_NV at a time, summed
 * over c, then the taps, as FMAs. */
GC_TARGET static inline __attribute__((always_inline)) void
block_body(const gc_plan *q, const float *xq, const float *w, int64_t wst, int64_t Cg, float *st, const int MB) {
    int64_t nk = q->nk, chan = q->chan, nf = q->nf;
    for (int64_t i = 0; i < nf; i += GC_NV) {
        __m512 acc[GC_MB][2];
#pragma GCC unroll 8
        for (int m = 0; m < MB; m++) acc[m][0] = acc[m][1] = _mm512_setzero_ps();
        for (int64_t c = 0; c < Cg; c++) {
            const float *xc = xq + c * chan + i, *wc = w + c * nk;
            for (int64_t kk = 0; kk < nk; kk++) {
                __m512 x0 = _mm512_loadu_ps(xc + q->offs[kk]), x1 = _mm512_loadu_ps(xc + q->offs[kk] + 16);
#pragma GCC unroll 8
                for (int m = 0; m < MB; m++) {
                    __m512 wv = _mm512_set1_ps(wc[m * wst + kk]);
                    acc[m][0] = _mm512_fmadd_ps(wv, x0, acc[m][0]);
                    acc[m][1] = _mm512_fmadd_ps(wv, x1, acc[m][1]);
                }
            }
        }
#pragma GCC unroll 8
        for (int m = 0; m < MB; m++) {
            _mm512_storeu_ps(st + m * nf + i, acc[m][0]);
            _mm512_storeu_ps(st + m * nf + i + 16, acc[m][1]);
        }
    }
}

#define GC_BLOCK(MB)                                                                                           \
    GC_TARGET static void block_##MB(const gc_plan *q, const float *xq, const float *w, int64_t wst, int64_t Cg, \
                                     float *st) {                                                              \
        block_body(q, xq, w, wst, Cg, st, MB);                                                                 \
    }
GC_BLOCK(8)
GC_BLOCK(4)
GC_BLOCK(2)
GC_BLOCK(1)

/* The same on AVX2 (16 registers): 16 outputs a step for up to 4 output
 * channels, 8 accumulators; each output summed in the same order, so
 * the results are the AVX-512 kernel's bit for bit. */
GC_TARGET2 static inline __attribute__((always_inline)) void
block_body2(const gc_plan *q, const float *xq, const float *w, int64_t wst, int64_t Cg, float *st, const int MB) {
    int64_t nk = q->nk, chan = q->chan, nf = q->nf;
    for (int64_t i = 0; i < nf; i += 16) {
        __m256 acc[4][2];
#pragma GCC unroll 4
        for (int m = 0; m < MB; m++) acc[m][0] = acc[m][1] = _mm256_setzero_ps();
        for (int64_t c = 0; c < Cg; c++) {
            const float *xc = xq + c * chan + i, *wc = w + c * nk;
            for (int64_t kk = 0; kk < nk; kk++) {
                __m256 x0 = _mm256_loadu_ps(xc + q->offs[kk]), x1 = _mm256_loadu_ps(xc + q->offs[kk] + 8);
#pragma GCC unroll 4
                for (int m = 0; m < MB; m++) {
                    __m256 wv = _mm256_broadcast_ss(wc + m * wst + kk);
                    acc[m][0] = _mm256_fmadd_ps(wv, x0, acc[m][0]);
                    acc[m][1] = _mm256_fmadd_ps(wv, x1, acc[m][1]);
                }
            }
        }
#pragma GCC unroll 4
        for (int m = 0; m < MB; m++) {
            _mm256_storeu_ps(st + m * nf + i, acc[m][0]);
            _mm256_storeu_ps(st + m * nf + i + 8, acc[m][1]);
        }
    }
}

#define GC_BLOCK2(MB)                                                                                           \
    GC_TARGET2 static void block2_##MB(const gc_plan *q, const float *xq, const float *w, int64_t wst, int64_t Cg, \
                                       float *st) {                                                              \
        block_body2(q, xq, w, wst, Cg, st, MB);                                                                  \
    }
GC_BLOCK2(4)
GC_BLOCK2(2)
GC_BLOCK2(1)
#endif

/* Task t: groups [t G / tasks, (t + 1) G / tasks), whole. */
static void gc_tasks(void *arg, int64_t begin, int64_t end) {
    const gc_job *j = arg;
    const gc_plan *q = j->q;
    static const act_params none = {ACT_NONE, 0, 0, 0, 0, 0};
    const act_params *post = j->post ? j->post : &none;
    int64_t Cg = j->Cg, Mg = j->Mg, nk = q->nk, HW = q->H * q->W, OHW = q->OH * q->OW;
    for (int64_t t = begin; t < end; t++) {
        float *xq = j->scratch + t * q->per_task, *st = xq + Cg * q->chan;
        for (int64_t g = t * j->group / j->tasks; g < (t + 1) * j->group / j->tasks; g++) {
            for (int64_t c = 0; c < Cg; c++) fill_planes(q, j->x + (g * Cg + c) * HW, xq + c * q->chan);
            for (int64_t m = 0; m < Mg;) {
                const float *w = j->w + (g * Mg + m) * Cg * nk;
                float *sm = st + m * q->nf;
#if GC_X86
                if (j->isa == 1) {
                    if (Mg - m >= 4) block2_4(q, xq, w, Cg * nk, Cg, sm), m += 4;
                    else if (Mg - m >= 2) block2_2(q, xq, w, Cg * nk, Cg, sm), m += 2;
                    else block2_1(q, xq, w, Cg * nk, Cg, sm), m += 1;
                } else if (Mg - m >= 8) block_8(q, xq, w, Cg * nk, Cg, sm), m += 8;
                else if (Mg - m >= 4) block_4(q, xq, w, Cg * nk, Cg, sm), m += 4;
                else if (Mg - m >= 2) block_2(q, xq, w, Cg * nk, Cg, sm), m += 2;
                else block_1(q, xq, w, Cg * nk, Cg, sm), m += 1;
#else
                (void)w, (void)sm;
                m = Mg; /* (cpu_gconv_fits is false) */
#endif
            }
            for (int64_t m = 0; m < Mg; m++) {
                float *ym = j->y + (g * Mg + m) * OHW;
                float bv = j->bias ? j->bias[g * Mg + m] : 0.0f;
                for (int64_t oh = 0; oh < q->OH; oh++) {
                    memcpy(ym + oh * q->OW, st + m * q->nf + oh * q->PW, sizeof(float) * (size_t)q->OW);
                    cpu_post_apply(post, ym + oh * q->OW, q->OW, bv);
                }
            }
        }
    }
}

void cpu_gconv_run(seam_pool *pool, const conv_geom *g, int64_t N, int64_t group, int64_t Cg, int64_t Mg,
                   const float *x, const float *w, const float *bias, const act_params *post, float *y, void *scratch) {
    gc_plan q;
    if (!plan_of(g, Cg, Mg, &q)) return;
    gc_job j = {&q, NULL, w, bias, NULL, post, (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63), group, Cg, Mg,
                task_count(group, seam_pool_threads(pool)), gc_isa()};
    for (int64_t n = 0; n < N; n++) {
        j.x = x + n * group * Cg * q.H * q.W;
        j.y = y + n * group * Mg * q.OH * q.OW;
        seam_parallel_for(pool, j.tasks, 1, gc_tasks, &j);
    }
}
