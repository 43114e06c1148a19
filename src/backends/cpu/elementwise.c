/* CPU kernels: element-wise math and logic with numpy broadcasting.
 *
 * Binary ops walk the output row by row: the innermost axis is a plain
 * loop with each input's stride (0 when broadcast, 1 otherwise), so the
 * common cases (same shape, a scalar, a bias over the last axis) run as
 * tight loops. float32 has its own loops for the arithmetic real models
 * use; every other dtype goes through double (floats, small integers) or
 * int64 (32- and 64-bit integers), so integer results stay exact. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu.h"

/* (activation.c) erf over n floats, vectorized */

typedef enum {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_MOD, OP_FMOD, OP_SHL, OP_SHR,
    OP_BAND, OP_BOR, OP_BXOR, OP_MAX, OP_MIN,
    OP_EQ, OP_LT, OP_GT, OP_LE, OP_GE, OP_AND, OP_OR, OP_XOR,
} binop;

static bool is_compare(binop op) { return op >= OP_EQ; }

static double apply_f(binop op, double a, double b) {
    switch (op) {
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    case OP_DIV: return a / b;
    case OP_POW: return pow(a, b);
    case OP_FMOD: return fmod(a, b);
    case OP_MOD: { /* Python's %: the result takes the divisor's sign */
        double r = fmod(a, b);
        return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
    }
    case OP_MAX: return a != a ? a : b != b ? b : a > b ? a : b;
    case OP_MIN: return a != a ? a : b != b ? b : a < b ? a : b;
    case OP_EQ: return a == b;
    case OP_LT: return a < b;
    case OP_GT: return a > b;
    case OP_LE: return a <= b;
    case OP_GE: return a >= b;
    case OP_AND: return a != 0 && b != 0;
    case OP_OR: return a != 0 || b != 0;
    case OP_XOR: return (a != 0) != (b != 0);
    default: return 0;
    }
}

/* Integer arithmetic with wrap-around (done in unsigned to stay defined)
 * and no trap on division by zero (the result is 0). */
static int64_t apply_i(binop op, int64_t a, int64_t b, bool is_unsigned) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case OP_ADD: return (int64_t)(ua + ub);
    case OP_SUB: return (int64_t)(ua - ub);
    case OP_MUL: return (int64_t)(ua * ub);
    case OP_DIV:
        if (b == 0) return 0;
        if (is_unsigned) return (int64_t)(ua / ub);
        if (a == INT64_MIN && b == -1) return a;
        return a / b;
    case OP_MOD:
    case OP_FMOD: {
        if (b == 0) return 0;
        if (is_unsigned) return (int64_t)(ua % ub);
        if (b == -1) return 0;
        int64_t r = a % b;
        if (op == OP_MOD && r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
    case OP_POW: {
        if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
        uint64_t r = 1, base = ua;
        for (int64_t e = b; e > 0; e >>= 1) {
            if (e & 1) r *= base;
            base *= base;
        }
        return (int64_t)r;
    }
    case OP_SHL: return ub >= 64 ? 0 : (int64_t)(ua << ub);
    case OP_SHR: return ub >= 64 ? 0 : (int64_t)(ua >> ub);
    case OP_BAND: return (int64_t)(ua & ub);
    case OP_BOR: return (int64_t)(ua | ub);
    case OP_BXOR: return (int64_t)(ua ^ ub);
    case OP_MAX:
        if (is_unsigned) return ua > ub ? a : b;
        return a > b ? a : b;
    case OP_MIN:
        if (is_unsigned) return ua < ub ? a : b;
        return a < b ? a : b;
    case OP_EQ: return a == b;
    case OP_LT: return is_unsigned ? ua < ub : a < b;
    case OP_GT: return is_unsigned ? ua > ub : a > b;
    case OP_LE: return is_unsigned ? ua <= ub : a <= b;
    case OP_GE: return is_unsigned ? ua >= ub : a >= b;
    case OP_AND: return a && b;
    case OP_OR: return a || b;
    case OP_XOR: return !a != !b;
    default: return 0;
    }
}

/* Integer types whose values do not all fit a double exactly. */
static bool wide_int(int32_t dt) {
    return dt == SEAM_DTYPE_INT64 || dt == SEAM_DTYPE_UINT64 || dt == SEAM_DTYPE_INT32 || dt == SEAM_DTYPE_UINT32;
}

