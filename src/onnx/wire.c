/*
 * NodeProto and ValueInfoProto decoded by hand, for the common shapes.
 *
 * A million-node graph is a million NodeProtos and often hundreds of
 * thousands of typed ValueInfoProtos; protobuf-c's generic unpack (a scan
 * pass, descriptor lookups, a call per field) costs about 1,500
 * instructions a node. These decoders take one shape each, fill the same
 * structures protobuf-c would, with the same allocator, and give up
 * (return NULL) on anything else: a field they do not know, a singular
 * field given twice (protobuf merges or replaces), a packed list, a wire
 * type the schema does not allow, a varint longer than they read, bytes
 * that end early. The caller then unpacks the message with protobuf-c,
 * which stays the parser of record and reports malformed input.
 *
 * What they accept, protobuf-c accepts and decodes to the same values:
 * every field is read by wire_next (wire.h), which stays within
 * protobuf-c's limits on tags, lengths and varints; enums and int32 must
 * be below 128 (protobuf-c reads wider ones its own way).
 */
#include "onnx/wire.h"

#include <string.h>

static _Thread_local size_t n_by_hand, n_fallback;

void wire_counts(size_t *by_hand, size_t *by_protobuf_c) {
    *by_hand = n_by_hand;
    *by_protobuf_c = n_fallback;
}

void wire_count_fallback(void) { n_fallback++; }

static inline void *get(ProtobufCAllocator *a, size_t n) { return a->alloc(a->allocator_data, n); }

static char *str(ProtobufCAllocator *a, const wire_field *f) {
    char *s = get(a, f->len + 1);
    if (!s) return NULL;
    memcpy(s, f->data, f->len);
    s[f->len] = 0;
    return s;
}

/* protobuf-c leaves an empty byte field's data NULL. */
static bool bin(ProtobufCAllocator *a, const wire_field *f, ProtobufCBinaryData *out) {
    out->len = f->len;
    out->data = NULL;
    if (!f->len) return true;
    out->data = get(a, f->len);
    if (!out->data) return false;
    memcpy(out->data, f->data, f->len);
    return true;
}

/* Marks singular field `num` seen; false when it was already. */
static inline bool once(uint64_t *seen, uint32_t num) {
    uint64_t bit = (uint64_t)1 << (num & 63);
    if (*seen & bit) return false;
    *seen |= bit;
    return true;
}

/* Every field of a message: `wire r` over data, and f the current field.
 * The loop ends at the end (t == 0) or on bytes wire_next refuses (t < 0). */
#define FOR_EACH_FIELD(data, len)                          \
    wire r = {(data), (data) + (len)};                     \
    wire_field f = {0};                                    \
    int t;                                                 \
    while ((t = wire_next(&r, &f)) == 1)

/* ---- AttributeProto: name, doc, ref_attr_name, type, f, i, s, floats, ints, strings ---- */

