/* CPU kernels: GridSample (2-D), AffineGrid, RoiAlign, and the fast path
 * of Resize (opset 11 on): float32, nearest or linear, over the last two
 * axes only, which is what upsampling in a conv net is. Everything else
 * Resize can do runs on the general kernel (resize.c's, any rank, mode
 * and dtype, element by element in double). Opset 10's Resize has no
 * scales/sizes at inputs 2/3 and always goes to the general kernel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "core/pool.h"


/* Reflects x into [lo, hi], as many times as it takes. */
static double reflect(double x, double lo, double hi) {
    double rng = hi - lo;
    if (rng <= 0) return lo;
    if (x >= lo && x <= hi) return x;
    double dx = x < lo ? lo - x : x - hi;
    double n = floor(dx / rng), r = dx - n * rng;
    bool even = fmod(n, 2) == 0;
    if (x < lo) return even ? lo + r : hi - r;
    return even ? hi - r : lo + r;
}

typedef struct gs {
    const seam_tensor *x;
    int64_t H, W;
    char pad; /* z(eros), b(order), r(eflection) */
    bool align;
} gs;

/* The pixel at integer (row, col) of plane `base`, per the padding mode. */
static double pixel(const gs *g, int64_t base, int64_t r, int64_t c) {
    if (r < 0 || r >= g->H || c < 0 || c >= g->W) {
        if (g->pad == 'z') return 0;
        if (g->pad == 'b') {
            r = r < 0 ? 0 : r >= g->H ? g->H - 1 : r;
            c = c < 0 ? 0 : c >= g->W ? g->W - 1 : c;
        } else {
            double lo_r = g->align ? 0 : -0.5, hi_r = g->align ? (double)(g->H - 1) : (double)g->H - 0.5;
            double lo_c = g->align ? 0 : -0.5, hi_c = g->align ? (double)(g->W - 1) : (double)g->W - 0.5;
            r = (int64_t)reflect((double)r, lo_r, hi_r);
            c = (int64_t)reflect((double)c, lo_c, hi_c);
            r = r < 0 ? 0 : r >= g->H ? g->H - 1 : r;
            c = c < 0 ? 0 : c >= g->W ? g->W - 1 : c;
        }
    }
    return cpu_get(g->x->data, g->x->dtype, base + r * g->W + c);
}

