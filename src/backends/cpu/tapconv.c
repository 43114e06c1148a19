/*
 * A dilated 2-D conv tap by tap (tapconv.h).
 *
 * DeepLabV3's ASPP runs 3x3 convs of dilation 12 on a 20 x 20 feature
 * map: the corner taps read the input for 8 x 8 of the 400 outputs, the
 * edge taps for 8 x 20, only the centre for all; 36% of the (output, tap)
 * pairs read the input, and im2col computes the other 64% as products
 * with padding. Here each tap (ky, kx) is one product of its weight
 * [M, C] by the input pixels it reads, gathered into [C, P] for the P
 * outputs of its rectangle (on each axis, the outputs whose window reads
 * the input at that tap form one interval), added into those outputs:
 * the same sums without their zero terms.
 *
 * conv.c's conv_trim already drops taps that read padding for every
 * output; this is for the taps that read it for some.
 */
#include "backends/cpu/tapconv.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "core/pool.h"

/* SEAM_CPU_TAPCONV=0 turns the path off (its tests and benchmark compare) */
static bool tc_off;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static void tc_probe(void) {
    const char *e = getenv("SEAM_CPU_TAPCONV");
    tc_off = e && !strcmp(e, "0");
}

bool cpu_tapconv_pays(const conv_geom *g, int64_t group, int64_t C, int64_t M) {
    pthread_once(&tc_once, tc_probe);
    if (tc_off || g->n != 2 || group != 1 || C < 32 || M < 32 || !cpu_gemm_available()) return false;
    if (g->out[0] * g->out[1] < 64 || g->kernel[0] * g->kernel[1] < 2) return false;
    double fraction = conv_geom_read_fraction(g);
    return fraction >= 0 && fraction <= CONV_TAPS_FRACTION;
}

void cpu_tapconv_free(cpu_tapconv *t) {
    if (!t) return;
    for (int64_t i = 0; t->w && i < t->taps; i++) cpu_gemm_packed_free(t->w[i]);
    free(t->w);
    free(t);
}

