/* Winograd F(4x4, 3x3) convolution (see winograd.h).
 *
 * The transforms use Lavin's points 0, +-1, +-2 and infinity:
 *
 *   B^T = | 4  0 -5  0  1  0 |   G = | 1/4     0     0 |   A^T = | 1  1  1  1  1  0 |
 *         | 0 -4 -4  1  1  0 |       | -1/6 -1/6  -1/6 |         | 0  1 -1  2 -2  0 |
 *         | 0  4 -4 -1  1  0 |       | -1/6  1/6  -1/6 |         | 0  1  1  4  4  0 |
 *         | 0 -2 -1  2  1  0 |       | 1/24 1/12   1/6 |         | 0  1 -1  8 -8  1 |
 *         | 0  2 -1 -2  1  0 |       | 1/24 -1/12  1/6 |
 *         | 0  4  0 -5  0  1 |       | 0     0     1   |
 *
 * B^T and A^T have small integer entries (exact in float32); the
 * fractions are all in G, applied once to the weights in double. In a
 * float32 simulation of one tile over 256 channels, points 0, +-1/2, +-2
 * had the same worst error within noise (5.5e-6 of the output's scale
 * against 5.9e-6) and 0, +-1, +-1/2 twice it (bench/results/wino.md); on
 * the benchmark models' shapes the worst is 5.4e-6 (wino_test
 * --model-shapes).
 *
 * A run goes image by image, group by group, and within a group by blocks
 * of tile rows ("bands") whose transformed input V [36, Cg, tiles] and
 * products P [36, Mg, tiles] take at most WINO_BLOCK_BYTES. Each block
 * is three parallel passes: the input transform (by input channel), the
 * 36 GEMMs P[xi] = U[xi] V[xi] (by xi, each on one thread: the packed
 * GEMM of gemm.c with U[xi] packed at prepare where the CPU has AVX-512,
 * else sgemm), and the output transform with the bias and activation (by
 * output channel). Every
 * value is computed the same way whichever thread computes it, so the
 * result does not depend on the thread count.
 *
 * The transforms vectorize across the tiles of a band: the input rows are
 * split by column mod 4 into four "phase" rows, so that column 4 tx + r of
 * tile tx is phase r at tx (r < 4) or phase r - 4 at tx + 1, contiguous in
 * tx; the outputs go the same way back. */
#include "backends/cpu/winograd.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/gemm.h"
#include "backends/kernel.h"
#include "core/arena.h"
#include "core/pool.h"

struct cpu_wino {
    int64_t M, Cg, Mg, group;
    float *u; /* [group][36][Mg][Cg]: per group and position xi, the GEMM's A, row-major */
    /* the same packed for gemm.c (then u is freed): [group * 36], their
     * panels in one buffer. sgemm packed U[xi] again on every call, which
     * cost as much as its products on few tiles (OpenBLAS's oncopy: 35%
     * of a 256-channel 14 x 14 conv's time, 10% at 40 x 40) */
    cpu_gemm_packed *pk;
    float *pk_data;
    const float *from; /* the weights given to prepare (not read after it) */
};

/* The transformed input and products of one block take at most this many
 * bytes: whole images for all but the largest. Larger blocks mean longer
 * GEMMs, which measured faster: 1 MB blocks took 12% longer than 8 MB ones
 * on the benchmark shapes, 256 KB 30% (bench/results/wino.md). */
#define WINO_BLOCK_BYTES ((int64_t)8 << 20)
#define WINO_ALIGN 16 /* floats: 64 bytes */

