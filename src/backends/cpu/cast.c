/* CPU kernels: Cast, CastLike, Shape, Size, ConstantOfShape, Constant,
 * EyeLike and the random generators. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "ops/symexpr.h"

/* The conversions a C cast does exactly as the loop below would, one
 * typed loop each (the compiler vectorizes them): integers of up to 32 bits
 * (and bool) to float32, float64, int32 and int64, float32 and float64 to
 * each other, int64 to int32 (wrapping). A quantized model's
 * MatMulInteger -> Cast(int32 -> float) runs at every MatMul; element by
 * element through cpu_get and cpu_set it took half of a transformer's time.
 * false: not one of them. */
#define CAST_LOOP(FT, TT)                                                                                     \
    do {                                                                                                       \
        const FT *a = x->data;                                                                                 \
        TT *b = y->data;                                                                                       \
        for (int64_t i = 0; i < n; i++) b[i] = (TT)a[i];                                                      \
    } while (0)
#define CAST_FROM(name, FT)                                                                                    \
    CPU_HOT static bool name(const seam_tensor *x, seam_tensor *y, int64_t n) {                               \
        switch (y->dtype) {                                                                                    \
        case SEAM_DTYPE_FLOAT32: CAST_LOOP(FT, float); return true;                                           \
        case SEAM_DTYPE_FLOAT64: CAST_LOOP(FT, double); return true;                                          \
        case SEAM_DTYPE_INT32: CAST_LOOP(FT, int32_t); return true;                                           \
        case SEAM_DTYPE_INT64: CAST_LOOP(FT, int64_t); return true;                                           \
        default: return false;                                                                                 \
        }                                                                                                      \
    }
CAST_FROM(cast_u8, uint8_t)
CAST_FROM(cast_i8, int8_t)
CAST_FROM(cast_u16, uint16_t)
CAST_FROM(cast_i16, int16_t)
CAST_FROM(cast_i32, int32_t)

CPU_HOT static bool convert_typed(const seam_tensor *x, seam_tensor *y) {
    int32_t from = x->dtype, to = y->dtype;
    int64_t n = x->numel;
    switch (from) {
    case SEAM_DTYPE_UINT8: return cast_u8(x, y, n);
    case SEAM_DTYPE_INT8: return cast_i8(x, y, n);
    case SEAM_DTYPE_UINT16: return cast_u16(x, y, n);
    case SEAM_DTYPE_INT16: return cast_i16(x, y, n);
    case SEAM_DTYPE_INT32: return cast_i32(x, y, n);
    case SEAM_DTYPE_UINT32:
        if (to == SEAM_DTYPE_FLOAT32) CAST_LOOP(uint32_t, float);
        else if (to == SEAM_DTYPE_FLOAT64) CAST_LOOP(uint32_t, double);
        else if (to == SEAM_DTYPE_INT64) CAST_LOOP(uint32_t, int64_t);
        else return false;
        return true;
    case SEAM_DTYPE_FLOAT32:
        if (to != SEAM_DTYPE_FLOAT64) return false;
        CAST_LOOP(float, double);
        return true;
    case SEAM_DTYPE_FLOAT64:
        if (to != SEAM_DTYPE_FLOAT32) return false;
        CAST_LOOP(double, float);
        return true;
    case SEAM_DTYPE_INT64: { /* to int32 wraps, as cpu_set_i64 does */
        if (to != SEAM_DTYPE_INT32) return false;
        const int64_t *a = x->data;
        int32_t *b = y->data;
        for (int64_t i = 0; i < n; i++) b[i] = (int32_t)(uint32_t)(uint64_t)a[i];
        return true;
    }
    case SEAM_DTYPE_BOOL: { /* (a bool byte other than 0 or 1 counts as true) */
        const uint8_t *a = x->data;
        for (int64_t i = 0; i < n; i++) {
            int v = a[i] != 0;
            switch (to) {
            case SEAM_DTYPE_FLOAT32: ((float *)y->data)[i] = (float)v; break;
            case SEAM_DTYPE_FLOAT64: ((double *)y->data)[i] = v; break;
            case SEAM_DTYPE_INT32: ((int32_t *)y->data)[i] = v; break;
            case SEAM_DTYPE_INT64: ((int64_t *)y->data)[i] = v; break;
            default: return false;
            }
        }
        return true;
    }
    default: return false;
    }
}
#undef CAST_FROM
#undef CAST_LOOP

