/* Op family: element-wise math and logic, with numpy broadcasting. */
#include <string.h>

#include "ops/infer.h"

/* Unary ops: the output is the input's type. */
static void infer_unary(seam_infer *ic) { infer_same_as_input(ic); }

/* Unary tests (IsNaN, IsInf): bool of the input's shape. */
static void infer_unary_bool(seam_infer *ic) {
    const ir_type *t = infer_in(ic, 0);
    if (!t) return;
    infer_set_tensor(ic, 0, SEAM_DTYPE_BOOL, t->kind == IR_TYPE_TENSOR ? t->rank : -1, t->dims);
}

/* Broadcasts inputs [first, n_inputs) into output 0 with dtype dt. */
static void broadcast_to(seam_infer *ic, int32_t first, int32_t dtype) {
    const ir_type *ts[16];
    int32_t n = 0;
    for (int32_t i = first; i < infer_n_inputs(ic) && n < 16; i++) ts[n++] = infer_in(ic, i);
    ir_dim out[INFER_MAX_RANK];
    int32_t rank = n ? infer_broadcast(ts, n, out) : -1;
    infer_set_tensor(ic, 0, dtype, rank, out);
}

/* Known small int64 constants are computed here too, so shape arithmetic
 * (Shape -> Gather -> Mul -> Concat -> Reshape) ends in a known shape. */
static void fold_int_binary(seam_infer *ic, char op) {
    int64_t a[64], b[64], r[64];
    int32_t na = infer_in_ints(ic, 0, a, 64), nb = infer_in_ints(ic, 1, b, 64);
    const ir_tensor *ta = infer_in_const(ic, 0), *tb = infer_in_const(ic, 1);
    if (na < 0 || nb < 0 || !ta || !tb || ta->dtype != tb->dtype) return;
    /* only scalar/same-shape/1-element broadcasting, which shape math uses */
    const ir_tensor *big = na >= nb ? ta : tb;
    if (!(na == nb || na == 1 || nb == 1)) return;
    int32_t n = na > nb ? na : nb;
    for (int32_t k = 0; k < n; k++) {
        int64_t x = a[na == 1 ? 0 : k], y = b[nb == 1 ? 0 : k];
        switch (op) {
        case '+': r[k] = x + y; break;
        case '-': r[k] = x - y; break;
        case '*': r[k] = x * y; break;
        case '/':
            if (y == 0) return;
            r[k] = x / y;
            break;
        default: return;
        }
    }
    if (ta->dtype == SEAM_DTYPE_INT64) {
        infer_set_const(ic, 0, SEAM_DTYPE_INT64, big->rank, big->dims, r);
    } else if (ta->dtype == SEAM_DTYPE_INT32) {
        int32_t r32[64];
        for (int32_t k = 0; k < n; k++) r32[k] = (int32_t)r[k];
        infer_set_const(ic, 0, SEAM_DTYPE_INT32, big->rank, big->dims, r32);
    }
}

static void infer_arith(seam_infer *ic) {
    broadcast_to(ic, 0, infer_in_dtype(ic, 0));
    const char *op = ic->n->op_type;
    char c = !strcmp(op, "Add") ? '+' : !strcmp(op, "Sub") ? '-' : !strcmp(op, "Mul") ? '*' : !strcmp(op, "Div") ? '/' : 0;
    if (c && infer_n_inputs(ic) == 2) fold_int_binary(ic, c);
}

/* Comparisons and logic: bool of the broadcast shape. */
static void infer_compare(seam_infer *ic) {
    broadcast_to(ic, 0, SEAM_DTYPE_BOOL);
    int64_t a[64], b[64];
    uint8_t r[64];
    int32_t na = infer_in_ints(ic, 0, a, 64), nb = infer_in_ints(ic, 1, b, 64);
    const ir_tensor *ta = infer_in_const(ic, 0), *tb = infer_in_const(ic, 1);
    if (strcmp(ic->n->op_type, "Equal") != 0 || na < 0 || nb < 0 || !(na == nb || na == 1 || nb == 1)) return;
    const ir_tensor *big = na >= nb ? ta : tb;
    int32_t n = na > nb ? na : nb;
    for (int32_t k = 0; k < n; k++) r[k] = a[na == 1 ? 0 : k] == b[nb == 1 ? 0 : k];
    infer_set_const(ic, 0, SEAM_DTYPE_BOOL, big->rank, big->dims, r);
}

static void infer_variadic(seam_infer *ic) { broadcast_to(ic, 0, infer_in_dtype(ic, 0)); }

/* Not and the bitwise complement keep the input's type. */
static void infer_not(seam_infer *ic) { infer_same_as_input(ic); }

const seam_op_def seam_ops_elementwise[] = {
    {"", "Add", 1, infer_arith},
    {"", "Sub", 1, infer_arith},
    {"", "Mul", 1, infer_arith},
    {"", "Div", 1, infer_arith},
    {"", "Pow", 1, infer_arith},
    {"", "Mod", 10, infer_arith},
    {"", "BitShift", 11, infer_arith},
    {"", "BitwiseAnd", 18, infer_arith},
    {"", "BitwiseOr", 18, infer_arith},
    {"", "BitwiseXor", 18, infer_arith},
    {"", "BitwiseNot", 18, infer_not},
    {"", "Max", 1, infer_variadic},
    {"", "Min", 1, infer_variadic},
    {"", "Sum", 1, infer_variadic},
    {"", "Mean", 1, infer_variadic},
    {"", "Equal", 1, infer_compare},
    {"", "Less", 1, infer_compare},
    {"", "Greater", 1, infer_compare},
    {"", "LessOrEqual", 12, infer_compare},
    {"", "GreaterOrEqual", 12, infer_compare},
    {"", "And", 1, infer_compare},
    {"", "Or", 1, infer_compare},
    {"", "Xor", 1, infer_compare},
    {"", "Not", 1, infer_not},
    {"", "Neg", 1, infer_unary},
    {"", "Abs", 1, infer_unary},
    {"", "Sqrt", 1, infer_unary},
    {"", "Exp", 1, infer_unary},
    {"", "Log", 1, infer_unary},
    {"", "Reciprocal", 1, infer_unary},
    {"", "Floor", 1, infer_unary},
    {"", "Ceil", 1, infer_unary},
    {"", "Round", 11, infer_unary},
    {"", "Sign", 9, infer_unary},
    {"", "Erf", 9, infer_unary},
    {"", "Sin", 7, infer_unary},
    {"", "Cos", 7, infer_unary},
    {"", "Tan", 7, infer_unary},
    {"", "Asin", 7, infer_unary},
    {"", "Acos", 7, infer_unary},
    {"", "Atan", 7, infer_unary},
    {"", "Sinh", 9, infer_unary},
    {"", "Cosh", 9, infer_unary},
    {"", "Asinh", 9, infer_unary},
    {"", "Acosh", 9, infer_unary},
    {"", "Atanh", 9, infer_unary},
    {"", "IsNaN", 9, infer_unary_bool},
    {"", "IsInf", 10, infer_unary_bool},
};
const size_t seam_ops_elementwise_count = sizeof(seam_ops_elementwise) / sizeof(seam_ops_elementwise[0]);
