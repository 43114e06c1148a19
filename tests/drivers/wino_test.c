/* The CPU Winograd F(4x4, 3x3) convolution (src/backends/cpu/winograd.c)
 * against a direct convolution in float64 written here from the ONNX
 * Conv definition: many small shapes (odd sizes, sizes under a tile, pads
 * 0/1/2 and asymmetric, channel counts that fill no block, groups, batch
 * 2, several blocks of tile rows), every post-op activation, with and
 * without bias; 1, 2 and 3 threads must give the same bits.
 *
 *   wino_test                 the shapes above (seconds)
 *   wino_test --model-shapes  the 3x3 stride-1 conv shapes of resnet18,
 *                             densenet121, inception_v3 and googlenet: the
 *                             worst error relative to the output's scale
 *
 * The error bound: |winograd - direct| <= 2e-5 * max |direct| per output
 * channel set (the error of F(4, 3) in float32 is about 1e-6 of the scale). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_ref.h"
#include "backends/cpu/winograd.h"
#include "core/pool.h"

#define TOL 2e-5

static int failures;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* [-1, 1) */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}

typedef struct shape {
    int64_t N, C, H, W, M, group;
    int64_t pt, pl, pb, pr; /* pads: top, left, bottom, right */
} shape;

static conv_geom geom_of(const shape *s) {
    conv_geom g;
    memset(&g, 0, sizeof g);
    g.n = 2;
    g.in[0] = s->H, g.in[1] = s->W;
    g.kernel[0] = g.kernel[1] = 3;
    g.stride[0] = g.stride[1] = g.dil[0] = g.dil[1] = 1;
    g.pad_lo[0] = s->pt, g.pad_lo[1] = s->pl, g.pad_hi[0] = s->pb, g.pad_hi[1] = s->pr;
    g.out[0] = s->H + s->pt + s->pb - 2, g.out[1] = s->W + s->pl + s->pr - 2;
    return g;
}

/* y [N, M, OH, OW] in float64, before bias and activation. */
static void direct_conv(const shape *s, const float *x, const float *w, double *y) {
    int64_t OH = s->H + s->pt + s->pb - 2, OW = s->W + s->pl + s->pr - 2, Cg = s->C / s->group, Mg = s->M / s->group;
    for (int64_t n = 0; n < s->N; n++)
        for (int64_t m = 0; m < s->M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = 0;
                    for (int64_t c = 0; c < Cg; c++) {
                        const float *xc = x + (n * s->C + m / Mg * Cg + c) * s->H * s->W;
                        const float *wc = w + (m * Cg + c) * 9;
                        for (int64_t kh = 0; kh < 3; kh++) {
                            int64_t ih = oh - s->pt + kh;
                            if (ih < 0 || ih >= s->H) continue;
                            for (int64_t kw = 0; kw < 3; kw++) {
                                int64_t iw = ow - s->pl + kw;
                                if (iw >= 0 && iw < s->W) acc += (double)xc[ih * s->W + iw] * wc[kh * 3 + kw];
                            }
                        }
                    }
                    y[((n * s->M + m) * OH + oh) * OW + ow] = acc;
                }
}

/* Runs the shape on each pool with each activation (bias or not); returns
 * the worst error relative to the output's scale. */