/* One float32 row of a hot op with a and b both read at stride 1, or
 * one of them a scalar: separate loops so each vectorizes. */
#define ROW_F32(expr)                                                                     \
    do {                                                                                  \
        if (sa && sb)                                                                     \
            for (int64_t i = 0; i < n; i++) { float x = a[i], z = b[i]; o[i] = (expr); }  \
        else if (sb)                                                                      \
            for (int64_t i = 0; i < n; i++) { float x = a[0], z = b[i]; o[i] = (expr); }  \
        else if (sa)                                                                      \
            for (int64_t i = 0; i < n; i++) { float x = a[i], z = b[0]; o[i] = (expr); }  \
        else                                                                              \
            for (int64_t i = 0; i < n; i++) { float x = a[0], z = b[0]; o[i] = (expr); }  \
        return true;                                                                      \
    } while (0)

/* float32 rows for the hot ops. sa/sb are 0 or 1. */
static bool row_f32(binop op, float *o, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n) {
    switch (op) {
    case OP_ADD: ROW_F32(x + z);
    case OP_SUB: ROW_F32(x - z);
    case OP_MUL: ROW_F32(x * z);
    case OP_DIV: ROW_F32(x / z);
    /* (NaN wins, as apply_f has it; Max and Min of a box's coordinates
     * and a bound went through apply_f's doubles at 17 ns an element) */
    case OP_MAX: ROW_F32(x != x ? x : z != z ? z : x > z ? x : z);
    case OP_MIN: ROW_F32(x != x ? x : z != z ? z : x < z ? x : z);
    case OP_POW:
        /* one exponent for the row: the common ones as products (GELU's
         * x^3 of the tanh form called powf on every element: 730 us for
         * 64 x 1024 floats, 11x ONNX Runtime), within 2 ulp of powf */
        if (sa && !sb && (b[0] == 2.0f || b[0] == 3.0f || b[0] == 1.0f || b[0] == 0.5f)) {
            float y = b[0];
            if (y == 2.0f)
                for (int64_t i = 0; i < n; i++) o[i] = a[i] * a[i];
            else if (y == 3.0f)
                for (int64_t i = 0; i < n; i++) o[i] = a[i] * a[i] * a[i];
            else if (y == 1.0f)
                for (int64_t i = 0; i < n; i++) o[i] = a[i];
            else /* powf(-0, 0.5) is +0 and powf(-inf, 0.5) +inf, where sqrtf gives -0 and NaN */
                for (int64_t i = 0; i < n; i++) o[i] = a[i] == -INFINITY ? INFINITY : sqrtf(a[i]) + 0.0f;
            return true;
        }
        for (int64_t i = 0; i < n; i++) {
            float y = b[i * sb];
            o[i] = y == 2.0f ? a[i * sa] * a[i * sa] : powf(a[i * sa], y);
        }
        return true;
    default: return false;
    }
}

/* One float32 comparison row into bool bytes (C's comparisons are
 * ONNX's: false against NaN, -0 equal to 0), each form its own loop so
 * each vectorizes; false for other ops. */
#define CMP_F32(expr)                                                                             \
    do {                                                                                          \
        if (sa && sb)                                                                             \
            for (int64_t i = 0; i < n; i++) { float x = a[i], z = b[i]; o[i] = (uint8_t)(expr); } \
        else if (sb)                                                                              \
            for (int64_t i = 0; i < n; i++) { float x = a[0], z = b[i]; o[i] = (uint8_t)(expr); } \
        else if (sa)                                                                              \
            for (int64_t i = 0; i < n; i++) { float x = a[i], z = b[0]; o[i] = (uint8_t)(expr); } \
        else                                                                                      \
            for (int64_t i = 0; i < n; i++) { float x = a[0], z = b[0]; o[i] = (uint8_t)(expr); } \
        return true;                                                                              \
    } while (0)

static bool cmp_row_f32(binop op, uint8_t *o, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n) {
    switch (op) {
    case OP_EQ: CMP_F32(x == z);
    case OP_LT: CMP_F32(x < z);
    case OP_GT: CMP_F32(x > z);
    case OP_LE: CMP_F32(x <= z);
    case OP_GE: CMP_F32(x >= z);
    default: return false;
    }
}

