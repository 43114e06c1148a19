/* CPU kernels: BatchNormalization, LayerNormalization,
 * InstanceNormalization, GroupNormalization, LRN,
 * MeanVarianceNormalization, LpNormalization. Statistics accumulate in
 * double; float32 data is read and written directly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"

/* Element i of a tensor (see cpu_ld, cpu_st). */
static inline double ld(const seam_tensor *t, int64_t i) { return cpu_ld(t->data, t->dtype, i); }
static inline void st(seam_tensor *t, int64_t i, double v) { cpu_st(t->data, t->dtype, i, v); }


static bool is_vec(const seam_tensor *t, int64_t n) { return t && t->numel == n; }

/* ---- BatchNormalization ---- */

typedef struct bn_job {
    const seam_tensor *x, *sc, *b, *mean, *var;
    const double *pa, *psh;             /* scale and shift made by check_batch_norm, or NULL */
    const act_params *post;             /* a fused activation (float32), or NULL */
    seam_tensor *y, *rm, *rv, *sm, *sv; /* running mean/var; batch mean/var (opset < 14) */
    int64_t N, C, S, per;               /* per: elements of one image a parameter covers */
    double eps, mom;
    bool spatial, training;
} bn_job;

/* The per-channel scale and shift of an inference BatchNormalization
 * whose parameters are initializers (check_batch_norm). */
typedef struct bn_state {
    int64_t n;
    double *a, *sh;           /* one allocation */
    const void *from[4];      /* the data of scale, B, mean, var they were made from */
} bn_state;

static void free_bn_state(void *p) {
    bn_state *s = p;
    if (s) free(s->a);
    free(s);
}

/* Parameters [begin, end): a channel each, or with spatial=0 (opset < 9) a
 * channel and spatial position each. */
static void bn_params(void *arg, int64_t begin, int64_t end) {
    bn_job *j = arg;
    const seam_tensor *x = j->x;
    for (int64_t q = begin; q < end; q++) {
        int64_t c = j->spatial ? q : q / j->S, i0 = j->spatial ? 0 : q % j->S;
        double m = 0, v = 0;
        if (!j->pa) m = ld(j->mean, q), v = ld(j->var, q);
        if (j->training) { /* this batch's statistics (population variance) */
            double s = 0, s2 = 0, cnt = (double)(j->N * j->per);
            for (int64_t n = 0; n < j->N; n++)
                for (int64_t i = 0; i < j->per; i++) s += ld(x, (n * j->C + c) * j->S + i0 + i);
            double bm = cnt > 0 ? s / cnt : 0;
            for (int64_t n = 0; n < j->N; n++)
                for (int64_t i = 0; i < j->per; i++) {
                    double d = ld(x, (n * j->C + c) * j->S + i0 + i) - bm;
                    s2 += d * d;
                }
            double bv = cnt > 0 ? s2 / cnt : 0;
            if (j->rm) st(j->rm, q, m * j->mom + bm * (1 - j->mom));
            if (j->rv) st(j->rv, q, v * j->mom + bv * (1 - j->mom));
            if (j->sm) st(j->sm, q, bm);
            if (j->sv) st(j->sv, q, bv);
            m = bm, v = bv;
        }
        double a = 0, sh = 0;
        if (j->pa) a = j->pa[q], sh = j->psh[q];
        else a = ld(j->sc, q) / sqrt(v + j->eps), sh = ld(j->b, q) - m * a;
        for (int64_t n = 0; n < j->N; n++) {
            int64_t base = (n * j->C + c) * j->S + i0;
            if (x->dtype == SEAM_DTYPE_FLOAT32 && j->y->dtype == SEAM_DTYPE_FLOAT32) {
                const float *xp = (const float *)x->data + base;
                float *yp = (float *)j->y->data + base, fa = (float)a, fs = (float)sh;
                for (int64_t i = 0; i < j->per; i++) yp[i] = xp[i] * fa + fs;
                if (j->post) cpu_post_apply(j->post, yp, j->per, 0); /* while the plane is in cache */
            } else {
                for (int64_t i = 0; i < j->per; i++) st(j->y, base + i, ld(x, base + i) * a + sh);
            }
        }
    }
}