static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* Measured against im2col + sgemm on the benchmark models' shapes
 * (bench/results/wino.md), one thread:
 * - few channels: the transforms, per tile Cg + Mg of them, cost more than
 *   the 4x fewer multiplies save in the Cg Mg of the GEMM: 16 -> 48 at
 *   14x14 took 1.17x im2col's time, 32 -> 64 0.87x; so Cg >= 48 (below).
 *   Few output channels were left out too (Mg >= 16, 1/Cg + 1/Mg <=
 *   1/16), which made a cliff of the convs that end a detector's or a
 *   segmenter's head (issue 31: 64 -> 16 at 160x160 7.0 ms on the packed
 *   GEMM, oneDNN 3.5): their im2col is as large as for many outputs and
 *   feeds a GEMM of a few rows. Measured again on the packed GEMM (2
 *   threads, single-conv models, Winograd's time over the path taken):
 *   48 -> 1, 4, 8, 16 at 96x96 0.35-0.46; 64 -> 4 and 16 at 160x160 0.69
 *   and 0.56, 64 -> 1 0.95; 128 -> 16 at 80x80 0.59. So any Mg now, with
 *   Cg >= 48 (SEAM_CPU_WINO=strict: the old rule);
 * - few tiles (a 7x7 or 8x8 output is 4 tiles): the 36 Cg Mg transformed
 *   weights are read for 4 tiles each; with many channels that read
 *   dominates (512 -> 512 at 7x7: 1.54x), with few the GEMMs are too
 *   short (32 -> 128 at 7x7: 1.04x), in between it wins (448 -> 384 at
 *   8x8: 0.76x, 48 -> 128 at 7x7: 0.79x); so under 16 tiles,
 *   Cg Mg <= 200000;
 * - tiles mostly outside the output (an output 1 or 2 pixels high) do the
 *   work of 16 outputs for a few: at least half of the tiles' 16 pixels
 *   must be outputs;
 * - precision: F(4, 3)'s error is relative to its inputs' size, not the
 *   output's, and grows in a whole model where outputs are much smaller
 *   than their inputs (smooth early feature maps). With Winograd on
 *   inception_v3's two 32-channel convs at 147x147 and 149x149, the
 *   model's output (tests' generated model, its input) moved from 5.1e-5
 *   of its scale away from torch to 1.6e-4 (the dnnl test's bound is
 *   1e-4); without them 7.9e-5. So Cg >= 48, which also leaves out
 *   googlenet's 32-channel convs (small gains, 0.6x to 0.9x).
 * F(2x2, 3x3) (2.25x fewer multiplies, not 4x, 16 transformed weights per
 * pair of channels instead of 36) would be the candidate for the few-tile
 * shapes; it is not implemented. */
bool cpu_wino_fits(const conv_geom *g, int64_t Cg, int64_t Mg) {
    if (g->n != 2) return false;
    for (int32_t d = 0; d < 2; d++)
        if (g->kernel[d] != 3 || g->stride[d] != 1 || g->dil[d] != 1 || g->out[d] < 1 || g->in[d] < 1) return false;
    /* (the bounds keep every GEMM size and leading dimension in an int) */
    static int strict_env = -1;
    if (__atomic_load_n(&strict_env, __ATOMIC_RELAXED) < 0) {
        const char *e = getenv("SEAM_CPU_WINO");
        __atomic_store_n(&strict_env, e && !strcmp(e, "strict"), __ATOMIC_RELAXED);
    }
    bool strict = __atomic_load_n(&strict_env, __ATOMIC_RELAXED) != 0;
    if (Mg < 1 || Cg > ((int64_t)1 << 20) || Mg > ((int64_t)1 << 20) || g->out[1] > ((int64_t)1 << 24) || Cg < 48 ||
        (strict && (Mg < 16 || Cg * Mg < 16 * (Cg + Mg))) || Cg * Mg > ((int64_t)1 << 31) / 36)
        return false;
    int64_t tiles = ((g->out[0] + 3) / 4) * ((g->out[1] + 3) / 4);
    if (g->out[0] * g->out[1] * 2 < 16 * tiles) return false;
    return tiles >= 16 || Cg * Mg <= 200000;
}

