/* CPU kernels: BatchNormalization, LayerNormalization,
 * InstanceNormalization, GroupNormalization, LRN,
 * MeanVarianceNormalization, LpNormalization. Statistics accumulate in
 * double; float32 data is read and written directly. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu.h"

static inline double ld(const seam_tensor *t, int64_t i) {
    return t->dtype == SEAM_DTYPE_FLOAT32 ? ((const float *)t->data)[i] : cpu_get(t->data, t->dtype, i);
}

static inline void st(seam_tensor *t, int64_t i, double v) {
    if (t->dtype == SEAM_DTYPE_FLOAT32) ((float *)t->data)[i] = (float)v;
    else cpu_set(t->data, t->dtype, i, v);
}


static bool is_vec(const seam_tensor *t, int64_t n) { return t && t->numel == n; }

/* ---- BatchNormalization ---- */

static seam_status run_batch_norm(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *sc = kernel_in(k, 1), *b = kernel_in(k, 2);
    const seam_tensor *mean = kernel_in(k, 3), *var = kernel_in(k, 4);
    if (!x || x->rank < 1) return kernel_fail(k, "needs X [N, C, ...]");
    int64_t C = x->rank > 1 ? x->dims[1] : 1, N = x->dims[0], S = cpu_span(x->dims, 2, x->rank);
    if (!is_vec(sc, C) || !is_vec(b, C) || !is_vec(mean, C) || !is_vec(var, C))
        return kernel_fail(k, "scale, B, mean and var must have %lld (channel) entries", (long long)C);
    double eps = node_attr_float(k->n, "epsilon", 1e-5f), mom = node_attr_float(k->n, "momentum", 0.9f);
    bool training = node_attr_int(k->n, "training_mode", 0) != 0;
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    seam_tensor *rm = NULL, *rv = NULL;
    if (training) {
        if (kernel_has_out(k, 1) && !(rm = kernel_out(k, 1, mean->dtype, mean->rank, mean->dims))) return kernel_oom(k);
        if (kernel_has_out(k, 2) && !(rv = kernel_out(k, 2, var->dtype, var->rank, var->dims))) return kernel_oom(k);
    }
    for (int64_t c = 0; c < C; c++) {
        double m = ld(mean, c), v = ld(var, c);
        if (training) { /* this batch's statistics (population variance) */
            double s = 0, s2 = 0, cnt = (double)(N * S);
            for (int64_t n = 0; n < N; n++)
                for (int64_t i = 0; i < S; i++) s += ld(x, (n * C + c) * S + i);
            double bm = cnt > 0 ? s / cnt : 0;
            for (int64_t n = 0; n < N; n++)
                for (int64_t i = 0; i < S; i++) {
                    double d = ld(x, (n * C + c) * S + i) - bm;
                    s2 += d * d;
                }
            double bv = cnt > 0 ? s2 / cnt : 0;
            if (rm) st(rm, c, m * mom + bm * (1 - mom));
            if (rv) st(rv, c, v * mom + bv * (1 - mom));
            m = bm, v = bv;
        }
        double a = ld(sc, c) / sqrt(v + eps), sh = ld(b, c) - m * a;
        for (int64_t n = 0; n < N; n++) {
            int64_t base = (n * C + c) * S;
            if (x->dtype == SEAM_DTYPE_FLOAT32) {
                const float *xp = (const float *)x->data + base;
                float *yp = (float *)y->data + base, fa = (float)a, fs = (float)sh;
                for (int64_t i = 0; i < S; i++) yp[i] = xp[i] * fa + fs;
            } else {
                for (int64_t i = 0; i < S; i++) st(y, base + i, ld(x, base + i) * a + sh);
            }
        }
    }
    return SEAM_STATUS_OK;
}

/* ---- LayerNormalization ---- */

typedef struct ln_job {
    const seam_tensor *x, *sc, *b;
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
        for (int64_t i = 0; i < n; i++) {
            double v = (ld(j->x, base + i) - m) * inv * ld(j->sc, j->sc->numel == 1 ? 0 : i);
            if (j->b) v += ld(j->b, j->b->numel == 1 ? 0 : i);
            st(j->y, base + i, v);
        }
        if (j->mean) st(j->mean, r, m);
        if (j->inv) st(j->inv, r, inv);
    }
}

static seam_status run_layer_norm(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *sc = kernel_in(k, 1), *b = kernel_in(k, 2);
    if (!x || !sc) return kernel_fail(k, "needs X and Scale");
    int32_t axis = cpu_axis(node_attr_int(k->n, "axis", -1), x->rank);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    ln_job j = {x, sc, b, NULL, NULL, NULL, cpu_span(x->dims, axis, x->rank), node_attr_float(k->n, "epsilon", 1e-5f)};
    if ((sc->numel != j.inner && sc->numel != 1) || (b && b->numel != j.inner && b->numel != 1))
        return kernel_fail(k, "Scale and B must have the normalized shape (%lld elements)", (long long)j.inner);
    j.y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!j.y) return kernel_oom(k);
    int64_t sdims[SEAM_MAX_RANK];
    for (int32_t d = 0; d < x->rank; d++) sdims[d] = d < axis ? x->dims[d] : 1;
    int32_t stash = (int32_t)node_attr_int(k->n, "stash_type", SEAM_DTYPE_FLOAT32);
    if (kernel_has_out(k, 1) && !(j.mean = kernel_out(k, 1, stash, x->rank, sdims))) return kernel_oom(k);
    if (kernel_has_out(k, 2) && !(j.inv = kernel_out(k, 2, stash, x->rank, sdims))) return kernel_oom(k);
    if (j.inner == 0) return SEAM_STATUS_OK;
    seam_parallel_for(k->pool, x->numel / j.inner, 16, ln_rows, &j);
    return SEAM_STATUS_OK;
}

