/* CPU kernels: Conv and ConvTranspose (bound in linalg.c's table).
 *
 * Conv is im2col + sgemm per image and group on OpenBLAS (blas.c; a 1x1,
 * stride 1, unpadded conv needs no im2col: the input already is the column
 * matrix); float64 runs on dgemm, float16 and bfloat16 widened to float32.
 * A depthwise conv is dwconv.c's direct loop, a 3x3 stride 1 one where it
 * fits Winograd (winograd.c). On CPUs with AVX-512, a float32 2-D Conv of
 * the sizes where it wins runs on the packed GEMM instead (gemm.c): a
 * constant weight packed once at session creation (another on each run),
 * the im2col columns written straight into the packed panels; a grouped
 * conv of few channels a group that the packed GEMM leaves runs gconv.c's
 * direct loop (AVX-512 too); a dilated conv whose taps read the input for
 * few of its outputs runs tap by tap (tapconv.c). Conv applies
 * its bias and an activation the executor fused into it to each block of
 * the output as it is written.
 * ConvTranspose is the transposed product followed by col2im. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/dwconv.h"
#include "backends/cpu/gconv.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/linalg.h"
#include "backends/cpu/tapconv.h"
#include "backends/cpu/winograd.h"
#include "backends/cpu/xwconv.h"
#include "core/pool.h"

/* ---- Conv ---- */

typedef struct im2col_job {
    const void *x;      /* one image's channels of one group: [C, in...] */
    void *col;          /* [C * kprod, out_prod] */
    const conv_geom *w;
    int64_t C, kprod, out_prod, in_prod;
    bool f64;           /* double elements (float otherwise) */
} im2col_job;

/* Rows [begin, end) of the column matrix: row = (c, kernel offset). */
CPU_HOT static void im2col_rows(void *arg, int64_t begin, int64_t end) {
    im2col_job *j = arg;
    const conv_geom *w = j->w;
    int32_t n = w->n;
    for (int64_t row = begin; row < end; row++) {
        int64_t c = row / j->kprod, kk = row % j->kprod;
        int64_t koff[SEAM_MAX_RANK];
        for (int32_t d = n - 1; d >= 0; d--) {
            koff[d] = kk % w->kernel[d];
            kk /= w->kernel[d];
        }
        if (n == 2 && !j->f64) { /* the common case, with a contiguous inner loop when stride 1 */
            const float *src = (const float *)j->x + c * j->in_prod;
            float *dst = (float *)j->col + row * j->out_prod;
            int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
            for (int64_t oh = 0; oh < OH; oh++) {
                int64_t ih = oh * w->stride[0] - w->pad_lo[0] + koff[0] * w->dil[0];
                float *drow = dst + oh * OW;
                if (ih < 0 || ih >= H) {
                    memset(drow, 0, sizeof(float) * (size_t)OW);
                    continue;
                }
                const float *srow = src + ih * W;
                int64_t base = -w->pad_lo[1] + koff[1] * w->dil[1], s = w->stride[1];
                /* the output columns whose input column is inside: [lo, hi) */
                int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s, hi = W - base > 0 ? (W - base + s - 1) / s : 0;
                if (hi > OW) hi = OW;
                if (lo > hi) lo = hi;
                for (int64_t ow = 0; ow < lo; ow++) drow[ow] = 0.0f;
                if (s == 1) {
                    memcpy(drow + lo, srow + lo + base, sizeof(float) * (size_t)(hi - lo));
                } else {
                    const float *sp = srow + base;
                    for (int64_t ow = lo; ow < hi; ow++) drow[ow] = sp[ow * s];
                }
                for (int64_t ow = hi; ow < OW; ow++) drow[ow] = 0.0f;
            }
            continue;
        }
        /* any rank, and float64 */
        int64_t oidx[SEAM_MAX_RANK] = {0}, base = c * j->in_prod, at = row * j->out_prod;
        for (int64_t o = 0; o < j->out_prod; o++) {
            int64_t off = 0;
            bool inside = true;
            for (int32_t d = 0; d < n && inside; d++) {
                int64_t i = oidx[d] * w->stride[d] - w->pad_lo[d] + koff[d] * w->dil[d];
                inside = i >= 0 && i < w->in[d];
                off = off * w->in[d] + i;
            }
            if (j->f64) ((double *)j->col)[at + o] = inside ? ((const double *)j->x)[base + off] : 0.0;
            else ((float *)j->col)[at + o] = inside ? ((const float *)j->x)[base + off] : 0.0f;
            cpu_index_next(oidx, w->out, n);
        }
    }
}

/* A 2-D float32 conv with a large output in column blocks: each task
 * builds the im2col columns of one block of output pixels (about 512 KB,
 * so they stay in L2) and multiplies it at once, instead of the whole
 * column matrix (megabytes, out to memory and back) then one product.
 * The blocks depend on the sizes only, and every block is computed the
 * same way by whichever task, so the result does not depend on the
 * thread count. */
typedef struct cblk_job {
    const float *x, *w, *bias; /* x: the image [C, H, W]; w [M, Cg * kprod]; bias [M] (optional) */
    float *y, *buf;            /* y: the image's [M, out]; buf: per task, Kg x nb */
    const conv_geom *win;
    const act_params *post;
    int64_t group, Cg, Mg, kprod, Kg, out_prod, in_prod, nb, blocks, per_task;
} cblk_job;

/* im2col of output pixels [p0, p0 + nb) for one group's channels, rows of nb. */
static void cblk_im2col(const cblk_job *j, const float *xg, float *col, int64_t p0, int64_t nb) {
    for (int64_t row = 0; row < j->Kg; row++) cpu_im2col_row(j->win, xg, row, p0, nb, col + row * nb);
}

static void cblk_tasks(void *arg, int64_t begin, int64_t end) {
    const cblk_job *j = arg;
    for (int64_t t = begin; t < end; t++) {
        float *col = j->buf + t * (j->Kg * j->nb + 16);
        int64_t b1 = (t + 1) * j->per_task < j->blocks * j->group ? (t + 1) * j->per_task : j->blocks * j->group;
        for (int64_t u = t * j->per_task; u < b1; u++) {
            int64_t g = u / j->blocks, p0 = u % j->blocks * j->nb;
            int64_t nb = j->out_prod - p0 < j->nb ? j->out_prod - p0 : j->nb;
            cblk_im2col(j, j->x + g * j->Cg * j->in_prod, col, p0, nb);
            cpu_blas_job gj = {false, false, false, false, j->Mg, nb, j->Kg, j->Kg, nb, j->out_prod, nb, 1.0, 0.0,
                           j->w + g * j->Mg * j->Kg, col, j->y + g * j->Mg * j->out_prod + p0,
                           j->bias ? j->bias + g * j->Mg : NULL, j->post};
            cpu_blas_block(&gj, 0, j->Mg, 0, nb);
        }
    }
}

/* What cpu_conv_check prepares for one Conv node (no state at all when the
 * weight is not a float32 constant): its weight transformed for Winograd
 * (winograd.c) when the conv's sizes fit it, else packed for the packed
 * GEMM (AVX-512 only), one matrix per group. When inference does not know
 * the input's size, check prepares what a 56 x 56 input would take; a run
 * whose size takes the other path prepares that one then, once, and keeps
 * it (conv_keep): a detector's FPN runs one weight at five sizes, some on
 * Winograd and some not. */
