/* The rows of a convolution as X W^T (xwconv.h). */
#include "backends/cpu/xwconv.h"

#include <string.h>

#include "core/pool.h"

/* One row: for each of Cg channel planes (in_prod apart in src), the
 * values of its kprod taps; the n_in taps that read the input are at[j]
 * in the window, at off[j] in the plane, and the others (the padding) 0.
 * Kept out of line with restrict pointers (the table and the rows share a
 * scratch) and without a branch per tap. */
static void xw_gather(float *restrict dst, const float *restrict src, const int64_t *restrict off,
                      const int64_t *restrict at, int64_t n_in, int64_t kprod, int64_t Cg, int64_t in_prod) {
    if (n_in == kprod) {
        for (int64_t c = 0; c < Cg; c++, src += in_prod, dst += kprod)
            for (int64_t e = 0; e < kprod; e++) dst[e] = src[off[e]];
        return;
    }
    memset(dst, 0, sizeof(float) * (size_t)(Cg * kprod));
    for (int64_t c = 0; c < Cg; c++, src += in_prod, dst += kprod)
        for (int64_t j = 0; j < n_in; j++) dst[at[j]] = src[off[j]];
}

typedef struct xw_rows_job {
    float *rows;
    const float *x;
    int64_t P, K, kprod, Cg, in_plane, in_image;
    const int64_t *n_in, *off, *at; /* [P], [P, kprod], [P, kprod] */
} xw_rows_job;

static void xw_rows(void *arg, int64_t begin, int64_t end) {
    const xw_rows_job *j = arg;
    for (int64_t i = begin; i < end; i++) {
        int64_t n = i / j->P, p = i % j->P;
        xw_gather(j->rows + i * j->K, j->x + n * j->in_image, j->off + p * j->kprod, j->at + p * j->kprod, j->n_in[p],
                  j->kprod, j->Cg, j->in_plane);
    }
}

void cpu_xw_gather(seam_pool *pool, const conv_geom *w, const float *x, int64_t N, int64_t C, int64_t Cg, int64_t in_prod,
                   int64_t kprod, int64_t P, float *rows, int64_t *table) {
    int64_t *n_ins = table, *offs = table + P, *ats = offs + P * kprod;
    /* per output position: the taps that read the input, their offsets in
     * a plane and their places in the window */
    for (int64_t p = 0; p < P; p++) {
        int64_t q = p, od[CONV_MAX_SPATIAL], n_in = 0, *off = offs + p * kprod, *at = ats + p * kprod;
        for (int32_t d = w->n - 1; d >= 0; d--) od[d] = q % w->out[d], q /= w->out[d];
        for (int64_t e = 0; e < kprod; e++) {
            int64_t rem = e, ko[CONV_MAX_SPATIAL], o = 0;
            for (int32_t d = w->n - 1; d >= 0; d--) ko[d] = rem % w->kernel[d], rem /= w->kernel[d];
            for (int32_t d = 0; d < w->n && o >= 0; d++) {
                int64_t i = od[d] * w->stride[d] - w->pad_lo[d] + ko[d] * w->dil[d];
                o = i >= 0 && i < w->in[d] ? o * w->in[d] + i : -1;
            }
            if (o >= 0) off[n_in] = o, at[n_in++] = e;
        }
        n_ins[p] = n_in;
    }
    xw_rows_job j = {.rows = rows, .x = x, .P = P, .K = Cg * kprod, .kprod = kprod, .Cg = Cg, .in_plane = in_prod,
                     .in_image = C * in_prod, .n_in = n_ins, .off = offs, .at = ats};
    seam_parallel_for(pool, N * P, 1, xw_rows, &j);
}
