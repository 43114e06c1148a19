/* The CPU depthwise convolution (src/backends/cpu/dwconv.c) against a
 * float64 direct convolution written here from the ONNX Conv definition
 * (group = C, one input channel per group, M = C * multiplier): kernels
 * 1x1 to 7x7 and non-square, strides 1/2/3 and unequal, dilation 1-3,
 * zero, symmetric and asymmetric pads, depth multipliers 1-3, channel
 * counts that fill no 8- or 16-lane block, planes from 1x1 to 120x90 (the
 * small-plane lanes, the rows (AVX-512, or AVX2: SEAM_CPU_DW=avx2 picks
 * them on any CPU with AVX2) and the generic loop), batch 1-2,
 * with and without bias, every post-op activation. 1, 2 and 3 threads
 * must give the same bits. The test fails if a path it means to cover was
 * never taken (the rows only where the CPU has AVX-512F, or AVX2 and FMA).
 *
 *   dw_test                  random and listed cases (a few seconds)
 *   dw_test --model-shapes   the depthwise convs of mobilenet_v3_large,
 *                            mnasnet1_0, efficientnet_b0 and mobilenet_v2
 *
 * The error bound per output: |seam - reference| <= 1e-5 * (sum of |w x|
 * over its taps + |bias|) + 1e-6 (float32 sums of at most 49 products,
 * then an activation with slope at most 1.5). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_ref.h"
#include "backends/cpu/dwconv.h"
#include "core/pool.h"

static int failures, cases, paths[3]; /* lanes, rows, generic */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}
static double urand(void) { return (double)(rnd() >> 11) / (double)(1ull << 52) - 1.0; } /* [-1, 1) */
static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

typedef struct dw_case {
    int64_t N, C, mult, H, W, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
    bool bias;
    act_params act;
} dw_case;

static const char *act_name(act_kind k) {
    switch (k) {
    case ACT_NONE: return "none";
    case ACT_RELU: return "relu";
    case ACT_LEAKY_RELU: return "leaky";
    case ACT_CLIP: return "clip";
    case ACT_HARD_SIGMOID: return "hardsigmoid";
    case ACT_HARD_SWISH: return "hardswish";
    case ACT_SILU: return "silu";
    default: return "?";
    }
}