typedef struct conv_state {
    const void *w;              /* the weight's data the packs were made from */
    int64_t w_numel, group;
    cpu_gemm_packed **packed;   /* [group], or NULL */
    cpu_wino *wino;             /* or NULL */
    cpu_tapconv *taps;          /* the weight per tap (tapconv.c), or NULL */
    cpu_gemm_wpacked *xw;       /* the weight as X W's (conv_xw_fits), or NULL */
    /* the weight cut to the taps that read the input (conv_trim): the
     * box [h0, h1) x [w0, w1) of the last run that cut it, the cut weight,
     * and its own packs */
    int64_t box[4];
    float *cut;
    struct conv_state *trim;
} conv_state;

static void conv_state_free(void *p) {
    conv_state *s = p;
    if (!s) return;
    for (int64_t g = 0; s->packed && g < s->group; g++) cpu_gemm_packed_free(s->packed[g]);
    free(s->packed);
    cpu_wino_free(s->wino);
    cpu_tapconv_free(s->taps);
    cpu_gemm_wpacked_free(s->xw);
    conv_state_free(s->trim);
    free(s->cut);
    free(s);
}

/* How one conv runs (conv_pick picks it in one place, from the sizes only,
 * never from the thread count). */
typedef enum conv_kind {
    CONV_DEPTHWISE, /* one input channel per group: dwconv.c */
    CONV_WINOGRAD,  /* float32 3x3 stride 1 where cpu_wino_fits: cpu_wino_run */
    CONV_XW,        /* float32, few output positions in all: X W^T, cpu_gemm_xw_run */
    CONV_TAPS,      /* float32 2-D whose taps read the input for few outputs (dilated): tapconv.c */
    CONV_PACKED,    /* float32 1-D to 3-D with a packed constant weight: cpu_gemm_run */
    CONV_GROUPED,   /* float32 2-D, groups of few channels the packed GEMM leaves: gconv.c's direct loop */
    CONV_BLOCKED,   /* float32 1-D to 3-D, many output pixels: cblk_tasks (im2col per block + sgemm) */
    CONV_DIRECT,    /* 1x1, stride 1, unpadded: the input is the column matrix, sgemm */
    CONV_IM2COL,    /* the rest: the whole column matrix, then sgemm */
} conv_kind;

/* Where the packed GEMM beats im2col + OpenBLAS sgemm (measured on the
 * benchmark set's convs, bench/results/cpugemm.md): not on a few output
 * pixels (the SE blocks' 1x1 convs on [C, 1, 1] are matrix-vector
 * products), not on few rows and few pixels (32 channels of 7x7: the
 * 32-column tiles compute 64 for 49), not on few rows and a short depth
 * (a 16-channel stem on a small image: packing B costs more than the
 * product; on 4096 pixels or more, im2col straight into the packed panels
 * beats im2col + sgemm by 1.4x: mobilenet_v3's 3 -> 16 stem). A direct
 * conv (1x1, stride 1, unpadded: the packed GEMM reads its input in place,
 * no packing pass, bench/results/cpugemm2.md) wins on short depths and few
 * rows too, but not on small products that OpenBLAS keeps in L1 (a few
 * dozen rows of 49 or 196 pixels, short depth). A large weight on 8 to
 * 15 output pixels (a detector's 3 x 3 FPN level) is the packed GEMM's
 * too: OpenBLAS packs the weight again on each call (256 -> 256 channels,
 * 3x3 kernel, at 3 x 3: 0.39x the time, 819 -> 256 0.71x, 512 -> 512
 * 0.80x; at 2 x 2, 1.15x: left to OpenBLAS). out_prod < 0: not known
 * yet (at check time, with symbolic dims). */
static bool packed_pays(int64_t Mg, int64_t Kg, int64_t out_prod, bool direct) {
    if (direct) return out_prod < 0 || (out_prod >= 16 && (out_prod >= 512 || Mg >= 64 || Kg >= 256));
    if (Mg < 48 && Kg < 160 && (out_prod < 4096 || Kg > 32)) return false;
    if (out_prod < 0) return true;
    if (out_prod >= 8 && Mg >= 64 && Mg * Kg >= ((int64_t)1 << 17)) return true;
    return out_prod >= 16 && (out_prod >= 128 || Mg >= 64);
}

/* Few output positions in all (the windows of fewer than XW_ROWS_MAX
 * outputs: a detector's 3 x 3 and 5 x 5 head convs, ResNet's last layers
 * at a small input; the squeeze-and-excitation blocks' 1x1 convs on [C,
 * 1, 1], where one window covers each image): the product X W^T, X's rows
 * the windows (K = C * the kernel's size values each, in W's order) and W
 * packed once as X W's (gemm.h) with the output channels along the
 * vectors. The packed conv GEMM puts the positions there, 9 of a tile's
 * 16 or 32, and its im2col per depth block cost more than the product:
 * on an AVX2 EPYC, 2 threads, 256 -> 256 channels 3x3 at 3 x 3 231 -> 100
 * us (ONNX Runtime 92), 256 -> 819 at 3 x 3 500 -> 258, at 5 x 5 385 ->
 * 291, 7 x 7 680 -> 528, 64 -> 64 at 8 x 8 82 -> 77; at 10 x 10 (128
 * channels) 317 -> 374, so up to 64. Both sum each output over K in the
 * same order with the same micro-kernel: the same bits. Where one window
 * covers each image the images are the rows (OpenBLAS ran the SE convs'
 * one column at a third of the memory's speed: 144 -> 576, 80 us). */
#define XW_ROWS_MAX 64

static bool conv_whole_window(const conv_geom *w) {
    for (int32_t d = 0; d < w->n; d++)
        if (w->out[d] != 1 || w->in[d] != w->kernel[d] || w->pad_lo[d] || w->pad_hi[d] || w->dil[d] != 1) return false;
    return true;
}

static bool conv_xw_fits(const conv_geom *w, int64_t group, int64_t N, int64_t Kg, int64_t Mg) {
    if (group != 1 || Mg < 8 || Kg * Mg < 4096 || !cpu_gemm_available()) return false;
    if (conv_whole_window(w)) return N < 8;
    int64_t P = 1;
    for (int32_t d = 0; d < w->n; d++) P *= w->out[d];
    return N * P <= XW_ROWS_MAX;
}

/* Winograd's tiles a conv needs where the packed GEMM would take it
 * instead. cpu_wino_fits' rule was measured against im2col + OpenBLAS;
 * the packed GEMM (a direct conv's weight read once, where Winograd's 36
 * GEMMs read 4x the weights for few tiles each) wins on few tiles.
 * Measured with Winograd's GEMMs on the packed GEMM too (2 threads, then
 * 1; Winograd's time over the packed GEMM's): 448 -> 384 channels at 8 x
 * 8 (4 tiles) 2.85 and 3.08, 256 -> 256 at 10 x 10 (9 tiles) 0.98 and
 * 1.06, at 14 x 14 (16 tiles) 0.77 and 0.55, at 20 x 20 0.67 and 0.60,
 * 128 -> 128 at 14 x 14 0.67 and 0.57, 64 -> 64 at 20 x 20 0.84 and 0.72
 * (bench/results/history-unseen.md, 2026-11-28). */
#define WINO_MIN_TILES_PACKED 12

/* The one rule for Winograd, for conv_pick and for check's guess. */
static bool wino_pays(const conv_geom *w, int64_t Cg, int64_t Mg, int64_t Kg, bool direct) {
    if (!cpu_wino_fits(w, Cg, Mg)) return false;
    int64_t tiles = ((w->out[0] + 3) / 4) * ((w->out[1] + 3) / 4);
    return tiles >= WINO_MIN_TILES_PACKED || !cpu_gemm_available() ||
           !packed_pays(Mg, Kg, w->out[0] * w->out[1], direct);
}