cpu_tapconv *cpu_tapconv_prepare(const float *w, int64_t M, int64_t C, int64_t KH, int64_t KW) {
    int64_t taps = KH * KW;
    cpu_tapconv *t = calloc(1, sizeof(*t));
    float *tw = malloc(sizeof(float) * (size_t)(M * C));
    if (!t || !tw || !(t->w = calloc((size_t)taps, sizeof(*t->w)))) goto fail;
    t->M = M, t->C = C, t->taps = taps;
    for (int64_t i = 0; i < taps; i++) {
        for (int64_t mc = 0; mc < M * C; mc++) tw[mc] = w[mc * taps + i];
        if (!(t->w[i] = cpu_gemm_pack(tw, C, M, C))) goto fail;
    }
    free(tw);
    return t;
fail:
    free(tw);
    cpu_tapconv_free(t);
    return NULL;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

size_t cpu_tapconv_scratch(const conv_geom *g, int64_t C, int64_t M, int32_t threads) {
    int64_t P = g->out[0] * g->out[1];
    return align64(sizeof(float) * (size_t)(C * P)) + align64(sizeof(float) * (size_t)(M * P)) +
           sizeof(float) * cpu_gemm_scratch(M, P, threads) + 128;
}

/* One tap's rectangle and its data, for the parallel passes. */
typedef struct tap_job {
    const conv_geom *g;
    const float *x; /* the image [C, H, W] */
    float *xg;      /* [C, P] */
    float *y;       /* the image's output [M, OH, OW] */
    const float *yt;
    const float *bias;
    const act_params *post;
    int64_t ky, kx, y0, y1, x0, x1, P;
} tap_job;

static void gather_channels(void *arg, int64_t begin, int64_t end) {
    const tap_job *j = arg;
    const conv_geom *g = j->g;
    int64_t H = g->in[0], W = g->in[1], sh = g->stride[0], sw = g->stride[1], w = j->x1 - j->x0;
    for (int64_t c = begin; c < end; c++) {
        float *dst = j->xg + c * j->P;
        for (int64_t oy = j->y0; oy < j->y1; oy++, dst += w) {
            const float *src = j->x + (c * H + oy * sh - g->pad_lo[0] + j->ky * g->dil[0]) * W - g->pad_lo[1] +
                               j->kx * g->dil[1];
            if (sw == 1) memcpy(dst, src + j->x0, sizeof(float) * (size_t)w);
            else
                for (int64_t i = 0; i < w; i++) dst[i] = src[(j->x0 + i) * sw];
        }
    }
}

static void add_channels(void *arg, int64_t begin, int64_t end) {
    const tap_job *j = arg;
    int64_t OH = j->g->out[0], OW = j->g->out[1], w = j->x1 - j->x0;
    for (int64_t m = begin; m < end; m++) {
        const float *src = j->yt + m * j->P;
        for (int64_t oy = j->y0; oy < j->y1; oy++, src += w) {
            float *dst = j->y + (m * OH + oy) * OW + j->x0;
            for (int64_t i = 0; i < w; i++) dst[i] += src[i];
        }
    }
}

static void bias_channels(void *arg, int64_t begin, int64_t end) {
    const tap_job *j = arg;
    int64_t P = j->g->out[0] * j->g->out[1];
    for (int64_t m = begin; m < end; m++) {
        float b = j->bias ? j->bias[m] : 0.0f, *y = j->y + m * P;
        for (int64_t i = 0; i < P; i++) y[i] = b;
    }
}

static void post_channels(void *arg, int64_t begin, int64_t end) {
    const tap_job *j = arg;
    int64_t P = j->g->out[0] * j->g->out[1];
    for (int64_t m = begin; m < end; m++) cpu_post_apply(j->post, j->y + m * P, P, 0.0f);
}

void cpu_tapconv_run(const cpu_tapconv *t, seam_pool *pool, const conv_geom *g, int64_t N, const float *x,
                     const float *bias, const act_params *post, float *y, void *scratch) {
    int64_t C = t->C, M = t->M, KW = g->kernel[1], OH = g->out[0], OW = g->out[1], out_prod = OH * OW;
    int64_t in_prod = g->in[0] * g->in[1];
    float *xg = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    float *yt = (float *)((char *)xg + align64(sizeof(float) * (size_t)(C * out_prod)));
    float *gs = (float *)((char *)yt + align64(sizeof(float) * (size_t)(M * out_prod)));
    /* a tap that reads the input for every output writes the output
     * first, with the bias; the others add onto it */
    int64_t full = -1;
    for (int64_t i = 0; i < t->taps && full < 0; i++) {
        int64_t y0, y1, x0, x1;
        conv_geom_tap_range(g, 0, i / KW, &y0, &y1);
        conv_geom_tap_range(g, 1, i % KW, &x0, &x1);
        if (y0 == 0 && y1 == OH && x0 == 0 && x1 == OW) full = i;
    }
    for (int64_t n = 0; n < N; n++) {
        tap_job j = {g, x + n * C * in_prod, xg, y + n * M * out_prod, yt, bias, post, 0, 0, 0, 0, 0, 0, 0};
        if (full < 0) seam_parallel_for(pool, M, 8, bias_channels, &j);
        for (int64_t step = -1; step < t->taps; step++) {
            int64_t i = step < 0 ? full : step;
            if (i < 0 || (step >= 0 && i == full)) continue;
            j.ky = i / KW, j.kx = i % KW;
            conv_geom_tap_range(g, 0, j.ky, &j.y0, &j.y1);
            conv_geom_tap_range(g, 1, j.kx, &j.x0, &j.x1);
            if (!(j.P = (j.y1 - j.y0) * (j.x1 - j.x0))) continue;
            seam_parallel_for(pool, C, 8, gather_channels, &j);
            cpu_gemm_b b = {xg, j.P, NULL};
            if (i == full) {
                cpu_gemm_run(pool, t->w[i], &b, j.P, j.y, out_prod, bias, NULL, gs);
                continue;
            }
            cpu_gemm_run(pool, t->w[i], &b, j.P, yt, j.P, NULL, NULL, gs);
            seam_parallel_for(pool, M, 8, add_channels, &j);
        }
        if (post && post->kind != ACT_NONE) seam_parallel_for(pool, M, 8, post_channels, &j);
    }
}