typedef struct binary_job {
    binop op;
    const seam_tensor *a, *b;
    seam_tensor *y;
    int32_t rank;          /* output rank, at least 1 */
    int64_t dims[SEAM_MAX_RANK];
    int64_t sa[SEAM_MAX_RANK], sb[SEAM_MAX_RANK];
    int32_t in_dt;
    bool is_unsigned;
    const act_params *post; /* a fused activation (float32 only), or NULL */
} binary_job;

/* Rows [begin, end) of the output (a row = the innermost axis). */
CPU_HOT static void binary_rows(void *arg, int64_t begin, int64_t end) {
    binary_job *j = arg;
    int32_t r = j->rank, dt = j->in_dt, odt = j->y->dtype;
    int64_t inner = j->dims[r - 1], isa = j->sa[r - 1], isb = j->sb[r - 1];
    for (int64_t row = begin; row < end; row++) {
        /* offsets of this row's first element in a and b */
        int64_t rem = row, oa = 0, ob = 0;
        for (int32_t d = r - 2; d >= 0; d--) {
            int64_t i = rem % j->dims[d];
            rem /= j->dims[d];
            oa += i * j->sa[d];
            ob += i * j->sb[d];
        }
        int64_t oo = row * inner;
        if (dt == SEAM_DTYPE_FLOAT32 && odt == SEAM_DTYPE_FLOAT32 &&
            row_f32(j->op, (float *)j->y->data + oo, (const float *)j->a->data + oa, isa,
                    (const float *)j->b->data + ob, isb, inner)) {
            /* the activation after a residual Add, while the row is in cache */
            if (j->post) cpu_post_apply(j->post, (float *)j->y->data + oo, inner, 0);
            continue;
        }
        if (dt == SEAM_DTYPE_FLOAT32 && odt == SEAM_DTYPE_BOOL &&
            cmp_row_f32(j->op, (uint8_t *)j->y->data + oo, (const float *)j->a->data + oa, isa,
                        (const float *)j->b->data + ob, isb, inner))
            continue;
        if (wide_int(dt)) {
            for (int64_t i = 0; i < inner; i++) {
                int64_t v = apply_i(j->op, cpu_get_i64(j->a->data, dt, oa + i * isa),
                                    cpu_get_i64(j->b->data, dt, ob + i * isb), j->is_unsigned);
                cpu_set_i64(j->y->data, odt, oo + i, v);
            }
        } else if (cpu_is_float(dt)) {
            for (int64_t i = 0; i < inner; i++) {
                double v = apply_f(j->op, cpu_get(j->a->data, dt, oa + i * isa), cpu_get(j->b->data, dt, ob + i * isb));
                cpu_set(j->y->data, odt, oo + i, v);
            }
        } else { /* 8/16-bit integers and bool: exact through int64 */
            for (int64_t i = 0; i < inner; i++) {
                int64_t v = apply_i(j->op, cpu_get_i64(j->a->data, dt, oa + i * isa),
                                    cpu_get_i64(j->b->data, dt, ob + i * isb), j->is_unsigned);
                cpu_set_i64(j->y->data, odt, oo + i, v);
            }
        }
    }
}

/* y = op(a, b) with broadcasting; y's buffer may be a or b's only when it
 * has the same shape (used by the variadic ops accumulating in place). */