static Onnx__AttributeProto *attr_proto(const uint8_t *data, size_t len, ProtobufCAllocator *a) {
    size_t n_floats = 0, n_ints = 0, n_strings = 0;
    uint64_t seen = 0;
    FOR_EACH_FIELD(data, len) {
        switch (f.num) {
        case 1: case 4: case 13: case 21:
            if (f.type != 2 || !once(&seen, f.num)) return NULL;
            break;
        case 9:
            if (f.type != 2) return NULL;
            n_strings++;
            break;
        case 2:
            if (f.type != 5 || !once(&seen, f.num)) return NULL;
            break;
        case 7:
            if (f.type != 5) return NULL;
            n_floats++;
            break;
        case 3:
            if (f.type != 0 || !once(&seen, f.num)) return NULL;
            break;
        case 8:
            if (f.type != 0) return NULL;
            n_ints++;
            break;
        case 20:
            if (f.type != 0 || !once(&seen, f.num) || f.v >= 0x80) return NULL;
            break;
        default: return NULL;
        }
    }
    if (t < 0) return NULL;
    Onnx__AttributeProto *ap = get(a, sizeof(*ap));
    if (!ap) return NULL;
    onnx__attribute_proto__init(ap);
    if (n_floats && !(ap->floats = get(a, sizeof(float) * n_floats))) return NULL;
    if (n_ints && !(ap->ints = get(a, sizeof(int64_t) * n_ints))) return NULL;
    if (n_strings && !(ap->strings = get(a, sizeof(ProtobufCBinaryData) * n_strings))) return NULL;
    r = (wire){data, data + len};
    while (wire_next(&r, &f) == 1) {
        switch (f.num) {
        case 1: case 13: case 21: {
            char *s = str(a, &f);
            if (!s) return NULL;
            if (f.num == 1) ap->name = s;
            else if (f.num == 13) ap->doc_string = s;
            else ap->ref_attr_name = s;
            break;
        }
        case 4:
            if (!bin(a, &f, &ap->s)) return NULL;
            ap->has_s = 1;
            break;
        case 9:
            if (!bin(a, &f, &ap->strings[ap->n_strings++])) return NULL;
            break;
        case 2:
            memcpy(&ap->f, f.data, 4);
            ap->has_f = 1;
            break;
        case 7: memcpy(&ap->floats[ap->n_floats++], f.data, 4); break;
        case 3:
            ap->i = (int64_t)f.v;
            ap->has_i = 1;
            break;
        case 8: ap->ints[ap->n_ints++] = (int64_t)f.v; break;
        default: /* 20 */
            ap->type = (Onnx__AttributeProto__AttributeType)f.v;
            ap->has_type = 1;
            break;
        }
    }
    return ap;
}

/* ---- NodeProto: input, output, name, op_type, domain, doc_string, attribute ---- */

/* The fields of one NodeProto, read once. */
#define NODE_FIELDS 32

Onnx__NodeProto *wire_node_proto(const uint8_t *data, size_t len, ProtobufCAllocator *a) {
    struct {
        uint32_t num;
        uint32_t len;
        const uint8_t *data;
    } fs[NODE_FIELDS];
    size_t n_f = 0, n_in = 0, n_out = 0, n_attr = 0, n_chars = 0;
    uint64_t seen = 0;
    FOR_EACH_FIELD(data, len) {
        if (f.type != 2 || n_f == NODE_FIELDS) return NULL;
        switch (f.num) {
        case 1: n_in++; break;
        case 2: n_out++; break;
        case 5: n_attr++; break;
        case 3: case 4: case 6: case 7:
            if (!once(&seen, f.num)) return NULL;
            break;
        default: return NULL;
        }
        if (f.num != 5) n_chars += f.len + 1;
        fs[n_f].num = f.num;
        fs[n_f].len = (uint32_t)f.len;
        fs[n_f++].data = f.data;
    }
    if (t < 0) return NULL;
    /* the node, its arrays and its strings in one block */
    char *block = get(a, sizeof(Onnx__NodeProto) + sizeof(void *) * (n_in + n_out + n_attr) + n_chars);
    if (!block) return NULL;
    Onnx__NodeProto *np = (Onnx__NodeProto *)block;
    onnx__node_proto__init(np);
    char **ptrs = (char **)(block + sizeof(*np));
    if (n_in) np->input = ptrs;
    if (n_out) np->output = ptrs + n_in;
    if (n_attr) np->attribute = (Onnx__AttributeProto **)(ptrs + n_in + n_out);
    char *chars = (char *)(ptrs + n_in + n_out + n_attr);
    for (size_t k = 0; k < n_f; k++) {
        if (fs[k].num == 5) {
            Onnx__AttributeProto *ap = attr_proto(fs[k].data, fs[k].len, a);
            if (!ap) return NULL;
            np->attribute[np->n_attribute++] = ap;
            continue;
        }
        char *s = chars;
        memcpy(s, fs[k].data, fs[k].len);
        s[fs[k].len] = 0;
        chars += fs[k].len + 1;
        switch (fs[k].num) {
        case 1: np->input[np->n_input++] = s; break;
        case 2: np->output[np->n_output++] = s; break;
        case 3: np->name = s; break;
        case 4: np->op_type = s; break;
        case 6: np->doc_string = s; break;
        default: np->domain = s; break; /* 7 */
        }
    }
    n_by_hand++;
    return np;
}

/* ---- ValueInfoProto with a tensor type ---- */

