/* Helpers shared by the CPU kernels (see cpu.h). */
#include "backends/cpu/cpu.h"

#include <math.h>
#include <stdio.h>

bool cpu_is_float(int32_t dt) {
    return dt == SEAM_DTYPE_FLOAT32 || dt == SEAM_DTYPE_FLOAT64 || dt == SEAM_DTYPE_FLOAT16 || dt == SEAM_DTYPE_BFLOAT16;
}

bool cpu_is_signed_int(int32_t dt) {
    return dt == SEAM_DTYPE_INT8 || dt == SEAM_DTYPE_INT16 || dt == SEAM_DTYPE_INT32 || dt == SEAM_DTYPE_INT64;
}

bool cpu_is_int(int32_t dt) {
    return cpu_is_signed_int(dt) || dt == SEAM_DTYPE_UINT8 || dt == SEAM_DTYPE_UINT16 || dt == SEAM_DTYPE_UINT32 ||
           dt == SEAM_DTYPE_UINT64;
}

bool cpu_is_real(int32_t dt) { return cpu_is_float(dt) || cpu_is_int(dt) || dt == SEAM_DTYPE_BOOL; }

bool cpu_is_float8(int32_t dt) { return dt >= SEAM_DTYPE_FLOAT8E4M3FN && dt <= SEAM_DTYPE_FLOAT8E5M2FNUZ; }

/* A float8 type's layout: mantissa bits, exponent bias, and its kind. */
typedef struct f8_format {
    int man, bias;
    bool uz;   /* FNUZ: 0x80 is the one NaN, no -0, every exponent finite */
    bool inf;  /* E5M2: IEEE-like, exponent all ones is Inf or NaN */
    double max;
} f8_format;

static f8_format f8_of(int32_t dt) {
    switch (dt) {
    case SEAM_DTYPE_FLOAT8E4M3FN: return (f8_format){3, 7, false, false, 448.0};
    case SEAM_DTYPE_FLOAT8E4M3FNUZ: return (f8_format){3, 8, true, false, 240.0};
    case SEAM_DTYPE_FLOAT8E5M2: return (f8_format){2, 15, false, true, 57344.0};
    default: return (f8_format){2, 16, true, false, 57344.0};
    }
}

double cpu_f8_to_double(uint8_t c, int32_t dt) {
    f8_format f = f8_of(dt);
    int ebits = 7 - f.man, exp = (c >> f.man) & ((1 << ebits) - 1), man = c & ((1 << f.man) - 1);
    bool neg = c & 0x80;
    if (f.uz && c == 0x80) return NAN;
    if (!f.uz && !f.inf && (c & 0x7F) == 0x7F) return NAN;  /* E4M3FN: S.1111.111 */
    if (f.inf && exp == (1 << ebits) - 1) return man ? NAN : neg ? -INFINITY : INFINITY;
    double v = exp ? ldexp(1.0 + ldexp(man, -f.man), exp - f.bias) : ldexp(man, 1 - f.bias - f.man);
    return neg ? -v : v;
}

uint8_t cpu_double_to_f8(double x, int32_t dt, bool saturate) {
    f8_format f = f8_of(dt);
    uint8_t nan = f.uz ? 0x80 : 0x7F, sign = signbit(x) ? 0x80 : 0;
    if (isnan(x)) return f.uz ? 0x80 : (uint8_t)(nan | sign);
    uint8_t max_code = f.uz ? 0x7F : f.inf ? 0x7B : 0x7E;
    if (isinf(x)) { /* saturate: the largest value, as ONNX's reference and ONNX Runtime do (Cast-19's table
                       says NaN for the FNUZ types); else Inf where there is one, NaN elsewhere */
        if (saturate) return (uint8_t)(sign | max_code);
        if (f.uz) return nan;
        return f.inf ? (uint8_t)(sign | 0x7C) : (uint8_t)(nan | sign);
    }
    double a = fabs(x);
    int emin = 1 - f.bias, e;
    frexp(a, &e);
    e -= 1; /* a = 1.m * 2^e */
    if (e < emin) e = emin;
    double q = ldexp(1.0, e - f.man), r = nearbyint(a / q) * q; /* the default rounding: to nearest even */
    if (r == 0) return f.uz ? 0 : sign;
    if (r > f.max) {
        if (saturate) return (uint8_t)(sign | max_code);
        return f.inf ? (uint8_t)(sign | 0x7C) : f.uz ? nan : (uint8_t)(nan | sign);
    }
    frexp(r, &e);
    e -= 1;
    uint8_t code;
    if (e < emin) /* subnormal */
        code = (uint8_t)(r / ldexp(1.0, emin - f.man));
    else
        code = (uint8_t)((e + f.bias) << f.man | (int)((r / ldexp(1.0, e) - 1.0) * (1 << f.man)));
    return (uint8_t)(sign | code);
}