static seam_status run_batch_norm(seam_kernel *k) {
    bn_job j = {.x = kernel_in(k, 0), .sc = kernel_in(k, 1), .b = kernel_in(k, 2), .mean = kernel_in(k, 3),
                .var = kernel_in(k, 4)};
    const seam_tensor *x = j.x;
    if (!x || x->rank < 1) return kernel_fail(k, "needs X [N, C, ...]");
    /* (an empty X's dims past its 0 may be anything: no span of them) */
    j.N = x->dims[0], j.C = x->rank > 1 ? x->dims[1] : 1, j.S = x->numel ? cpu_span(x->dims, 2, x->rank) : 0;
    /* before opset 9, spatial=0 gives every (channel, position) its own parameters */
    j.spatial = k->n->opset >= 9 || node_attr_int(k->n, "spatial", 1) != 0;
    j.per = j.spatial ? j.S : 1;
    int64_t np = j.spatial ? j.C : j.C * j.S;
    if (!is_vec(j.sc, np) || !is_vec(j.b, np) || !is_vec(j.mean, np) || !is_vec(j.var, np))
        return kernel_fail(k, "scale, B, mean and var must have %lld entries", (long long)np);
    j.eps = node_attr_float(k->n, "epsilon", 1e-5f), j.mom = node_attr_float(k->n, "momentum", 0.9f);
    /* opset 14 has training_mode; before it, asking for the statistics
     * outputs (mean, var, saved_mean, saved_var) means training */
    j.training = k->n->opset >= 14 ? node_attr_int(k->n, "training_mode", 0) != 0 : kernel_has_out(k, 1);
    j.y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!j.y) return kernel_oom(k);
    if (j.training) {
        seam_tensor **outs[4] = {&j.rm, &j.rv, &j.sm, &j.sv};
        const seam_tensor *like[4] = {j.mean, j.var, j.mean, j.var};
        for (int32_t o = 0; o < (k->n->opset >= 14 ? 2 : 4); o++) {
            if (!kernel_has_out(k, o + 1)) continue;
            *outs[o] = kernel_out(k, o + 1, like[o]->dtype, like[o]->rank, like[o]->dims);
            if (!*outs[o]) return kernel_oom(k);
        }
    }
    if (x->numel == 0) { /* no batch statistics: the running ones pass through */
        const seam_tensor *src[4] = {j.mean, j.var, j.mean, j.var};
        seam_tensor *dst[4] = {j.rm, j.rv, j.sm, j.sv};
        for (int32_t o = 0; o < 4; o++)
            if (dst[o] && dst[o]->nbytes) memcpy(dst[o]->data, src[o]->data, dst[o]->nbytes);
        return SEAM_STATUS_OK;
    }
    const bn_state *bs = k->state;
    if (bs && !j.training && bs->n == np && bs->from[0] == j.sc->data && bs->from[1] == j.b->data &&
        bs->from[2] == j.mean->data && bs->from[3] == j.var->data)
        j.pa = bs->a, j.psh = bs->sh;
    if (k->post.kind != ACT_NONE && j.y->dtype == SEAM_DTYPE_FLOAT32) j.post = &k->post;
    seam_parallel_for(k->pool, np, 4, bn_params, &j);
    return SEAM_STATUS_OK;
}

/* Inference with scale, B, mean and var all initializers: each channel's
 * scale a = scale / sqrt(var + epsilon) and shift B - mean * a, once here
 * (in double, as the run computes them without it). Takes a following
 * activation as a post-op (runtime/fuse.c). */