cpu_wino *cpu_wino_prepare(const float *w, int64_t M, int64_t Cg, int64_t group) {
    if (M < 1 || Cg < 1 || group < 1 || M % group) return NULL;
    /* (the per-group bound is cpu_wino_fits's, so a conv it accepts fails
     * here only when memory runs out) */
    if (M > ((int64_t)1 << 24) || Cg > ((int64_t)1 << 24) || M / group * Cg > ((int64_t)1 << 31) / 36) return NULL;
    cpu_wino *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->M = M, p->Cg = Cg, p->group = group, p->Mg = M / group, p->from = w;
    p->u = malloc(sizeof(float) * (size_t)(36 * M * Cg));
    if (!p->u) {
        free(p);
        return NULL;
    }
    static const double G[6][3] = {
        {1.0 / 4, 0, 0},
        {-1.0 / 6, -1.0 / 6, -1.0 / 6},
        {-1.0 / 6, 1.0 / 6, -1.0 / 6},
        {1.0 / 24, 1.0 / 12, 1.0 / 6},
        {1.0 / 24, -1.0 / 12, 1.0 / 6},
        {0, 0, 1},
    };
    int64_t Mg = p->Mg;
    for (int64_t m = 0; m < M; m++)
        for (int64_t c = 0; c < Cg; c++) {
            const float *k = w + (m * Cg + c) * 9;
            double t[6][3]; /* G k */
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 3; j++) t[i][j] = G[i][0] * k[j] + G[i][1] * k[3 + j] + G[i][2] * k[6 + j];
            int64_t gi = m / Mg, mi = m % Mg;
            float *dst = p->u + ((gi * 36) * Mg + mi) * Cg + c;
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++) /* (G k G^T)[i][j] */
                    dst[(i * 6 + j) * Mg * Cg] = (float)(t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2]);
        }
    if (cpu_gemm_available()) { /* (out of memory: sgemm on u, as without AVX-512) */
        size_t per = cpu_gemm_packed_floats(Mg, Cg);
        p->pk = calloc((size_t)(36 * group), sizeof(*p->pk));
        p->pk_data = seam_alloc_resident(sizeof(float) * per * (size_t)(36 * group));
        if (p->pk && p->pk_data) {
            for (int64_t a = 0; a < 36 * group; a++)
                cpu_gemm_pack_into(&p->pk[a], p->pk_data + (size_t)a * per, p->u + a * Mg * Cg, Cg, Mg, Cg);
            free(p->u);
            p->u = NULL;
        } else {
            free(p->pk);
            free(p->pk_data);
            p->pk = NULL, p->pk_data = NULL;
        }
    }
    return p;
}

const float *cpu_wino_weights(const cpu_wino *p) { return p->from; }

void cpu_wino_free(cpu_wino *p) {
    if (!p) return;
    free(p->u);
    free(p->pk);
    free(p->pk_data);
    free(p);
}

/* The run's sizes, all from the geometry and the weights. */
typedef struct wino_plan {
    int64_t H, W, OH, OW, pt, pl;
    int64_t ntx, nty;   /* tiles per row, tile rows */
    int64_t ntx8;       /* ntx rounded up to whole vectors */
    int64_t bands;      /* tile rows per block */
    int64_t nt_max;     /* tiles per block (the last may have fewer) */
    int64_t ld;         /* floats between channels' rows of V and P: nt_max, room for the last vector, aligned */
    int64_t per_task;   /* floats of one task's transform buffer */
    int64_t tasks;      /* buffers for the channel passes */
    int64_t v_floats, p_floats;
    int64_t g_tasks, g_floats; /* the GEMM pass on the packed GEMM: tasks, scratch floats per task */
} wino_plan;

#define VL 8 /* floats per vector */
/* VL floats at any float's alignment (GCC lets a vector of floats alias floats) */
typedef float v8 __attribute__((vector_size(VL * sizeof(float)), aligned(sizeof(float))));
#define v8_load(p) (*(const v8 *)(p))
#define v8_store(p, v) (*(v8 *)(p) = (v))

static void plan_of(const cpu_wino *p, const conv_geom *g, int32_t threads, wino_plan *q) {
    q->H = g->in[0], q->W = g->in[1], q->OH = g->out[0], q->OW = g->out[1];
    q->pt = g->pad_lo[0], q->pl = g->pad_lo[1];
    q->ntx = (q->OW + 3) / 4, q->nty = (q->OH + 3) / 4, q->ntx8 = round_up(q->ntx, VL);
    int64_t band_bytes = 36 * (p->Cg + p->Mg) * q->ntx * (int64_t)sizeof(float);
    q->bands = WINO_BLOCK_BYTES / band_bytes;
    if (q->bands < 1) q->bands = 1;
    if (q->bands > q->nty) q->bands = q->nty;
    q->nt_max = q->bands * q->ntx;
    q->ld = round_up(q->nt_max + VL, WINO_ALIGN);
    /* input: a padded row (4 ntx8 + 8) and 6 rows of 4 phases of ntx8 + VL;
     * output: 16 phases of ntx8 */
    int64_t in_f = 4 * q->ntx8 + 8 + 24 * (q->ntx8 + VL), out_f = 16 * q->ntx8;
    q->per_task = round_up(in_f > out_f ? in_f : out_f, WINO_ALIGN);
    q->tasks = 2 * (int64_t)(threads > 0 ? threads : 1);
    q->v_floats = 36 * p->Cg * q->ld;
    q->p_floats = 36 * p->Mg * q->ld;
    q->g_tasks = threads > 1 ? (threads < 36 ? threads : 36) : 1;
    q->g_floats = p->pk ? round_up((int64_t)cpu_gemm_scratch(p->Mg, q->nt_max, 1), WINO_ALIGN) : 0;
}