static seam_status binary_into(seam_kernel *k, binop op, const seam_tensor *a, const seam_tensor *b, seam_tensor *y,
                               const act_params *post) {
    binary_job j = {.op = op, .a = a, .b = b, .y = y, .in_dt = a->dtype, .post = post};
    j.is_unsigned = a->dtype == SEAM_DTYPE_UINT8 || a->dtype == SEAM_DTYPE_UINT16 || a->dtype == SEAM_DTYPE_UINT32 ||
                    a->dtype == SEAM_DTYPE_UINT64;
    if (y->numel == 0) return SEAM_STATUS_OK;
    j.rank = y->rank ? y->rank : 1;
    for (int32_t d = 0; d < y->rank; d++) j.dims[d] = y->dims[d];
    if (y->rank == 0) j.dims[0] = 1;
    seam_tensor a1 = *a, b1 = *b;
    if (y->rank == 0) { /* scalars: view as [1] */
        a1.rank = b1.rank = 1;
        a1.dims[0] = b1.dims[0] = 1;
    }
    cpu_bcast_strides(&a1, j.rank, j.dims, j.sa);
    cpu_bcast_strides(&b1, j.rank, j.dims, j.sb);
    /* Axes d and d + 1 merge into one when each input steps over them as
     * over one axis (both broadcast, or both dense), or one of them has
     * size 1: [N, C, H, W] * [N, C, 1, 1] becomes [N * C, H * W] *
     * [N * C, 1], whose rows are long enough to vectorize. */
    binary_job m = j;
    for (int32_t d = m.rank - 2; d >= 0; d--) {
        int64_t ma, mb;
        if (m.dims[d] == 1) ma = m.sa[d + 1], mb = m.sb[d + 1];
        else if (m.dims[d + 1] == 1) ma = m.sa[d], mb = m.sb[d];
        else if (m.sa[d] == m.sa[d + 1] * m.dims[d + 1] && m.sb[d] == m.sb[d + 1] * m.dims[d + 1])
            ma = m.sa[d + 1], mb = m.sb[d + 1];
        else continue;
        m.dims[d] *= m.dims[d + 1], m.sa[d] = ma, m.sb[d] = mb;
        for (int32_t q = d + 1; q < m.rank - 1; q++) m.dims[q] = m.dims[q + 1], m.sa[q] = m.sa[q + 1], m.sb[q] = m.sb[q + 1];
        m.rank--;
    }
    /* (the row loops step each input by 0 or 1) */
    if (m.sa[m.rank - 1] <= 1 && m.sb[m.rank - 1] <= 1) j = m;
    int64_t rows = y->numel / j.dims[j.rank - 1];
    int64_t grain = j.dims[j.rank - 1] >= 4096 ? 1 : 4096 / j.dims[j.rank - 1] + 1;
    seam_parallel_for(k->pool, rows, grain, binary_rows, &j);
    return SEAM_STATUS_OK;
}

static binop op_of(const ir_node *n) {
    static const struct {
        const char *name;
        binop op;
    } ops[] = {
        {"Add", OP_ADD}, {"Sub", OP_SUB}, {"Mul", OP_MUL}, {"Div", OP_DIV}, {"Pow", OP_POW}, {"Mod", OP_MOD},
        {"BitwiseAnd", OP_BAND}, {"BitwiseOr", OP_BOR}, {"BitwiseXor", OP_BXOR}, {"Max", OP_MAX}, {"Min", OP_MIN},
        {"Sum", OP_ADD}, {"Mean", OP_ADD}, {"Equal", OP_EQ}, {"Less", OP_LT}, {"Greater", OP_GT},
        {"LessOrEqual", OP_LE}, {"GreaterOrEqual", OP_GE}, {"And", OP_AND}, {"Or", OP_OR}, {"Xor", OP_XOR},
    };
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
        if (strcmp(n->op_type, ops[k].name) == 0) return ops[k].op;
    if (strcmp(n->op_type, "BitShift") == 0) return node_attr_is(n, "direction", "LEFT") ? OP_SHL : OP_SHR;
    return OP_ADD;
}

static seam_status run_binary(seam_kernel *k) {
    const seam_tensor *a = kernel_in(k, 0), *b = kernel_in(k, 1);
    if (!a || !b) return kernel_fail(k, "needs two inputs");
    binop op = op_of(k->n);
    if (op == OP_MOD && node_attr_int(k->n, "fmod", 0)) op = OP_FMOD;
    /* Pow may mix types: the result has the base's type */
    if (a->dtype != b->dtype && op != OP_POW)
        return kernel_fail(k, "input dtypes differ (%s and %s)", seam_dtype_name(a->dtype), seam_dtype_name(b->dtype));
    const seam_tensor *ins[2] = {a, b};
    int32_t rank;
    int64_t dims[SEAM_MAX_RANK];
    if (!cpu_broadcast(ins, 2, &rank, dims))
        return kernel_fail(k, "shapes of '%s' and '%s' do not broadcast", cpu_in_name(k, 0), cpu_in_name(k, 1));
    seam_tensor *y = kernel_out(k, 0, is_compare(op) ? SEAM_DTYPE_BOOL : a->dtype, rank, dims);
    if (!y) return kernel_oom(k);
    if (op == OP_POW && a->dtype != b->dtype) { /* convert the exponent to the base's type first */
        seam_tensor e = *b;
        size_t es = seam_dtype_size(a->dtype);
        e.dtype = a->dtype;
        e.data = kernel_scratch(k, (size_t)b->numel * es + 1);
        if (!e.data) return kernel_oom(k);
        for (int64_t i = 0; i < b->numel; i++) {
            if (cpu_is_float(a->dtype) || cpu_is_float(b->dtype))
                cpu_set(e.data, e.dtype, i, cpu_get(b->data, b->dtype, i));
            else
                cpu_set_i64(e.data, e.dtype, i, cpu_get_i64(b->data, b->dtype, i));
        }
        return binary_into(k, op, a, &e, y, NULL);
    }
    /* a fused activation (see check_binary) needs the float32 row path */
    const act_params *post = k->post.kind != ACT_NONE ? &k->post : NULL;
    if (post && (a->dtype != SEAM_DTYPE_FLOAT32 || y->dtype != SEAM_DTYPE_FLOAT32))
        return kernel_fail(k, "a fused activation on %s data", seam_dtype_name(a->dtype));
    return binary_into(k, op, a, b, y, post);
}