static seam_status run_grid_sample(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *grid = kernel_in(k, 1);
    if (!x || !grid || x->rank != 4 || grid->rank != 4 || grid->dims[3] != 2 || grid->dims[0] != x->dims[0])
        return kernel_fail(k, "needs X [N, C, H, W] and grid [N, H_out, W_out, 2] (only 2-D is supported)");
    gs g = {x, x->dims[2], x->dims[3], 'z', node_attr_int(k->n, "align_corners", 0) != 0};
    if (node_attr_is(k->n, "padding_mode", "border")) g.pad = 'b';
    if (node_attr_is(k->n, "padding_mode", "reflection")) g.pad = 'r';
    char mode = 'l';
    if (node_attr_is(k->n, "mode", "nearest")) mode = 'n';
    if (node_attr_is(k->n, "mode", "bicubic") || node_attr_is(k->n, "mode", "cubic")) mode = 'c';
    int64_t N = x->dims[0], C = x->dims[1], Ho = grid->dims[1], Wo = grid->dims[2];
    int64_t dims[4] = {N, C, Ho, Wo};
    seam_tensor *y = kernel_out(k, 0, x->dtype, 4, dims);
    if (!y) return kernel_oom(k);
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < Ho * Wo; i++) {
            double gx = cpu_get(grid->data, grid->dtype, (n * Ho * Wo + i) * 2);
            double gy = cpu_get(grid->data, grid->dtype, (n * Ho * Wo + i) * 2 + 1);
            double px = g.align ? (gx + 1) / 2 * (double)(g.W - 1) : ((gx + 1) * (double)g.W - 1) / 2;
            double py = g.align ? (gy + 1) / 2 * (double)(g.H - 1) : ((gy + 1) * (double)g.H - 1) / 2;
            if (g.pad == 'b') {
                px = fmin(fmax(px, 0), (double)(g.W - 1));
                py = fmin(fmax(py, 0), (double)(g.H - 1));
            } else if (g.pad == 'r') {
                px = g.align ? reflect(px, 0, (double)(g.W - 1)) : reflect(px, -0.5, (double)g.W - 0.5);
                py = g.align ? reflect(py, 0, (double)(g.H - 1)) : reflect(py, -0.5, (double)g.H - 0.5);
            }
            for (int64_t c = 0; c < C; c++) {
                int64_t base = (n * C + c) * g.H * g.W;
                double v;
                if (mode == 'n') {
                    v = pixel(&g, base, (int64_t)nearbyint(py), (int64_t)nearbyint(px));
                } else if (mode == 'l') {
                    double x0 = floor(px), y0 = floor(py), fx = px - x0, fy = py - y0;
                    int64_t c0 = (int64_t)x0, r0 = (int64_t)y0;
                    v = (1 - fy) * ((1 - fx) * pixel(&g, base, r0, c0) + fx * pixel(&g, base, r0, c0 + 1)) +
                        fy * ((1 - fx) * pixel(&g, base, r0 + 1, c0) + fx * pixel(&g, base, r0 + 1, c0 + 1));
                } else {
                    double x0 = floor(px), y0 = floor(py), fx = px - x0, fy = py - y0;
                    v = 0;
                    for (int64_t a = -1; a <= 2; a++) {
                        double row = 0;
                        for (int64_t b = -1; b <= 2; b++)
                            row += cpu_cubic_weight(fx - (double)b, -0.75) *
                                   pixel(&g, base, (int64_t)y0 + a, (int64_t)x0 + b);
                        v += cpu_cubic_weight(fy - (double)a, -0.75) * row;
                    }
                }
                cpu_set(y->data, y->dtype, (n * C + c) * Ho * Wo + i, v);
            }
        }
    return SEAM_STATUS_OK;
}

static seam_status check_grid_sample(seam_check *c) {
    int32_t r = c->n->inputs[0] >= 0 ? c->g->values[c->n->inputs[0]].type.rank : -1;
    if (r >= 0 && r != 4) return check_refuse(c, "GridSample on a %d-D input is not supported (2-D only)", r - 2);
    if (!cpu_is_float(check_in_dtype(c, 0)) && check_in_dtype(c, 0) != SEAM_DTYPE_UNDEFINED)
        return check_refuse(c, "GridSample on %s is not supported", seam_dtype_name(check_in_dtype(c, 0)));
    return SEAM_STATUS_OK;
}