size_t cpu_wino_scratch_size(const cpu_wino *p, const conv_geom *g, int32_t threads) {
    wino_plan q;
    plan_of(p, g, threads, &q);
    return sizeof(float) * (size_t)(q.v_floats + q.p_floats + q.tasks * q.per_task + q.g_tasks * q.g_floats + WINO_ALIGN);
}

/* One block of one image and group. */
typedef struct wino_job {
    const cpu_wino *p;
    const wino_plan *q;
    const float *x;     /* the group's input channels [Cg, H, W] */
    const float *u;     /* the group's transformed weights [36, Mg, Cg] */
    const float *bias;  /* the group's [Mg], or NULL */
    const act_params *post;
    float *y;           /* the group's output channels [Mg, OH, OW] */
    float *v, *prod, *buf; /* V [36][Cg][ld], P [36][Mg][ld], the tasks' buffers */
    float *gbuf;          /* the GEMM tasks' scratch (the packed GEMM) */
    const cpu_gemm_packed *pk; /* the group's packed U [36], or NULL */
    int64_t ty0, ty1, nt; /* the block's tile rows and tile count */
    int64_t per_task;     /* channels per task */
    int64_t n_chan;       /* Cg or Mg, for the pass */
} wino_job;

/* The input transform of channel c for the block's tile rows: V[xi][c][t].
 * Vectors of VL tiles; a band's last vector may spill past its tiles, into
 * the next band's (written after it) or the row's slack (never read). */
CPU_HOT static void input_channel(const wino_job *j, int64_t c, float *restrict buf) {
    const wino_plan *q = j->q;
    const float *xc = j->x + c * q->H * q->W;
    int64_t ntx = q->ntx, ntx8 = q->ntx8, n1 = ntx8 + VL, W = q->W, pl = q->pl;
    int64_t wide = 4 * ntx8 + 8; /* padded row: columns -pl .. wide - pl - 1 */
    float *restrict row = buf, *restrict ph = buf + wide;
    for (int64_t ty = j->ty0; ty < j->ty1; ty++) {
        /* ph[(k * 4 + r) * n1 + i]: input row 4 ty - pt + k, column 4 i + r - pl, zero outside */
        for (int64_t k = 0; k < 6; k++) {
            int64_t ih = 4 * ty - q->pt + k;
            float *restrict pk = ph + k * 4 * n1;
            if (ih < 0 || ih >= q->H) {
                memset(pk, 0, sizeof(float) * (size_t)(4 * n1));
                continue;
            }
            int64_t a = pl < wide ? pl : wide, b = pl + W < wide ? pl + W : wide; /* inside: [a, b) */
            memset(row, 0, sizeof(float) * (size_t)a);
            if (b > a) memcpy(row + a, xc + ih * W, sizeof(float) * (size_t)(b - a));
            if (wide > b) memset(row + b, 0, sizeof(float) * (size_t)(wide - b));
            for (int64_t i = 0; i <= ntx8; i++) {
                pk[i] = row[4 * i], pk[n1 + i] = row[4 * i + 1];
                pk[2 * n1 + i] = row[4 * i + 2], pk[3 * n1 + i] = row[4 * i + 3];
            }
        }
        int64_t stride = q->ld * j->p->Cg; /* between positions xi */
        float *out = j->v + c * q->ld + (ty - j->ty0) * ntx;
        for (int64_t tx = 0; tx < ntx; tx += VL) {
            v8 z[6][6]; /* B^T d: z[i][col] */
            for (int col = 0; col < 6; col++) {
                const float *pc = ph + (col & 3) * n1 + tx + (col >> 2);
                v8 d0 = v8_load(pc), d1 = v8_load(pc + 4 * n1), d2 = v8_load(pc + 8 * n1);
                v8 d3 = v8_load(pc + 12 * n1), d4 = v8_load(pc + 16 * n1), d5 = v8_load(pc + 20 * n1);
                z[0][col] = 4 * d0 - 5 * d2 + d4;
                z[1][col] = -4 * (d1 + d2) + (d3 + d4);
                z[2][col] = 4 * (d1 - d2) + (d4 - d3);
                z[3][col] = 2 * (d3 - d1) + (d4 - d2);
                z[4][col] = 2 * (d1 - d3) + (d4 - d2);
                z[5][col] = 4 * d1 - 5 * d3 + d5;
            }
            for (int i = 0; i < 6; i++) { /* (B^T d) B: row i times B */
                v8 d0 = z[i][0], d1 = z[i][1], d2 = z[i][2], d3 = z[i][3], d4 = z[i][4], d5 = z[i][5];
                float *o = out + i * 6 * stride + tx;
                v8_store(o, 4 * d0 - 5 * d2 + d4);
                v8_store(o + stride, -4 * (d1 + d2) + (d3 + d4));
                v8_store(o + 2 * stride, 4 * (d1 - d2) + (d4 - d3));
                v8_store(o + 3 * stride, 2 * (d3 - d1) + (d4 - d2));
                v8_store(o + 4 * stride, 2 * (d1 - d3) + (d4 - d2));
                v8_store(o + 5 * stride, 4 * d1 - 5 * d3 + d5);
            }
        }
    }
}

