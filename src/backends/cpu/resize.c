/* CPU kernels: Resize and Upsample in any mode, rank and dtype, element
 * by element in double (spatial.c's Resize takes its fast paths first and
 * hands everything else to cpu_resize_general_run; Upsample is bound in
 * tensor.c's table), and the coordinate helpers both share (cpu.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"

static const struct {
    const char *name;
    cpu_resize_coord cm;
} coord_names[] = {
    {"half_pixel", CPU_RZ_HALF_PIXEL}, {"pytorch_half_pixel", CPU_RZ_PYTORCH_HALF}, {"align_corners", CPU_RZ_ALIGN},
    {"asymmetric", CPU_RZ_ASYM},       {"tf_crop_and_resize", CPU_RZ_TF_CROP},      {"half_pixel_symmetric", CPU_RZ_HALF_SYM},
    {"tf_half_pixel_for_nn", CPU_RZ_TF_NN},
};

cpu_resize_coord cpu_resize_coord_of(const ir_node *n, cpu_resize_coord def) {
    if (!node_attr(n, "coordinate_transformation_mode")) return def;
    for (size_t k = 0; k < sizeof(coord_names) / sizeof(coord_names[0]); k++)
        if (node_attr_is(n, "coordinate_transformation_mode", coord_names[k].name)) return coord_names[k].cm;
    return CPU_RZ_UNKNOWN;
}

char cpu_resize_nearest_of(const ir_node *n) {
    if (node_attr_is(n, "nearest_mode", "round_prefer_ceil")) return 'c';
    if (node_attr_is(n, "nearest_mode", "floor")) return 'f';
    if (node_attr_is(n, "nearest_mode", "ceil")) return 'C';
    return 'p';
}

double cpu_resize_to_input(cpu_resize_coord cm, double xo, double scale, int64_t in, int64_t out_int, double roi_lo,
                           double roi_hi) {
    double out = (double)in * scale;
    switch (cm) {
    case CPU_RZ_UNKNOWN: break;
    case CPU_RZ_TF_NN: return (xo + 0.5) / scale;
    case CPU_RZ_HALF_PIXEL: return (xo + 0.5) / scale - 0.5;
    case CPU_RZ_PYTORCH_HALF: return out_int > 1 ? (xo + 0.5) / scale - 0.5 : 0;
    case CPU_RZ_ALIGN: return out == 1 ? 0 : xo * (double)(in - 1) / (out - 1);
    case CPU_RZ_ASYM: return xo / scale;
    case CPU_RZ_TF_CROP:
        return out > 1 ? roi_lo * (double)(in - 1) + xo * (roi_hi - roi_lo) * (double)(in - 1) / (out - 1)
                       : 0.5 * (roi_lo + roi_hi) * (double)(in - 1);
    case CPU_RZ_HALF_SYM: {
        double adj = (double)out_int / out;
        double center = (double)in / 2, off = center * (1 - adj);
        return off + (xo + 0.5) / scale - 0.5;
    }
    }
    return xo;
}

/* One Resize or Upsample, as cpu_resize_general_run reads it: the output
 * size and each axis's scale and roi, and how an output coordinate finds
 * its inputs. */
typedef struct resize_plan {
    int32_t r;
    double scales[SEAM_MAX_RANK], roi[2 * SEAM_MAX_RANK];
    int64_t out[SEAM_MAX_RANK];
    char mode;    /* 'n' nearest, 'l' linear, 'c' cubic */
    char nearest; /* cpu_resize_nearest_of */
    cpu_resize_coord cm;
    double cubic_a, extrap;
    bool exclude;
} resize_plan;

/* The scales, sizes and roi inputs the node's opset has (NULL when absent
 * or empty); Upsample before opset 9 has its scales as an attribute, read
 * into p->scales. */