static seam_status check_batch_norm(seam_check *c) {
    seam_status st = check_float_input(c);
    if (st) return st;
    c->post_ops = true;
    const ir_node *n = c->n;
    bool training = n->opset >= 14 ? node_attr_int(n, "training_mode", 0) != 0 : false;
    for (int32_t o = 1; n->opset < 14 && o < n->n_outputs; o++) training |= n->outputs[o] >= 0;
    if (training || n->n_inputs < 5 || (n->opset < 9 && node_attr_int(n, "spatial", 1) == 0)) return SEAM_STATUS_OK;
    const ir_tensor *p[4];
    for (int32_t i = 0; i < 4; i++) {
        p[i] = cpu_constant_input(c, i + 1);
        if (!p[i] || !cpu_is_float(p[i]->dtype) || p[i]->numel != p[0]->numel) return SEAM_STATUS_OK;
    }
    int64_t np = p[0]->numel;
    bn_state *s = calloc(1, sizeof(*s));
    double *buf = malloc(sizeof(double) * (size_t)(2 * np + 1));
    if (!s || !buf) {
        free(s), free(buf);
        snprintf(c->reason, c->reason_size, "out of memory");
        return SEAM_STATUS_OUT_OF_MEMORY;
    }
    double eps = node_attr_float(n, "epsilon", 1e-5f);
    s->n = np, s->a = buf, s->sh = buf + np;
    for (int32_t i = 0; i < 4; i++) s->from[i] = p[i]->data;
    for (int64_t q = 0; q < np; q++) {
        double a = cpu_get(p[0]->data, p[0]->dtype, q) / sqrt(cpu_get(p[3]->data, p[3]->dtype, q) + eps);
        s->a[q] = a;
        s->sh[q] = cpu_get(p[1]->data, p[1]->dtype, q) - cpu_get(p[2]->data, p[2]->dtype, q) * a;
    }
    *c->state = s;
    *c->free_state = free_bn_state;
    return SEAM_STATUS_OK;
}

/* ---- LayerNormalization ---- */

typedef struct ln_job {
    const seam_tensor *x;
    const double *gamma, *beta; /* Scale and B spread over the normalized shape */
    seam_tensor *y, *mean, *inv;
    int64_t inner;
    double eps;
} ln_job;

static void ln_rows(void *arg, int64_t begin, int64_t end) {
    ln_job *j = arg;
    int64_t n = j->inner;
    for (int64_t r = begin; r < end; r++) {
        int64_t base = r * n;
        double s = 0, s2 = 0;
        for (int64_t i = 0; i < n; i++) s += ld(j->x, base + i);
        double m = s / (double)n;
        for (int64_t i = 0; i < n; i++) {
            double d = ld(j->x, base + i) - m;
            s2 += d * d;
        }
        double inv = 1 / sqrt(s2 / (double)n + j->eps);
        for (int64_t i = 0; i < n; i++) st(j->y, base + i, (ld(j->x, base + i) - m) * inv * j->gamma[i] + j->beta[i]);
        if (j->mean) st(j->mean, r, m);
        if (j->inv) st(j->inv, r, inv);
    }
}

/* Spreads p (Scale or B) over out[inner] (when out is not NULL): flat when
 * it has the normalized shape's element count, else broadcast numpy-style
 * against the normalized dims [axis, rank) of x. False when it fits
 * neither way. */
