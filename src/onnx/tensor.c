/* TensorProto -> ir_tensor: dims checked, the data from raw_data (big
 * blocks adopted from protobuf-c's copy, not copied again), the typed
 * fields, or external data (external.c); sparse tensors; and one
 * TensorProto file on its own (seam_onnx_tensor_read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "onnx/load.h"
#include "onnx/onnx.h"

/* Checks that a tensor's dims are sane; errors name "<what> '<name>'". */
static seam_status check_dims(loader *L, const int64_t *dims, size_t n, const char *what, const char *name,
                              int64_t *numel) {
    if (n > 64) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s '%s' has an absurd rank %zu", what, name, n);
    for (size_t k = 0; k < n; k++) {
        if (dims[k] < 0)
            return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s '%s' has a negative dimension %lld at axis %zu",
                              what, name, (long long)dims[k], k);
        if (dims[k] > IR_MAX_DIM)
            return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s '%s' has an absurd dimension %lld at axis %zu",
                              what, name, (long long)dims[k], k);
    }
    *numel = ir_numel(dims, (int32_t)n);
    if (*numel < 0)
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s '%s' has an absurd element count (dims overflow)",
                          what, name);
    return SEAM_STATUS_OK;
}

/* Buffer for n bytes of tensor data: the model's arena when small, an
 * owned malloc block when big. */
void *onnx_tensor_buf(loader *L, size_t n) {
    if (n < BIG_BLOCK) return seam_arena_alloc(L->a, n ? n : 1);
    void *p = malloc(n);
    if (p && !ir_model_own(L->m, p)) {
        free(p);
        return NULL;
    }
    return p;
}

/* Copies a typed field into packed little-endian data. `count` is the
 * number of entries in the field, `per` how many entries make an element
 * (2 for complex). */
static seam_status typed_count(loader *L, const ir_tensor *t, size_t count, size_t per) {
    if ((uint64_t)count != (uint64_t)t->numel * per)
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                          "initializer '%s' has %zu values but its dims %s %lld elements", t->name, count,
                          "hold", (long long)t->numel);
    return SEAM_STATUS_OK;
}

static seam_status convert_typed(loader *L, const Onnx__TensorProto *tp, ir_tensor *t) {
    seam_status st;
    size_t n = (size_t)t->numel;
    switch (t->dtype) {
    case SEAM_DTYPE_FLOAT32:
    case SEAM_DTYPE_COMPLEX64: {
        size_t per = t->dtype == SEAM_DTYPE_COMPLEX64 ? 2 : 1;
        if ((st = typed_count(L, t, tp->n_float_data, per))) return st;
        t->data = onnx_tensor_buf(L, t->nbytes);
        if (!t->data) return OOM(L);
        if (t->nbytes) memcpy(t->data, tp->float_data, t->nbytes);
        return SEAM_STATUS_OK;
    }
    case SEAM_DTYPE_FLOAT64:
    case SEAM_DTYPE_COMPLEX128: {
        size_t per = t->dtype == SEAM_DTYPE_COMPLEX128 ? 2 : 1;
        if ((st = typed_count(L, t, tp->n_double_data, per))) return st;
        t->data = onnx_tensor_buf(L, t->nbytes);
        if (!t->data) return OOM(L);
        if (t->nbytes) memcpy(t->data, tp->double_data, t->nbytes);
        return SEAM_STATUS_OK;
    }
    case SEAM_DTYPE_INT64:
        if ((st = typed_count(L, t, tp->n_int64_data, 1))) return st;
        t->data = onnx_tensor_buf(L, t->nbytes);
        if (!t->data) return OOM(L);
        if (t->nbytes) memcpy(t->data, tp->int64_data, t->nbytes);
        return SEAM_STATUS_OK;
    case SEAM_DTYPE_UINT32:
    case SEAM_DTYPE_UINT64: {
        if ((st = typed_count(L, t, tp->n_uint64_data, 1))) return st;
        t->data = onnx_tensor_buf(L, t->nbytes);
        if (!t->data) return OOM(L);
        for (size_t k = 0; k < n; k++) {
            if (t->dtype == SEAM_DTYPE_UINT64) ((uint64_t *)t->data)[k] = tp->uint64_data[k];
            else ((uint32_t *)t->data)[k] = (uint32_t)tp->uint64_data[k];
        }
        return SEAM_STATUS_OK;
    }
    case SEAM_DTYPE_STRING: {
        if ((st = typed_count(L, t, tp->n_string_data, 1))) return st;
        ir_bytes *b = seam_arena_calloc(L->a, n ? n : 1, sizeof(ir_bytes));
        if (!b) return OOM(L);
        for (size_t k = 0; k < n; k++) {
            b[k].len = tp->string_data[k].len;
            b[k].data = seam_arena_memdup(L->a, tp->string_data[k].data, b[k].len);
            if (!b[k].data) return OOM(L);
        }
        t->data = b;
        return SEAM_STATUS_OK;
    }
    default: /* everything else narrower than 32 bits, plus int32, lives in int32_data */
        if ((st = typed_count(L, t, tp->n_int32_data, 1))) return st;
        t->data = onnx_tensor_buf(L, t->nbytes);
        if (!t->data) return OOM(L);
        for (size_t k = 0; k < n; k++) {
            int32_t v = tp->int32_data[k];
            switch (seam_dtype_size(t->dtype)) {
            case 1: ((uint8_t *)t->data)[k] = (uint8_t)v; break;
            case 2: ((uint16_t *)t->data)[k] = (uint16_t)v; break;
            default: ((int32_t *)t->data)[k] = v; break;
            }
        }
        return SEAM_STATUS_OK;
    }
}