/* Float to integer truncates toward zero (saturating where C would be
 * undefined); integer to integer wraps; everything to bool is != 0. */
static void convert(const seam_tensor *x, seam_tensor *y) {
    int32_t from = x->dtype, to = y->dtype;
    if (from == to) {
        if (x->nbytes) memcpy(y->data, x->data, x->nbytes);
        return;
    }
    if (convert_typed(x, y)) return;
    if (from == SEAM_DTYPE_FLOAT32 && to == SEAM_DTYPE_FLOAT16) {
        const float *a = x->data;
        uint16_t *b = y->data;
        for (int64_t i = 0; i < x->numel; i++) b[i] = cpu_float_to_half(a[i]);
        return;
    }
    if (from == SEAM_DTYPE_FLOAT16 && to == SEAM_DTYPE_FLOAT32) {
        const uint16_t *a = x->data;
        float *b = y->data;
        for (int64_t i = 0; i < x->numel; i++) b[i] = cpu_half_to_float(a[i]);
        return;
    }
    if (from == SEAM_DTYPE_FLOAT64 && to == SEAM_DTYPE_FLOAT16) { /* round once, not through float */
        for (int64_t i = 0; i < x->numel; i++) {
            double v = ((const double *)x->data)[i];
            float f = (float)v;
            /* (float)v may round the wrong way for half; nudge toward v */
            if ((double)f != v && fabs(v) < 65520) {
                float g = nextafterf(f, v > f ? INFINITY : -INFINITY);
                uint16_t hf = cpu_float_to_half(f), hg = cpu_float_to_half(g);
                if (hf != hg) {
                    double df = fabs(cpu_half_to_float(hf) - v), dg = fabs(cpu_half_to_float(hg) - v);
                    ((uint16_t *)y->data)[i] = dg < df ? hg : hf;
                    continue;
                }
            }
            ((uint16_t *)y->data)[i] = cpu_float_to_half(f);
        }
        return;
    }
    bool exact_int = (cpu_is_int(from) || from == SEAM_DTYPE_BOOL) && (cpu_is_int(to) || to == SEAM_DTYPE_BOOL);
    for (int64_t i = 0; i < x->numel; i++) {
        if (exact_int) {
            cpu_set_i64(y->data, to, i, cpu_get_i64(x->data, from, i));
        } else if (from == SEAM_DTYPE_INT64 || from == SEAM_DTYPE_UINT64) {
            /* through double rounds to nearest, as a C cast from int64 does */
            cpu_set(y->data, to, i, from == SEAM_DTYPE_INT64 ? (double)cpu_get_i64(x->data, from, i)
                                                             : (double)((const uint64_t *)x->data)[i]);
        } else {
            double v = cpu_get(x->data, from, i);
            if (cpu_is_int(to)) v = trunc(v);
            cpu_set(y->data, to, i, v);
        }
    }
}

/* A number as ONNX writes it in a string: the shortest digits that read
 * back to the same value of its dtype (numpy's str), "NaN", "INF", "-INF". */