static seam_status resize_inputs(seam_kernel *k, bool upsample, resize_plan *p, const seam_tensor **ts,
                                 const seam_tensor **tz, const seam_tensor **troi) {
    int32_t r = p->r;
    for (int32_t d = 0; d < r; d++) p->roi[d] = 0, p->roi[d + r] = 1;
    if (upsample) {
        if (k->n->opset >= 9) {
            *ts = kernel_in(k, 1);
        } else {
            const float *a;
            if (node_attr_floats(k->n, "scales", &a) != r) return kernel_fail(k, "scales must have one entry per dim");
            for (int32_t d = 0; d < r; d++) p->scales[d] = a[d];
        }
    } else if (k->n->opset >= 11) {
        *troi = kernel_in(k, 1);
        *ts = kernel_in(k, 2);
        *tz = kernel_in(k, 3);
    } else {
        *ts = kernel_in(k, 1);
    }
    if (*ts && (*ts)->numel == 0) *ts = NULL;
    if (*tz && (*tz)->numel == 0) *tz = NULL;
    if (*troi && (*troi)->numel == 0) *troi = NULL;
    return SEAM_STATUS_OK;
}

/* axes (opset 18): scales/sizes cover only these axes; all r without it. */
static seam_status resize_axes(seam_kernel *k, int32_t r, int64_t *axes, int32_t *na_out) {
    const int64_t *aa;
    int32_t na = node_attr_ints(k->n, "axes", &aa);
    if (na < 0) {
        na = r;
        for (int32_t d = 0; d < r; d++) axes[d] = d;
    } else {
        if (na > r) return kernel_fail(k, "too many axes");
        for (int32_t i = 0; i < na; i++) {
            axes[i] = op_axis(aa[i], r);
            if (axes[i] < 0) return kernel_fail(k, "axis out of range");
        }
    }
    *na_out = na;
    return SEAM_STATUS_OK;
}

/* v as an output size: false (and *out untouched) when v is NaN, negative
 * or over SEAM_MAX_DIM, where casting it would be undefined or wrap. */
static bool out_dim(double v, int64_t *out) {
    if (!(v >= 0 && v <= (double)SEAM_MAX_DIM)) return false;
    *out = (int64_t)v;
    return true;
}

/* The output size and the scales from sizes, under
 * keep_aspect_ratio_policy. */
static void resize_from_sizes(seam_kernel *k, const seam_tensor *x, const int64_t *sizes, const int64_t *axes,
                              int32_t na, resize_plan *p) {
    const char *pol = node_attr_is(k->n, "keep_aspect_ratio_policy", "not_smaller") ? "ns"
                      : node_attr_is(k->n, "keep_aspect_ratio_policy", "not_larger") ? "nl" : "st";
    if (pol[0] != 's') {
        double s = pol[1] == 's' ? 0 : INFINITY;
        for (int32_t i = 0; i < na; i++) {
            double v = (double)sizes[i] / (double)x->dims[axes[i]];
            s = pol[1] == 's' ? fmax(s, v) : fmin(s, v);
        }
        for (int32_t i = 0; i < na; i++) {
            p->scales[axes[i]] = s;
            if (!out_dim(floor(s * (double)x->dims[axes[i]] + 0.5), &p->out[axes[i]])) p->out[axes[i]] = -1;
        }
    } else {
        for (int32_t i = 0; i < na; i++) {
            p->out[axes[i]] = sizes[i];
            p->scales[axes[i]] = x->dims[axes[i]] ? (double)sizes[i] / (double)x->dims[axes[i]] : 1;
        }
    }
}

/* The output size (p->out) and every axis's scale, from the scales input
 * (or attribute) or the sizes input. */
static seam_status resize_out_dims(seam_kernel *k, const seam_tensor *x, bool from_inputs, const seam_tensor *ts,
                                   const seam_tensor *tz, const int64_t *axes, int32_t na, resize_plan *p) {
    int32_t r = p->r;
    if (!from_inputs) {
        for (int32_t d = 0; d < r; d++)
            if (!out_dim(floor((double)x->dims[d] * p->scales[d]), &p->out[d]))
                return kernel_fail(k, "scale %d gives an output size out of range", d);
        return SEAM_STATUS_OK;
    }
    for (int32_t d = 0; d < r; d++) p->scales[d] = 1, p->out[d] = x->dims[d];
    if (ts) {
        if (ts->numel != na || !cpu_is_float(ts->dtype)) return kernel_fail(k, "scales must be floats, one per axis");
        for (int32_t i = 0; i < na; i++) p->scales[axes[i]] = cpu_get(ts->data, ts->dtype, i);
    } else if (tz) {
        if (tz->numel != na || !cpu_is_int(tz->dtype)) return kernel_fail(k, "sizes must be integers, one per axis");
        int64_t sizes[SEAM_MAX_RANK];
        for (int32_t i = 0; i < na; i++) sizes[i] = cpu_get_i64(tz->data, tz->dtype, i);
        resize_from_sizes(k, x, sizes, axes, na, p);
    } else {
        return kernel_fail(k, "needs scales or sizes");
    }
    if (ts)
        for (int32_t d = 0; d < r; d++) {
            if (!(p->scales[d] > 0)) return kernel_fail(k, "scale %d must be positive", d);
            if (!out_dim(floor((double)x->dims[d] * p->scales[d]), &p->out[d]))
                return kernel_fail(k, "scale %d gives an output size out of range", d);
        }
    return SEAM_STATUS_OK;
}