seam_status onnx_convert_tensor(loader *L, const Onnx__TensorProto *tp, const char *what, ir_tensor **out) {
    ir_tensor *t = seam_arena_calloc(L->a, 1, sizeof(*t));
    if (!t) return OOM(L);
    *out = t;
    t->name = dup_str(L, tp->name);
    t->doc = dup_str(L, tp->doc_string);
    /* The label is made only when there is an error to report. */
    char lb[512];
#define LABEL (snprintf(lb, sizeof(lb), "%s '%s'", what, t->name), lb)
    if (!tp->has_data_type || !ir_dtype_valid(tp->data_type))
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s has an unknown element type %d", LABEL,
                          tp->has_data_type ? tp->data_type : 0);
    t->dtype = tp->data_type;
    seam_status st = check_dims(L, tp->dims, tp->n_dims, what, t->name, &t->numel);
    if (st) return st;
    t->rank = (int32_t)tp->n_dims;
    t->dims = seam_arena_memdup(L->a, tp->dims, sizeof(int64_t) * tp->n_dims);
    if (!t->dims) return OOM(L);
    size_t es = seam_dtype_size(t->dtype);
    if (es && (uint64_t)t->numel > SIZE_MAX / es)
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s is too big", LABEL);
    t->nbytes = (size_t)t->numel * es;
    if (tp->segment)
        return seam_error(L->ctx, SEAM_STATUS_UNSUPPORTED, "%s is segmented; seam does not read segmented tensors", LABEL);
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if (t->dtype == SEAM_DTYPE_STRING)
            return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s: string tensors cannot use external data", LABEL);
        return onnx_read_external(L, tp, t, t->nbytes);
    }
    if (tp->has_raw_data && t->dtype != SEAM_DTYPE_STRING) {
        if (tp->raw_data.len != t->nbytes)
            return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                              "%s has %zu bytes of data but its dims and type need %zu", LABEL,
                              tp->raw_data.len, t->nbytes);
        if (t->nbytes >= BIG_BLOCK && scratch_adopt(L->sc, tp->raw_data.data)) {
            if (!ir_model_own(L->m, tp->raw_data.data)) {
                free(tp->raw_data.data);
                return OOM(L);
            }
            t->data = tp->raw_data.data;
        } else {
            t->data = onnx_tensor_buf(L, t->nbytes);
            if (!t->data) return OOM(L);
            if (t->nbytes) memcpy(t->data, tp->raw_data.data, t->nbytes);
        }
        return SEAM_STATUS_OK;
    }
    return convert_typed(L, tp, t);
}
#undef LABEL