static void run_case(const dw_case *c, seam_pool *pools[3]) {
    conv_geom g;
    memset(&g, 0, sizeof g);
    g.n = 2;
    g.in[0] = c->H, g.in[1] = c->W, g.kernel[0] = c->KH, g.kernel[1] = c->KW;
    g.stride[0] = c->sh, g.stride[1] = c->sw, g.dil[0] = c->dh, g.dil[1] = c->dw;
    g.pad_lo[0] = c->pt, g.pad_lo[1] = c->pl, g.pad_hi[0] = c->pb, g.pad_hi[1] = c->pr;
    int64_t OH = (c->H + c->pt + c->pb - (c->KH - 1) * c->dh - 1) / c->sh + 1;
    int64_t OW = (c->W + c->pl + c->pr - (c->KW - 1) * c->dw - 1) / c->sw + 1;
    if (OH < 1 || OW < 1) return;
    g.out[0] = OH, g.out[1] = OW;
    int64_t M = c->C * c->mult, nx = c->N * c->C * c->H * c->W, ny = c->N * M * OH * OW, T = c->KH * c->KW;
    float *x = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)(M * T));
    float *b = malloc(sizeof(float) * (size_t)M);
    float *y[3];
    for (int t = 0; t < 3; t++) y[t] = malloc(sizeof(float) * (size_t)ny);
    for (int64_t i = 0; i < nx; i++) x[i] = (float)(urand() * 4);
    for (int64_t i = 0; i < M * T; i++) w[i] = (float)urand();
    for (int64_t i = 0; i < M; i++) b[i] = (float)urand();
    cpu_dw_plan p[3];
    bool planned = true;
    for (int t = 0; t < 3; t++) {
        planned &= cpu_dw_plan_make(&p[t], &g, c->N, c->C, M, t + 1);
        if (!planned) break;
        void *scratch = malloc(cpu_dw_scratch(&p[t]));
        for (int64_t i = 0; i < ny; i++) y[t][i] = NAN; /* every output must be written */
        cpu_dw_run(&p[t], pools[t], x, w, c->bias ? b : NULL, &c->act, y[t], scratch);
        free(scratch);
    }
    char name[200];
    snprintf(name, sizeof name, "N%ld C%ld x%ld %ldx%ld k%ldx%ld s%ld,%ld d%ld,%ld pads %ld,%ld,%ld,%ld %s%s", c->N,
             c->C, c->mult, c->H, c->W, c->KH, c->KW, c->sh, c->sw, c->dh, c->dw, c->pt, c->pl, c->pb, c->pr,
             act_name(c->act.kind), c->bias ? " bias" : "");
    if (!planned) {
        /* the planner may refuse only planes too large for a task buffer */
        printf("FAIL %s: cpu_dw_plan_make refused\n", name);
        failures++;
        goto done;
    }
    cases++;
    paths[p[0].vec ? 0 : p[0].rows ? 1 : 2]++;
    double worst = 0;
    int64_t bad = 0;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < M; m++) {
            const float *xc = x + (n * c->C + m / c->mult) * c->H * c->W, *k = w + m * T;
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = c->bias ? b[m] : 0, mag = c->bias ? fabs(b[m]) : 0;
                    for (int64_t a = 0; a < c->KH; a++)
                        for (int64_t bb = 0; bb < c->KW; bb++) {
                            int64_t ih = oh * c->sh - c->pt + a * c->dh, iw = ow * c->sw - c->pl + bb * c->dw;
                            if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                            double v = (double)k[a * c->KW + bb] * xc[ih * c->W + iw];
                            acc += v, mag += fabs(v);
                        }
                    double ref = act_ref(&c->act, acc), tol = 1e-5 * mag + 1e-6;
                    int64_t o = ((n * M + m) * OH + oh) * OW + ow;
                    double err = fabs(y[0][o] - ref);
                    if (!(err <= tol)) bad++; /* NaN: never written */
                    if (err / tol > worst || err != err) worst = err != err ? INFINITY : err / tol;
                }
        }
    int64_t differ = 0;
    for (int t = 1; t < 3; t++)
        for (int64_t i = 0; i < ny; i++) differ += memcmp(&y[0][i], &y[t][i], sizeof(float)) != 0;
    if (bad || differ) {
        printf("FAIL %s [%s]: %ld outputs off (worst %.2g x the bound), %ld differ between 1/2/3 threads\n", name,
               p[0].vec ? "lanes" : p[0].rows ? "rows" : "generic", bad, worst, differ);
        failures++;
    }
done:
    free(x), free(w), free(b);
    for (int t = 0; t < 3; t++) free(y[t]);
}

static act_params random_act(void) {
    static const act_kind kinds[] = {ACT_NONE, ACT_RELU, ACT_LEAKY_RELU, ACT_CLIP, ACT_HARD_SIGMOID, ACT_HARD_SWISH,
                                     ACT_SILU};
    act_params a = {kinds[rnd() % 7], 0, 0, 0, 0, 0};
    if (a.kind == ACT_LEAKY_RELU) a.alpha = 0.1f;
    if (a.kind == ACT_HARD_SIGMOID) a.alpha = 0.2f, a.beta = 0.5f;
    if (a.kind == ACT_CLIP) a.lo = -1.5f, a.hi = 2.0f;
    return a;
}