/* The mode attributes, with the defaults of the node's op and opset. */
static void resize_modes(seam_kernel *k, bool upsample, resize_plan *p) {
    p->mode = 'n';
    if (node_attr_is(k->n, "mode", "linear") || node_attr_is(k->n, "mode", "bilinear")) p->mode = 'l';
    if (node_attr_is(k->n, "mode", "cubic")) p->mode = 'c';
    /* before opset 11 (and Upsample): asymmetric by default, always floor */
    cpu_resize_coord def = upsample || k->n->opset < 11 ? CPU_RZ_ASYM : CPU_RZ_HALF_PIXEL;
    p->cm = cpu_resize_coord_of(k->n, def);
    if (p->cm == CPU_RZ_UNKNOWN) p->cm = def;
    p->nearest = upsample || k->n->opset < 11 ? 'f' : cpu_resize_nearest_of(k->n);
    p->cubic_a = node_attr_float(k->n, "cubic_coeff_a", -0.75f);
    p->exclude = node_attr_int(k->n, "exclude_outside", 0) != 0;
    p->extrap = node_attr_float(k->n, "extrapolation_value", 0);
}

/* The input elements an output element reads: per axis, up to 4 (input
 * index, weight). */
typedef struct resize_taps {
    int64_t i[SEAM_MAX_RANK][4];
    double w[SEAM_MAX_RANK][4];
    int32_t n[SEAM_MAX_RANK];
} resize_taps;

/* Axis d's taps for output index io (the input has `in` along d); false
 * when tf_crop_and_resize puts it outside the input. */
static bool resize_axis_taps(const resize_plan *p, int32_t d, int64_t in, int64_t io, resize_taps *t) {
    cpu_resize_coord cm = p->cm;
    if (p->out[d] == in && p->scales[d] == 1 && cm != CPU_RZ_TF_CROP) {
        t->i[d][0] = io, t->w[d][0] = 1, t->n[d] = 1;
        return true;
    }
    double xi = cpu_resize_to_input(cm, (double)io, p->scales[d], in, p->out[d], p->roi[d], p->roi[d + p->r]);
    if (cm == CPU_RZ_TF_CROP && (xi < 0 || xi > (double)(in - 1))) return false;
    if (p->mode == 'n') {
        char nearest = p->nearest;
        double f = floor(xi);
        int64_t v;
        if (nearest == 'f') v = (int64_t)f;
        else if (nearest == 'C') v = (int64_t)ceil(xi);
        else if (xi - f == 0.5) v = nearest == 'c' ? (int64_t)f + 1 : (int64_t)f;
        else v = (int64_t)llround(xi);
        v = v < 0 ? 0 : v >= in ? in - 1 : v;
        t->i[d][0] = v, t->w[d][0] = 1, t->n[d] = 1;
    } else if (p->mode == 'l') {
        double c = xi < 0 ? 0 : xi > (double)(in - 1) ? (double)(in - 1) : xi;
        int64_t lo = (int64_t)floor(c), hi = lo + 1 < in ? lo + 1 : lo;
        double tt = c - (double)lo;
        t->i[d][0] = lo, t->w[d][0] = 1 - tt, t->i[d][1] = hi, t->w[d][1] = tt, t->n[d] = 2;
    } else {
        int64_t f = (int64_t)floor(xi);
        double tt = xi - (double)f, sum = 0;
        for (int32_t q = 0; q < 4; q++) {
            int64_t v = f - 1 + q;
            double w = cpu_cubic_weight(tt - (q - 1), p->cubic_a);
            if (v < 0 || v >= in) {
                if (p->exclude) w = 0;
                v = v < 0 ? 0 : in - 1;
            }
            t->i[d][q] = v, t->w[d][q] = w, sum += w;
        }
        if (p->exclude && sum != 0)
            for (int32_t q = 0; q < 4; q++) t->w[d][q] /= sum;
        t->n[d] = 4;
    }
    return true;
}

