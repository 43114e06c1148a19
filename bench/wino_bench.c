/* Winograd F(4x4, 3x3) (src/backends/cpu/winograd.c) against im2col +
 * cblas_sgemm as the CPU Conv kernel runs it (src/backends/cpu/linalg.c:
 * blocks of output pixels whose im2col columns stay in L2, each multiplied
 * at once; or the whole column matrix and one product split in pieces when
 * the output is one block), on the 3x3 stride-1 convs of the benchmark
 * models, with bias and ReLU on both sides, on 1 and 2 threads.
 *
 *   wino_bench [--reps R] < shapes     lines "name C H W M group pt pl pb pr"
 *   wino_bench [--reps R]              the built-in list (resnet18,
 *                                      densenet121, inception_v3, googlenet)
 *
 * The machine may be shared: the two sides alternate, R rounds, and each
 * side's best round counts; 1 thread is timed in the thread's CPU time,
 * 2 threads in wall time (the pool's second thread is not the caller's).
 * The prepared (transformed) weights are made once, outside the timing, as
 * a session would. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/winograd.h"
#include "backends/kernel.h"
#include "core/pool.h"

typedef struct shape {
    char name[32];
    int64_t C, H, W, M, group, pt, pl, pb, pr;
} shape;

static const shape builtin[] = {
    {"resnet18", 64, 56, 56, 64, 1, 1, 1, 1, 1},       {"resnet18", 128, 28, 28, 128, 1, 1, 1, 1, 1},
    {"resnet18", 256, 14, 14, 256, 1, 1, 1, 1, 1},     {"resnet18", 512, 7, 7, 512, 1, 1, 1, 1, 1},
    {"densenet121", 128, 7, 7, 32, 1, 1, 1, 1, 1},     {"densenet121", 128, 14, 14, 32, 1, 1, 1, 1, 1},
    {"densenet121", 128, 28, 28, 32, 1, 1, 1, 1, 1},   {"densenet121", 128, 56, 56, 32, 1, 1, 1, 1, 1},
    {"inception_v3", 32, 147, 147, 64, 1, 1, 1, 1, 1}, {"inception_v3", 32, 149, 149, 32, 1, 0, 0, 0, 0},
    {"inception_v3", 64, 35, 35, 96, 1, 1, 1, 1, 1},   {"inception_v3", 80, 73, 73, 192, 1, 0, 0, 0, 0},
    {"inception_v3", 96, 35, 35, 96, 1, 1, 1, 1, 1},   {"inception_v3", 448, 8, 8, 384, 1, 1, 1, 1, 1},
    {"googlenet", 16, 14, 14, 48, 1, 1, 1, 1, 1},      {"googlenet", 16, 28, 28, 32, 1, 1, 1, 1, 1},
    {"googlenet", 24, 14, 14, 64, 1, 1, 1, 1, 1},      {"googlenet", 32, 7, 7, 128, 1, 1, 1, 1, 1},
    {"googlenet", 32, 14, 14, 64, 1, 1, 1, 1, 1},      {"googlenet", 32, 14, 14, 128, 1, 1, 1, 1, 1},
    {"googlenet", 32, 28, 28, 96, 1, 1, 1, 1, 1},      {"googlenet", 48, 7, 7, 128, 1, 1, 1, 1, 1},
    {"googlenet", 64, 56, 56, 192, 1, 1, 1, 1, 1},     {"googlenet", 96, 14, 14, 208, 1, 1, 1, 1, 1},
    {"googlenet", 96, 28, 28, 128, 1, 1, 1, 1, 1},     {"googlenet", 112, 14, 14, 224, 1, 1, 1, 1, 1},
    {"googlenet", 128, 14, 14, 256, 1, 1, 1, 1, 1},    {"googlenet", 128, 28, 28, 192, 1, 1, 1, 1, 1},
    {"googlenet", 144, 14, 14, 288, 1, 1, 1, 1, 1},    {"googlenet", 160, 7, 7, 320, 1, 1, 1, 1, 1},
    {"googlenet", 160, 14, 14, 320, 1, 1, 1, 1, 1},    {"googlenet", 192, 7, 7, 384, 1, 1, 1, 1, 1},
};

/* ---- the im2col side, as linalg.c runs a float32 2-D conv ---- */