static size_t format_number(char *buf, size_t n, const void *p, int32_t dtype, int64_t i) {
    if (cpu_is_int(dtype) || dtype == SEAM_DTYPE_BOOL) {
        if (dtype == SEAM_DTYPE_UINT64) return (size_t)snprintf(buf, n, "%llu", (unsigned long long)((const uint64_t *)p)[i]);
        return (size_t)snprintf(buf, n, "%lld", (long long)cpu_get_i64(p, dtype, i));
    }
    double v = cpu_get(p, dtype, i);
    if (isnan(v)) return (size_t)snprintf(buf, n, "NaN");
    if (isinf(v)) return (size_t)snprintf(buf, n, v < 0 ? "-INF" : "INF");
    int len = 0;
    for (int prec = 1; prec <= 17; prec++) {
        len = snprintf(buf, n, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        bool same = dtype == SEAM_DTYPE_FLOAT64   ? back == v
                    : dtype == SEAM_DTYPE_FLOAT32 ? (float)back == (float)v
                    : dtype == SEAM_DTYPE_FLOAT16 ? cpu_float_to_half((float)back) == cpu_float_to_half((float)v)
                                                  : cpu_float_to_bf16((float)back) == cpu_float_to_bf16((float)v);
        if (same) break;
    }
    return (size_t)len;
}

/* Cast to and from strings. To: each element's text in bytes of the run
 * (kernel_bytes). From: the text read as a number ("NaN", "INF", "+INF",
 * "-INF" too, any case); text that is not a number is an error. */
static seam_status cast_strings(seam_kernel *k, const seam_tensor *x, int32_t to) {
    seam_tensor *y = kernel_out(k, 0, to, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    if (x->dtype == SEAM_DTYPE_STRING && to == SEAM_DTYPE_STRING) {
        if (x->nbytes) memcpy(y->data, x->data, x->nbytes);
        return SEAM_STATUS_OK;
    }
    if (to == SEAM_DTYPE_STRING) {
        enum { MAXLEN = 32 };
        if ((uint64_t)x->numel > SEAM_MAX_TENSOR_BYTES / MAXLEN) return kernel_oom(k);
        char *bytes = kernel_bytes(k, (size_t)x->numel * MAXLEN + 1);
        if (!bytes) return kernel_oom(k);
        ir_bytes *out = y->data;
        for (int64_t i = 0; i < x->numel; i++) {
            char *at = bytes + (size_t)i * MAXLEN;
            size_t len = format_number(at, MAXLEN, x->data, x->dtype, i);
            out[i] = (ir_bytes){(const uint8_t *)at, len < MAXLEN ? len : MAXLEN - 1};
        }
        return SEAM_STATUS_OK;
    }
    const ir_bytes *in = x->data;
    for (int64_t i = 0; i < x->numel; i++) {
        char buf[128], *end;
        size_t len = in[i].len < sizeof(buf) - 1 ? in[i].len : sizeof(buf) - 1;
        if (len) memcpy(buf, in[i].data, len);
        buf[len] = 0;
        if (cpu_is_int(to)) {
            long long v = strtoll(buf, &end, 10);
            if (end == buf || *end) return kernel_fail(k, "element %lld, \"%s\", is not an integer", (long long)i, buf);
            cpu_set_i64(y->data, to, i, (int64_t)v);
        } else {
            double v = strtod(buf, &end);
            if (end == buf || *end) return kernel_fail(k, "element %lld, \"%s\", is not a number", (long long)i, buf);
            cpu_set(y->data, to, i, v);
        }
    }
    return SEAM_STATUS_OK;
}

static bool castable(int32_t dt) { return cpu_is_real(dt) || dt == SEAM_DTYPE_STRING || cpu_is_float8(dt); }

/* Casts into or out of the 8-bit floats (Cast-19): through double, which
 * holds every value of the other real types that a float8 can tell apart;
 * into float8 rounded to nearest even, saturating unless saturate = 0. */
static void convert_f8(const seam_tensor *x, seam_tensor *y, bool saturate) {
    int32_t from = x->dtype, to = y->dtype;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = cpu_is_float8(from) ? cpu_f8_to_double(((const uint8_t *)x->data)[i], from) : cpu_get(x->data, from, i);
        if (cpu_is_float8(to)) {
            ((uint8_t *)y->data)[i] = cpu_double_to_f8(v, to, saturate);
        } else if (cpu_is_int(to)) { /* NaN and out-of-range values as the float path does */
            float fv = (float)v;
            seam_tensor fx = {.dtype = SEAM_DTYPE_FLOAT32, .numel = 1, .nbytes = 4, .data = &fv};
            seam_tensor ty = *y;
            ty.numel = 1;
            ty.data = (uint8_t *)y->data + (size_t)i * seam_dtype_size((seam_dtype)to);
            convert(&fx, &ty);
        } else {
            cpu_set(y->data, to, i, v);
        }
    }
}

static seam_status run_cast(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int32_t to;
    if (strcmp(k->n->op_type, "CastLike") == 0) {
        const seam_tensor *like = kernel_in(k, 1);
        if (!like) return kernel_fail(k, "needs target_type");
        to = like->dtype;
    } else {
        to = (int32_t)node_attr_int(k->n, "to", 0);
    }
    if (!castable(x->dtype) || !castable(to))
        return kernel_fail(k, "cast from %s to %s is not supported", seam_dtype_name(x->dtype), seam_dtype_name(to));
    bool f8 = cpu_is_float8(x->dtype) || cpu_is_float8(to);
    if (f8 && (x->dtype == SEAM_DTYPE_STRING || to == SEAM_DTYPE_STRING))
        return kernel_fail(k, "cast from %s to %s is not supported", seam_dtype_name(x->dtype), seam_dtype_name(to));
    if (x->dtype == SEAM_DTYPE_STRING || to == SEAM_DTYPE_STRING) return cast_strings(k, x, to);
    seam_tensor *y = kernel_out(k, 0, to, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    if (f8 && x->dtype != to) convert_f8(x, y, node_attr_int(k->n, "saturate", 1) != 0);
    else convert(x, y);
    return SEAM_STATUS_OK;
}

static seam_status check_cast(seam_check *c) {
    int32_t from = check_in_dtype(c, 0);
    int32_t to = strcmp(c->n->op_type, "CastLike") == 0 ? check_in_dtype(c, 1) : (int32_t)node_attr_int(c->n, "to", 0);
    if ((from != SEAM_DTYPE_UNDEFINED && !castable(from)) || (to != SEAM_DTYPE_UNDEFINED && !castable(to)) ||
        ((cpu_is_float8(from) || cpu_is_float8(to)) && (from == SEAM_DTYPE_STRING || to == SEAM_DTYPE_STRING)))
        return check_refuse(c, "cast from %s to %s is not supported", seam_dtype_name(from), seam_dtype_name(to));
    return SEAM_STATUS_OK;
}

/* Shape, with the start/end slice of opset 15. */
static seam_status run_shape(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int64_t r = x->rank, start = node_attr_int(k->n, "start", 0), end = node_attr_int(k->n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t n = end > start ? end - start : 0;
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_INT64, 1, &n);
    if (!y) return kernel_oom(k);
    for (int64_t i = 0; i < n; i++) ((int64_t *)y->data)[i] = x->dims[start + i];
    return SEAM_STATUS_OK;
}

static seam_status run_size(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_INT64, 0, NULL);
    if (!y) return kernel_oom(k);
    *(int64_t *)y->data = x->numel;
    return SEAM_STATUS_OK;
}

/* ai.seam DimExpr (ops/symdim.c): shape arithmetic as expressions of the
 * inputs' dims, computed from the shapes alone, once per input shape: the
 * state keeps the node's attributes, read at session creation, the last
 * symbols' values and the elements they gave. */
typedef struct dimexpr_cache {
    dimexpr_form f;
    bool valid;
    int64_t vals[16];
    int64_t out[];
} dimexpr_cache;

static seam_status check_dimexpr(seam_check *c) {
    dimexpr_form f;
    if (!dimexpr_form_read(c->n, &f))
        return check_refuse(c, "malformed DimExpr attributes (exprs, sym_input, sym_axis, shape, to)");
    dimexpr_cache *dc = calloc(1, sizeof(dimexpr_cache) + sizeof(int64_t) * ((size_t)f.n + 1));
    if (!dc) return SEAM_STATUS_OUT_OF_MEMORY;
    dc->f = f;
    *c->state = dc;
    *c->free_state = free;
    return SEAM_STATUS_OK;
}

static seam_status run_dimexpr(seam_kernel *k) {
    dimexpr_cache *dc = k->state;
    if (!dc) return kernel_fail(k, "malformed DimExpr attributes (exprs, sym_input, sym_axis, shape, to)");
    const dimexpr_form *f = &dc->f;
    int64_t vals[16];
    for (int32_t j = 0; j < f->n_syms; j++) {
        int64_t i = f->sym_input[j], a = f->sym_axis[j];
        const seam_tensor *x = i >= 0 && i < k->n->n_inputs ? kernel_in(k, (int32_t)i) : NULL;
        if (!x || a < 0 || a >= x->rank)
            return kernel_fail(k, "symbol %d reads input %lld's dim %lld, which it does not have", j, (long long)i,
                               (long long)a);
        vals[j] = x->dims[a];
    }
    int64_t n = f->n;
    seam_tensor *y = kernel_out(k, 0, f->to, f->rank, &n);
    if (!y) return kernel_oom(k);
    if (!dc->valid || memcmp(dc->vals, vals, sizeof(int64_t) * (size_t)f->n_syms)) {
        dc->valid = false; /* (until every element is in) */
        for (int32_t e = 0; e < f->n; e++) {
            char why[320];
            if (!dimexpr_form_eval(f, e, vals, &dc->out[e], why, sizeof(why))) return kernel_fail(k, "%s", why);
        }
        dc->valid = true;
        memcpy(dc->vals, vals, sizeof(int64_t) * (size_t)f->n_syms);
    }
    for (int32_t e = 0; e < f->n; e++) {
        if (f->to == SEAM_DTYPE_INT64) ((int64_t *)y->data)[e] = dc->out[e];
        else ((int32_t *)y->data)[e] = (int32_t)dc->out[e];
    }
    return SEAM_STATUS_OK;
}

static seam_status run_constant_of_shape(seam_kernel *k) {
    const seam_tensor *s = kernel_in(k, 0);
    int64_t dims[SEAM_MAX_RANK];
    int32_t rank = cpu_read_ints(s, dims, SEAM_MAX_RANK);
    if (rank < 0 || s->rank != 1) return kernel_fail(k, "the shape input must be a 1-D int64 tensor of at most %d dims", SEAM_MAX_RANK);
    for (int32_t d = 0; d < rank; d++)
        if (dims[d] < 0) return kernel_fail(k, "shape dim %d is %lld", d, (long long)dims[d]);
    int64_t numel = seam_shape_numel(dims, rank);
    if (numel < 0 || numel > MAX_DATA_NUMEL) return kernel_fail(k, "the shape asks for too many elements");
    const ir_attr *v = node_attr(k->n, "value");
    const ir_tensor *t = v && v->kind == IR_ATTR_TENSOR ? v->t : NULL;
    int32_t dt = t ? t->dtype : SEAM_DTYPE_FLOAT32;
    if (t && (t->numel != 1 || !cpu_is_real(dt))) return kernel_fail(k, "value must be a one-element numeric tensor");
    seam_tensor *y = kernel_out(k, 0, dt, rank, dims);
    if (!y) return kernel_oom(k);
    size_t es = seam_dtype_size(dt);
    if (!t) {
        memset(y->data, 0, y->nbytes);
    } else {
        for (int64_t i = 0; i < numel; i++) memcpy((char *)y->data + (size_t)i * es, t->data, es);
    }
    return SEAM_STATUS_OK;
}

static seam_status run_constant(seam_kernel *k) {
    const ir_node *n = k->n;
    for (int32_t a = 0; a < n->n_attrs; a++) {
        const ir_attr *at = &n->attrs[a];
        seam_tensor *y = NULL;
        if (strcmp(at->name, "value") == 0 && at->kind == IR_ATTR_TENSOR && at->t) {
            const ir_tensor *t = at->t;
            y = kernel_out(k, 0, t->dtype, t->rank, t->dims);
            if (!y) return kernel_oom(k);
            /* strings: the ir_bytes, whose bytes are the model's */
            if (y->nbytes) memcpy(y->data, t->data, y->nbytes);
            return SEAM_STATUS_OK;
        }
        int64_t d = at->n;
        if (strcmp(at->name, "value_float") == 0) {
            if (!(y = kernel_out(k, 0, SEAM_DTYPE_FLOAT32, 0, NULL))) return kernel_oom(k);
            *(float *)y->data = at->f;
            return SEAM_STATUS_OK;
        } else if (strcmp(at->name, "value_int") == 0) {
            if (!(y = kernel_out(k, 0, SEAM_DTYPE_INT64, 0, NULL))) return kernel_oom(k);
            *(int64_t *)y->data = at->i;
            return SEAM_STATUS_OK;
        } else if (strcmp(at->name, "value_floats") == 0) {
            if (!(y = kernel_out(k, 0, SEAM_DTYPE_FLOAT32, 1, &d))) return kernel_oom(k);
            if (d) memcpy(y->data, at->floats, sizeof(float) * (size_t)d);
            return SEAM_STATUS_OK;
        } else if (strcmp(at->name, "value_ints") == 0) {
            if (!(y = kernel_out(k, 0, SEAM_DTYPE_INT64, 1, &d))) return kernel_oom(k);
            if (d) memcpy(y->data, at->ints, sizeof(int64_t) * (size_t)d);
            return SEAM_STATUS_OK;
        } else if (strcmp(at->name, "value_string") == 0 && at->kind == IR_ATTR_STRING) {
            if (!(y = kernel_out(k, 0, SEAM_DTYPE_STRING, 0, NULL))) return kernel_oom(k);
            *(ir_bytes *)y->data = at->s;
            return SEAM_STATUS_OK;
        } else if (strcmp(at->name, "value_strings") == 0 && at->kind == IR_ATTR_STRINGS) {
            if (!(y = kernel_out(k, 0, SEAM_DTYPE_STRING, 1, &d))) return kernel_oom(k);
            if (d) memcpy(y->data, at->strings, sizeof(ir_bytes) * (size_t)d);
            return SEAM_STATUS_OK;
        }
    }
    return kernel_fail(k, "Constant without a supported value attribute (sparse values are not supported)");
}

static seam_status check_constant(seam_check *c) {
    for (int32_t a = 0; a < c->n->n_attrs; a++) {
        const ir_attr *at = &c->n->attrs[a];
        if (strcmp(at->name, "value") == 0 && at->kind == IR_ATTR_TENSOR && at->t) return SEAM_STATUS_OK;
        if (!strcmp(at->name, "value_float") || !strcmp(at->name, "value_int") || !strcmp(at->name, "value_floats") ||
            !strcmp(at->name, "value_ints") || !strcmp(at->name, "value_string") || !strcmp(at->name, "value_strings"))
            return SEAM_STATUS_OK;
    }
    return check_refuse(c, "Constant with a sparse value is not supported");
}

/* EyeLike: ones on diagonal k of a 2-D tensor. */
static seam_status run_eyelike(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->rank != 2) return kernel_fail(k, "the input must be 2-D");
    int32_t dt = (int32_t)node_attr_int(k->n, "dtype", x->dtype);
    if (!cpu_is_real(dt)) return kernel_fail(k, "dtype %s is not supported", seam_dtype_name(dt));
    int64_t off = node_attr_int(k->n, "k", 0);
    seam_tensor *y = kernel_out(k, 0, dt, 2, x->dims);
    if (!y) return kernel_oom(k);
    memset(y->data, 0, y->nbytes);
    for (int64_t r = 0; r < x->dims[0]; r++) {
        int64_t c = r + off;
        if (c >= 0 && c < x->dims[1]) cpu_set(y->data, dt, r * x->dims[1] + c, 1);
    }
    return SEAM_STATUS_OK;
}

