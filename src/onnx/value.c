/* Values of every ONNX type as files: TensorProto (every dtype, strings
 * included), SequenceProto and OptionalProto, read and written. These are onnx-data.proto's messages, which
 * Debian's libonnx-dev does not ship, so they are read field by field
 * (wire.h) with each TensorProto inside handed to seam_onnx_tensor_read,
 * and written the same way around protobuf-c's TensorProto. A map input
 * is refused by its declared type: no op seam runs takes one.
 *
 *   SequenceProto  1 name, 2 elem_type, 3 tensor_values, 4 sparse_tensor_values,
 *                  5 sequence_values, 6 map_values, 7 optional_values
 *   OptionalProto  1 name, 2 elem_type, 3 tensor_value, 4 sparse_tensor_value,
 *                  5 sequence_value, 6 map_value, 7 optional_value
 *   elem_type      0 undefined, 1 tensor, 2 sparse tensor, 3 sequence, 4 map, 5 optional */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"
#include "onnx/wire.h"

enum { ELEM_TENSOR = 1, ELEM_SPARSE = 2, ELEM_SEQUENCE = 3, ELEM_MAP = 4, ELEM_OPTIONAL = 5 };

static const char *elem_kind(uint32_t field) {
    switch (field) {
    case 3: return "tensors";
    case 4: return "sparse tensors";
    case 5: return "sequences";
    case 6: return "maps";
    default: return "optionals";
    }
}

/* Whether bytes are a well-formed message of fields 1..7 with SequenceProto's
 * and OptionalProto's wire types (1 a string, 2 a varint, 3..7 messages).
 * A TensorProto (dims as varints, fields up to 14) fails this. */
static bool container_shape(const uint8_t *p, size_t n) {
    wire w = {p, p + n};
    wire_field f = {0};
    int r;
    while ((r = wire_next(&w, &f)) == 1) {
        if (f.num < 1 || f.num > 7) return false;
        if (f.num == 2 ? f.type != 0 : f.type != 2) return false;
    }
    return r == 0;
}

/* bfloat16 tensors in ONNX's older test data (and numpy, which has no
 * bfloat16) come as uint16: the same bits, taken as the type declares. */
static void as_declared(seam_tensor *t, int32_t declared) {
    if (declared == SEAM_DTYPE_BFLOAT16 && t->dtype == SEAM_DTYPE_UINT16) t->dtype = SEAM_DTYPE_BFLOAT16;
}

static seam_status read_tensor(seam_context *ctx, const uint8_t *p, size_t n, const char *what, int32_t declared,
                               seam_tensor *t) {
    char *name = NULL;
    seam_status st = seam_onnx_tensor_read(ctx, p, n, what, t, &name);
    free(name);
    if (!st) as_declared(t, declared);
    return st;
}

/* A SequenceProto of tensors into t (a SEAM_VALUE_SEQUENCE owning its
 * elements). elem_type: the declared elements' dtype, or 0. */
static seam_status read_sequence(seam_context *ctx, const uint8_t *p, size_t n, const char *what, int32_t declared,
                                 seam_tensor *t) {
    *t = (seam_tensor){.dtype = SEAM_VALUE_SEQUENCE};
    if (!container_shape(p, n))
        return seam_error(ctx, SEAM_STATUS_PARSE_ERROR,
                          "%s: not a SequenceProto (malformed, or a TensorProto where the model takes a sequence)", what);
    int64_t count = 0;
    wire w = {p, p + n};
    wire_field f = {0};
    while (wire_next(&w, &f) == 1) {
        if (f.num >= 4)
            return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "%s: a sequence of %s; seam's sequences hold tensors",
                              what, elem_kind(f.num));
        if (f.num == 2 && f.v != ELEM_TENSOR && f.v != 0)
            return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "%s: a sequence of elem_type %llu; seam's sequences hold "
                              "tensors (1)", what, (unsigned long long)f.v);
        count += f.num == 3;
    }
    seam_tensor *els = calloc((size_t)count + 1, sizeof(seam_tensor));
    if (!els) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    t->data = els;
    t->elem = declared;
    w = (wire){p, p + n};
    char ew[512];
    for (int64_t i = 0; wire_next(&w, &f) == 1;) {
        if (f.num != 3) continue;
        snprintf(ew, sizeof(ew), "%s element %lld", what, (long long)i);
        seam_status st = read_tensor(ctx, f.data, f.len, ew, declared, &els[i]);
        if (!st && t->elem && els[i].dtype != t->elem)
            st = seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s is %s; the sequence holds %s", ew,
                            seam_dtype_name((seam_dtype)els[i].dtype), seam_dtype_name((seam_dtype)t->elem));
        if (st) {
            t->numel = i + (els[i].data != NULL);
            seam_value_free(t);
            return st;
        }
        if (!t->elem) t->elem = els[i].dtype;
        t->numel = ++i;
    }
    t->nbytes = (size_t)t->numel * sizeof(seam_tensor);
    return SEAM_STATUS_OK;
}