/* A Conv node's attributes say 1x1, stride 1 and no padding (its weight
 * wt [M, Cg, kh, kw]): the input is the column matrix. */
static bool conv_attrs_direct(const ir_node *n, const ir_tensor *wt) {
    const int64_t *v;
    int32_t cnt;
    for (int32_t d = 2; d < wt->rank; d++)
        if (wt->dims[d] != 1) return false;
    if ((cnt = node_attr_ints(n, "strides", &v)) > 0)
        for (int32_t i = 0; i < cnt; i++)
            if (v[i] != 1) return false;
    if ((cnt = node_attr_ints(n, "pads", &v)) > 0)
        for (int32_t i = 0; i < cnt; i++)
            if (v[i] != 0) return false;
    conv_auto_pad ap;
    return conv_auto_pad_of(n, &ap) && (ap == CONV_PAD_NOTSET || ap == CONV_PAD_VALID);
}

/* One Conv run, as its steps fill it in: the tensors and sizes
 * (conv_shape), the float views (conv_views), the path (conv_pick) and its
 * weights and scratch (conv_prepare). */
typedef struct conv_run {
    const seam_tensor *x, *wt, *b;
    seam_tensor *y;
    conv_geom w;
    int64_t group, N, C, M, Cg, Mg, Kg, kprod, out_prod, in_prod, threads;
    bool f64;    /* float32 (float16 and bfloat16 widened to it), or float64 through dgemm */
    bool direct; /* 1x1, stride 1, no pad: the input is the column matrix */
    size_t es;
    cpu_fview vx, vw, vy, vb;
    const act_params *post;
    conv_kind kind;
    conv_state *cs;         /* the node's state, or its trimmed weight's (conv_trim) */
    seam_tensor wt_cut;     /* conv_trim's weight, when it cut one */
    cpu_dw_plan dj;
    conv_geom w2;           /* a 1-D depthwise conv as 2-D of one row (dj reads it) */
    cblk_job cb;
    int64_t cb_tasks;
    bool prepacked;         /* CONV_PACKED on check's packs */
    size_t pack_floats;     /* CONV_PACKED: the weight packed now, in the scratch */
    cpu_wino *wino_now;     /* CONV_WINOGRAD: weights transformed for this run only */
    cpu_tapconv *taps_now;  /* CONV_TAPS: the weight per tap for this run only */
    const cpu_gemm_wpacked *xw;
    cpu_gemm_wpacked xw_now; /* CONV_XW: the weight packed into the scratch for this run */
    const cpu_tapconv *taps;
    const cpu_wino *wino;
    void *col;              /* the scratch */
} conv_run;

/* Checks the inputs and attributes, and makes the output (r->y). */
static seam_status conv_shape(seam_kernel *k, conv_run *r) {
    const seam_tensor *x = kernel_in(k, 0), *wt = kernel_in(k, 1), *b = kernel_in(k, 2);
    r->x = x, r->wt = wt, r->b = b;
    if (!x || !wt || x->rank < 3 || wt->rank != x->rank) return kernel_fail(k, "needs X [N, C, ...] and W of the same rank");
    int64_t group = node_attr_int(k->n, "group", 1), N = x->dims[0], C = x->dims[1], M = wt->dims[0];
    if (group < 1 || C % group || M % group || wt->dims[1] != C / group)
        return kernel_fail(k, "W [%lld, %lld, ...] does not fit %lld input channels in %lld groups", (long long)M,
                           (long long)wt->dims[1], (long long)C, (long long)group);
    if (b && (b->rank != 1 || b->dims[0] != M)) return kernel_fail(k, "B must be [%lld]", (long long)M);
    if (b && b->dtype != x->dtype) return kernel_fail(k, "B must have X's dtype");
    const int64_t *ks;
    int32_t nk = node_attr_ints(k->n, "kernel_shape", &ks);
    if (nk >= 0 && nk != x->rank - 2) return kernel_fail(k, "kernel_shape has %d entries", nk);
    for (int32_t d = 0; nk >= 0 && d < nk; d++)
        if (ks[d] != wt->dims[2 + d]) return kernel_fail(k, "kernel_shape disagrees with W");
    conv_geom *w = &r->w;
    seam_status st = cpu_conv_geom(k, x, wt->dims + 2, false, w);
    if (st) return st;
    int64_t dims[SEAM_MAX_RANK];
    dims[0] = N, dims[1] = M;
    for (int32_t d = 0; d < w->n; d++) dims[2 + d] = w->out[d];
    if (!(r->y = kernel_out(k, 0, x->dtype, x->rank, dims))) return kernel_oom(k);
    if (r->y->numel == 0) return SEAM_STATUS_OK;
    int64_t Cg = C / group, kprod = cpu_span(wt->dims, 2, wt->rank), out_prod = cpu_span(w->out, 0, w->n);
    /* (each at most 2^31, so the column matrix's byte count cannot wrap) */
    if (Cg * kprod > CPU_BLAS_MAX || out_prod > CPU_BLAS_MAX || Cg * kprod > (INT64_MAX / 16) / out_prod)
        return kernel_fail(k, "the convolution is too large");
    r->group = group, r->N = N, r->C = C, r->M = M, r->Cg = Cg, r->Mg = M / group, r->Kg = Cg * kprod;
    r->kprod = kprod, r->out_prod = out_prod, r->in_prod = cpu_span(w->in, 0, w->n);
    return SEAM_STATUS_OK;
}

/* The float views of X, W, Y and B; a fused activation only on float32. */
static seam_status conv_views(seam_kernel *k, conv_run *r) {
    r->f64 = r->x->dtype == SEAM_DTYPE_FLOAT64;
    r->es = r->f64 ? 8 : 4;
    if (!cpu_fview3(r->x, r->wt, r->y, r->f64, &r->vx, &r->vw, &r->vy)) return kernel_oom(k);
    if (r->b && !cpu_fview_of(r->b, r->f64, &r->vb)) return kernel_oom(k);
    /* the executor fuses into float32 outputs only (by inferred type) */
    r->post = &k->post;
    if (r->x->dtype != SEAM_DTYPE_FLOAT32 && r->post->kind != ACT_NONE)
        return kernel_fail(k, "a fused activation needs float32, X is %s", seam_dtype_name(r->x->dtype));
    return SEAM_STATUS_OK;
}

/* The taps [*k0, *k1) of spatial axis d that read the input for at least
 * one output (the others read padding only, for every output: atrous
 * convs whose dilation passes the input's size). */
static void conv_taps(const conv_geom *w, int32_t d, int64_t *k0, int64_t *k1) {
    int64_t s = w->stride[d], dl = w->dil[d], p = w->pad_lo[d], last = (w->out[d] - 1) * s - p;
    *k0 = 0, *k1 = w->kernel[d];
    while (*k0 < *k1 && last + *k0 * dl < 0) (*k0)++;           /* left of the input for every output */
    while (*k1 > *k0 && -p + (*k1 - 1) * dl >= w->in[d]) (*k1)--; /* right of it for every output */
}

/* A float32 2-D conv with a constant weight whose kernel has taps that
 * read padding only, for every output, runs as the conv of the taps that
 * read the input: the same sums without their zero terms. DeepLabV3's
 * ASPP on a 20 x 20 feature map has 3x3 convs of dilation 24 and 36
 * whose only such tap is the centre: a 1x1 conv, 9x less work and no
 * im2col. The cut weight is made once and kept, with its packs (a nested
 * state: conv_keep), for the box of taps the sizes give. Nothing changes
 * when no tap is cut, when every tap is (the output is the bias), or when
 * the cut would leave a negative pad; and out of memory leaves the conv
 * whole. (A weight holding inf or NaN gave NaN from 0 * inf in the
 * padding; without the cut taps it does not, as oneDNN, which skips
 * padding, does not.) */