static double check_shape(const shape *s, seam_pool **pools, int n_pools, const act_params *acts, int n_acts,
                          bool with_bias) {
    conv_geom g = geom_of(s);
    int64_t OH = g.out[0], OW = g.out[1], Cg = s->C / s->group;
    size_t nx = (size_t)(s->N * s->C * s->H * s->W), nw = (size_t)(s->M * Cg * 9), ny = (size_t)(s->N * s->M * OH * OW);
    float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * nw), *b = malloc(sizeof(float) * (size_t)s->M);
    float *y = malloc(sizeof(float) * ny), *y0 = malloc(sizeof(float) * ny);
    double *ref = malloc(sizeof(double) * ny);
    if (!x || !w || !b || !y || !y0 || !ref) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    /* activations like a ReLU net's (non-negative, mean 0.5) or centred,
     * weights scaled so the outputs are about 1 */
    bool positive = s->C % 2 == 0;
    for (size_t i = 0; i < nx; i++) x[i] = (float)(positive ? (urand() + 1) / 2 : urand());
    double ws = sqrt(3.0 / (double)(Cg * 9));
    for (size_t i = 0; i < nw; i++) w[i] = (float)(urand() * ws);
    for (int64_t i = 0; i < s->M; i++) b[i] = (float)(urand() * 0.5);
    direct_conv(s, x, w, ref);
    double scale = 0;
    for (size_t i = 0; i < ny; i++) {
        double v = fabs(ref[i] + (with_bias ? b[(i / (size_t)(OH * OW)) % (size_t)s->M] : 0));
        scale = v > scale ? v : scale;
    }
    if (scale == 0) scale = 1;
    cpu_wino *p = cpu_wino_prepare(w, s->M, Cg, s->group);
    if (!p) {
        fprintf(stderr, "FAIL: cpu_wino_prepare returned NULL\n");
        exit(1);
    }
    if (cpu_wino_weights(p) != w) failures++, fprintf(stderr, "FAIL: cpu_wino_weights is not the prepared w\n");
    double worst = 0;
    for (int a = 0; a < n_acts; a++)
        for (int pi = 0; pi < n_pools; pi++) {
            size_t bytes = cpu_wino_scratch_size(p, &g, seam_pool_threads(pools[pi]));
            void *scratch = malloc(bytes);
            if (!scratch) {
                fprintf(stderr, "out of memory\n");
                exit(1);
            }
            memset(scratch, 0xff, bytes); /* NaN: the run must not read scratch it did not write */
            for (size_t i = 0; i < ny; i++) y[i] = NAN;
            cpu_wino_run(p, pools[pi], &g, s->N, x, with_bias ? b : NULL, acts[a].kind ? &acts[a] : NULL, y, scratch);
            free(scratch);
            if (pi == 0) {
                double err = 0;
                int64_t at = -1;
                for (size_t i = 0; i < ny; i++) {
                    double r = act_ref(&acts[a], ref[i] + (with_bias ? b[(i / (size_t)(OH * OW)) % (size_t)s->M] : 0));
                    double e = fabs((double)y[i] - r) / scale;
                    if (!(e <= err)) err = e, at = (int64_t)i; /* NaN counts as worst */
                }
                if (!(err <= TOL)) {
                    failures++;
                    fprintf(stderr,
                            "FAIL: N %lld C %lld H %lld W %lld M %lld group %lld pads %lld,%lld,%lld,%lld act %d bias %d: "
                            "error %.3g of the scale %.3g at %lld (got %g)\n",
                            (long long)s->N, (long long)s->C, (long long)s->H, (long long)s->W, (long long)s->M,
                            (long long)s->group, (long long)s->pt, (long long)s->pl, (long long)s->pb, (long long)s->pr,
                            (int)acts[a].kind, with_bias, err, scale, (long long)at, at >= 0 ? y[at] : 0.0);
                }
                worst = err > worst ? err : worst;
                memcpy(y0, y, sizeof(float) * ny);
            } else if (memcmp(y0, y, sizeof(float) * ny) != 0) {
                failures++;
                fprintf(stderr, "FAIL: C %lld H %lld W %lld M %lld: %d threads give other bits than 1\n", (long long)s->C,
                        (long long)s->H, (long long)s->W, (long long)s->M, seam_pool_threads(pools[pi]));
            }
        }
    cpu_wino_free(p);
    free(x), free(w), free(b), free(y), free(y0), free(ref);
    return worst;
}