/* The output transform of output channel m for the block, then the bias
 * and activation, into y. */
CPU_HOT static void output_channel(const wino_job *j, int64_t m, float *restrict ph) {
    const wino_plan *q = j->q;
    int64_t ntx = q->ntx, ntx8 = q->ntx8, OW = q->OW, stride = q->ld * j->p->Mg;
    float bv = j->bias ? j->bias[m] : 0.0f;
    static const act_params none = {ACT_NONE, 0, 0, 0, 0, 0};
    const act_params *post = j->post ? j->post : &none;
    for (int64_t ty = j->ty0; ty < j->ty1; ty++) {
        const float *in = j->prod + m * q->ld + (ty - j->ty0) * ntx;
        for (int64_t tx = 0; tx < ntx; tx += VL) {
            v8 z[4][6]; /* A^T p */
            for (int col = 0; col < 6; col++) {
                const float *pc = in + col * stride + tx;
                v8 m0 = v8_load(pc), m1 = v8_load(pc + 6 * stride), m2 = v8_load(pc + 12 * stride);
                v8 m3 = v8_load(pc + 18 * stride), m4 = v8_load(pc + 24 * stride), m5 = v8_load(pc + 30 * stride);
                v8 s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
                z[0][col] = m0 + s12 + s34;
                z[1][col] = d12 + 2 * d34;
                z[2][col] = s12 + 4 * s34;
                z[3][col] = d12 + 8 * d34 + m5;
            }
            for (int i = 0; i < 4; i++) {
                v8 m0 = z[i][0], m1 = z[i][1], m2 = z[i][2], m3 = z[i][3], m4 = z[i][4], m5 = z[i][5];
                v8 s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
                float *o = ph + i * 4 * ntx8 + tx;
                v8_store(o, m0 + s12 + s34);
                v8_store(o + ntx8, d12 + 2 * d34);
                v8_store(o + 2 * ntx8, s12 + 4 * s34);
                v8_store(o + 3 * ntx8, d12 + 8 * d34 + m5);
            }
        }
        for (int64_t i = 0; i < 4 && 4 * ty + i < q->OH; i++) {
            float *yr = j->y + (m * q->OH + 4 * ty + i) * OW;
            const float *pi = ph + i * 4 * ntx8;
            int64_t ow = 0;
            for (int64_t tx = 0; tx < OW / 4; tx++, ow += 4) {
                yr[ow] = pi[tx], yr[ow + 1] = pi[ntx8 + tx], yr[ow + 2] = pi[2 * ntx8 + tx];
                yr[ow + 3] = pi[3 * ntx8 + tx];
            }
            for (; ow < OW; ow++) yr[ow] = pi[(ow & 3) * ntx8 + (ow >> 2)];
            cpu_post_apply(post, yr, OW, bv);
        }
    }
}

static void input_tasks(void *arg, int64_t begin, int64_t end) {
    const wino_job *j = arg;
    for (int64_t t = begin; t < end; t++) {
        int64_t c1 = (t + 1) * j->per_task < j->n_chan ? (t + 1) * j->per_task : j->n_chan;
        for (int64_t c = t * j->per_task; c < c1; c++) input_channel(j, c, j->buf + t * j->q->per_task);
    }
}