typedef struct col_job {
    const shape *s;
    const float *x, *w, *bias; /* x: one image [C, H, W] */
    float *y, *buf;
    int64_t OH, OW, Cg, Mg, Kg, out, nb, blocks, per_task;
    bool blocked;
} col_job;

/* im2col of output pixels [p0, p0 + nb) of group g's channels: rows of nb,
 * each output row's run of inside pixels copied at once (as linalg.c). */
static void im2col(const col_job *j, int64_t g, float *col, int64_t p0, int64_t nb) {
    const shape *s = j->s;
    int64_t OW = j->OW;
    for (int64_t row = 0; row < j->Kg; row++) {
        int64_t c = g * j->Cg + row / 9, ka = row % 9 / 3, kb = row % 3;
        const float *src = j->x + c * s->H * s->W;
        float *dst = col + row * nb;
        int64_t base = kb - s->pl; /* input column of output column 0 */
        int64_t lo = base >= 0 ? 0 : -base, hi = s->W - base < OW ? s->W - base : OW; /* inside: [lo, hi) */
        for (int64_t p = p0, end = p0 + nb; p < end;) {
            int64_t oh = p / OW, ow = p % OW, ow1 = OW - ow < end - p ? OW : ow + (end - p);
            float *d = dst + (p - p0);
            int64_t ih = oh - s->pt + ka;
            if (ih < 0 || ih >= s->H) {
                memset(d, 0, sizeof(float) * (size_t)(ow1 - ow));
            } else {
                int64_t a = lo < ow ? ow : lo > ow1 ? ow1 : lo, bb = hi < a ? a : hi > ow1 ? ow1 : hi;
                for (int64_t q = ow; q < a; q++) d[q - ow] = 0.0f;
                if (bb > a) memcpy(d + (a - ow), src + ih * s->W + a + base, sizeof(float) * (size_t)(bb - a));
                for (int64_t q = bb; q < ow1; q++) d[q - ow] = 0.0f;
            }
            p += ow1 - ow;
        }
    }
}

/* rows [0, Mg) x columns [p0, p0 + nb) of group g's output: bias, product, ReLU */
static void product(const col_job *j, int64_t g, const float *col, int64_t ldcol, int64_t m0, int64_t mm, int64_t p0,
                    int64_t nb) {
    float *c = j->y + (g * j->Mg + m0) * j->out + p0;
    for (int64_t i = 0; i < mm; i++)
        for (int64_t q = 0; q < nb; q++) c[i * j->out + q] = j->bias[g * j->Mg + m0 + i];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mm, (int)nb, (int)j->Kg, 1.0f,
                j->w + (g * j->Mg + m0) * j->Kg, (int)j->Kg, col, (int)ldcol, 1.0f, c, (int)j->out);
    static const act_params relu = {ACT_RELU, 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < mm; i++) cpu_post_apply(&relu, c + i * j->out, nb, 0);
}

static void col_blocks(void *arg, int64_t begin, int64_t end) {
    const col_job *j = arg;
    for (int64_t t = begin; t < end; t++) {
        float *col = j->buf + t * (j->Kg * j->nb + 16);
        int64_t total = j->blocks * j->s->group, u1 = (t + 1) * j->per_task < total ? (t + 1) * j->per_task : total;
        for (int64_t u = t * j->per_task; u < u1; u++) {
            int64_t g = u / j->blocks, p0 = u % j->blocks * j->nb, nb = j->out - p0 < j->nb ? j->out - p0 : j->nb;
            im2col(j, g, col, p0, nb);
            product(j, g, col, nb, 0, j->Mg, p0, nb);
        }
    }
}

typedef struct piece_job {
    const col_job *j;
    int64_t g, chunk;
    bool by_rows;
} piece_job;