static void conv_trim(conv_run *r) {
    conv_state *s = r->cs;
    conv_geom *w = &r->w;
    if (!s || w->n != 2 || r->x->dtype != SEAM_DTYPE_FLOAT32 || s->w != r->wt->data || s->w_numel != r->wt->numel ||
        s->group != r->group)
        return;
    int64_t box[4], pl[2], ph[2], k[2];
    for (int32_t d = 0; d < 2; d++) {
        conv_taps(w, d, &box[2 * d], &box[2 * d + 1]);
        k[d] = box[2 * d + 1] - box[2 * d];
        pl[d] = w->pad_lo[d] - box[2 * d] * w->dil[d];
        ph[d] = (w->out[d] - 1) * w->stride[d] + (k[d] - 1) * w->dil[d] + 1 - w->in[d] - pl[d];
        if (k[d] < 1 || pl[d] < 0 || ph[d] < 0) return;
    }
    if (k[0] == w->kernel[0] && k[1] == w->kernel[1]) return;
    if (!s->cut || memcmp(s->box, box, sizeof(box)) != 0) {
        conv_state_free(s->trim);
        free(s->cut);
        s->trim = NULL;
        s->cut = malloc(sizeof(float) * (size_t)(r->M * r->Cg * k[0] * k[1]));
        conv_state *t = calloc(1, sizeof(*t));
        if (!s->cut || !t) {
            free(s->cut), free(t);
            s->cut = NULL;
            return;
        }
        const float *src = s->w;
        int64_t KH = w->kernel[0], KW = w->kernel[1];
        for (int64_t mc = 0; mc < r->M * r->Cg; mc++)
            for (int64_t i = 0; i < k[0]; i++)
                memcpy(s->cut + (mc * k[0] + i) * k[1], src + (mc * KH + box[0] + i) * KW + box[2],
                       sizeof(float) * (size_t)k[1]);
        memcpy(s->box, box, sizeof(box));
        t->w = s->cut, t->w_numel = r->M * r->Cg * k[0] * k[1], t->group = r->group;
        s->trim = t;
    }
    seam_tensor *c = &r->wt_cut;
    *c = *r->wt;
    c->dims[2] = k[0], c->dims[3] = k[1];
    c->numel = s->trim->w_numel;
    c->nbytes = sizeof(float) * (size_t)c->numel;
    c->data = s->cut;
    r->wt = c;
    r->vw.p = s->cut;
    r->cs = s->trim;
    for (int32_t d = 0; d < 2; d++) w->kernel[d] = k[d], w->pad_lo[d] = pl[d], w->pad_hi[d] = ph[d];
    r->kprod = k[0] * k[1];
    r->Kg = r->Cg * r->kprod;
}

/* Packs the state's constant weight for the path this run takes when
 * check did not (a size inference did not know took it elsewhere), and
 * keeps it for the next runs. Out of memory leaves it to each run, as
 * for a weight that is not a constant. */
static void conv_keep(const conv_run *r) {
    conv_state *s = r->cs;
    if (!s || s->w != r->wt->data || s->w_numel != r->wt->numel || s->group != r->group) return;
    if (r->kind == CONV_WINOGRAD && !s->wino) s->wino = cpu_wino_prepare((const float *)s->w, r->M, r->Cg, r->group);
    if (r->kind == CONV_XW && !s->xw) s->xw = cpu_gemm_wpack((const float *)s->w, r->Kg, r->M, true);
    if (r->kind == CONV_TAPS && !s->taps)
        s->taps = cpu_tapconv_prepare((const float *)s->w, r->M, r->Cg, r->w.kernel[0], r->w.kernel[1]);
    if (r->kind != CONV_PACKED || s->packed) return;
    cpu_gemm_packed **p = calloc((size_t)r->group, sizeof(*p));
    for (int64_t g = 0; p && g < r->group; g++)
        if (!(p[g] = cpu_gemm_pack((const float *)s->w + g * r->Mg * r->Kg, r->Kg, r->Mg, r->Kg))) {
            while (g-- > 0) cpu_gemm_packed_free(p[g]);
            free(p);
            return;
        }
    s->packed = p;
}

/* The one place that picks the path, by the sizes only (never the thread
 * count, nor whether the weight is a constant: a conv computes the same
 * bits in a plan's subgraph, where its weight is an input, as in the whole
 * model): depthwise first, then the packed GEMM, then the OpenBLAS forms.
 * The packed GEMM takes the weight check packed when it is this run's (the
 * same data), else packs it now. */
static void conv_pick(seam_kernel *k, conv_run *r) {
    const conv_geom *w = &r->w;
    const seam_tensor *x = r->x, *wt = r->wt;
    int64_t group = r->group, Cg = r->Cg, Mg = r->Mg, Kg = r->Kg, out_prod = r->out_prod;
    r->direct = true;
    for (int32_t d = 0; d < w->n; d++)
        r->direct &= w->kernel[d] == 1 && w->stride[d] == 1 && w->pad_lo[d] == 0 && w->pad_hi[d] == 0;
    r->threads = seam_pool_threads(k->pool);
    cblk_job *cb = &r->cb;
    cb->nb = ((int64_t)1 << 17) / (Kg > 0 ? Kg : 1) / 64 * 64;
    if (cb->nb < 64) cb->nb = 64;
    cb->blocks = (out_prod + cb->nb - 1) / cb->nb;
    r->kind = CONV_IM2COL;
    /* a 1-D depthwise conv (an audio separator's dilated Conv1d) is the
     * 2-D one on a single row: the same memory, kernel [1, k]; through
     * the im2col path each of its channels was an sgemm of one row (2.2
     * ms for 128 channels of 1999 samples, 3 taps) */
    const conv_geom *wd = w;
    if (w->n == 1) {
        r->w2 = (conv_geom){.n = 2, .auto_pad = w->auto_pad, .in = {1, w->in[0]}, .out = {1, w->out[0]},
                            .kernel = {1, w->kernel[0]}, .stride = {1, w->stride[0]}, .dil = {1, w->dil[0]},
                            .pad_lo = {0, w->pad_lo[0]}, .pad_hi = {0, w->pad_hi[0]}};
        wd = &r->w2;
    }
    if (!r->f64 && Cg == 1 && group > 1 && wd->n == 2 &&
        cpu_dw_plan_make(&r->dj, wd, r->N, r->C, r->M, (int32_t)r->threads))
        r->kind = CONV_DEPTHWISE;
    else if (x->dtype == SEAM_DTYPE_FLOAT32 && wt->dtype == SEAM_DTYPE_FLOAT32 && conv_xw_fits(w, group, r->N, Kg, Mg))
        r->kind = CONV_XW;
    else if (x->dtype == SEAM_DTYPE_FLOAT32 && wt->dtype == SEAM_DTYPE_FLOAT32 && w->n == 2 &&
             wino_pays(w, Cg, Mg, Kg, r->direct))
        r->kind = CONV_WINOGRAD;
    else if (x->dtype == SEAM_DTYPE_FLOAT32 && wt->dtype == SEAM_DTYPE_FLOAT32 && cpu_tapconv_pays(w, group, Cg, Mg))
        r->kind = CONV_TAPS;
    else if (x->dtype == SEAM_DTYPE_FLOAT32 && wt->dtype == SEAM_DTYPE_FLOAT32 && w->n <= 3 && Kg > 0 &&
             packed_pays(Mg, Kg, out_prod, r->direct) && cpu_gemm_available())
        r->kind = CONV_PACKED;
    else if (x->dtype == SEAM_DTYPE_FLOAT32 && wt->dtype == SEAM_DTYPE_FLOAT32 && cpu_gconv_fits(w, group, Cg, Mg))
        r->kind = CONV_GROUPED;
    else if (r->direct)
        r->kind = CONV_DIRECT;
    else if (!r->f64 && w->n <= 3 && Kg > 0 && cb->blocks > 1 && cb->blocks * group >= 4)
        r->kind = CONV_BLOCKED; /* float32 1-D to 3-D with many output pixels per column block */
    if (r->kind == CONV_PACKED) conv_keep(r);
    const conv_state *cs = r->cs;
    r->prepacked = r->kind == CONV_PACKED && cs && cs->packed && cs->w == wt->data && cs->w_numel == wt->numel &&
                   cs->group == group && cs->packed[0]->m == Mg && cs->packed[0]->k == Kg;
    r->pack_floats = r->kind == CONV_PACKED && !r->prepacked ? cpu_gemm_packed_floats(Mg, Kg) : 0;
}