static bool spread_param(const seam_tensor *p, const seam_tensor *x, int32_t axis, int64_t inner, double *out) {
    int32_t nr = x->rank - axis;
    bool flat = p->numel == inner;
    for (int32_t d = 0; d < p->rank - nr && !flat; d++)
        if (p->dims[d] != 1) return false;
    for (int32_t d = 0; d < nr && !flat; d++) {
        int32_t off = d - (nr - p->rank);
        if (off >= 0 && p->dims[off] != 1 && p->dims[off] != x->dims[axis + d]) return false;
    }
    if (!out) return true;
    int64_t strides[SEAM_MAX_RANK], step = 1;
    for (int32_t d = nr - 1; d >= 0 && !flat; d--) {
        int32_t off = d - (nr - p->rank);
        int64_t pd = off >= 0 ? p->dims[off] : 1;
        strides[d] = pd == 1 ? 0 : step;
        step *= pd;
    }
    for (int64_t i = 0; i < inner; i++) {
        int64_t rem = i, at = 0;
        for (int32_t d = nr - 1; d >= 0 && !flat; d--) {
            at += (rem % x->dims[axis + d]) * strides[d];
            rem /= x->dims[axis + d];
        }
        out[i] = ld(p, flat ? i : at);
    }
    return true;
}

static seam_status run_layer_norm(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *sc = kernel_in(k, 1), *b = kernel_in(k, 2);
    if (!x || !sc) return kernel_fail(k, "needs X and Scale");
    int32_t axis = op_axis(node_attr_int(k->n, "axis", -1), x->rank);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    /* (an empty X's dims past its 0 may be anything: no span of them) */
    ln_job j = {x, NULL, NULL, NULL, NULL, NULL, x->numel ? cpu_span(x->dims, axis, x->rank) : 0,
                node_attr_float(k->n, "epsilon", 1e-5f)};
    if (x->numel && (!spread_param(sc, x, axis, j.inner, NULL) || (b && !spread_param(b, x, axis, j.inner, NULL))))
        return kernel_fail(k, "Scale and B must broadcast to the normalized shape (%lld elements)", (long long)j.inner);
    j.y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!j.y) return kernel_oom(k);
    int64_t sdims[SEAM_MAX_RANK];
    for (int32_t d = 0; d < x->rank; d++) sdims[d] = d < axis ? x->dims[d] : 1;
    int32_t stash = (int32_t)node_attr_int(k->n, "stash_type", SEAM_DTYPE_FLOAT32);
    if (kernel_has_out(k, 1) && !(j.mean = kernel_out(k, 1, stash, x->rank, sdims))) return kernel_oom(k);
    if (kernel_has_out(k, 2) && !(j.inv = kernel_out(k, 2, stash, x->rank, sdims))) return kernel_oom(k);
    if (x->numel == 0) { /* rows with nothing to normalize have NaN statistics, as in the spec's reference */
        for (int64_t r = 0; j.mean && r < j.mean->numel; r++) st(j.mean, r, NAN);
        for (int64_t r = 0; j.inv && r < j.inv->numel; r++) st(j.inv, r, NAN);
        return SEAM_STATUS_OK;
    }
    double *params = kernel_scratch(k, sizeof(double) * (size_t)(2 * j.inner));
    if (!params) return kernel_oom(k);
    memset(params, 0, sizeof(double) * (size_t)(2 * j.inner)); /* B absent: 0 */
    spread_param(sc, x, axis, j.inner, params);
    if (b) spread_param(b, x, axis, j.inner, params + j.inner);
    j.gamma = params, j.beta = params + j.inner;
    seam_parallel_for(k->pool, x->numel / j.inner, 1 + 4096 / j.inner, ln_rows, &j);
    return SEAM_STATUS_OK;
}

static seam_status check_layer_norm(seam_check *c) {
    int64_t stash = node_attr_int(c->n, "stash_type", SEAM_DTYPE_FLOAT32);
    if (stash != SEAM_DTYPE_FLOAT32 && stash != SEAM_DTYPE_FLOAT64 && stash != SEAM_DTYPE_FLOAT16 &&
        stash != SEAM_DTYPE_BFLOAT16)
        return check_refuse(c, "stash_type %lld is not a float type", (long long)stash);
    return check_float_input(c);
}

/* ---- InstanceNormalization and GroupNormalization ---- */