/* TensorShapeProto.Dimension: dim_value or dim_param, and denotation. */
static Onnx__TensorShapeProto__Dimension *dim_proto(const uint8_t *data, size_t len, ProtobufCAllocator *a) {
    Onnx__TensorShapeProto__Dimension *dm = get(a, sizeof(*dm));
    if (!dm) return NULL;
    onnx__tensor_shape_proto__dimension__init(dm);
    uint64_t seen = 0;
    FOR_EACH_FIELD(data, len) {
        if (f.num == 1) {
            if (f.type != 0 || dm->value_case) return NULL;
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = (int64_t)f.v;
        } else if (f.num == 2 || f.num == 3) {
            if (f.type != 2 || (f.num == 2 && dm->value_case) || !once(&seen, f.num)) return NULL;
            char *s = str(a, &f);
            if (!s) return NULL;
            if (f.num == 3) {
                dm->denotation = s;
            } else {
                dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                dm->dim_param = s;
            }
        } else {
            return NULL;
        }
    }
    return t < 0 ? NULL : dm;
}

static Onnx__TensorShapeProto *shape_proto(const uint8_t *data, size_t len, ProtobufCAllocator *a) {
    size_t n = 0;
    FOR_EACH_FIELD(data, len) {
        if (f.num != 1 || f.type != 2) return NULL;
        n++;
    }
    if (t < 0) return NULL;
    Onnx__TensorShapeProto *sh = get(a, sizeof(*sh));
    if (!sh) return NULL;
    onnx__tensor_shape_proto__init(sh);
    if (n && !(sh->dim = get(a, sizeof(*sh->dim) * n))) return NULL;
    r = (wire){data, data + len};
    while (wire_next(&r, &f) == 1)
        if (!(sh->dim[sh->n_dim++] = dim_proto(f.data, f.len, a))) return NULL;
    return sh;
}

/* TypeProto.Tensor: elem_type and shape. */
static Onnx__TypeProto__Tensor *tensor_type(const uint8_t *data, size_t len, ProtobufCAllocator *a) {
    Onnx__TypeProto__Tensor *tt = get(a, sizeof(*tt));
    if (!tt) return NULL;
    onnx__type_proto__tensor__init(tt);
    FOR_EACH_FIELD(data, len) {
        if (f.num == 1) {
            if (f.type != 0 || tt->has_elem_type || f.v >= 0x80) return NULL;
            tt->elem_type = (int32_t)f.v;
            tt->has_elem_type = 1;
        } else if (f.num == 2) {
            if (f.type != 2 || tt->shape || !(tt->shape = shape_proto(f.data, f.len, a))) return NULL;
        } else {
            return NULL;
        }
    }
    return t < 0 ? NULL : tt;
}

/* TypeProto: tensor_type and denotation. */
static Onnx__TypeProto *type_proto(const uint8_t *data, size_t len, ProtobufCAllocator *a) {
    Onnx__TypeProto *tp = get(a, sizeof(*tp));
    if (!tp) return NULL;
    onnx__type_proto__init(tp);
    FOR_EACH_FIELD(data, len) {
        if (f.type != 2) return NULL;
        if (f.num == 1) {
            if (tp->value_case || !(tp->tensor_type = tensor_type(f.data, f.len, a))) return NULL;
            tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        } else if (f.num == 6) {
            if (tp->denotation || !(tp->denotation = str(a, &f))) return NULL;
        } else {
            return NULL;
        }
    }
    return t < 0 ? NULL : tp;
}

Onnx__ValueInfoProto *wire_value_info(const uint8_t *data, size_t len, ProtobufCAllocator *a) {
    Onnx__ValueInfoProto *vi = get(a, sizeof(*vi));
    if (!vi) return NULL;
    onnx__value_info_proto__init(vi);
    FOR_EACH_FIELD(data, len) {
        if (f.type != 2) return NULL;
        if (f.num == 1) {
            if (vi->name || !(vi->name = str(a, &f))) return NULL;
        } else if (f.num == 2) {
            if (vi->type || !(vi->type = type_proto(f.data, f.len, a))) return NULL;
        } else if (f.num == 3) {
            if (vi->doc_string || !(vi->doc_string = str(a, &f))) return NULL;
        } else {
            return NULL;
        }
    }
    if (t < 0) return NULL;
    n_by_hand++;
    return vi;
}