float cpu_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalize */
            int e = -1;
            do {
                man <<= 1;
                e++;
            } while (!(man & 0x400));
            bits = sign | (uint32_t)(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | man << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Round to nearest even, with overflow to infinity and subnormals. */
uint16_t cpu_float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds past 65504 */
    if (ax < 0x38800000u) { /* subnormal or zero in half */
        if (ax < 0x33000000u) return (uint16_t)sign;
        uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* value = m * 2^(e-150) = (m >> shift) * 2^-24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((ax - 0x38000000u) >> 13);
    uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

float cpu_bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t cpu_float_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

double cpu_get(const void *p, int32_t dt, int64_t i) {
    switch (dt) {
    case SEAM_DTYPE_FLOAT32: return ((const float *)p)[i];
    case SEAM_DTYPE_FLOAT64: return ((const double *)p)[i];
    case SEAM_DTYPE_FLOAT16: return cpu_half_to_float(((const uint16_t *)p)[i]);
    case SEAM_DTYPE_BFLOAT16: return cpu_bf16_to_float(((const uint16_t *)p)[i]);
    case SEAM_DTYPE_INT8: return ((const int8_t *)p)[i];
    case SEAM_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case SEAM_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    case SEAM_DTYPE_INT16: return ((const int16_t *)p)[i];
    case SEAM_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case SEAM_DTYPE_INT32: return ((const int32_t *)p)[i];
    case SEAM_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case SEAM_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case SEAM_DTYPE_UINT64: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

int64_t cpu_get_i64(const void *p, int32_t dt, int64_t i) {
    switch (dt) {
    case SEAM_DTYPE_INT64: return ((const int64_t *)p)[i];
    case SEAM_DTYPE_UINT64: return (int64_t)((const uint64_t *)p)[i];
    case SEAM_DTYPE_INT32: return ((const int32_t *)p)[i];
    case SEAM_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case SEAM_DTYPE_INT16: return ((const int16_t *)p)[i];
    case SEAM_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case SEAM_DTYPE_INT8: return ((const int8_t *)p)[i];
    case SEAM_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case SEAM_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: {
        double v = cpu_get(p, dt, i);
        if (!(v == v)) return 0;
        if (v >= 9.2e18) return INT64_MAX;
        if (v <= -9.2e18) return INT64_MIN;
        return (int64_t)v;
    }
    }
}

/* A float to integer conversion with defined results for NaN and values
 * out of range (C leaves them undefined; the sanitizer would object). */
static int64_t sat_i64(double v, double lo, double hi) {
    if (!(v == v)) return 0;
    if (v < lo) return (int64_t)lo;
    if (v > hi) return (int64_t)hi;
    return (int64_t)v;
}

void cpu_set(void *p, int32_t dt, int64_t i, double v) {
    switch (dt) {
    case SEAM_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
    case SEAM_DTYPE_FLOAT64: ((double *)p)[i] = v; break;
    case SEAM_DTYPE_FLOAT16: ((uint16_t *)p)[i] = cpu_float_to_half((float)v); break;
    case SEAM_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = cpu_float_to_bf16((float)v); break;
    case SEAM_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    /* wrap like a C cast through int64 for in-range values */
    case SEAM_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)sat_i64(v, -9.2e18, 9.2e18); break;
    case SEAM_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)sat_i64(v, -9.2e18, 9.2e18); break;
    case SEAM_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)sat_i64(v, -9.2e18, 9.2e18); break;
    case SEAM_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)sat_i64(v, -9.2e18, 9.2e18); break;
    case SEAM_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)sat_i64(v, -9.2e18, 9.2e18); break;
    case SEAM_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)sat_i64(v, -9.2e18, 9.2e18); break;
    case SEAM_DTYPE_INT64: ((int64_t *)p)[i] = sat_i64(v, -9.2e18, 9.2e18); break;
    case SEAM_DTYPE_UINT64:
        ((uint64_t *)p)[i] = v >= 9.2e18 ? (uint64_t)(v < 1.8e19 ? v : 1.8e19) : (uint64_t)sat_i64(v, -9.2e18, 9.2e18);
        break;
    default: break;
    }
}

void cpu_set_i64(void *p, int32_t dt, int64_t i, int64_t v) {
    switch (dt) {
    case SEAM_DTYPE_INT64: ((int64_t *)p)[i] = v; break;
    case SEAM_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case SEAM_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case SEAM_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case SEAM_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case SEAM_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case SEAM_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case SEAM_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case SEAM_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: cpu_set(p, dt, i, (double)v); break;
    }
}

bool cpu_broadcast(const seam_tensor *const *ts, int32_t n, int32_t *rank, int64_t *dims) {
    int32_t r = 0;
    for (int32_t k = 0; k < n; k++)
        if (ts[k]->rank > r) r = ts[k]->rank;
    for (int32_t d = 0; d < r; d++) {
        int64_t v = 1;
        for (int32_t k = 0; k < n; k++) {
            int32_t off = d - (r - ts[k]->rank);
            if (off < 0) continue;
            int64_t x = ts[k]->dims[off];
            if (x == v || x == 1) continue;
            if (v != 1) return false;
            v = x;
        }
        dims[d] = v;
    }
    *rank = r;
    return true;
}