seam_status seam_onnx_value_read(seam_context *ctx, const void *bytes, size_t size, const char *what,
                                 const ir_type *type, seam_tensor *t) {
    memset(t, 0, sizeof(*t));
    const uint8_t *p = bytes;
    if (type && type->kind == IR_TYPE_MAP)
        return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "%s: the model takes a map here; no op seam runs takes one",
                          what);
    if (type && type->kind == IR_TYPE_SEQUENCE) {
        const ir_type *e = type->inner;
        return read_sequence(ctx, p, size, what, e && e->kind == IR_TYPE_TENSOR ? e->elem : 0, t);
    }
    if (!type || type->kind != IR_TYPE_OPTIONAL)
        return read_tensor(ctx, p, size, what, type && type->kind == IR_TYPE_TENSOR ? type->elem : 0, t);
    /* an OptionalProto; its value of the declared kind, or none */
    const ir_type *held = type->inner;
    if (!container_shape(p, size))
        return seam_error(ctx, SEAM_STATUS_PARSE_ERROR,
                          "%s: not an OptionalProto (malformed, or a TensorProto where the model takes an optional)",
                          what);
    wire w = {p, p + size};
    wire_field f = {0};
    while (wire_next(&w, &f) == 1) {
        if (f.num == 3) {
            if (held && held->kind == IR_TYPE_SEQUENCE)
                return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                                  "%s: the optional holds a tensor; the model's holds a sequence", what);
            return read_tensor(ctx, f.data, f.len, what, held && held->kind == IR_TYPE_TENSOR ? held->elem : 0, t);
        }
        if (f.num == 5) {
            if (held && held->kind != IR_TYPE_SEQUENCE && held->kind != IR_TYPE_NONE)
                return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                                  "%s: the optional holds a sequence; the model's holds a tensor", what);
            const ir_type *e = held ? held->inner : NULL;
            return read_sequence(ctx, f.data, f.len, what, e && e->kind == IR_TYPE_TENSOR ? e->elem : 0, t);
        }
        if (f.num == 4 || f.num == 6 || f.num == 7)
            return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "%s: an optional of %s; seam's optionals hold tensors or "
                              "sequences", what, f.num == 4 ? "a sparse tensor" : f.num == 6 ? "a map" : "an optional");
    }
    *t = (seam_tensor){.dtype = SEAM_VALUE_NONE};
    return SEAM_STATUS_OK;
}

seam_status seam_onnx_value_read_file(seam_context *ctx, const char *path, const ir_type *type, seam_tensor *t) {
    memset(t, 0, sizeof(*t));
    FILE *f = fopen(path, "rb");
    if (!f) return seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot open '%s'", path);
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            uint8_t *b = cap > ((size_t)1 << 40) ? NULL : realloc(buf, cap = cap ? cap * 2 : 1 << 16);
            if (!b) {
                free(buf);
                fclose(f);
                return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
            }
            buf = b;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    bool bad = ferror(f);
    fclose(f);
    seam_status st = bad ? seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot read '%s'", path)
                         : seam_onnx_value_read(ctx, buf, n, path, type, t);
    free(buf);
    return st;
}

/* ---- writing ---- */

typedef struct outbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} outbuf;