/* Output element i from its taps: the nearest element, or the weighted sum
 * over every combination of taps. */
static void resize_element(const resize_plan *p, const seam_tensor *x, seam_tensor *y, int64_t i, const resize_taps *t,
                           const int64_t *xs) {
    int32_t r = p->r;
    if (p->mode == 'n') {
        int64_t off = 0;
        for (int32_t d = 0; d < r; d++) off += t->i[d][0] * xs[d];
        cpu_copy_elem(y->data, i, x->data, off, seam_dtype_size(x->dtype));
        return;
    }
    int32_t c[SEAM_MAX_RANK] = {0};
    double acc = 0;
    for (;;) {
        double w = 1;
        int64_t off = 0;
        for (int32_t d = 0; d < r; d++) {
            w *= t->w[d][c[d]];
            off += t->i[d][c[d]] * xs[d];
        }
        if (w != 0) acc += w * cpu_get(x->data, x->dtype, off);
        int32_t d = r - 1;
        for (; d >= 0; d--) {
            if (++c[d] < t->n[d]) break;
            c[d] = 0;
        }
        if (d < 0) break;
    }
    if (cpu_is_int(x->dtype)) acc = nearbyint(acc);
    cpu_set(y->data, y->dtype, i, acc);
}

seam_status cpu_resize_general_run(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    resize_plan p = {.r = x->rank};
    int32_t r = p.r;
    bool upsample = strcmp(k->n->op_type, "Upsample") == 0;
    const seam_tensor *ts = NULL, *tz = NULL, *troi = NULL;
    int64_t axes[SEAM_MAX_RANK];
    int32_t na = 0;
    seam_status st = resize_inputs(k, upsample, &p, &ts, &tz, &troi);
    if (st || (st = resize_axes(k, r, axes, &na)) ||
        (st = resize_out_dims(k, x, !upsample || k->n->opset >= 9, ts, tz, axes, na, &p)))
        return st;
    if (troi) {
        if (troi->numel != 2 * na) return kernel_fail(k, "roi must have 2 entries per axis");
        for (int32_t i = 0; i < na; i++) {
            p.roi[axes[i]] = cpu_get(troi->data, troi->dtype, i);
            p.roi[axes[i] + r] = cpu_get(troi->data, troi->dtype, i + na);
        }
    }
    int64_t numel = seam_shape_numel(p.out, r);
    if (numel < 0 || numel > MAX_DATA_NUMEL) return kernel_fail(k, "the result is too large");
    resize_modes(k, upsample, &p);
    bool antialias = node_attr_int(k->n, "antialias", 0) != 0;
    if (antialias) return kernel_fail(k, "antialias is not supported");
    seam_tensor *y = kernel_out(k, 0, x->dtype, r, p.out);
    if (!y) return kernel_oom(k);
    if (!numel) return SEAM_STATUS_OK;
    int64_t xs[SEAM_MAX_RANK], idx[SEAM_MAX_RANK] = {0};
    cpu_strides(r, x->dims, xs);
    for (int64_t i = 0; i < numel; i++) {
        resize_taps t;
        bool outside = false;
        for (int32_t d = 0; d < r && !outside; d++) outside = !resize_axis_taps(&p, d, x->dims[d], idx[d], &t);
        if (outside) cpu_set(y->data, y->dtype, i, p.extrap);
        else resize_element(&p, x, y, i, &t, xs);
        cpu_index_next(idx, p.out, r);
    }
    return SEAM_STATUS_OK;
}

seam_status cpu_resize_general_check(seam_check *c) {
    seam_status st = check_fixed_size(c);
    if (st) return st;
    if (node_attr_int(c->n, "antialias", 0)) return check_refuse(c, "Resize antialias=1 is not supported");
    return SEAM_STATUS_OK;
}