/* ---- InstanceNormalization and GroupNormalization ---- */

/* Normalizes each of `groups` blocks of `len` elements per image, then
 * applies a per-channel (or per-group) scale and bias. */
static seam_status group_norm(seam_kernel *k, int64_t groups) {
    const seam_tensor *x = kernel_in(k, 0), *sc = kernel_in(k, 1), *b = kernel_in(k, 2);
    if (!x || x->rank < 2 || !sc || !b) return kernel_fail(k, "needs X [N, C, ...], scale and B");
    int64_t N = x->dims[0], C = x->dims[1], S = cpu_span(x->dims, 2, x->rank);
    if (groups < 1 || C % groups) return kernel_fail(k, "%lld channels do not split into %lld groups", (long long)C, (long long)groups);
    bool per_group = sc->numel == groups && groups != C;
    if ((sc->numel != C && !per_group) || b->numel != sc->numel) return kernel_fail(k, "scale and B must have C (or num_groups) entries");
    double eps = node_attr_float(k->n, "epsilon", 1e-5f);
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    int64_t cg = C / groups, len = cg * S;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < groups; g++) {
            int64_t base = (n * C + g * cg) * S;
            double s = 0, s2 = 0;
            for (int64_t i = 0; i < len; i++) s += ld(x, base + i);
            double m = len ? s / (double)len : 0;
            for (int64_t i = 0; i < len; i++) {
                double d = ld(x, base + i) - m;
                s2 += d * d;
            }
            double inv = 1 / sqrt((len ? s2 / (double)len : 0) + eps);
            for (int64_t c = 0; c < cg; c++) {
                int64_t ch = g * cg + c, p = per_group ? g : ch;
                double a = ld(sc, p) * inv, sh = ld(b, p);
                for (int64_t i = 0; i < S; i++) st(y, base + c * S + i, (ld(x, base + c * S + i) - m) * a + sh);
            }
        }
    return SEAM_STATUS_OK;
}

static seam_status run_instance_norm(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->rank < 2) return kernel_fail(k, "needs X [N, C, ...]");
    return group_norm(k, x->dims[1]);
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
    int64_t N = x->dims[0], C = x->dims[1], S = cpu_span(x->dims, 2, x->rank);
    int64_t before = (size - 1) / 2, after = size - 1 - before;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < S; i++) {
                double sum = 0;
                for (int64_t q = c - before; q <= c + after; q++)
                    if (q >= 0 && q < C) {
                        double v = ld(x, (n * C + q) * S + i);
                        sum += v * v;
                    }
                int64_t at = (n * C + c) * S + i;
                st(y, at, ld(x, at) / pow(bias + alpha / (double)size * sum, beta));
            }
    return SEAM_STATUS_OK;
}

/* ---- MeanVarianceNormalization and LpNormalization: along axes ---- */

/* Calls fn for each group of elements that share the non-reduced
 * coordinates: offs lists the group's element offsets. */
static seam_status reduce_groups(seam_kernel *k, const seam_tensor *x, const bool *red,
                                 void (*fn)(seam_kernel *k, const int64_t *offs, int64_t n, void *arg), void *arg) {
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
        int32_t a = cpu_axis(axes[i], x->rank);
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
    int32_t axis = cpu_axis(node_attr_int(k->n, "axis", -1), x->rank);
    int64_t p = node_attr_int(k->n, "p", 2);
    if (axis < 0 || (p != 1 && p != 2)) return kernel_fail(k, "axis out of range or p not 1 or 2");
    bool red[SEAM_MAX_RANK] = {false};
    red[axis] = true;
    nrm_arg arg = {x, kernel_out(k, 0, x->dtype, x->rank, x->dims), p};
    if (!arg.y) return kernel_oom(k);
    return reduce_groups(k, x, red, lp_group, &arg);
}

const seam_cpu_binding seam_cpu_norm[] = {
    {"", "BatchNormalization", 1, {run_batch_norm, check_float_input}},
    {"", "LayerNormalization", 17, {run_layer_norm, check_float_input}},
    {"", "InstanceNormalization", 1, {run_instance_norm, check_float_input}},
    {"", "GroupNormalization", 18, {run_group_norm, check_float_input}},
    {"", "LRN", 1, {run_lrn, check_float_input}},
    {"", "MeanVarianceNormalization", 9, {run_mvn, check_float_input}},
    {"", "LpNormalization", 1, {run_lp_norm, check_float_input}},
};
const size_t seam_cpu_norm_count = sizeof(seam_cpu_norm) / sizeof(seam_cpu_norm[0]);