typedef struct gn_job {
    const seam_tensor *x, *sc, *b;
    seam_tensor *y;
    int64_t C, S, groups;
    double eps;
    bool per_group;
} gn_job;

/* The sum of x[0..n) and the sum of (x - m)^2, in float64, over eight
 * running sums each (a fixed order, whatever thread runs it: one sum a
 * step was an add's latency per element, an InstanceNormalization of 128
 * x 1999 taking 1 ms). */
CPU_HOT static double f32_sum(const float *x, int64_t n) {
    double a[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) a[l] += (double)x[i + l];
    for (; i < n; i++) a[i & 7] += (double)x[i];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

CPU_HOT static double f32_sq_dev(const float *x, int64_t n, double m) {
    double a[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) {
            double d = (double)x[i + l] - m;
            a[l] += d * d;
        }
    for (; i < n; i++) {
        double d = (double)x[i] - m;
        a[i & 7] += d * d;
    }
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* y = x * a + sh in float64, as the loop below does it. */
CPU_HOT static void f32_affine(const float *x, float *y, int64_t n, double a, double sh) {
    for (int64_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * a + sh);
}

/* Blocks [begin, end) of (image, group): normalized together, then scaled
 * per channel (or per group). */
static void gn_blocks(void *arg, int64_t begin, int64_t end) {
    gn_job *j = arg;
    int64_t cg = j->C / j->groups, len = cg * j->S;
    bool f32 = j->x->dtype == SEAM_DTYPE_FLOAT32 && j->y->dtype == SEAM_DTYPE_FLOAT32;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t n = blk / j->groups, g = blk % j->groups, base = (n * j->C + g * cg) * j->S;
        double s = 0, s2 = 0;
        if (f32) {
            const float *xb = (const float *)j->x->data + base;
            s = f32_sum(xb, len);
            double m = len ? s / (double)len : 0;
            double inv = 1 / sqrt((len ? f32_sq_dev(xb, len, m) / (double)len : 0) + j->eps);
            for (int64_t c = 0; c < cg; c++) {
                int64_t p = j->per_group ? g : g * cg + c, at = base + c * j->S;
                double a = ld(j->sc, p) * inv, sh = ld(j->b, p) - m * a;
                f32_affine((const float *)j->x->data + at, (float *)j->y->data + at, j->S, a, sh);
            }
            continue;
        }
        for (int64_t i = 0; i < len; i++) s += ld(j->x, base + i);
        double m = len ? s / (double)len : 0;
        for (int64_t i = 0; i < len; i++) {
            double d = ld(j->x, base + i) - m;
            s2 += d * d;
        }
        double inv = 1 / sqrt((len ? s2 / (double)len : 0) + j->eps);
        for (int64_t c = 0; c < cg; c++) {
            int64_t p = j->per_group ? g : g * cg + c, at = base + c * j->S;
            double a = ld(j->sc, p) * inv, sh = ld(j->b, p) - m * a;
            for (int64_t i = 0; i < j->S; i++) st(j->y, at + i, ld(j->x, at + i) * a + sh);
        }
    }
}

/* Normalizes each of `groups` blocks of channels per image (InstanceNorm:
 * one channel each). */
static seam_status group_norm(seam_kernel *k, int64_t groups) {
    gn_job j = {.x = kernel_in(k, 0), .sc = kernel_in(k, 1), .b = kernel_in(k, 2), .groups = groups};
    const seam_tensor *x = j.x;
    if (!x || x->rank < 2 || !j.sc || !j.b) return kernel_fail(k, "needs X [N, C, ...], scale and B");
    j.C = x->dims[1];
    if (groups < 1 || j.C % groups)
        return kernel_fail(k, "%lld channels do not split into %lld groups", (long long)j.C, (long long)groups);
    /* GroupNormalization-18 has per-group scale and bias, -21 per channel */
    j.per_group = j.sc->numel == groups && groups != j.C;
    if ((j.sc->numel != j.C && !j.per_group) || j.b->numel != j.sc->numel)
        return kernel_fail(k, "scale and B must have C (or num_groups) entries");
    j.eps = node_attr_float(k->n, "epsilon", 1e-5f);
    j.y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!j.y) return kernel_oom(k);
    if (x->numel == 0) return SEAM_STATUS_OK; /* (its other dims may be anything) */
    j.S = cpu_span(x->dims, 2, x->rank);
    seam_parallel_for(k->pool, x->dims[0] * groups, 1, gn_blocks, &j);
    return SEAM_STATUS_OK;
}