static void put(outbuf *b, const void *d, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put_varint(outbuf *b, uint64_t v) {
    uint8_t tmp[10];
    size_t k = 0;
    do {
        tmp[k] = (uint8_t)(v & 0x7F);
        v >>= 7;
        if (v) tmp[k] |= 0x80;
        k++;
    } while (v);
    put(b, tmp, k);
}

/* Field `num`, length-delimited: its key, its length, then (when d) its bytes. */
static void put_len(outbuf *b, uint32_t num, const void *d, size_t n) {
    put_varint(b, (uint64_t)num << 3 | 2);
    put_varint(b, n);
    if (d) put(b, d, n);
}

/* A TensorProto of t: raw_data, or string_data for strings. */
static void put_tensor(outbuf *b, const char *name, const seam_tensor *t) {
    Onnx__TensorProto tp;
    onnx__tensor_proto__init(&tp);
    tp.name = (char *)(name ? name : "");
    tp.has_data_type = 1;
    tp.data_type = t->dtype;
    tp.n_dims = (size_t)t->rank;
    tp.dims = (int64_t *)t->dims;
    ProtobufCBinaryData *strs = NULL;
    if (t->dtype == SEAM_DTYPE_STRING) {
        strs = calloc((size_t)t->numel + 1, sizeof(*strs));
        if (!strs) {
            b->oom = true;
            return;
        }
        const ir_bytes *s = t->data;
        for (int64_t i = 0; i < t->numel; i++) strs[i] = (ProtobufCBinaryData){s[i].len, (uint8_t *)s[i].data};
        tp.n_string_data = (size_t)t->numel;
        tp.string_data = strs;
    } else {
        tp.has_raw_data = 1;
        tp.raw_data = (ProtobufCBinaryData){t->nbytes, t->data};
    }
    size_t n = onnx__tensor_proto__get_packed_size(&tp);
    uint8_t *q = malloc(n ? n : 1);
    if (q) {
        onnx__tensor_proto__pack(&tp, q);
        put(b, q, n);
    } else {
        b->oom = true;
    }
    free(q);
    free(strs);
}

static void put_sequence(outbuf *b, const char *name, const seam_tensor *t) {
    if (name && name[0]) put_len(b, 1, name, strlen(name));
    put_varint(b, 2 << 3 | 0);
    put_varint(b, ELEM_TENSOR);
    const seam_tensor *els = t->data;
    for (int64_t i = 0; i < t->numel && !b->oom; i++) {
        outbuf e = {0};
        put_tensor(&e, NULL, &els[i]);
        if (e.oom) b->oom = true;
        else put_len(b, 3, e.p, e.n);
        free(e.p);
    }
}

seam_status seam_onnx_value_write(seam_context *ctx, const char *path, const char *name, const ir_type *type,
                                  const seam_tensor *t) {
    outbuf b = {0};
    bool optional = type && type->kind == IR_TYPE_OPTIONAL;
    if (!optional && t->dtype == SEAM_VALUE_NONE)
        return seam_error(ctx, SEAM_STATUS_INTERNAL, "%s: '%s' has no value but is not an optional", path, name);
    if (optional) {
        outbuf inner = {0};
        bool seq = t->dtype == SEAM_VALUE_SEQUENCE ||
                   (t->dtype == SEAM_VALUE_NONE && type->inner && type->inner->kind == IR_TYPE_SEQUENCE);
        if (name && name[0]) put_len(&b, 1, name, strlen(name));
        put_varint(&b, 2 << 3 | 0);
        put_varint(&b, seq ? ELEM_SEQUENCE : ELEM_TENSOR);
        if (t->dtype != SEAM_VALUE_NONE) {
            if (seq) put_sequence(&inner, NULL, t);
            else put_tensor(&inner, NULL, t);
            if (inner.oom) b.oom = true;
            else put_len(&b, seq ? 5 : 3, inner.p, inner.n);
        }
        free(inner.p);
    } else if (t->dtype == SEAM_VALUE_SEQUENCE) {
        put_sequence(&b, name, t);
    } else {
        put_tensor(&b, name, t);
    }
    if (b.oom) {
        free(b.p);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    seam_status st = onnx_write_atomic(ctx, path, b.p ? b.p : (const uint8_t *)"", b.n);
    free(b.p);
    return st;
}

seam_status seam_onnx_tensor_write(seam_context *ctx, const char *path, const char *name, const seam_tensor *t) {
    return seam_onnx_value_write(ctx, path, name, NULL, t);
}