static void check_fits(void) {
    shape s = {1, 64, 56, 56, 64, 1, 1, 1, 1, 1};
    conv_geom g = geom_of(&s);
    if (!cpu_wino_fits(&g, 64, 64)) failures++, fprintf(stderr, "FAIL: fits refuses resnet18's 64x56x56\n");
    conv_geom h = g;
    h.stride[1] = 2;
    if (cpu_wino_fits(&h, 64, 64)) failures++, fprintf(stderr, "FAIL: fits takes stride 2\n");
    h = g, h.dil[0] = 2;
    if (cpu_wino_fits(&h, 64, 64)) failures++, fprintf(stderr, "FAIL: fits takes dilation 2\n");
    h = g, h.kernel[0] = 5;
    if (cpu_wino_fits(&h, 64, 64)) failures++, fprintf(stderr, "FAIL: fits takes a 5x3 kernel\n");
    h = g, h.n = 3, h.kernel[2] = 3, h.stride[2] = h.dil[2] = 1, h.in[2] = h.out[2] = 8;
    if (cpu_wino_fits(&h, 64, 64)) failures++, fprintf(stderr, "FAIL: fits takes a 3-D conv\n");
    /* the size rule (winograd.c): few input channels, few tiles with many
     * weights, flat outputs; any number of output channels (a head's 64 ->
     * 1 too) */
    static const struct {
        shape s;
        bool fits;
    } rule[] = {
        {{1, 16, 14, 14, 48, 1, 1, 1, 1, 1}, false},  {{1, 32, 147, 147, 64, 1, 1, 1, 1, 1}, false},
        {{1, 48, 14, 14, 64, 1, 1, 1, 1, 1}, true},   {{1, 47, 14, 14, 64, 1, 1, 1, 1, 1}, false},
        {{1, 48, 14, 14, 24, 1, 1, 1, 1, 1}, true},   {{1, 48, 14, 14, 23, 1, 1, 1, 1, 1}, true},
        {{1, 64, 160, 160, 1, 1, 1, 1, 1, 1}, true},  {{1, 128, 80, 80, 16, 1, 1, 1, 1, 1}, true},
        {{1, 512, 7, 7, 512, 1, 1, 1, 1, 1}, false},  {{1, 448, 8, 8, 384, 1, 1, 1, 1, 1}, true},
        {{1, 32, 7, 7, 128, 1, 1, 1, 1, 1}, false},   {{1, 48, 7, 7, 128, 1, 1, 1, 1, 1}, true},
        {{1, 64, 3, 400, 64, 1, 0, 1, 0, 1}, false},  {{1, 64, 6, 400, 64, 1, 0, 1, 0, 1}, true},
    };
    for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++) {
        conv_geom rg = geom_of(&rule[i].s);
        if (cpu_wino_fits(&rg, rule[i].s.C, rule[i].s.M) != rule[i].fits)
            failures++, fprintf(stderr, "FAIL: fits says %d for C %lld H %lld W %lld M %lld\n", !rule[i].fits,
                                (long long)rule[i].s.C, (long long)rule[i].s.H, (long long)rule[i].s.W,
                                (long long)rule[i].s.M);
    }
    float w[9] = {0};
    cpu_wino *p = cpu_wino_prepare(w, 3, 1, 2); /* 3 outputs in 2 groups */
    if (p) failures++, fprintf(stderr, "FAIL: prepare takes M %% group != 0\n");
    cpu_wino_free(p);
    if (cpu_wino_prepare(w, 0, 1, 1)) failures++, fprintf(stderr, "FAIL: prepare takes M = 0\n");
}