static void output_tasks(void *arg, int64_t begin, int64_t end) {
    const wino_job *j = arg;
    for (int64_t t = begin; t < end; t++) {
        int64_t m1 = (t + 1) * j->per_task < j->n_chan ? (t + 1) * j->per_task : j->n_chan;
        for (int64_t m = t * j->per_task; m < m1; m++) output_channel(j, m, j->buf + t * j->q->per_task);
    }
}

/* The packed GEMM's tasks: task t computes positions [36 t / tasks, 36
 * (t + 1) / tasks) on one thread, with its own scratch. */
static void packed_gemm_tasks(void *arg, int64_t begin, int64_t end) {
    const wino_job *j = arg;
    int64_t Mg = j->p->Mg, Cg = j->p->Cg, ld = j->q->ld, tasks = j->q->g_tasks;
    for (int64_t t = begin; t < end; t++)
        for (int64_t xi = 36 * t / tasks; xi < 36 * (t + 1) / tasks; xi++) {
            cpu_gemm_b b = {j->v + xi * Cg * ld, ld, NULL};
            cpu_gemm_run(NULL, &j->pk[xi], &b, j->nt, j->prod + xi * Mg * ld, ld, NULL, NULL,
                         j->gbuf + t * j->q->g_floats);
        }
}

static void gemm_tasks(void *arg, int64_t begin, int64_t end) {
    const wino_job *j = arg;
    int64_t Mg = j->p->Mg, Cg = j->p->Cg, ld = j->q->ld;
    for (int64_t xi = begin; xi < end; xi++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)Mg, (int)j->nt, (int)Cg, 1.0f, j->u + xi * Mg * Cg,
                    (int)Cg, j->v + xi * Cg * ld, (int)ld, 0.0f, j->prod + xi * Mg * ld, (int)ld);
}

/* Splits n channels into at most `tasks` runs of whole channels. */
static int64_t split(int64_t n, int64_t tasks, int64_t *per_task) {
    if (tasks > n) tasks = n;
    *per_task = (n + tasks - 1) / tasks;
    return (n + *per_task - 1) / *per_task;
}

void cpu_wino_run(const cpu_wino *p, seam_pool *pool, const conv_geom *g, int64_t N, const float *x, const float *bias,
                  const act_params *post, float *y, void *scratch) {
    cpu_blas_single_thread(); /* seam's pool splits the GEMMs */
    wino_plan q;
    plan_of(p, g, seam_pool_threads(pool), &q);
    float *base = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    int64_t Cg = p->Cg, Mg = p->Mg, C = Cg * p->group, M = p->M;
    wino_job j = {0};
    j.p = p, j.q = &q, j.post = post;
    j.v = base, j.prod = base + q.v_floats, j.buf = base + q.v_floats + q.p_floats;
    j.gbuf = j.buf + q.tasks * q.per_task;
    for (int64_t n = 0; n < N; n++)
        for (int64_t gi = 0; gi < p->group; gi++) {
            j.x = x + (n * C + gi * Cg) * q.H * q.W;
            j.y = y + (n * M + gi * Mg) * q.OH * q.OW;
            j.u = p->u ? p->u + gi * 36 * Mg * Cg : NULL;
            j.pk = p->pk ? p->pk + gi * 36 : NULL;
            j.bias = bias ? bias + gi * Mg : NULL;
            for (j.ty0 = 0; j.ty0 < q.nty; j.ty0 = j.ty1) {
                j.ty1 = j.ty0 + q.bands < q.nty ? j.ty0 + q.bands : q.nty;
                j.nt = (j.ty1 - j.ty0) * q.ntx;
                j.n_chan = Cg;
                int64_t tasks = split(Cg, q.tasks, &j.per_task);
                seam_parallel_for(pool, tasks, 1, input_tasks, &j);
                if (j.pk) seam_parallel_for(pool, q.g_tasks, 1, packed_gemm_tasks, &j);
                else seam_parallel_for(pool, 36, 1, gemm_tasks, &j);
                j.n_chan = Mg;
                tasks = split(Mg, q.tasks, &j.per_task);
                seam_parallel_for(pool, tasks, 1, output_tasks, &j);
            }
        }
}