/* CONV_XW's rows and their output, in the scratch after the GEMM's (none
 * when one window covers each image: the images are the rows). */
static size_t xw_rows_floats(const conv_run *r) {
    /* the rows, their output, and conv_exec_xw's table of taps (int64, aligned) */
    return r->out_prod == 1 ? 0 : (size_t)(r->N * r->out_prod * (r->Kg + r->M) + 2 * r->out_prod * (2 * r->kprod + 1)) + 20;
}

/* Winograd's weights (check's when they are this run's, else transformed
 * now: a weight computed or passed at run time), the blocked path's tasks,
 * and the scratch: the depthwise tasks' planes, the packed GEMM's B
 * blocks, or the column matrix (whole or per block). */
static seam_status conv_prepare(seam_kernel *k, conv_run *r) {
    const conv_state *cs = r->cs;
    int64_t group = r->group, Cg = r->Cg, Mg = r->Mg, Kg = r->Kg, threads = r->threads;
    if (r->kind == CONV_WINOGRAD) {
        conv_keep(r);
        if (cs && cs->wino && cpu_wino_weights(cs->wino) == (const float *)r->wt->data && cs->w_numel == r->wt->numel &&
            cs->group == group)
            r->wino = cs->wino;
        else if (!(r->wino = r->wino_now = cpu_wino_prepare((const float *)r->vw.p, r->M, Cg, group)))
            return kernel_oom(k);
    }
    size_t xw_floats = 0;
    if (r->kind == CONV_XW) {
        conv_keep(r);
        if (cs && cs->xw && cs->w == r->wt->data && cs->w_numel == r->wt->numel && cs->group == group)
            r->xw = cs->xw;
        else
            xw_floats = cpu_gemm_wpacked_floats(Kg, r->M) + 16; /* packed into the scratch, after the GEMM's */
    }
    if (r->kind == CONV_TAPS) {
        conv_keep(r);
        if (cs && cs->taps && cs->w == r->wt->data && cs->w_numel == r->wt->numel && cs->group == group)
            r->taps = cs->taps;
        else if (!(r->taps = r->taps_now =
                       cpu_tapconv_prepare((const float *)r->vw.p, r->M, Cg, r->w.kernel[0], r->w.kernel[1])))
            return kernel_oom(k);
    }
    cblk_job *cb = &r->cb;
    if (r->kind == CONV_BLOCKED) {
        r->cb_tasks = 2 * threads < cb->blocks * group ? 2 * threads : cb->blocks * group;
        cb->per_task = (cb->blocks * group + r->cb_tasks - 1) / r->cb_tasks;
        r->cb_tasks = (cb->blocks * group + cb->per_task - 1) / cb->per_task;
    }
    conv_kind kind = r->kind;
    size_t scratch = kind == CONV_DEPTHWISE ? cpu_dw_scratch(&r->dj)
                     : kind == CONV_WINOGRAD ? cpu_wino_scratch_size(r->wino, &r->w, (int32_t)threads)
                     : kind == CONV_TAPS     ? cpu_tapconv_scratch(&r->w, Cg, Mg, (int32_t)threads)
                     : kind == CONV_XW
                         ? sizeof(float) * (cpu_gemm_xw_scratch(r->N * r->out_prod, r->M, (int32_t)threads) + 16 +
                                            xw_floats + xw_rows_floats(r))
                     : kind == CONV_PACKED
                         ? sizeof(float) * (cpu_gemm_scratch(Mg, r->out_prod, threads) + r->pack_floats)
                     : kind == CONV_BLOCKED ? sizeof(float) * (size_t)(r->cb_tasks * (Kg * cb->nb + 16))
                     : kind == CONV_GROUPED ? cpu_gconv_scratch(&r->w, Cg, Mg, (int32_t)threads)
                     : kind == CONV_DIRECT  ? 0
                                            : r->es * (size_t)(Cg * r->kprod * r->out_prod);
    r->col = scratch ? kernel_scratch(k, scratch) : NULL;
    if (scratch && !r->col) return kernel_oom(k);
    if (xw_floats) {
        float *at = (float *)r->col + cpu_gemm_xw_scratch(r->N * r->out_prod, r->M, (int32_t)threads) + 16 +
                    xw_rows_floats(r);
        cpu_gemm_wpack_into(&r->xw_now, (float *)(((uintptr_t)at + 63) & ~(uintptr_t)63), (const float *)r->vw.p, Kg,
                            r->M, true);
        r->xw = &r->xw_now;
    }
    return SEAM_STATUS_OK;
}

/* CONV_PACKED: the scratch holds the weight packed now (when check did
 * not), then the B blocks. */
static void conv_exec_packed(seam_kernel *k, const conv_run *r) {
    const conv_geom *w = &r->w;
    const seam_tensor *b = r->b;
    const conv_state *cs = r->cs;
    const act_params *post = r->post;
    int64_t group = r->group, N = r->N, C = r->C, M = r->M, Cg = r->Cg, Mg = r->Mg, Kg = r->Kg;
    int64_t in_prod = r->in_prod, out_prod = r->out_prod;
    bool prepacked = r->prepacked, direct = r->direct;
    float *pack_at = (float *)(((uintptr_t)r->col + 63) & ~(uintptr_t)63), *gemm_at = pack_at + r->pack_floats;
    for (int64_t g = 0; g < group; g++) {
        cpu_gemm_packed now;
        const cpu_gemm_packed *pa = prepacked ? cs->packed[g] : &now;
        if (!prepacked) cpu_gemm_pack_into(&now, pack_at, (const float *)r->vw.p + g * Mg * Kg, Kg, Mg, Kg);
        for (int64_t n = 0; n < N; n++) {
            const float *xg = (const float *)r->vx.p + (n * C + g * Cg) * in_prod;
            cpu_gemm_b src = {xg, in_prod, direct ? NULL : w};
            cpu_gemm_run(k->pool, pa, &src, out_prod, (float *)r->vy.p + (n * M + g * Mg) * out_prod, out_prod,
                         b ? (const float *)r->vb.p + g * Mg : NULL, post, gemm_at);
        }
    }
}

/* CONV_XW: y = post(X W^T + bias), X's rows the windows [N * P, K] (the
 * images themselves when one window covers each); the bias first, then
 * the product added onto it with the activation, then y [N, M, P] from
 * the rows [N * P, M] where P > 1. */