/* AffineGrid: theta applied to a base grid in [-1, 1]. */
static seam_status run_affine_grid(seam_kernel *k) {
    const seam_tensor *th = kernel_in(k, 0), *sz = kernel_in(k, 1);
    int64_t size[5];
    int32_t ns = cpu_read_ints(sz, size, 5);
    if (!th || (ns != 4 && ns != 5)) return kernel_fail(k, "size must be (N, C, H, W) or (N, C, D, H, W)");
    int32_t sp = ns - 2; /* spatial dims */
    if (th->rank != 3 || th->dims[0] != size[0] || th->dims[1] != sp || th->dims[2] != sp + 1)
        return kernel_fail(k, "theta must be [N, %d, %d]", sp, sp + 1);
    for (int32_t d = 0; d < ns; d++)
        if (size[d] < 0 || size[d] > 65536) return kernel_fail(k, "size out of range");
    bool align = node_attr_int(k->n, "align_corners", 0) != 0;
    int64_t dims[5];
    dims[0] = size[0];
    for (int32_t d = 0; d < sp; d++) dims[1 + d] = size[2 + d];
    dims[1 + sp] = sp;
    seam_tensor *y = kernel_out(k, 0, th->dtype, sp + 2, dims);
    if (!y) return kernel_oom(k);
    int64_t pts = cpu_span(size, 2, ns);
    for (int64_t n = 0; n < size[0]; n++)
        for (int64_t p = 0; p < pts; p++) {
            /* base coordinates in (x, y[, z]) order: the last spatial dim is x */
            double base[4];
            int64_t rem = p;
            for (int32_t d = sp - 1; d >= 0; d--) {
                int64_t len = size[2 + d], i = rem % len;
                rem /= len;
                double v = align ? (len > 1 ? -1 + 2.0 * (double)i / (double)(len - 1) : 0)
                                 : (2.0 * (double)i + 1) / (double)len - 1;
                base[sp - 1 - d] = v;
            }
            base[sp] = 1;
            for (int32_t r = 0; r < sp; r++) {
                double acc = 0;
                for (int32_t c = 0; c <= sp; c++) acc += cpu_get(th->data, th->dtype, (n * sp + r) * (sp + 1) + c) * base[c];
                cpu_set(y->data, y->dtype, (n * pts + p) * sp + r, acc);
            }
        }
    return SEAM_STATUS_OK;
}

static seam_status run_roi_align(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *rois = kernel_in(k, 1), *bi = kernel_in(k, 2);
    if (!x || !rois || !bi || x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->numel != rois->dims[0])
        return kernel_fail(k, "needs X [N, C, H, W], rois [R, 4] and batch_indices [R]");
    int64_t oh = node_attr_int(k->n, "output_height", 1), ow = node_attr_int(k->n, "output_width", 1);
    int64_t sr = node_attr_int(k->n, "sampling_ratio", 0);
    double scale = node_attr_float(k->n, "spatial_scale", 1);
    bool avg = !node_attr_is(k->n, "mode", "max");
    bool half = k->n->opset >= 16 ? !node_attr_is(k->n, "coordinate_transformation_mode", "output_half_pixel") : false;
    if (oh < 1 || ow < 1 || oh > 4096 || ow > 4096 || sr < 0) return kernel_fail(k, "bad output size or sampling_ratio");
    int64_t R = rois->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t dims[4] = {R, C, oh, ow};
    seam_tensor *y = kernel_out(k, 0, x->dtype, 4, dims);
    if (!y) return kernel_oom(k);
    double off = half ? 0.5 : 0;
    for (int64_t r = 0; r < R; r++) {
        int64_t b = cpu_get_i64(bi->data, bi->dtype, r);
        if (b < 0 || b >= x->dims[0]) return kernel_fail(k, "batch index %lld is out of range", (long long)b);
        double x1 = cpu_get(rois->data, rois->dtype, r * 4) * scale - off;
        double y1 = cpu_get(rois->data, rois->dtype, r * 4 + 1) * scale - off;
        double x2 = cpu_get(rois->data, rois->dtype, r * 4 + 2) * scale - off;
        double y2 = cpu_get(rois->data, rois->dtype, r * 4 + 3) * scale - off;
        double rw = x2 - x1, rh = y2 - y1;
        if (!half) rw = fmax(rw, 1), rh = fmax(rh, 1);
        double bw = rw / (double)ow, bh = rh / (double)oh;
        /* the adaptive grid in double first: a NaN or inf spatial_scale is no count */
        double fgh = sr > 0 ? (double)sr : ceil(rh / (double)oh), fgw = sr > 0 ? (double)sr : ceil(rw / (double)ow);
        if (!(fgh >= 0 && fgw >= 0 && fgh <= 1024 && fgw <= 1024)) return kernel_fail(k, "sampling grid out of range");
        int64_t gh = (int64_t)fgh, gw = (int64_t)fgw;
        double count = (double)(gh * gw > 1 ? gh * gw : 1);
        for (int64_t c = 0; c < C; c++) {
            int64_t base = (b * C + c) * H * W;
            for (int64_t ph = 0; ph < oh; ph++)
                for (int64_t pw = 0; pw < ow; pw++) {
                    double acc = avg ? 0 : -INFINITY;
                    bool any = false;
                    for (int64_t iy = 0; iy < gh; iy++)
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double yy = y1 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                            double xx = x1 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            if (yy < -1 || yy > (double)H || xx < -1 || xx > (double)W) {
                                if (!avg) acc = fmax(acc, 0), any = true;
                                continue;
                            }
                            yy = fmax(yy, 0), xx = fmax(xx, 0);
                            int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh, xh;
                            if (yl >= H - 1) yh = yl = H - 1, yy = (double)yl;
                            else yh = yl + 1;
                            if (xl >= W - 1) xh = xl = W - 1, xx = (double)xl;
                            else xh = xl + 1;
                            double ly = yy - (double)yl, lx = xx - (double)xl, hy = 1 - ly, hx = 1 - lx;
                            double v1 = cpu_get(x->data, x->dtype, base + yl * W + xl);
                            double v2 = cpu_get(x->data, x->dtype, base + yl * W + xh);
                            double v3 = cpu_get(x->data, x->dtype, base + yh * W + xl);
                            double v4 = cpu_get(x->data, x->dtype, base + yh * W + xh);
                            if (avg) {
                                acc += hy * hx * v1 + hy * lx * v2 + ly * hx * v3 + ly * lx * v4;
                            } else {
                                acc = fmax(acc, fmax(fmax(hy * hx * v1, hy * lx * v2), fmax(ly * hx * v3, ly * lx * v4)));
                                any = true;
                            }
                        }
                    double v = avg ? acc / count : (any ? acc : 0);
                    cpu_set(y->data, y->dtype, ((r * C + c) * oh + ph) * ow + pw, v);
                }
        }
    }
    return SEAM_STATUS_OK;
}

