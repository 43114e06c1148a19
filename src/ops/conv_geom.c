/* The sliding-window geometry (see conv_geom.h). */
#include "ops/conv_geom.h"

#include <stdio.h>

#include "ops/attr.h"

bool conv_auto_pad_of(const ir_node *n, conv_auto_pad *out) {
    static const char *const names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    *out = CONV_PAD_NOTSET;
    if (!node_attr(n, "auto_pad")) return true;
    for (int k = 0; k < 4; k++)
        if (node_attr_is(n, "auto_pad", names[k])) {
            *out = (conv_auto_pad)k;
            return true;
        }
    return false;
}

#define FAIL(...) (snprintf(why, why_size, __VA_ARGS__), false)

bool conv_geom_init(const ir_node *n, int32_t n_sp, const int64_t *in, const int64_t *kernel, bool ceil_mode,
                    conv_geom *g, char *why, size_t why_size) {
    if (n_sp < 1 || n_sp > CONV_MAX_SPATIAL) return FAIL("%d spatial axes are not supported", n_sp);
    const int64_t *strides = NULL, *pads = NULL, *dil = NULL;
    int32_t ns = node_attr_ints(n, "strides", &strides), np = node_attr_ints(n, "pads", &pads);
    int32_t nd = node_attr_ints(n, "dilations", &dil);
    if ((ns >= 0 && ns != n_sp) || (np >= 0 && np != 2 * n_sp) || (nd >= 0 && nd != n_sp))
        return FAIL("strides, pads or dilations do not match the %d spatial axes", n_sp);
    if (!conv_auto_pad_of(n, &g->auto_pad)) return FAIL("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    g->n = n_sp;
    for (int32_t d = 0; d < n_sp; d++) {
        int64_t s = ns > 0 ? strides[d] : 1, dl = nd > 0 ? dil[d] : 1, kk = kernel[d];
        if (s < 1 || dl < 1 || kk < 1 || kk > CONV_MAX_WINDOW || dl > CONV_MAX_WINDOW || s > CONV_MAX_WINDOW)
            return FAIL("kernel, stride and dilation must be positive (axis %d)", d);
        int64_t lo = np > 0 ? pads[d] : 0, hi = np > 0 ? pads[d + n_sp] : 0, out = -1;
        if (lo < 0 || hi < 0 || lo > CONV_MAX_WINDOW || hi > CONV_MAX_WINDOW) return FAIL("pads must be >= 0");
        int64_t eff = (kk - 1) * dl + 1, x = in[d];
        switch (g->auto_pad) {
        case CONV_PAD_SAME_UPPER:
        case CONV_PAD_SAME_LOWER:
            lo = hi = -1;
            if (x < 0) break;
            out = (x + s - 1) / s;
            int64_t total = (out - 1) * s + eff - x;
            if (total < 0) total = 0;
            lo = g->auto_pad == CONV_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            hi = total - lo;
            break;
        case CONV_PAD_VALID:
            lo = hi = 0;
            if (x >= 0) out = x >= eff ? (x - eff) / s + 1 : 0;
            break;
        case CONV_PAD_NOTSET:
            if (x < 0) break;
            int64_t span = x + lo + hi - eff;
            if (span < 0)
                return FAIL("the window (%lld) is larger than the padded input (%lld) on axis %d", (long long)eff,
                            (long long)(x + lo + hi), d);
            out = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
            if (ceil_mode && (out - 1) * s >= x + lo) out--; /* the last window must start inside */
            break;
        }
        g->in[d] = x, g->out[d] = out, g->kernel[d] = kk, g->stride[d] = s, g->dil[d] = dl;
        g->pad_lo[d] = lo, g->pad_hi[d] = hi;
    }
    return true;
}

int64_t conv_geom_pad_end(const conv_geom *g, int32_t d) {
    if (g->out[d] < 0 || g->in[d] < 0) return -1; /* sizes not known */
    int64_t end = (g->out[d] - 1) * g->stride[d] + (g->kernel[d] - 1) * g->dil[d] + 1 - g->in[d] - g->pad_lo[d];
    return end > 0 ? end : 0;
}

void conv_geom_tap_range(const conv_geom *g, int32_t d, int64_t k, int64_t *lo, int64_t *hi) {
    int64_t s = g->stride[d], a = g->pad_lo[d] - k * g->dil[d]; /* input = o * s - a */
    int64_t first = a <= 0 ? 0 : (a + s - 1) / s;               /* o * s >= a */
    int64_t top = g->in[d] - 1 + a;                             /* o * s <= top */
    int64_t last = top < 0 ? -1 : top / s;
    *lo = first;
    *hi = last + 1 < g->out[d] ? last + 1 : g->out[d];
    if (*hi < *lo) *hi = *lo;
}

double conv_geom_read_fraction(const conv_geom *g) {
    double fraction = 1.0;
    for (int32_t d = 0; d < g->n; d++) {
        if (g->in[d] < 0 || g->out[d] < 0) return -1;
        if (g->out[d] == 0 || g->kernel[d] == 0) return 1;
        int64_t pairs = 0, lo, hi;
        for (int64_t k = 0; k < g->kernel[d]; k++) {
            conv_geom_tap_range(g, d, k, &lo, &hi);
            pairs += hi - lo;
        }
        fraction *= (double)pairs / (double)(g->kernel[d] * g->out[d]);
    }
    return fraction;
}

bool conv_geom_infer(const ir_node *n, const ir_type *x, const int64_t *kernel, int32_t n_sp, bool ceil_mode,
                     ir_dim *out) {
    int64_t in[CONV_MAX_SPATIAL];
    conv_geom g;
    char why[160];
    if (n_sp < 1 || n_sp > CONV_MAX_SPATIAL || x->rank != n_sp + 2) return false;
    for (int32_t d = 0; d < n_sp; d++) in[d] = x->dims[2 + d].v;
    if (!conv_geom_init(n, n_sp, in, kernel, ceil_mode, &g, why, sizeof(why))) return false;
    for (int32_t d = 0; d < n_sp; d++) out[d] = g.out[d] >= 0 ? (ir_dim){g.out[d], NULL} : IR_DIM_UNKNOWN;
    return true;
}
