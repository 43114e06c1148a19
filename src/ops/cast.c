/* Op family: casts, Shape, Size, ConstantOfShape, Constant and the random
 * generators. Shape and Size produce known constants whenever the dims
 * they read are known, which is what makes torch's shape arithmetic
 * foldable. */
#include <string.h>

#include "ops/infer.h"

static void infer_cast(seam_infer *ic) {
    int32_t to = (int32_t)node_attr_int(ic->n, "to", 0);
    const ir_type *t = infer_in(ic, 0);
    if (!ir_dtype_valid(to)) return;
    infer_set_tensor(ic, 0, to, t && t->kind == IR_TYPE_TENSOR ? t->rank : -1, t ? t->dims : NULL);
    /* integer constants stay known through integer casts */
    int64_t v[64];
    const ir_tensor *c = infer_in_const(ic, 0);
    int32_t n = infer_in_ints(ic, 0, v, 64);
    if (n < 0 || !c) return;
    if (to == SEAM_DTYPE_INT64) {
        infer_set_const(ic, 0, to, c->rank, c->dims, v);
    } else if (to == SEAM_DTYPE_INT32) {
        int32_t w[64];
        for (int32_t k = 0; k < n; k++) w[k] = (int32_t)v[k];
        infer_set_const(ic, 0, to, c->rank, c->dims, w);
    }
}

static void infer_castlike(seam_infer *ic) {
    const ir_type *t = infer_in(ic, 0);
    int32_t to = infer_in_dtype(ic, 1);
    infer_set_tensor(ic, 0, to, t && t->kind == IR_TYPE_TENSOR ? t->rank : -1, t ? t->dims : NULL);
}