static seam_status check_binary(seam_check *c) {
    const char *op = c->n->op_type;
    int32_t dt = check_in_dtype(c, 0);
    if (dt == SEAM_DTYPE_STRING || dt == SEAM_DTYPE_COMPLEX64 || dt == SEAM_DTYPE_COMPLEX128)
        return check_refuse(c, "%s on %s is not supported", op, seam_dtype_name(dt));
    /* Add, Sub, Mul and Div on float32 apply a following activation as they
     * write each row (the Relu after a ResNet's residual Add) */
    c->post_ops = dt == SEAM_DTYPE_FLOAT32 && check_in_dtype(c, 1) == SEAM_DTYPE_FLOAT32 &&
                  (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div"));
    return SEAM_STATUS_OK;
}

/* Max, Min, Sum, Mean over any number of inputs: accumulate pairwise. */
static seam_status run_variadic(seam_kernel *k) {
    int32_t n = kernel_n_in(k);
    const seam_tensor *ins[64];
    int32_t m = 0;
    for (int32_t i = 0; i < n && m < 64; i++)
        if (kernel_in(k, i)) ins[m++] = kernel_in(k, i);
    if (m == 0) return kernel_fail(k, "needs at least one input");
    for (int32_t i = 1; i < m; i++)
        if (ins[i]->dtype != ins[0]->dtype) return kernel_fail(k, "input %d has dtype %s, input 0 has %s", i,
                                                               seam_dtype_name(ins[i]->dtype),
                                                               seam_dtype_name(ins[0]->dtype));
    int32_t rank;
    int64_t dims[SEAM_MAX_RANK];
    if (!cpu_broadcast(ins, m, &rank, dims)) return kernel_fail(k, "the input shapes do not broadcast");
    seam_tensor *y = kernel_out(k, 0, ins[0]->dtype, rank, dims);
    if (!y) return kernel_oom(k);
    binop op = op_of(k->n);
    /* y = ins[0] broadcast (max(x, x) = x), then y = op(y, ins[i]) */
    seam_status st = binary_into(k, OP_MAX, ins[0], ins[0], y, NULL);
    if (st) return st;
    for (int32_t i = 1; i < m; i++)
        if ((st = binary_into(k, op, y, ins[i], y, NULL))) return st;
    if (strcmp(k->n->op_type, "Mean") == 0) {
        for (int64_t i = 0; i < y->numel; i++) {
            if (cpu_is_float(y->dtype))
                cpu_set(y->data, y->dtype, i, cpu_get(y->data, y->dtype, i) / m);
            else
                cpu_set_i64(y->data, y->dtype, i, cpu_get_i64(y->data, y->dtype, i) / m);
        }
    }
    return SEAM_STATUS_OK;
}

/* ---- unary ---- */

typedef enum {
    U_NEG, U_ABS, U_SQRT, U_EXP, U_LOG, U_RECIP, U_FLOOR, U_CEIL, U_ROUND, U_SIGN, U_ERF,
    U_SIN, U_COS, U_TAN, U_ASIN, U_ACOS, U_ATAN, U_SINH, U_COSH, U_ASINH, U_ACOSH, U_ATANH,
    U_ISNAN, U_ISINF, U_NOT, U_BNOT,
} unop;

static const struct {
    const char *name;
    unop op;
} unops[] = {
    {"Neg", U_NEG}, {"Abs", U_ABS}, {"Sqrt", U_SQRT}, {"Exp", U_EXP}, {"Log", U_LOG}, {"Reciprocal", U_RECIP},
    {"Floor", U_FLOOR}, {"Ceil", U_CEIL}, {"Round", U_ROUND}, {"Sign", U_SIGN}, {"Erf", U_ERF}, {"Sin", U_SIN},
    {"Cos", U_COS}, {"Tan", U_TAN}, {"Asin", U_ASIN}, {"Acos", U_ACOS}, {"Atan", U_ATAN}, {"Sinh", U_SINH},
    {"Cosh", U_COSH}, {"Asinh", U_ASINH}, {"Acosh", U_ACOSH}, {"Atanh", U_ATANH}, {"IsNaN", U_ISNAN},
    {"IsInf", U_ISINF}, {"Not", U_NOT}, {"BitwiseNot", U_BNOT},
};

static unop unop_of(const char *name) {
    for (size_t k = 0; k < sizeof(unops) / sizeof(unops[0]); k++)
        if (strcmp(name, unops[k].name) == 0) return unops[k].op;
    return U_NEG;
}

static double apply_u(unop op, double x) {
    switch (op) {
    case U_NEG: return -x;
    case U_ABS: return fabs(x);
    case U_SQRT: return sqrt(x);
    case U_EXP: return exp(x);
    case U_LOG: return log(x);
    case U_RECIP: return 1.0 / x;
    case U_FLOOR: return floor(x);
    case U_CEIL: return ceil(x);
    case U_ROUND: return nearbyint(x); /* the default mode rounds half to even */
    case U_SIGN: return x > 0 ? 1 : x < 0 ? -1 : x;
    case U_ERF: return erf(x);
    case U_SIN: return sin(x);
    case U_COS: return cos(x);
    case U_TAN: return tan(x);
    case U_ASIN: return asin(x);
    case U_ACOS: return acos(x);
    case U_ATAN: return atan(x);
    case U_SINH: return sinh(x);
    case U_COSH: return cosh(x);
    case U_ASINH: return asinh(x);
    case U_ACOSH: return acosh(x);
    case U_ATANH: return atanh(x);
    default: return x;
    }
}

typedef struct unary_job {
    unop op;
    const seam_tensor *x;
    seam_tensor *y;
    int64_t detect_pos, detect_neg;
} unary_job;

static void unary_range(void *arg, int64_t begin, int64_t end) {
    unary_job *j = arg;
    int32_t dt = j->x->dtype;
    if (dt == SEAM_DTYPE_FLOAT32 && j->y->dtype == SEAM_DTYPE_FLOAT32) {
        const float *x = j->x->data;
        float *y = j->y->data;
        switch (j->op) {
        case U_NEG: for (int64_t i = begin; i < end; i++) y[i] = -x[i]; return;
        case U_ABS: for (int64_t i = begin; i < end; i++) y[i] = fabsf(x[i]); return;
        case U_SQRT: for (int64_t i = begin; i < end; i++) y[i] = sqrtf(x[i]); return;
        case U_EXP: for (int64_t i = begin; i < end; i++) y[i] = expf(x[i]); return;
        case U_LOG: for (int64_t i = begin; i < end; i++) y[i] = logf(x[i]); return;
        case U_RECIP: for (int64_t i = begin; i < end; i++) y[i] = 1.0f / x[i]; return;
        case U_ERF: cpu_erf_f32(x + begin, y + begin, end - begin); return;
        case U_TAN: break; /* through double below: tanf differs in the last bits */
        default: break;
        }
    }
    for (int64_t i = begin; i < end; i++) {
        switch (j->op) {
        case U_ISNAN: {
            double v = cpu_get(j->x->data, dt, i);
            ((uint8_t *)j->y->data)[i] = v != v;
            break;
        }
        case U_ISINF: {
            double v = cpu_get(j->x->data, dt, i);
            ((uint8_t *)j->y->data)[i] = (isinf(v) && v > 0 && j->detect_pos) || (isinf(v) && v < 0 && j->detect_neg);
            break;
        }
        case U_NOT: ((uint8_t *)j->y->data)[i] = !((const uint8_t *)j->x->data)[i]; break;
        case U_BNOT: cpu_set_i64(j->y->data, dt, i, (int64_t) ~(uint64_t)cpu_get_i64(j->x->data, dt, i)); break;
        default:
            if (cpu_is_float(dt)) {
                cpu_set(j->y->data, dt, i, apply_u(j->op, cpu_get(j->x->data, dt, i)));
            } else {
                int64_t v = cpu_get_i64(j->x->data, dt, i);
                if (j->op == U_NEG) v = (int64_t)(0 - (uint64_t)v);
                else if (j->op == U_ABS) v = v < 0 ? (int64_t)(0 - (uint64_t)v) : v;
                else if (j->op == U_SIGN) v = v > 0 ? 1 : v < 0 ? -1 : 0;
                else v = (int64_t)apply_u(j->op, (double)v);
                cpu_set_i64(j->y->data, dt, i, v);
            }
        }
    }
}

static seam_status run_unary(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    unary_job j = {unop_of(k->n->op_type), x, NULL, node_attr_int(k->n, "detect_positive", 1),
                   node_attr_int(k->n, "detect_negative", 1)};
    int32_t odt = j.op == U_ISNAN || j.op == U_ISINF ? SEAM_DTYPE_BOOL : x->dtype;
    j.y = kernel_out(k, 0, odt, x->rank, x->dims);
    if (!j.y) return kernel_oom(k);
    seam_parallel_for(k->pool, x->numel, 16384, unary_range, &j);
    return SEAM_STATUS_OK;
}

static seam_status check_unary(seam_check *c) {
    unop op = unop_of(c->n->op_type);
    int32_t dt = check_in_dtype(c, 0);
    if (dt == SEAM_DTYPE_UNDEFINED) return SEAM_STATUS_OK;
    bool ok;
    switch (op) {
    case U_NEG: case U_ABS: case U_SIGN: ok = cpu_is_float(dt) || cpu_is_int(dt); break;
    case U_NOT: ok = dt == SEAM_DTYPE_BOOL; break;
    case U_BNOT: ok = cpu_is_int(dt); break;
    default: ok = cpu_is_float(dt); break;
    }
    if (!ok) return check_refuse(c, "%s on %s is not supported", c->n->op_type, seam_dtype_name(dt));
    return SEAM_STATUS_OK;
}

#define BIN {run_binary, check_binary}
#define VAR {run_variadic, check_binary}
#define UN {run_unary, check_unary}

const seam_cpu_binding seam_cpu_elementwise[] = {
    {"", "Add", 1, BIN}, {"", "Sub", 1, BIN}, {"", "Mul", 1, BIN}, {"", "Div", 1, BIN},
    {"", "Pow", 1, BIN}, {"", "Mod", 10, BIN}, {"", "BitShift", 11, BIN}, {"", "BitwiseAnd", 18, BIN},
    {"", "BitwiseOr", 18, BIN}, {"", "BitwiseXor", 18, BIN}, {"", "Equal", 1, BIN}, {"", "Less", 1, BIN},
    {"", "Greater", 1, BIN}, {"", "LessOrEqual", 12, BIN}, {"", "GreaterOrEqual", 12, BIN}, {"", "And", 1, BIN},
    {"", "Or", 1, BIN}, {"", "Xor", 1, BIN},
    {"", "Max", 1, VAR}, {"", "Min", 1, VAR}, {"", "Sum", 1, VAR}, {"", "Mean", 1, VAR},
    {"", "Neg", 1, UN}, {"", "Abs", 1, UN}, {"", "Sqrt", 1, UN}, {"", "Exp", 1, UN}, {"", "Log", 1, UN},
    {"", "Reciprocal", 1, UN}, {"", "Floor", 1, UN}, {"", "Ceil", 1, UN}, {"", "Round", 11, UN},
    {"", "Sign", 9, UN}, {"", "Erf", 9, UN}, {"", "Sin", 7, UN}, {"", "Cos", 7, UN}, {"", "Tan", 7, UN},
    {"", "Asin", 7, UN}, {"", "Acos", 7, UN}, {"", "Atan", 7, UN}, {"", "Sinh", 9, UN}, {"", "Cosh", 9, UN},
    {"", "Asinh", 9, UN}, {"", "Acosh", 9, UN}, {"", "Atanh", 9, UN}, {"", "IsNaN", 9, UN}, {"", "IsInf", 10, UN},
    {"", "Not", 1, UN}, {"", "BitwiseNot", 18, UN},
};
const size_t seam_cpu_elementwise_count = sizeof(seam_cpu_elementwise) / sizeof(seam_cpu_elementwise[0]);