/* ---- Resize, fast path ---- */

/* One axis's taps: output i reads input lo[i] (nearest), or lo[i] and
 * hi[i] weighted 1 - t[i] and t[i] (linear). */
typedef struct rz_axis {
    int32_t *lo, *hi;
    float *t;
} rz_axis;

static void rz_taps(rz_axis *a, bool linear, cpu_resize_coord cm, char nearest, double scale, int64_t in, int64_t out) {
    for (int64_t i = 0; i < out; i++) {
        double xi = out == in && scale == 1 ? (double)i : cpu_resize_to_input(cm, (double)i, scale, in, out, 0, 0);
        if (!linear) {
            double f = floor(xi);
            int64_t v;
            if (nearest == 'f') v = (int64_t)f;
            else if (nearest == 'C') v = (int64_t)ceil(xi);
            else if (xi - f == 0.5) v = nearest == 'c' ? (int64_t)f + 1 : (int64_t)f;
            else v = (int64_t)llround(xi);
            a->lo[i] = (int32_t)(v < 0 ? 0 : v >= in ? in - 1 : v);
        } else {
            double c = xi < 0 ? 0 : xi > (double)(in - 1) ? (double)(in - 1) : xi;
            int64_t lo = (int64_t)floor(c);
            a->lo[i] = (int32_t)lo;
            a->hi[i] = (int32_t)(lo + 1 < in ? lo + 1 : lo);
            a->t[i] = (float)(c - (double)lo);
        }
    }
}

/* Columns per tile of a linear resize: two interpolated rows of a tile
 * live on the stack. */
#define RZ_TILE 1024

typedef struct rz_job {
    const float *x;
    float *y;
    bool linear;
    int64_t H, W, OH, OW, blocks, rows; /* row blocks per plane, rows per block */
    rz_axis h, w;
} rz_job;