int main(int argc, char **argv) {
    bool model_shapes = argc > 1 && strcmp(argv[1], "--model-shapes") == 0;
    if (argc > 2 || (argc == 2 && !model_shapes)) {
        fprintf(stderr, "usage: dw_test [--model-shapes]\n");
        return 2;
    }
    seam_pool *pools[3] = {seam_pool_create(1), seam_pool_create(2), seam_pool_create(3)};
    if (!pools[0] || !pools[1] || !pools[2]) return 1;
    const act_params hswish = {ACT_HARD_SWISH, 0, 0, 0, 0, 0}, none = {ACT_NONE, 0, 0, 0, 0, 0};
    if (model_shapes) {
        /* C H W k stride (pads k / 2), as in bench/dw_bench.c */
        static const int64_t shapes[][5] = {
            {16, 112, 112, 3, 1}, {64, 112, 112, 3, 2}, {72, 56, 56, 3, 1},  {72, 56, 56, 5, 2},
            {120, 28, 28, 5, 1},  {240, 28, 28, 3, 2},  {200, 14, 14, 3, 1}, {672, 14, 14, 5, 2},
            {960, 7, 7, 5, 1},    {48, 112, 112, 3, 2}, {240, 28, 28, 5, 2}, {480, 14, 14, 5, 1},
            {1152, 7, 7, 3, 1},   {96, 112, 112, 3, 2}, {144, 56, 56, 5, 2}, {192, 28, 28, 3, 1},
        };
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const int64_t *s = shapes[i];
            int64_t pd = s[3] / 2;
            dw_case c = {1, s[0], 1, s[1], s[2], s[3], s[3], s[4], s[4], 1, 1, pd, pd, pd, pd, true, hswish};
            run_case(&c, pools);
        }
    } else {
        /* listed: every geometry the rows take, at sizes around their
         * blocks (rows of 4, columns of 16 on AVX-512 and 8 on AVX2), and
         * the others */
        static const int64_t hw[][2] = {{17, 17}, {16, 33}, {19, 50}, {23, 15}, {40, 37}, {33, 64}};
        for (int k = 3; k <= 5; k += 2)
            for (int s = 1; s <= 2; s++)
                for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++) {
                    int64_t pd = k / 2;
                    dw_case c = {1, 5, 1, hw[i][0], hw[i][1], k, k, s, s, 1, 1, pd, pd, pd, pd, i % 2 == 0,
                                 i % 3 == 0 ? none : hswish};
                    run_case(&c, pools);
                    c.pt = 0, c.pl = pd + 1 <= k - 1 ? pd + 1 : pd, c.pb = k - 1, c.pr = 0; /* asymmetric */
                    c.act = random_act();
                    run_case(&c, pools);
                }
        /* the small-plane lanes: full blocks of 16 channels and a partial
         * one, rows under and over 8 columns, every post-op */
        static const int64_t small[][2] = {{7, 7}, {14, 14}, {5, 9}, {11, 6}};
        for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
            for (int k = 3; k <= 5; k += 2)
                for (int s = 1; s <= 2; s++) {
                    int64_t pd = k / 2;
                    dw_case c = {1 + (int64_t)(i % 2), 35, 1, small[i][0], small[i][1], k, k, s, s, 1, 1, pd, pd, pd,
                                 pd, true, random_act()};
                    run_case(&c, pools);
                }
        /* random: any geometry */
        for (int i = 0; i < 400; i++) {
            dw_case c;
            c.N = irand(1, 2), c.C = irand(1, 20), c.mult = irand(1, 10) <= 8 ? 1 : irand(2, 3);
            int64_t size = irand(0, 3); /* tiny, small (lanes), medium, large planes */
            int64_t lo = size == 0 ? 1 : size == 1 ? 5 : size == 2 ? 17 : 60, hi = size == 0 ? 6 : size == 1 ? 16
                                                                             : size == 2 ? 40 : 120;
            c.H = irand(lo, hi), c.W = irand(lo, hi);
            if (size == 3) c.C = irand(1, 4);
            c.KH = irand(1, 10) <= 8 ? 2 * irand(1, 3) + 1 : irand(1, 4);
            c.KW = irand(1, 10) <= 7 ? c.KH : irand(1, 7);
            c.sh = irand(1, 10) <= 6 ? 1 : irand(2, 3), c.sw = irand(1, 10) <= 8 ? c.sh : irand(1, 3);
            c.dh = irand(1, 10) <= 8 ? 1 : irand(2, 3), c.dw = irand(1, 10) <= 8 ? c.dh : irand(1, 3);
            c.pt = irand(0, c.KH), c.pl = irand(0, c.KW);
            c.pb = irand(1, 10) <= 6 ? c.pt : irand(0, c.KH), c.pr = irand(1, 10) <= 6 ? c.pl : irand(0, c.KW);
            c.bias = irand(0, 3) != 0;
            c.act = random_act();
            run_case(&c, pools);
        }
    }
    for (int t = 0; t < 3; t++) seam_pool_free(pools[t]);
    __builtin_cpu_init();
    bool has_rows = __builtin_cpu_supports("fma") && (__builtin_cpu_supports("avx512f") || __builtin_cpu_supports("avx2"));
    const char *dwe = getenv("SEAM_CPU_DW");
    if (dwe && strcmp(dwe, "flat") == 0) has_rows = false;
    printf("dw_test: %d cases (lanes %d, rows %d, generic %d), %d failed\n", cases, paths[0], paths[1], paths[2],
           failures);
    if (!model_shapes && (paths[0] == 0 || paths[2] == 0 || (has_rows && paths[1] == 0))) {
        printf("FAIL: a path was not covered\n");
        return 1;
    }
    return failures ? 1 : 0;
}