void cpu_strides(int32_t rank, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

void cpu_bcast_strides(const seam_tensor *t, int32_t rank, const int64_t *dims, int64_t *strides) {
    int64_t own[SEAM_MAX_RANK];
    cpu_strides(t->rank, t->dims, own);
    for (int32_t d = 0; d < rank; d++) {
        int32_t off = d - (rank - t->rank);
        strides[d] = off < 0 || t->dims[off] == 1 ? 0 : own[off];
    }
    (void)dims;
}

void cpu_iter_init(cpu_iter *it, int32_t rank, const int64_t *dims, const seam_tensor *const *ins, int32_t n) {
    it->rank = rank;
    it->n = n;
    for (int32_t d = 0; d < rank; d++) {
        it->dims[d] = dims[d];
        it->idx[d] = 0;
    }
    for (int32_t k = 0; k < n; k++) {
        cpu_bcast_strides(ins[k], rank, dims, it->strides[k]);
        it->off[k] = 0;
    }
}

int32_t cpu_read_ints(const seam_tensor *t, int64_t *out, int32_t max) {
    if (!t || t->numel > max || (t->dtype != SEAM_DTYPE_INT64 && t->dtype != SEAM_DTYPE_INT32)) return -1;
    for (int64_t k = 0; k < t->numel; k++) out[k] = cpu_get_i64(t->data, t->dtype, k);
    return (int32_t)t->numel;
}

int64_t cpu_span(const int64_t *dims, int32_t from, int32_t to) {
    /* a zero dim makes the span 0 whatever the others are (and they may be
     * large enough to overflow a product of the rest) */
    for (int32_t d = from; d < to; d++)
        if (dims[d] == 0) return 0;
    int64_t n = 1;
    for (int32_t d = from; d < to; d++) {
        if (dims[d] < 0 || n > INT64_MAX / dims[d]) return INT64_MAX; /* not a real tensor's span */
        n *= dims[d];
    }
    return n;
}

double cpu_cubic_weight(double t, double a) {
    t = fabs(t);
    if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

seam_status cpu_conv_geom(seam_kernel *k, const seam_tensor *x, const int64_t *kernel, bool ceil_mode, conv_geom *g) {
    if (x->rank < 3) return kernel_fail(k, "the input must have a batch, a channel and at least one spatial axis");
    char why[160];
    if (!conv_geom_init(k->n, x->rank - 2, x->dims + 2, kernel, ceil_mode, g, why, sizeof(why)))
        return kernel_fail(k, "%s", why);
    return SEAM_STATUS_OK;
}

seam_status check_auto_pad(seam_check *c) {
    conv_auto_pad ap;
    if (!conv_auto_pad_of(c->n, &ap))
        return check_refuse(c, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    return SEAM_STATUS_OK;
}

/* Refuses input 0 when its dtype is known and not one that ok accepts. */
static seam_status check_input_dtype(seam_check *c, bool (*ok)(int32_t dtype)) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && !ok(dt))
        return check_refuse(c, "%s on %s is not supported", c->n->op_type, seam_dtype_name(dt));
    return SEAM_STATUS_OK;
}

static bool is_float_or_int(int32_t dt) { return cpu_is_float(dt) || cpu_is_int(dt); }

seam_status check_float_input(seam_check *c) { return check_input_dtype(c, cpu_is_float); }
seam_status check_numeric_input(seam_check *c) { return check_input_dtype(c, is_float_or_int); }
seam_status check_real_input(seam_check *c) { return check_input_dtype(c, cpu_is_real); }

const ir_tensor *cpu_constant_input(const seam_check *c, int32_t i) {
    if (i >= c->n->n_inputs || c->n->inputs[i] < 0) return NULL;
    const ir_graph *g = c->g;
    const ir_value *v = &g->values[c->n->inputs[i]];
    /* A body's outer-scope value is the enclosing graph's: a device
     * subgraph's weights are the main graph's initializers, so its nodes
     * pack them as the same nodes of the plain graph do (and compute the
     * same bits). */
    for (int32_t depth = 0; (v->flags & IR_VALUE_OUTER) && !v->init && g->parent && v->outer >= 0 && depth < 64; depth++) {
        g = g->parent;
        v = &g->values[v->outer];
    }
    if (v->init) return v->flags & IR_VALUE_INPUT ? NULL : v->init;
    if (v->producer < 0) return NULL;
    const ir_node *p = &g->nodes[v->producer];
    const ir_attr *a = strcmp(p->op_type, "Constant") == 0 && p->domain[0] == 0 ? node_attr(p, "value") : NULL;
    return a && a->kind == IR_ATTR_TENSOR ? a->t : NULL;
}