seam_status onnx_convert_sparse(loader *L, const Onnx__SparseTensorProto *sp, const char *what, ir_sparse_tensor **out) {
    ir_sparse_tensor *s = seam_arena_calloc(L->a, 1, sizeof(*s));
    if (!s) return OOM(L);
    *out = s;
    if (!sp->values) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "%s: sparse tensor without values", what);
    seam_status st = onnx_convert_tensor(L, sp->values, what, &s->values);
    if (!st && sp->indices) st = onnx_convert_tensor(L, sp->indices, what, &s->indices);
    if (st) return st;
    int64_t numel;
    if ((st = check_dims(L, sp->dims, sp->n_dims, what, "dims", &numel))) return st;
    s->rank = (int32_t)sp->n_dims;
    s->dims = seam_arena_memdup(L->a, sp->dims, sizeof(int64_t) * sp->n_dims);
    return s->dims ? SEAM_STATUS_OK : OOM(L);
}

seam_status seam_onnx_tensor_read(seam_context *ctx, const void *bytes, size_t size, const char *what, seam_tensor *t,
                                  char **name_out) {
    memset(t, 0, sizeof(*t));
    *name_out = NULL;
    struct seam_model *m = calloc(1, sizeof(*m));
    if (!m) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    m->ctx = ctx;
    seam_arena_init(&m->arena, 1 << 16);
    scratch sc = {0};
    seam_arena_init(&sc.arena, 1 << 16);
    ProtobufCAllocator alloc = {scratch_alloc, scratch_free, &sc};
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&alloc, size, bytes);
    seam_status st;
    ir_tensor *x = NULL;
    if (!tp) {
        st = seam_error(ctx, SEAM_STATUS_PARSE_ERROR, "%s: not a TensorProto (malformed or truncated)", what);
    } else {
        if (sc.n_big) qsort(sc.big, sc.n_big, sizeof(void *), scratch_cmp_ptr);
        loader L = {ctx, m, &m->arena, &sc, NULL, NULL, NULL, 0, 0, 0, {0}, {0}};
        seam_arena_init(&L.tmp, (size_t)1 << 12);
        st = onnx_convert_tensor(&L, tp, "tensor", &x);
        if (!st && x->rank > SEAM_MAX_RANK)
            st = seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "%s: rank %d is above %d", what, x->rank, SEAM_MAX_RANK);
    }
    size_t text = 0; /* a string tensor: its ir_bytes, then their bytes, in one block */
    if (!st && x->dtype == SEAM_DTYPE_STRING) {
        x->nbytes = (size_t)x->numel * sizeof(ir_bytes);
        for (int64_t i = 0; i < x->numel; i++) text += ((const ir_bytes *)x->data)[i].len;
    }
    if (!st) {
        t->data = malloc(x->nbytes + text + 1);
        *name_out = strdup(x->name);
        if (!t->data || !*name_out) {
            free(t->data);
            free(*name_out);
            t->data = NULL;
            *name_out = NULL;
            st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        } else {
            if (x->nbytes) memcpy(t->data, x->data, x->nbytes);
            if (x->dtype == SEAM_DTYPE_STRING) {
                ir_bytes *b = t->data;
                uint8_t *at = (uint8_t *)t->data + x->nbytes;
                for (int64_t i = 0; i < x->numel; i++) {
                    if (b[i].len) memcpy(at, b[i].data, b[i].len);
                    b[i].data = at;
                    at += b[i].len;
                }
            }
            t->dtype = x->dtype;
            t->rank = x->rank;
            for (int32_t d = 0; d < x->rank; d++) t->dims[d] = x->dims[d];
            t->numel = x->numel;
            t->nbytes = x->nbytes;
        }
    } else if (tp) {
        seam_error_prefix(ctx, "%s", what);
    }
    scratch_release(&sc);
    seam_model_free(m);
    return st;
}