static void conv_exec_xw(seam_kernel *k, const conv_run *r) {
    int64_t P = r->out_prod, R = r->N * P, K = r->Kg, M = r->M;
    float *gemm = (float *)r->col, *rows = gemm + cpu_gemm_xw_scratch(R, M, seam_pool_threads(k->pool)) + 16;
    float *out = P == 1 ? (float *)r->vy.p : rows + R * K;
    const float *x = P == 1 ? (const float *)r->vx.p : rows;
    if (P > 1) /* row (n, p): K values in W's order, channel major, 0 where the window reads padding */
        cpu_xw_gather(k->pool, &r->w, (const float *)r->vx.p, r->N, r->C, r->Cg, r->in_prod, r->kprod, P, rows,
                      (int64_t *)(((uintptr_t)(out + R * M) + 7) & ~(uintptr_t)7));
    for (int64_t i = 0; i < R; i++)
        for (int64_t m = 0; m < M; m++) out[i * M + m] = r->b ? ((const float *)r->vb.p)[m] : 0.0f;
    cpu_gemm_x xv = {x, K, false, 1.0f};
    cpu_gemm_xw_run(k->pool, &xv, R, r->xw, out, M, true, r->post, gemm);
    float *y = (float *)r->vy.p;
    for (int64_t n = 0; P > 1 && n < r->N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t p = 0; p < P; p++) y[(n * M + m) * P + p] = out[(n * P + p) * M + m];
}

/* CONV_BLOCKED: each image's column blocks over the pool (cblk_tasks). */
static void conv_exec_blocked(seam_kernel *k, conv_run *r) {
    cpu_blas_single_thread();
    cblk_job *cb = &r->cb;
    cb->w = r->vw.p, cb->bias = r->vb.p, cb->buf = r->col, cb->win = &r->w, cb->post = r->post;
    cb->group = r->group, cb->Cg = r->Cg, cb->Mg = r->Mg, cb->kprod = r->kprod, cb->Kg = r->Kg;
    cb->out_prod = r->out_prod, cb->in_prod = r->in_prod;
    for (int64_t n = 0; n < r->N; n++) {
        cb->x = (const float *)r->vx.p + n * r->C * r->in_prod;
        cb->y = (float *)r->vy.p + n * r->M * r->out_prod;
        seam_parallel_for(k->pool, r->cb_tasks, 1, cblk_tasks, cb);
    }
}

/* CONV_DIRECT and CONV_IM2COL: per image and group, the column matrix
 * (the input itself when direct) times the weight on OpenBLAS. The output
 * starts as the bias and the products add onto it: for float32 block by
 * block inside cpu_blas_gemm_post (which applies the activation after each
 * block), for float64 here. */
static void conv_exec_blas(seam_kernel *k, const conv_run *r) {
    const conv_geom *w = &r->w;
    const seam_tensor *b = r->b;
    const act_params *post = r->post;
    bool f64 = r->f64;
    size_t es = r->es;
    void *col = r->col;
    int64_t group = r->group, N = r->N, C = r->C, M = r->M, Cg = r->Cg, Mg = r->Mg, kprod = r->kprod;
    int64_t in_prod = r->in_prod, out_prod = r->out_prod;
    if (f64)
        for (int64_t n = 0; n < N; n++)
            for (int64_t m = 0; m < M; m++) {
                double bv = b ? ((const double *)r->vb.p)[m] : 0.0;
                double *yp = (double *)r->vy.p + (n * M + m) * out_prod;
                for (int64_t i = 0; i < out_prod; i++) yp[i] = bv;
            }
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < group; g++) {
            const char *xg = (const char *)r->vx.p + (size_t)((n * C + g * Cg) * in_prod) * es;
            const void *src = xg;
            if (r->kind == CONV_IM2COL) {
                im2col_job j = {xg, col, w, Cg, kprod, out_prod, in_prod, f64};
                seam_parallel_for(k->pool, Cg * kprod, 8, im2col_rows, &j);
                src = col;
            }
            cpu_blas_gemm_post(k->pool, f64, false, false, Mg, out_prod, Cg * kprod, 1.0,
                               (const char *)r->vw.p + (size_t)(g * Mg * Cg * kprod) * es, Cg * kprod, src, out_prod,
                               f64 ? 1.0 : 0.0, (char *)r->vy.p + (size_t)((n * M + g * Mg) * out_prod) * es, out_prod,
                               f64 || !b ? NULL : (const float *)r->vb.p + g * Mg, f64 ? NULL : post);
        }
}

/* Y = conv(X, W) + B, then a fused activation, on the path conv_pick
 * chose. */
seam_status cpu_conv_run(seam_kernel *k) {
    conv_run r = {0};
    seam_status st = conv_shape(k, &r);
    if (st || r.y->numel == 0) return st;
    r.cs = k->state;
    if (!(st = conv_views(k, &r))) {
        conv_trim(&r);
        conv_pick(k, &r);
    }
    if (!st && !(st = conv_prepare(k, &r))) {
        switch (r.kind) {
        case CONV_WINOGRAD:
            cpu_wino_run(r.wino, k->pool, &r.w, r.N, r.vx.p, r.b ? r.vb.p : NULL, r.post, r.vy.p, r.col);
            break;
        case CONV_DEPTHWISE:
            cpu_dw_run(&r.dj, k->pool, r.vx.p, r.vw.p, r.b ? r.vb.p : NULL, r.post, r.vy.p, r.col);
            break;
        case CONV_XW: conv_exec_xw(k, &r); break;
        case CONV_TAPS:
            cpu_tapconv_run(r.taps, k->pool, &r.w, r.N, r.vx.p, r.b ? r.vb.p : NULL, r.post, r.vy.p, r.col);
            break;
        case CONV_PACKED: conv_exec_packed(k, &r); break;
        case CONV_GROUPED:
            cpu_gconv_run(k->pool, &r.w, r.N, r.group, r.Cg, r.Mg, r.vx.p, r.vw.p, r.b ? r.vb.p : NULL, r.post, r.vy.p,
                          r.col);
            break;
        case CONV_BLOCKED: conv_exec_blocked(k, &r); break;
        case CONV_DIRECT:
        case CONV_IM2COL: conv_exec_blas(k, &r); break;
        }
    }
    cpu_wino_free(r.wino_now);
    cpu_tapconv_free(r.taps_now);
    cpu_fview_release(&r.vx);
    cpu_fview_release(&r.vw);
    cpu_fview_release(&r.vb);
    if (st) cpu_fview_release(&r.vy);
    else cpu_fview_finish(r.y, &r.vy);
    return st;
}


/* A float32 1-D, 2-D or 3-D Conv with a constant weight, on a CPU with
 * AVX-512: the weight packed for the packed GEMM, a matrix [M / group, C /
 * group * the kernel's size] per group. Nothing when the conv is depthwise (dwconv.c runs it), or
 * out of memory (the OpenBLAS path then runs it). */
