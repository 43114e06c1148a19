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
 * tags of one or two bytes (protobuf-c reads up to five), lengths of up to
 * four bytes (five), varints of up to ten bytes with the same truncation,
 * enums and int32 of one byte.
 */
#include "onnx/wire.h"

#include <string.h>

static _Thread_local size_t n_by_hand, n_fallback;

void wire_counts(size_t *by_hand, size_t *by_protobuf_c) {
    *by_hand = n_by_hand;
    *by_protobuf_c = n_fallback;
}

void wire_count_fallback(void) { n_fallback++; }

typedef struct rd {
    const uint8_t *p, *end;
} rd;

/* The next tag: 1 a field, 0 the end, -1 give up. */
static inline int rd_tag(rd *r, uint32_t *num, uint32_t *wt) {
    if (r->p >= r->end) return 0;
    uint32_t b0 = r->p[0];
    if (b0 < 0x80) {
        if (b0 < 8) return -1; /* field 0 */
        *num = b0 >> 3;
        *wt = b0 & 7;
        r->p++;
        return 1;
    }
    if (r->end - r->p < 2 || r->p[1] >= 0x80) return -1;
    *num = ((b0 & 0x7F) >> 3) | ((uint32_t)r->p[1] << 4);
    *wt = b0 & 7;
    r->p += 2;
    return 1;
}

/* The bytes of a length-delimited field whose tag was just read. */
static inline bool rd_bytes(rd *r, const uint8_t **d, size_t *n) {
    uint32_t v = 0;
    for (int k = 0; k < 4 && r->p < r->end; k++) {
        uint8_t b = *r->p++;
        v |= (uint32_t)(b & 0x7F) << (7 * k);
        if (!(b & 0x80)) {
            if (v > (size_t)(r->end - r->p)) return false;
            *d = r->p;
            *n = v;
            r->p += v;
            return true;
        }
    }
    return false;
}

/* A varint of up to ten bytes, as protobuf-c's parse_uint64 reads it. */
static inline bool rd_varint(rd *r, uint64_t *v) {
    wire w = {r->p, r->end};
    if (!read_varint(&w, v)) return false;
    r->p = w.p;
    return true;
}

/* A one-byte varint (enums, element types). */
static inline bool rd_small(rd *r, int32_t *v) {
    if (r->p >= r->end || *r->p >= 0x80) return false;
    *v = *r->p++;
    return true;
}

static inline void *get(ProtobufCAllocator *a, size_t n) { return a->alloc(a->allocator_data, n); }

static char *str(ProtobufCAllocator *a, const uint8_t *d, size_t n) {
    char *s = get(a, n + 1);
    if (!s) return NULL;
    memcpy(s, d, n);
    s[n] = 0;
    return s;
}

/* protobuf-c leaves an empty byte field's data NULL. */
static bool bin(ProtobufCAllocator *a, const uint8_t *d, size_t n, ProtobufCBinaryData *out) {
    out->len = n;
    out->data = NULL;
    if (!n) return true;
    out->data = get(a, n);
    if (!out->data) return false;
    memcpy(out->data, d, n);
    return true;
}

/* Marks singular field `num` seen; false when it was already. */
static inline bool once(uint64_t *seen, uint32_t num) {
    uint64_t bit = (uint64_t)1 << (num & 63);
    if (*seen & bit) return false;
    *seen |= bit;
    return true;
}

/* ---- AttributeProto: name, doc, ref_attr_name, type, f, i, s, floats, ints, strings ---- */