static void col_pieces(void *arg, int64_t begin, int64_t end) {
    const piece_job *pj = arg;
    const col_job *j = pj->j;
    for (int64_t q = begin; q < end; q++) {
        int64_t side = pj->by_rows ? j->Mg : j->out, at = q * pj->chunk, len = side - at < pj->chunk ? side - at : pj->chunk;
        if (pj->by_rows) product(j, pj->g, j->buf, j->out, at, len, 0, j->out);
        else product(j, pj->g, j->buf + at, j->out, 0, j->Mg, at, len);
    }
}

static void col_run(col_job *j, seam_pool *pool) {
    int64_t threads = seam_pool_threads(pool);
    if (j->blocked) {
        int64_t total = j->blocks * j->s->group, tasks = 2 * threads < total ? 2 * threads : total;
        j->per_task = (total + tasks - 1) / tasks;
        seam_parallel_for(pool, (total + j->per_task - 1) / j->per_task, 1, col_blocks, j);
        return;
    }
    for (int64_t g = 0; g < j->s->group; g++) {
        im2col(j, g, j->buf, 0, j->out);
        /* gemm_post's split: pieces of at least 2^17 multiply-adds, at most 8,
         * along the longer side (rows by 8, columns by 32) */
        int64_t m = j->Mg, n = j->out, pieces = m * n * j->Kg >> 17;
        if (pieces > 8) pieces = 8;
        piece_job pj = {j, g, 0, m > n};
        int64_t side = pj.by_rows ? m : n, unit = pj.by_rows ? 8 : 32;
        if (pieces > side / unit) pieces = side / unit;
        if (pieces < 1) pieces = 1;
        pj.chunk = unit * ((side / unit + pieces - 1) / pieces);
        if (pj.chunk < 1 || pieces == 1) pj.chunk = side;
        seam_parallel_for(pool, (side + pj.chunk - 1) / pj.chunk, 1, col_pieces, &pj);
    }
}