static seam_status run_instance_norm(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->rank < 2) return kernel_fail(k, "needs X [N, C, ...]");
    return group_norm(k, x->dims[1] ? x->dims[1] : 1);
}

static seam_status run_group_norm(seam_kernel *k) {
    return group_norm(k, node_attr_int(k->n, "num_groups", 0));
}

/* ---- LRN ---- */

static seam_status run_lrn(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->rank < 2) return kernel_fail(k, "needs X [N, C, ...]");
    int64_t size = node_attr_int(k->n, "size", 0);
    if (size < 1) return kernel_fail(k, "size must be positive");
    double alpha = node_attr_float(k->n, "alpha", 1e-4f), beta = node_attr_float(k->n, "beta", 0.75f);
    double bias = node_attr_float(k->n, "bias", 1);
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    if (x->numel == 0) return SEAM_STATUS_OK;
    int64_t N = x->dims[0], C = x->dims[1], S = cpu_span(x->dims, 2, x->rank);
    int64_t before = (size - 1) / 2, after = size - 1 - before;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            /* the window's channels, clipped to the image's */
            int64_t lo = c - before < 0 ? 0 : c - before, hi = after > C - 1 - c ? C - 1 : c + after;
            for (int64_t i = 0; i < S; i++) {
                double sum = 0;
                for (int64_t q = lo; q <= hi; q++) {
                    double v = ld(x, (n * C + q) * S + i);
                    sum += v * v;
                }
                int64_t at = (n * C + c) * S + i;
                st(y, at, ld(x, at) / pow(bias + alpha / (double)size * sum, beta));
            }
        }
    return SEAM_STATUS_OK;
}

/* ---- MeanVarianceNormalization and LpNormalization: along axes ---- */

/* Calls fn for each group of elements that share the non-reduced
 * coordinates: offs lists the group's element offsets. */
static seam_status reduce_groups(seam_kernel *k, const seam_tensor *x, const bool *red,
                                 void (*fn)(seam_kernel *k, const int64_t *offs, int64_t n, void *arg), void *arg) {
    if (x->numel == 0) return SEAM_STATUS_OK; /* (its other dims may be anything) */
    int64_t count = 1;
    for (int32_t d = 0; d < x->rank; d++)
        if (red[d]) count *= x->dims[d];
    int64_t groups = count ? x->numel / count : 0;
    int64_t *offs = kernel_scratch(k, sizeof(int64_t) * (size_t)(count + 1));
    if (!offs) return kernel_oom(k);
    int64_t strides[SEAM_MAX_RANK];
    cpu_strides(x->rank, x->dims, strides);
    for (int64_t g = 0; g < groups; g++) {
        /* the group's base: g spread over the kept axes */
        int64_t rem = g, base = 0;
        for (int32_t d = x->rank - 1; d >= 0; d--)
            if (!red[d]) {
                base += (rem % x->dims[d]) * strides[d];
                rem /= x->dims[d];
            }
        for (int64_t i = 0; i < count; i++) {
            int64_t r2 = i, off = base;
            for (int32_t d = x->rank - 1; d >= 0; d--)
                if (red[d]) {
                    off += (r2 % x->dims[d]) * strides[d];
                    r2 /= x->dims[d];
                }
            offs[i] = off;
        }
        fn(k, offs, count, arg);
    }
    return SEAM_STATUS_OK;
}