/* Tasks: (plane, block of output rows). */
CPU_HOT static void rz_tasks(void *arg, int64_t begin, int64_t end) {
    const rz_job *j = arg;
    int64_t W = j->W, OW = j->OW;
    for (int64_t t = begin; t < end; t++) {
        int64_t plane = t / j->blocks, r0 = t % j->blocks * j->rows;
        int64_t r1 = r0 + j->rows < j->OH ? r0 + j->rows : j->OH;
        const float *x = j->x + plane * j->H * W;
        float *y = j->y + plane * j->OH * OW;
        if (!j->linear) {
            const int32_t *iw = j->w.lo;
            for (int64_t oh = r0; oh < r1; oh++) {
                float *yrow = y + oh * OW;
                if (oh > r0 && j->h.lo[oh] == j->h.lo[oh - 1]) { /* upsampling repeats rows */
                    memcpy(yrow, yrow - OW, sizeof(float) * (size_t)OW);
                    continue;
                }
                const float *xrow = x + (int64_t)j->h.lo[oh] * W;
                for (int64_t ow = 0; ow < OW; ow++) yrow[ow] = xrow[iw[ow]];
            }
            continue;
        }
        /* linear: each input row the output needs is interpolated along W
         * once per tile (rows a, b), then blended along H */
        float ra[RZ_TILE], rb[RZ_TILE];
        for (int64_t c0 = 0; c0 < OW; c0 += RZ_TILE) {
            int64_t nc = OW - c0 < RZ_TILE ? OW - c0 : RZ_TILE;
            const int32_t *wl = j->w.lo + c0, *wh = j->w.hi + c0;
            const float *wt = j->w.t + c0;
            int64_t have_a = -1, have_b = -1;
            for (int64_t oh = r0; oh < r1; oh++) {
                int64_t ia = j->h.lo[oh], ib = j->h.hi[oh];
                if (have_a != ia) {
                    if (have_b == ia) { /* moving down: the old lower row is the new upper one */
                        memcpy(ra, rb, sizeof(float) * (size_t)nc);
                    } else {
                        const float *xr = x + ia * W;
                        for (int64_t q = 0; q < nc; q++) ra[q] = xr[wl[q]] + wt[q] * (xr[wh[q]] - xr[wl[q]]);
                    }
                    have_a = ia;
                }
                if (have_b != ib) {
                    const float *xr = x + ib * W;
                    for (int64_t q = 0; q < nc; q++) rb[q] = xr[wl[q]] + wt[q] * (xr[wh[q]] - xr[wl[q]]);
                    have_b = ib;
                }
                float th = j->h.t[oh], *yrow = y + oh * OW + c0;
                for (int64_t q = 0; q < nc; q++) yrow[q] = ra[q] + th * (rb[q] - ra[q]);
            }
        }
    }
}

/* The output size and the scales per the node's scales or sizes input;
 * false when the fast path does not apply (a form the general kernel
 * handles: keep_aspect_ratio_policy, axes, a missing or odd input). */
static bool rz_shape(seam_kernel *k, const seam_tensor *x, double *scales, int64_t *out) {
    if (k->n->opset < 11) return false;
    const seam_tensor *ts = kernel_in(k, 2), *tz = kernel_in(k, 3);
    if (ts && ts->numel == 0) ts = NULL;
    if (tz && tz->numel == 0) tz = NULL;
    int32_t r = x->rank;
    if (ts) {
        if (ts->numel != r || !cpu_is_float(ts->dtype)) return false;
        for (int32_t d = 0; d < r; d++) {
            scales[d] = cpu_get(ts->data, ts->dtype, d);
            if (!(scales[d] > 0)) return false;
            out[d] = (int64_t)floor((double)x->dims[d] * scales[d]);
        }
        return true;
    }
    if (!tz || tz->numel != r || !cpu_is_int(tz->dtype)) return false;
    for (int32_t d = 0; d < r; d++) {
        out[d] = cpu_get_i64(tz->data, tz->dtype, d);
        if (out[d] < 0 || x->dims[d] == 0) return false;
        scales[d] = (double)out[d] / (double)x->dims[d];
    }
    return true;
}