static void conv_pack(seam_check *c) {
    const ir_tensor *wt = cpu_constant_input(c, 1);
    if (!wt || wt->dtype != SEAM_DTYPE_FLOAT32 || wt->rank < 3 || wt->rank > 5 || !wt->data ||
        check_in_dtype(c, 0) != SEAM_DTYPE_FLOAT32)
        return;
    int64_t group = node_attr_int(c->n, "group", 1), M = wt->dims[0], Cg = wt->dims[1];
    if (group < 1 || M % group || (Cg == 1 && group > 1 && wt->rank == 4)) return;
    int64_t Mg = M / group, Kg = Cg;
    for (int32_t d = 2; d < wt->rank; d++) Kg = wt->dims[d] > 0 && Kg <= CPU_BLAS_MAX / wt->dims[d] ? Kg * wt->dims[d] : -1;
    if (Mg < 1 || Kg < 1 || Kg > CPU_BLAS_MAX || Mg > CPU_BLAS_MAX || (size_t)wt->numel * sizeof(float) != wt->nbytes)
        return;
    conv_state *s = calloc(1, sizeof(*s));
    if (!s) return;
    s->w = wt->data, s->w_numel = wt->numel, s->group = group;
    *c->state = s;
    *c->free_state = conv_state_free;
    bool direct = conv_attrs_direct(c->n, wt);
    const ir_type *xt = c->n->inputs[0] >= 0 ? &c->g->values[c->n->inputs[0]].type : NULL;
    bool known = wt->rank == 4 && xt && xt->kind == IR_TYPE_TENSOR && xt->rank == 4 && xt->dims[2].v >= 1 &&
                 xt->dims[3].v >= 1;
    conv_geom geo, at; /* at: the geometry at the input's known size */
    char why[160];
    if (known) {
        int64_t in[2] = {xt->dims[2].v, xt->dims[3].v}, ks[2] = {wt->dims[2], wt->dims[3]};
        known = conv_geom_init(c->n, 2, in, ks, false, &at, why, sizeof why);
    }
    /* few output positions in all: X W^T (conv_pick's first choice for
     * them, before Winograd) */
    if (known && cpu_gemm_available() && xt->dims[0].v >= 1 && conv_xw_fits(&at, group, xt->dims[0].v, Kg, Mg)) {
        s->xw = cpu_gemm_wpack((const float *)wt->data, Kg, M, true);
        return;
    }
    /* Winograd when the sizes fit it: the input's H and W if inference
     * knows them, else 56 x 56 (conv_pick decides with the real sizes, and
     * prepares the other path then if this guess was wrong: conv_keep) */
    if (wt->rank == 4 && wt->dims[2] == 3 && wt->dims[3] == 3 && xt && xt->kind == IR_TYPE_TENSOR && xt->rank == 4) {
        int64_t in[2], ks[2] = {3, 3};
        for (int32_t d = 0; d < 2; d++) in[d] = xt->dims[2 + d].v >= 1 ? xt->dims[2 + d].v : 56;
        if (conv_geom_init(c->n, 2, in, ks, false, &geo, why, sizeof why) && wino_pays(&geo, Cg, Mg, Kg, direct)) {
            s->wino = cpu_wino_prepare((const float *)wt->data, M, Cg, group);
            return;
        }
    }
    if (!cpu_gemm_available()) return;
    /* tap by tap when the input's size is known and it pays there */
    if (known && cpu_tapconv_pays(&at, group, Cg, Mg)) {
        s->taps = cpu_tapconv_prepare((const float *)wt->data, M, Cg, wt->dims[2], wt->dims[3]);
        return;
    }
    /* the output's pixels when inference knows them */
    const ir_type *yt = c->n->n_outputs > 0 && c->n->outputs[0] >= 0 ? &c->g->values[c->n->outputs[0]].type : NULL;
    int64_t out_prod = yt && yt->kind == IR_TYPE_TENSOR && yt->rank == wt->rank ? 1 : -1;
    for (int32_t d = 2; out_prod >= 0 && d < wt->rank; d++) out_prod = yt->dims[d].v >= 0 ? out_prod * yt->dims[d].v : -1;
    if (!packed_pays(Mg, Kg, out_prod, direct)) return;
    s->packed = calloc((size_t)group, sizeof(*s->packed));
    for (int64_t g = 0; s->packed && g < group; g++)
        if (!(s->packed[g] = cpu_gemm_pack((const float *)wt->data + g * Mg * Kg, Kg, Mg, Kg))) {
            for (int64_t h = 0; h < g; h++) cpu_gemm_packed_free(s->packed[h]);
            free(s->packed);
            s->packed = NULL;
            return;
        }
}

seam_status cpu_conv_check(seam_check *c) {
    seam_status st = check_float_input(c);
    if (st) return st;
    if ((st = check_auto_pad(c))) return st;
    /* Conv applies a fused activation (not ConvTranspose) */
    c->post_ops = strcmp(c->n->op_type, "Conv") == 0;
    if (c->post_ops) conv_pack(c);
    return SEAM_STATUS_OK;
}

/* ---- ConvTranspose ---- */

/* col2im for one image and group: output channel m adds up its kprod rows
 * of the column matrix. One channel per task with its rows in order, so
 * the sums do not depend on the thread count. */
typedef struct col2im_job {
    const void *col; /* [Mg * kprod, in_prod] */
    void *y;         /* this image's and group's [Mg, out...] */
    bool f64;
    int32_t n;
    int64_t kprod, in_prod, out_prod;
    const int64_t *in, *out, *kern, *s, *lo, *dl;
} col2im_job;

/* float32 2-D: the same additions in the same order, each input row's
 * valid columns found once (U-Net's 2x2 stride-2 upsampling spent 72% of
 * its time in the index arithmetic per element: 64 -> 32 channels at 128
 * x 128, 12.5 ms, ONNX Runtime 4.7) */
static void col2im_2d(const col2im_job *j, int64_t m) {
    int64_t H = j->in[0], W = j->in[1], OH = j->out[0], OW = j->out[1], KW = j->kern[1];
    float *y = (float *)j->y + m * j->out_prod;
    for (int64_t kq = 0; kq < j->kprod; kq++) {
        const float *c = (const float *)j->col + (m * j->kprod + kq) * j->in_prod;
        int64_t ka = kq / KW, kb = kq % KW, s1 = j->s[1], b0 = -j->lo[1] + kb * j->dl[1];
        int64_t w0 = 0, w1 = W; /* columns iw with 0 <= iw * s1 + b0 < OW */
        while (w0 < W && w0 * s1 + b0 < 0) w0++;
        while (w1 > w0 && (w1 - 1) * s1 + b0 >= OW) w1--;
        for (int64_t ih = 0; ih < H; ih++) {
            int64_t oh = ih * j->s[0] - j->lo[0] + ka * j->dl[0];
            if (oh < 0 || oh >= OH) continue;
            float *yr = y + oh * OW + b0;
            const float *cr = c + ih * W;
            for (int64_t iw = w0; iw < w1; iw++) yr[iw * s1] += cr[iw];
        }
    }
}

static void col2im_channels(void *arg, int64_t begin, int64_t end) {
    const col2im_job *j = arg;
    int32_t n = j->n;
    if (n == 2 && !j->f64) {
        for (int64_t m = begin; m < end; m++) col2im_2d(j, m);
        return;
    }
    for (int64_t m = begin; m < end; m++)
        for (int64_t kq = 0; kq < j->kprod; kq++) {
            int64_t row = m * j->kprod + kq, kk = kq, koff[SEAM_MAX_RANK], iidx[SEAM_MAX_RANK] = {0};
            for (int32_t d = n - 1; d >= 0; d--) {
                koff[d] = kk % j->kern[d];
                kk /= j->kern[d];
            }
            for (int64_t i = 0; i < j->in_prod; i++) {
                int64_t off = 0;
                bool inside = true;
                for (int32_t d = 0; d < n && inside; d++) {
                    int64_t o = iidx[d] * j->s[d] - j->lo[d] + koff[d] * j->dl[d];
                    inside = o >= 0 && o < j->out[d];
                    off = off * j->out[d] + o;
                }
                if (inside) {
                    int64_t to = m * j->out_prod + off, from = row * j->in_prod + i;
                    if (j->f64) ((double *)j->y)[to] += ((const double *)j->col)[from];
                    else ((float *)j->y)[to] += ((const float *)j->col)[from];
                }
                cpu_index_next(iidx, j->in, n);
            }
        }
}