typedef struct nrm_arg {
    const seam_tensor *x;
    seam_tensor *y;
    int64_t p;
} nrm_arg;

static void mvn_group(seam_kernel *k, const int64_t *offs, int64_t n, void *arg) {
    nrm_arg *a = arg;
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) s += ld(a->x, offs[i]);
    double m = n ? s / (double)n : 0;
    for (int64_t i = 0; i < n; i++) {
        double d = ld(a->x, offs[i]) - m;
        s2 += d * d;
    }
    double sd = sqrt(n ? s2 / (double)n : 0) + 1e-9;
    for (int64_t i = 0; i < n; i++) st(a->y, offs[i], (ld(a->x, offs[i]) - m) / sd);
}

static void lp_group(seam_kernel *k, const int64_t *offs, int64_t n, void *arg) {
    nrm_arg *a = arg;
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = ld(a->x, offs[i]);
        s += a->p == 1 ? fabs(v) : v * v;
    }
    double norm = a->p == 1 ? s : sqrt(s);
    for (int64_t i = 0; i < n; i++) st(a->y, offs[i], norm == 0 ? 0 : ld(a->x, offs[i]) / norm);
}

static seam_status run_mvn(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    bool red[SEAM_MAX_RANK] = {false};
    const int64_t *axes;
    int32_t na = node_attr_ints(k->n, "axes", &axes);
    static const int64_t def[3] = {0, 2, 3};
    if (na < 0) axes = def, na = 3;
    for (int32_t i = 0; i < na; i++) {
        int32_t a = op_axis(axes[i], x->rank);
        if (a < 0) return kernel_fail(k, "axis %lld is out of range", (long long)axes[i]);
        red[a] = true;
    }
    nrm_arg arg = {x, kernel_out(k, 0, x->dtype, x->rank, x->dims), 0};
    if (!arg.y) return kernel_oom(k);
    return reduce_groups(k, x, red, mvn_group, &arg);
}

static seam_status run_lp_norm(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int32_t axis = op_axis(node_attr_int(k->n, "axis", -1), x->rank);
    int64_t p = node_attr_int(k->n, "p", 2);
    if (axis < 0 || (p != 1 && p != 2)) return kernel_fail(k, "axis out of range or p not 1 or 2");
    bool red[SEAM_MAX_RANK] = {false};
    red[axis] = true;
    nrm_arg arg = {x, kernel_out(k, 0, x->dtype, x->rank, x->dims), p};
    if (!arg.y) return kernel_oom(k);
    return reduce_groups(k, x, red, lp_group, &arg);
}

static seam_status check_lp_norm(seam_check *c) {
    int64_t p = node_attr_int(c->n, "p", 2);
    if (p != 1 && p != 2)
        return check_refuse(c, "LpNormalization with p = %lld (the spec allows 1 and 2)", (long long)p);
    return check_float_input(c);
}

static seam_status check_lrn(seam_check *c) {
    if (node_attr_int(c->n, "size", 0) < 1) return check_refuse(c, "LRN needs a positive size");
    return check_float_input(c);
}

const seam_cpu_binding seam_cpu_norm[] = {
    {"", "BatchNormalization", 1, {run_batch_norm, check_batch_norm}},
    {"", "LayerNormalization", 17, {run_layer_norm, check_layer_norm}},
    {"", "InstanceNormalization", 1, {run_instance_norm, check_float_input}},
    {"", "GroupNormalization", 18, {run_group_norm, check_float_input}},
    {"", "LRN", 1, {run_lrn, check_lrn}},
    {"", "MeanVarianceNormalization", 9, {run_mvn, check_float_input}},
    {"", "LpNormalization", 1, {run_lp_norm, check_lp_norm}},
};
const size_t seam_cpu_norm_count = sizeof(seam_cpu_norm) / sizeof(seam_cpu_norm[0]);