static void infer_shape(seam_infer *ic) {
    const ir_type *t = infer_in(ic, 0);
    int32_t rank = t && t->kind == IR_TYPE_TENSOR ? t->rank : -1;
    if (rank < 0) {
        infer_set_tensor_i64(ic, 0, SEAM_DTYPE_INT64, 1, (int64_t[]){-1});
        return;
    }
    int64_t start = node_attr_int(ic->n, "start", 0), end = node_attr_int(ic->n, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    if (start < 0) start = 0;
    if (end > rank) end = rank;
    int64_t len = end > start ? end - start : 0;
    bool known = true;
    int64_t vals[INFER_MAX_RANK];
    for (int64_t k = 0; k < len; k++) {
        vals[k] = t->dims[start + k].v;
        known &= vals[k] >= 0;
    }
    if (known) infer_set_const(ic, 0, SEAM_DTYPE_INT64, 1, &len, vals);
    else infer_set_tensor_i64(ic, 0, SEAM_DTYPE_INT64, 1, &len);
}

static void infer_size(seam_infer *ic) {
    const ir_type *t = infer_in(ic, 0);
    int64_t n = 1;
    bool known = t && t->kind == IR_TYPE_TENSOR && t->rank >= 0;
    for (int32_t k = 0; known && k < t->rank; k++) {
        known = t->dims[k].v >= 0 && (t->dims[k].v == 0 || n <= IR_MAX_NUMEL / t->dims[k].v);
        if (known) n *= t->dims[k].v;
    }
    if (known) infer_set_const(ic, 0, SEAM_DTYPE_INT64, 0, NULL, &n);
    else infer_set_tensor(ic, 0, SEAM_DTYPE_INT64, 0, NULL);
}

static void infer_constant_of_shape(seam_infer *ic) {
    const ir_attr *v = node_attr(ic->n, "value");
    int32_t dtype = v && v->kind == IR_ATTR_TENSOR && v->t ? v->t->dtype : SEAM_DTYPE_FLOAT32;
    int64_t dims[INFER_MAX_RANK];
    int32_t rank = infer_in_ints(ic, 0, dims, INFER_MAX_RANK);
    if (rank < 0) {
        const ir_type *s = infer_in(ic, 0);
        int64_t r = s && s->kind == IR_TYPE_TENSOR && s->rank == 1 ? s->dims[0].v : -1;
        if (r >= 0 && r <= INFER_MAX_RANK) {
            for (int32_t k = 0; k < r; k++) dims[k] = -1;
            infer_set_tensor_i64(ic, 0, dtype, (int32_t)r, dims);
        } else {
            infer_set_dtype(ic, 0, dtype);
        }
        return;
    }
    for (int32_t k = 0; k < rank; k++)
        if (dims[k] < 0) return; /* invalid: leave it unknown */
    infer_set_tensor_i64(ic, 0, dtype, rank, dims);
    /* small integer fills are shape material too */
    int64_t n = ir_numel(dims, rank);
    if (n >= 0 && n <= 64 && v && v->t && v->t->numel == 1 &&
        (dtype == SEAM_DTYPE_INT64 || dtype == SEAM_DTYPE_INT32)) {
        int64_t buf[64];
        size_t es = seam_dtype_size(dtype);
        for (int64_t k = 0; k < n; k++) memcpy((char *)buf + (size_t)k * es, v->t->data, es);
        infer_set_const(ic, 0, dtype, rank, dims, buf);
    }
}

static void infer_constant(seam_infer *ic) {
    const ir_node *n = ic->n;
    for (int32_t a = 0; a < n->n_attrs; a++) {
        const ir_attr *at = &n->attrs[a];
        if (strcmp(at->name, "value") == 0 && at->kind == IR_ATTR_TENSOR && at->t) {
            const ir_tensor *t = at->t;
            if (t->rank > INFER_MAX_RANK) return;
            infer_set_tensor_i64(ic, 0, t->dtype, t->rank, t->dims);
            if (infer_has_output(ic, 0)) ic->g->values[n->outputs[0]].konst = t;
        } else if (strcmp(at->name, "value_float") == 0) {
            infer_set_const(ic, 0, SEAM_DTYPE_FLOAT32, 0, NULL, &at->f);
        } else if (strcmp(at->name, "value_int") == 0) {
            infer_set_const(ic, 0, SEAM_DTYPE_INT64, 0, NULL, &at->i);
        } else if (strcmp(at->name, "value_floats") == 0) {
            int64_t d = at->n;
            infer_set_const(ic, 0, SEAM_DTYPE_FLOAT32, 1, &d, at->floats);
        } else if (strcmp(at->name, "value_ints") == 0) {
            int64_t d = at->n;
            infer_set_const(ic, 0, SEAM_DTYPE_INT64, 1, &d, at->ints);
        } else if (strcmp(at->name, "value_string") == 0) {
            infer_set_tensor(ic, 0, SEAM_DTYPE_STRING, 0, NULL);
        } else if (strcmp(at->name, "value_strings") == 0) {
            int64_t d = at->n;
            infer_set_tensor_i64(ic, 0, SEAM_DTYPE_STRING, 1, &d);
        } else if (strcmp(at->name, "sparse_value") == 0 && at->kind == IR_ATTR_SPARSE_TENSOR && at->sparse &&
                   at->sparse->values) {
            infer_set_tensor_i64(ic, 0, at->sparse->values->dtype, at->sparse->rank <= INFER_MAX_RANK ? at->sparse->rank : -1,
                                 at->sparse->dims);
        }
    }
}

/* EyeLike, RandomNormalLike, RandomUniformLike, Bernoulli: the input's
 * shape, the `dtype` attribute or else the input's dtype. */
static void infer_like(seam_infer *ic) {
    const ir_type *t = infer_in(ic, 0);
    int32_t dt = (int32_t)node_attr_int(ic->n, "dtype", infer_in_dtype(ic, 0));
    infer_set_tensor(ic, 0, dt, t && t->kind == IR_TYPE_TENSOR ? t->rank : -1, t ? t->dims : NULL);
}

/* RandomNormal, RandomUniform: `shape` and `dtype` attributes. */
static void infer_random(seam_infer *ic) {
    const int64_t *shape;
    int32_t n = node_attr_ints(ic->n, "shape", &shape);
    int32_t dt = (int32_t)node_attr_int(ic->n, "dtype", SEAM_DTYPE_FLOAT32);
    if (n >= 0 && n <= INFER_MAX_RANK) infer_set_tensor_i64(ic, 0, dt, n, shape);
    else infer_set_dtype(ic, 0, dt);
}

const seam_op_def seam_ops_cast[] = {
    {"", "Cast", 1, infer_cast},
    {"", "CastLike", 15, infer_castlike},
    {"", "Shape", 1, infer_shape},
    {"", "Size", 1, infer_size},
    {"", "ConstantOfShape", 9, infer_constant_of_shape},
    {"", "Constant", 1, infer_constant},
    {"", "EyeLike", 9, infer_like},
    {"", "RandomNormalLike", 1, infer_like},
    {"", "RandomUniformLike", 1, infer_like},
    {"", "Bernoulli", 15, infer_like},
    {"", "RandomNormal", 1, infer_random},
    {"", "RandomUniform", 1, infer_random},
};
const size_t seam_ops_cast_count = sizeof(seam_ops_cast) / sizeof(seam_ops_cast[0]);