int main(int argc, char **argv) {
    bool model_shapes = argc > 1 && strcmp(argv[1], "--model-shapes") == 0;
    seam_pool *pools[3] = {seam_pool_create(1), seam_pool_create(2), seam_pool_create(3)};
    if (!pools[0] || !pools[1] || !pools[2]) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    act_params acts[] = {
        {ACT_NONE, 0, 0, 0, 0, 0},
        {ACT_RELU, 0, 0, 0, 0, 0},
        {ACT_LEAKY_RELU, 0.1f, 0, 0, 0, 0},
        {ACT_CLIP, 0, 0, -0.25f, 0.5f, 0},
        {ACT_HARD_SIGMOID, 0.2f, 0.5f, 0, 0, 0},
        {ACT_HARD_SWISH, 0, 0, 0, 0, 0},
        {ACT_SILU, 0, 0, 0, 0, 0},
    };
    int n_acts = (int)(sizeof acts / sizeof acts[0]);
    if (model_shapes) {
        /* N C H W M group pads: resnet18, densenet121, inception_v3, googlenet */
        static const shape ms[] = {
            {1, 64, 56, 56, 64, 1, 1, 1, 1, 1},    {1, 128, 28, 28, 128, 1, 1, 1, 1, 1},
            {1, 256, 14, 14, 256, 1, 1, 1, 1, 1},  {1, 512, 7, 7, 512, 1, 1, 1, 1, 1},
            {1, 128, 7, 7, 32, 1, 1, 1, 1, 1},     {1, 128, 14, 14, 32, 1, 1, 1, 1, 1},
            {1, 128, 28, 28, 32, 1, 1, 1, 1, 1},   {1, 128, 56, 56, 32, 1, 1, 1, 1, 1},
            {1, 32, 147, 147, 64, 1, 1, 1, 1, 1},  {1, 32, 149, 149, 32, 1, 0, 0, 0, 0},
            {1, 64, 35, 35, 96, 1, 1, 1, 1, 1},    {1, 80, 73, 73, 192, 1, 0, 0, 0, 0},
            {1, 96, 35, 35, 96, 1, 1, 1, 1, 1},    {1, 448, 8, 8, 384, 1, 1, 1, 1, 1},
            {1, 16, 14, 14, 48, 1, 1, 1, 1, 1},    {1, 16, 28, 28, 32, 1, 1, 1, 1, 1},
            {1, 24, 14, 14, 64, 1, 1, 1, 1, 1},    {1, 32, 7, 7, 128, 1, 1, 1, 1, 1},
            {1, 32, 14, 14, 128, 1, 1, 1, 1, 1},   {1, 32, 28, 28, 96, 1, 1, 1, 1, 1},
            {1, 64, 56, 56, 192, 1, 1, 1, 1, 1},   {1, 96, 14, 14, 208, 1, 1, 1, 1, 1},
            {1, 96, 28, 28, 128, 1, 1, 1, 1, 1},   {1, 112, 14, 14, 224, 1, 1, 1, 1, 1},
            {1, 128, 14, 14, 256, 1, 1, 1, 1, 1},  {1, 128, 28, 28, 192, 1, 1, 1, 1, 1},
            {1, 144, 14, 14, 288, 1, 1, 1, 1, 1},  {1, 160, 7, 7, 320, 1, 1, 1, 1, 1},
            {1, 192, 7, 7, 384, 1, 1, 1, 1, 1},
        };
        printf("| C | H x W | M | pads | worst error / output scale |\n|---|---|---|---|---|\n");
        double all = 0;
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            /* C is even: non-negative inputs, as after the ReLU these nets have */
            shape s = ms[i];
            double e = check_shape(&s, pools, 1, acts, 1, true);
            printf("| %lld | %lld x %lld | %lld | %lld | %.2e |\n", (long long)s.C, (long long)s.H, (long long)s.W,
                   (long long)s.M, (long long)s.pt, e);
            all = e > all ? e : all;
        }
        printf("worst: %.2e\n", all);
    } else {
        check_fits();
        static const shape ss[] = {
            {1, 1, 1, 1, 1, 1, 1, 1, 1, 1},     /* one pixel, all padding */
            {1, 2, 2, 3, 3, 1, 1, 1, 1, 1},     /* under a tile */
            {1, 3, 3, 3, 2, 1, 0, 0, 0, 0},     /* one output pixel */
            {1, 5, 5, 7, 4, 1, 0, 0, 0, 0},     /* odd, unpadded: 3 x 5 */
            {2, 6, 9, 11, 7, 1, 1, 1, 1, 1},    /* batch 2, partial tiles both ways */
            {1, 4, 6, 5, 3, 1, 2, 2, 2, 2},     /* pads 2: tiles of zeros */
            {1, 3, 7, 6, 5, 1, 0, 1, 2, 0},     /* asymmetric pads */
            {1, 4, 4, 4, 4, 1, 3, 0, 0, 3},     /* pads over the kernel */
            {2, 6, 10, 13, 10, 2, 1, 0, 1, 2},  /* 2 groups, batch 2 */
            {1, 12, 8, 9, 9, 3, 1, 1, 1, 1},    /* 3 groups of 4 -> 3 */
            {1, 17, 12, 16, 33, 1, 1, 1, 1, 1}, /* channels off any block */
            {1, 40, 23, 19, 24, 1, 1, 1, 0, 0},
            {1, 96, 30, 30, 160, 1, 1, 1, 1, 1},
            {1, 16, 181, 179, 16, 1, 1, 0, 2, 1}, /* two blocks of tile rows (over 8 MB of V and P) */
            {2, 64, 17, 33, 32, 2, 1, 2, 1, 0},
            {1, 48, 37, 41, 1, 1, 1, 1, 1, 1},  /* one output channel (a head's last conv) */
            {1, 64, 21, 18, 5, 1, 1, 1, 1, 1},  /* a few */
        };
        for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++) {
            check_shape(&ss[i], pools, 3, acts, n_acts, true);
            check_shape(&ss[i], pools, 3, acts, 2, false);
        }
    }
    for (int i = 0; i < 3; i++) seam_pool_free(pools[i]);
    if (failures) {
        fprintf(stderr, "wino_test: %d failures\n", failures);
        return 1;
    }
    printf("wino_test: ok\n");
    return 0;
}