/* Random generators: a fixed-seed xorshift (the `seed` attribute, or 0),
 * so runs are reproducible. Values match no other runtime's stream. */
static uint64_t next_u64(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static double next_unit(uint64_t *s) { return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0); }

static seam_status run_random(seam_kernel *k) {
    const char *op = k->n->op_type;
    bool like = strstr(op, "Like") != NULL, bern = strcmp(op, "Bernoulli") == 0;
    const seam_tensor *x = like || bern ? kernel_in(k, 0) : NULL;
    if ((like || bern) && !x) return kernel_fail(k, "needs an input");
    int32_t dt = (int32_t)node_attr_int(k->n, "dtype", x ? x->dtype : SEAM_DTYPE_FLOAT32);
    int64_t dims[SEAM_MAX_RANK];
    int32_t rank;
    if (x) {
        rank = x->rank;
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)rank);
    } else {
        const int64_t *s;
        rank = node_attr_ints(k->n, "shape", &s);
        if (rank < 0 || rank > SEAM_MAX_RANK) return kernel_fail(k, "needs a shape attribute");
        for (int32_t d = 0; d < rank; d++) {
            if (s[d] < 0) return kernel_fail(k, "shape dim %d is negative", d);
            dims[d] = s[d];
        }
    }
    int64_t numel = seam_shape_numel(dims, rank);
    if (numel < 0 || numel > MAX_DATA_NUMEL || !cpu_is_real(dt)) return kernel_fail(k, "unsupported shape or dtype");
    seam_tensor *y = kernel_out(k, 0, dt, rank, dims);
    if (!y) return kernel_oom(k);
    float seed = node_attr_float(k->n, "seed", 0);
    /* a seed outside int64 (NaN, inf, 1e30) by its bits: the cast would be undefined */
    uint32_t bits;
    memcpy(&bits, &seed, sizeof(bits));
    uint64_t st = 0x9e3779b97f4a7c15ull ^ (fabsf(seed) < 9.2e18f ? (uint64_t)(int64_t)seed : (uint64_t)bits);
    if (!st) st = 1;
    bool normal = strstr(op, "Normal") != NULL;
    double a = node_attr_float(k->n, normal ? "mean" : "low", normal ? 0.0f : 0.0f);
    double b = node_attr_float(k->n, normal ? "scale" : "high", 1.0f);
    for (int64_t i = 0; i < numel; i++) {
        double v;
        if (bern) {
            v = next_unit(&st) < cpu_get(x->data, x->dtype, i);
        } else if (normal) { /* Box-Muller */
            double u1 = next_unit(&st), u2 = next_unit(&st);
            v = a + b * sqrt(-2 * log(u1 > 0 ? u1 : 1e-300)) * cos(2 * M_PI * u2);
        } else {
            v = a + (b - a) * next_unit(&st);
        }
        cpu_set(y->data, dt, i, v);
    }
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_cast[] = {
    {"", "Cast", 1, {run_cast, check_cast}},
    {"", "CastLike", 15, {run_cast, check_cast}},
    {"", "Shape", 1, {run_shape, NULL}},
    {"ai.seam", "DimExpr", 1, {run_dimexpr, check_dimexpr}},
    {"", "Size", 1, {run_size, NULL}},
    {"", "ConstantOfShape", 9, {run_constant_of_shape, NULL}},
    {"", "Constant", 1, {run_constant, check_constant}},
    {"", "EyeLike", 9, {run_eyelike, NULL}},
    {"", "RandomNormal", 1, {run_random, NULL}},
    {"", "RandomUniform", 1, {run_random, NULL}},
    {"", "RandomNormalLike", 1, {run_random, NULL}},
    {"", "RandomUniformLike", 1, {run_random, NULL}},
    {"", "Bernoulli", 15, {run_random, NULL}},
};
const size_t seam_cpu_cast_count = sizeof(seam_cpu_cast) / sizeof(seam_cpu_cast[0]);