static seam_status run_resize(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->dtype != SEAM_DTYPE_FLOAT32 || x->rank < 2 || node_attr(k->n, "axes") ||
        node_attr_int(k->n, "antialias", 0) || node_attr(k->n, "keep_aspect_ratio_policy"))
        return cpu_resize_general_run(k);
    bool linear = node_attr_is(k->n, "mode", "linear");
    if (!linear && !node_attr_is(k->n, "mode", "nearest") && node_attr(k->n, "mode")) return cpu_resize_general_run(k);
    cpu_resize_coord cm = cpu_resize_coord_of(k->n, CPU_RZ_HALF_PIXEL);
    if (cm == CPU_RZ_TF_CROP || cm == CPU_RZ_UNKNOWN)
        return cpu_resize_general_run(k); /* tf_crop_and_resize: roi and extrapolation */
    char nearest = cpu_resize_nearest_of(k->n);
    double scales[SEAM_MAX_RANK];
    int64_t out[SEAM_MAX_RANK];
    if (!rz_shape(k, x, scales, out)) return cpu_resize_general_run(k);
    int32_t r = x->rank;
    for (int32_t d = 0; d < r - 2; d++)
        if (out[d] != x->dims[d] || scales[d] != 1) return cpu_resize_general_run(k);
    int64_t H = x->dims[r - 2], W = x->dims[r - 1], OH = out[r - 2], OW = out[r - 1];
    if (H > INT32_MAX || W > INT32_MAX || OH > ((int64_t)1 << 24) || OW > ((int64_t)1 << 24))
        return cpu_resize_general_run(k);
    seam_tensor *y = kernel_out(k, 0, x->dtype, r, out);
    if (!y) return kernel_oom(k);
    if (y->numel == 0) return SEAM_STATUS_OK;
    /* the taps of both axes: lo, hi (int32) and t (float) per output index */
    size_t n = (size_t)(OH + OW);
    char *mem = kernel_scratch(k, n * 3 * 4);
    if (!mem) return kernel_oom(k);
    rz_job j = {x->data, y->data, linear, H, W, OH, OW, 1, OH, {0}, {0}};
    j.h = (rz_axis){(int32_t *)mem, (int32_t *)mem + n, (float *)((int32_t *)mem + 2 * n)};
    j.w = (rz_axis){j.h.lo + OH, j.h.hi + OH, j.h.t + OH};
    rz_taps(&j.h, linear, cm, nearest, scales[r - 2], H, OH);
    rz_taps(&j.w, linear, cm, nearest, scales[r - 1], W, OW);
    /* planes, each cut in row blocks when there are too few planes for
     * the threads; every element is computed the same way whatever task
     * runs it */
    int64_t planes = y->numel / (OH * OW), want = 4 * (int64_t)seam_pool_threads(k->pool);
    if (planes < want) {
        j.blocks = (want + planes - 1) / planes;
        if (j.blocks > OH) j.blocks = OH;
        j.rows = (OH + j.blocks - 1) / j.blocks;
        j.blocks = (OH + j.rows - 1) / j.rows;
    }
    seam_parallel_for(k->pool, planes * j.blocks, 1, rz_tasks, &j);
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_spatial[] = {
    {"", "GridSample", 16, {run_grid_sample, check_grid_sample}},
    {"", "AffineGrid", 20, {run_affine_grid, NULL}},
    {"", "RoiAlign", 10, {run_roi_align, NULL}},
    {"", "Resize", 10, {run_resize, cpu_resize_general_check}},
};
const size_t seam_cpu_spatial_count = sizeof(seam_cpu_spatial) / sizeof(seam_cpu_spatial[0]);