seam_status cpu_conv_transpose_run(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *wt = kernel_in(k, 1), *b = kernel_in(k, 2);
    if (!x || !wt || x->rank < 3 || wt->rank != x->rank) return kernel_fail(k, "needs X [N, C, ...] and W of the same rank");
    int32_t n_sp = x->rank - 2;
    int64_t group = node_attr_int(k->n, "group", 1), N = x->dims[0], C = x->dims[1];
    if (group < 1 || C % group || wt->dims[0] != C) return kernel_fail(k, "W must be [C, M / group, ...] with C %% group == 0");
    int64_t Mg = wt->dims[1], Cg = C / group;
    if (Mg > IR_MAX_DIM / group) return kernel_fail(k, "too many output channels");
    int64_t M = Mg * group;
    if (b && (b->rank != 1 || b->dims[0] != M)) return kernel_fail(k, "B must be [%lld]", (long long)M);
    const int64_t *strides, *dil, *pads, *opad, *oshape, *ks;
    int32_t ns = node_attr_ints(k->n, "strides", &strides), nd = node_attr_ints(k->n, "dilations", &dil);
    int32_t np = node_attr_ints(k->n, "pads", &pads), no = node_attr_ints(k->n, "output_padding", &opad);
    int32_t nos = node_attr_ints(k->n, "output_shape", &oshape), nk = node_attr_ints(k->n, "kernel_shape", &ks);
    if ((ns >= 0 && ns != n_sp) || (nd >= 0 && nd != n_sp) || (np >= 0 && np != 2 * n_sp) || (no >= 0 && no != n_sp) ||
        (nos >= 0 && nos != n_sp && nos != x->rank) || (nk >= 0 && nk != n_sp))
        return kernel_fail(k, "strides, dilations, pads, output_padding, output_shape or kernel_shape have the wrong "
                              "length");
    conv_auto_pad ap;
    if (!conv_auto_pad_of(k->n, &ap)) return kernel_fail(k, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    bool same = ap == CONV_PAD_SAME_UPPER || ap == CONV_PAD_SAME_LOWER, upper = ap == CONV_PAD_SAME_UPPER;
    int64_t s[SEAM_MAX_RANK], dl[SEAM_MAX_RANK], lo[SEAM_MAX_RANK], out[SEAM_MAX_RANK], in[SEAM_MAX_RANK];
    int64_t kern[SEAM_MAX_RANK];
    for (int32_t d = 0; d < n_sp; d++) {
        in[d] = x->dims[2 + d];
        kern[d] = wt->dims[2 + d];
        if (nk > 0 && ks[d] != kern[d]) return kernel_fail(k, "kernel_shape disagrees with W");
        s[d] = ns > 0 ? strides[d] : 1;
        dl[d] = nd > 0 ? dil[d] : 1;
        int64_t op = no > 0 ? opad[d] : 0;
        /* bounded first, so the sizes below cannot overflow */
        if (kern[d] < 1 || kern[d] > CONV_MAX_WINDOW || s[d] < 1 || s[d] > CONV_MAX_WINDOW || dl[d] < 1 ||
            dl[d] > CONV_MAX_WINDOW || op < 0 || op > CONV_MAX_WINDOW)
            return kernel_fail(k, "bad kernel size, stride, dilation or output_padding on axis %d", d);
        int64_t eff = (kern[d] - 1) * dl[d] + 1, full = s[d] * (in[d] - 1) + op + eff;
        if (nos >= 0 || same) {
            out[d] = nos >= 0 ? oshape[nos == x->rank ? 2 + d : d] : in[d] * s[d];
            if (out[d] < 0 || out[d] > IR_MAX_DIM) return kernel_fail(k, "output_shape on axis %d is out of range", d);
            int64_t total = full - out[d];
            if (total < 0) total = 0;
            lo[d] = upper ? total / 2 : total - total / 2;
        } else {
            lo[d] = np > 0 ? pads[d] : 0;
            int64_t hi = np > 0 ? pads[d + n_sp] : 0;
            if (lo[d] < 0 || hi < 0 || lo[d] > CONV_MAX_WINDOW || hi > CONV_MAX_WINDOW)
                return kernel_fail(k, "pads must be between 0 and 2^20");
            out[d] = full - lo[d] - hi;
        }
        if (out[d] < 0) return kernel_fail(k, "the pads leave a negative output size on axis %d", d);
    }
    int64_t dims[SEAM_MAX_RANK];
    dims[0] = N, dims[1] = M;
    for (int32_t d = 0; d < n_sp; d++) dims[2 + d] = out[d];
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, dims);
    if (!y) return kernel_oom(k);
    if (y->numel == 0) return SEAM_STATUS_OK;
    int64_t kprod = cpu_span(kern, 0, n_sp), in_prod = cpu_span(in, 0, n_sp), out_prod = cpu_span(out, 0, n_sp);
    /* (each at most 2^31, so the column matrix's byte count cannot wrap) */
    if (Cg > 0 &&
        (Mg * kprod > CPU_BLAS_MAX || in_prod > CPU_BLAS_MAX ||
         Mg * kprod > (INT64_MAX / 16) / (in_prod ? in_prod : 1)))
        return kernel_fail(k, "the convolution is too large");
    bool f64 = x->dtype == SEAM_DTYPE_FLOAT64;
    size_t es = f64 ? 8 : 4;
    cpu_fview vx, vw, vy;
    if (!cpu_fview3(x, wt, y, f64, &vx, &vw, &vy)) return kernel_oom(k);
    void *col = Cg > 0 ? kernel_scratch(k, es * (size_t)(Mg * kprod * in_prod) + 1) : NULL;
    if (Cg > 0 && !col) {
        cpu_fview_release(&vx);
        cpu_fview_release(&vw);
        cpu_fview_release(&vy);
        return kernel_oom(k);
    }
    memset(vy.p, 0, es * (size_t)y->numel);
    for (int64_t n = 0; n < N && Cg > 0; n++)
        for (int64_t g = 0; g < group; g++) {
            /* col [Mg * kprod, in_prod] = W_g^T [Mg * kprod, Cg] * X_g [Cg, in_prod] */
            const char *wg = (const char *)vw.p + (size_t)(g * Cg * Mg * kprod) * es;
            const char *xg = (const char *)vx.p + (size_t)((n * C + g * Cg) * in_prod) * es;
            cpu_blas_gemm(k->pool, f64, true, false, Mg * kprod, in_prod, Cg, 1.0, wg, Mg * kprod, xg, in_prod, 0.0,
                          col, in_prod);
            col2im_job j = {col, (char *)vy.p + (size_t)((n * M + g * Mg) * out_prod) * es, f64, n_sp, kprod, in_prod,
                            out_prod, in, out, kern, s, lo, dl};
            seam_parallel_for(k->pool, Mg, 1, col2im_channels, &j);
        }
    if (b)
        for (int64_t n = 0; n < N; n++)
            for (int64_t m = 0; m < M; m++) {
                double bv = cpu_get(b->data, b->dtype, m);
                int64_t at = (n * M + m) * out_prod;
                for (int64_t i = 0; i < out_prod; i++) {
                    if (f64) ((double *)vy.p)[at + i] += bv;
                    else ((float *)vy.p)[at + i] += (float)bv;
                }
            }
    cpu_fview_release(&vx);
    cpu_fview_release(&vw);
    cpu_fview_finish(y, &vy);
    return SEAM_STATUS_OK;
}