static Onnx__AttributeProto *attr_proto(const uint8_t *data, size_t len, ProtobufCAllocator *a) {
    size_t n_floats = 0, n_ints = 0, n_strings = 0;
    uint64_t seen = 0, v = 0;
    int32_t e = 0;
    uint32_t num, wt;
    const uint8_t *d = NULL;
    size_t l = 0;
    int t;
    rd r = {data, data + len};
    while ((t = rd_tag(&r, &num, &wt)) == 1) {
        switch (num) {
        case 1: case 4: case 13: case 21:
            if (wt != 2 || !once(&seen, num) || !rd_bytes(&r, &d, &l)) return NULL;
            break;
        case 9:
            if (wt != 2 || !rd_bytes(&r, &d, &l)) return NULL;
            n_strings++;
            break;
        case 2:
            if (wt != 5 || !once(&seen, num) || r.end - r.p < 4) return NULL;
            r.p += 4;
            break;
        case 7:
            if (wt != 5 || r.end - r.p < 4) return NULL;
            r.p += 4;
            n_floats++;
            break;
        case 3:
            if (wt != 0 || !once(&seen, num) || !rd_varint(&r, &v)) return NULL;
            break;
        case 8:
            if (wt != 0 || !rd_varint(&r, &v)) return NULL;
            n_ints++;
            break;
        case 20:
            if (wt != 0 || !once(&seen, num) || !rd_small(&r, &e)) return NULL;
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
    r = (rd){data, data + len};
    while (rd_tag(&r, &num, &wt) == 1) {
        switch (num) {
        case 1: case 13: case 21: {
            rd_bytes(&r, &d, &l);
            char *s = str(a, d, l);
            if (!s) return NULL;
            if (num == 1) ap->name = s;
            else if (num == 13) ap->doc_string = s;
            else ap->ref_attr_name = s;
            break;
        }
        case 4:
            rd_bytes(&r, &d, &l);
            if (!bin(a, d, l, &ap->s)) return NULL;
            ap->has_s = 1;
            break;
        case 9:
            rd_bytes(&r, &d, &l);
            if (!bin(a, d, l, &ap->strings[ap->n_strings++])) return NULL;
            break;
        case 2:
            memcpy(&ap->f, r.p, 4);
            r.p += 4;
            ap->has_f = 1;
            break;
        case 7:
            memcpy(&ap->floats[ap->n_floats++], r.p, 4);
            r.p += 4;
            break;
        case 3:
            rd_varint(&r, &v);
            ap->i = (int64_t)v;
            ap->has_i = 1;
            break;
        case 8:
            rd_varint(&r, &v);
            ap->ints[ap->n_ints++] = (int64_t)v;
            break;
        default: /* 20 */
            rd_small(&r, &e);
            ap->type = (Onnx__AttributeProto__AttributeType)e;
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
    } f[NODE_FIELDS];
    size_t n_f = 0, n_in = 0, n_out = 0, n_attr = 0, n_chars = 0;
    uint64_t seen = 0;
    uint32_t num, wt;
    const uint8_t *d = NULL;
    size_t l = 0;
    int t;
    rd r = {data, data + len};
    while ((t = rd_tag(&r, &num, &wt)) == 1) {
        if (wt != 2 || n_f == NODE_FIELDS || !rd_bytes(&r, &d, &l)) return NULL;
        switch (num) {
        case 1: n_in++; break;
        case 2: n_out++; break;
        case 5: n_attr++; break;
        case 3: case 4: case 6: case 7:
            if (!once(&seen, num)) return NULL;
            break;
        default: return NULL;
        }
        if (num != 5) n_chars += l + 1;
        f[n_f].num = num;
        f[n_f].len = (uint32_t)l;
        f[n_f++].data = d;
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
        if (f[k].num == 5) {
            Onnx__AttributeProto *ap = attr_proto(f[k].data, f[k].len, a);
            if (!ap) return NULL;
            np->attribute[np->n_attribute++] = ap;
            continue;
        }
        char *s = chars;
        memcpy(s, f[k].data, f[k].len);
        s[f[k].len] = 0;
        chars += f[k].len + 1;
        switch (f[k].num) {
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
    uint32_t num, wt;
    const uint8_t *d = NULL;
    size_t l = 0;
    uint64_t v = 0, seen = 0;
    int t;
    rd r = {data, data + len};
    while ((t = rd_tag(&r, &num, &wt)) == 1) {
        if (num == 1) {
            if (wt != 0 || dm->value_case || !rd_varint(&r, &v)) return NULL;
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = (int64_t)v;
        } else if (num == 2 || num == 3) {
            if (wt != 2 || (num == 2 && dm->value_case) || !once(&seen, num) || !rd_bytes(&r, &d, &l)) return NULL;
            char *s = str(a, d, l);
            if (!s) return NULL;
            if (num == 3) {
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
    uint32_t num, wt;
    const uint8_t *d = NULL;
    size_t l = 0, n = 0;
    int t;
    rd r = {data, data + len};
    while ((t = rd_tag(&r, &num, &wt)) == 1) {
        if (num != 1 || wt != 2 || !rd_bytes(&r, &d, &l)) return NULL;
        n++;
    }
    if (t < 0) return NULL;
    Onnx__TensorShapeProto *sh = get(a, sizeof(*sh));
    if (!sh) return NULL;
    onnx__tensor_shape_proto__init(sh);
    if (n && !(sh->dim = get(a, sizeof(*sh->dim) * n))) return NULL;
    r = (rd){data, data + len};
    while (rd_tag(&r, &num, &wt) == 1) {
        rd_bytes(&r, &d, &l);
        if (!(sh->dim[sh->n_dim++] = dim_proto(d, l, a))) return NULL;
    }
    return sh;
}

/* TypeProto.Tensor: elem_type and shape. */
static Onnx__TypeProto__Tensor *tensor_type(const uint8_t *data, size_t len, ProtobufCAllocator *a) {
    Onnx__TypeProto__Tensor *tt = get(a, sizeof(*tt));
    if (!tt) return NULL;
    onnx__type_proto__tensor__init(tt);
    uint32_t num, wt;
    const uint8_t *d = NULL;
    size_t l = 0;
    int t;
    rd r = {data, data + len};
    while ((t = rd_tag(&r, &num, &wt)) == 1) {
        if (num == 1) {
            if (wt != 0 || tt->has_elem_type || !rd_small(&r, &tt->elem_type)) return NULL;
            tt->has_elem_type = 1;
        } else if (num == 2) {
            if (wt != 2 || tt->shape || !rd_bytes(&r, &d, &l) || !(tt->shape = shape_proto(d, l, a))) return NULL;
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
    uint32_t num, wt;
    const uint8_t *d = NULL;
    size_t l = 0;
    int t;
    rd r = {data, data + len};
    while ((t = rd_tag(&r, &num, &wt)) == 1) {
        if (wt != 2 || !rd_bytes(&r, &d, &l)) return NULL;
        if (num == 1) {
            if (tp->value_case || !(tp->tensor_type = tensor_type(d, l, a))) return NULL;
            tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        } else if (num == 6) {
            if (tp->denotation || !(tp->denotation = str(a, d, l))) return NULL;
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
    uint32_t num, wt;
    const uint8_t *d = NULL;
    size_t l = 0;
    int t;
    rd r = {data, data + len};
    while ((t = rd_tag(&r, &num, &wt)) == 1) {
        if (wt != 2 || !rd_bytes(&r, &d, &l)) return NULL;
        if (num == 1) {
            if (vi->name || !(vi->name = str(a, d, l))) return NULL;
        } else if (num == 2) {
            if (vi->type || !(vi->type = type_proto(d, l, a))) return NULL;
        } else if (num == 3) {
            if (vi->doc_string || !(vi->doc_string = str(a, d, l))) return NULL;
        } else {
            return NULL;
        }
    }
    if (t < 0) return NULL;
    n_by_hand++;
    return vi;
}