static double now(clockid_t clk) {
    struct timespec t;
    clock_gettime(clk, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static double frand(uint64_t *st) {
    *st ^= *st << 13, *st ^= *st >> 7, *st ^= *st << 17;
    return (double)(*st >> 11) / (double)(1ull << 53);
}

int main(int argc, char **argv) {
#if defined(__x86_64__)
    /* as the CLI does (tools/cli/main.c): OpenBLAS reads it when it loads */
    if (!getenv("OPENBLAS_CORETYPE") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd")) {
        setenv("OPENBLAS_CORETYPE", "SKYLAKEX", 1);
        execv("/proc/self/exe", argv);
    }
#endif
    openblas_set_num_threads(1);
    int reps = 7;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: wino_bench [--reps R] [< shapes]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    shape *ss = NULL;
    size_t n = 0;
    if (!isatty(0)) {
        shape s;
        while (scanf("%31s %ld %ld %ld %ld %ld %ld %ld %ld %ld", s.name, &s.C, &s.H, &s.W, &s.M, &s.group, &s.pt, &s.pl,
                     &s.pb, &s.pr) == 10) {
            ss = realloc(ss, sizeof *ss * (n + 1));
            if (!ss) return 1;
            ss[n++] = s;
        }
    }
    if (n == 0) {
        n = sizeof builtin / sizeof builtin[0];
        ss = malloc(sizeof builtin);
        if (!ss) return 1;
        memcpy(ss, builtin, sizeof builtin);
    }
    seam_pool *pools[2] = {seam_pool_create(1), seam_pool_create(2)};
    if (!pools[0] || !pools[1]) return 1;
    printf("| model | C | H x W | M | fits | im2col 1t ms | wino 1t ms | ratio 1t | im2col 2t ms | wino 2t ms | ratio 2t |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    double tot[4] = {0}, rule[2] = {0}; /* rule: each shape on the side cpu_wino_fits picks */
    for (size_t si = 0; si < n; si++) {
        const shape *s = &ss[si];
        int64_t Cg = s->C / s->group, Mg = s->M / s->group;
        conv_geom g;
        memset(&g, 0, sizeof g);
        g.n = 2, g.in[0] = s->H, g.in[1] = s->W, g.kernel[0] = g.kernel[1] = 3;
        g.stride[0] = g.stride[1] = g.dil[0] = g.dil[1] = 1;
        g.pad_lo[0] = s->pt, g.pad_lo[1] = s->pl, g.pad_hi[0] = s->pb, g.pad_hi[1] = s->pr;
        g.out[0] = s->H + s->pt + s->pb - 2, g.out[1] = s->W + s->pl + s->pr - 2;
        int64_t out = g.out[0] * g.out[1];
        size_t nx = (size_t)(s->C * s->H * s->W), nw = (size_t)(s->M * Cg * 9);
        float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * nw), *b = calloc((size_t)s->M, sizeof(float));
        float *y = malloc(sizeof(float) * (size_t)(s->M * out));
        uint64_t st = 88172645463325252ull;
        for (size_t i = 0; i < nx; i++) x[i] = (float)frand(&st);
        for (size_t i = 0; i < nw; i++) w[i] = (float)(frand(&st) - 0.5) * 0.1f;
        cpu_wino *p = cpu_wino_prepare(w, s->M, Cg, s->group);
        col_job cj = {s, x, w, b, y, NULL, g.out[0], g.out[1], Cg, Mg, Cg * 9, out, 0, 0, 0, false};
        cj.nb = ((int64_t)1 << 17) / cj.Kg / 64 * 64;
        if (cj.nb < 64) cj.nb = 64;
        cj.blocks = (out + cj.nb - 1) / cj.nb;
        cj.blocked = cj.blocks > 1 && cj.blocks * s->group >= 4;
        size_t col_bytes = sizeof(float) * (size_t)(cj.blocked ? 4 * (cj.Kg * cj.nb + 16) : cj.Kg * out);
        size_t wino_bytes = cpu_wino_scratch_size(p, &g, 2);
        cj.buf = malloc(col_bytes);
        void *scratch = malloc(wino_bytes);
        if (!x || !w || !b || !y || !p || !cj.buf || !scratch) return 1;
        double best[4] = {1e30, 1e30, 1e30, 1e30}; /* im2col 1t, wino 1t, im2col 2t, wino 2t */
        for (int r = 0; r < reps + 1; r++) /* round 0 warms up */
            for (int k = 0; k < 4; k++) {
                seam_pool *pool = pools[k / 2];
                clockid_t clk = k < 2 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
                double t0 = now(clk);
                if (k % 2 == 0) col_run(&cj, pool);
                else cpu_wino_run(p, pool, &g, 1, x, b, &(act_params){ACT_RELU, 0, 0, 0, 0, 0}, y, scratch);
                double t = now(clk) - t0;
                if (r > 0 && t < best[k]) best[k] = t;
            }
        for (int k = 0; k < 4; k++) tot[k] += best[k];
        bool fits = cpu_wino_fits(&g, Cg, Mg);
        rule[0] += fits ? best[1] : best[0], rule[1] += fits ? best[3] : best[2];
        printf("| %s | %ld | %ld x %ld | %ld | %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |\n", s->name, (long)s->C,
               (long)s->H, (long)s->W, (long)s->M, fits ? "yes" : "no", best[0], best[1],
               best[1] / best[0], best[2], best[3], best[3] / best[2]);
        fflush(stdout);
        cpu_wino_free(p);
        free(x), free(w), free(b), free(y), free(cj.buf), free(scratch);
    }
    printf("| total | | | | | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |\n", tot[0], tot[1], tot[1] / tot[0], tot[2],
           tot[3], tot[3] / tot[2]);
    printf("| total, wino where it fits | | | | | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |\n", tot[0], rule[0],
           rule[0] / tot[0], tot[2], rule[1], rule[1] / tot[2]);
    seam_pool_free(pools[0]);
    seam_pool_free(pools[1]);
    free(ss);
    return 0;
}
