/* The protobuf wire format, read by hand where a big graph has a million
 * of the same small message (load.c, wire.c). protobuf-c stays the parser
 * of record: these readers only find field boundaries, or decode the
 * common shapes of NodeProto and ValueInfoProto and give up on anything
 * else, so that protobuf-c decodes it (and reports what is wrong). */
#ifndef SEAM_ONNX_WIRE_H
#define SEAM_ONNX_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx/onnx.pb-c.h"

/* A reader over one message's bytes. */
typedef struct wire {
    const uint8_t *p, *end;
} wire;

/* One field: its number and wire type; the value of a varint (v), the
 * bytes of a length-delimited field or of a fixed32/fixed64 (data, len). */
typedef struct wire_field {
    uint32_t num, type;
    const uint8_t *data;
    size_t len;
    uint64_t v;
} wire_field;

/* A varint of at most 10 bytes, with protobuf-c's truncation past 64
 * bits. */
static inline bool wire_varint(wire *w, uint64_t *v) {
    if (w->p < w->end && *w->p < 0x80) { /* most tags and lengths: one byte */
        *v = *w->p++;
        return true;
    }
    uint64_t x = 0;
    for (int shift = 0; shift < 70 && w->p < w->end; shift += 7) {
        uint8_t b = *w->p++;
        x |= shift < 64 ? (uint64_t)(b & 0x7F) << shift : 0;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

/* The next field of the message in w, read within protobuf-c's limits
 * (never past them: what this reader takes, protobuf-c reads the same):
 * a tag of at most 5 bytes with a field number above 0, a length of at
 * most 5 bytes and INT32_MAX, a varint of at most 10 bytes. 1: a field;
 * 0: the end; -1: malformed, a group, or beyond those limits. */
static inline int wire_next(wire *w, wire_field *f) {
    if (w->p >= w->end) return 0;
    /* most fields of a big graph: a one-byte tag of a length-delimited
     * field shorter than 128 bytes */
    if ((w->p[0] & 0x87) == 2 && w->p[0] >= 8 && w->end - w->p >= 2 && w->p[1] < 0x80 &&
        w->p[1] <= w->end - w->p - 2) {
        f->num = w->p[0] >> 3;
        f->type = 2;
        f->len = w->p[1];
        f->data = w->p + 2;
        w->p += 2 + f->len;
        return 1;
    }
    uint64_t tag;
    if (*w->p < 0x80) {
        tag = *w->p++;
    } else {
        const uint8_t *at = w->p;
        if (!wire_varint(w, &tag) || w->p - at > 5) return -1;
    }
    if (tag >> 3 == 0) return -1;
    f->num = (uint32_t)(tag >> 3);
    f->type = (uint32_t)(tag & 7);
    f->data = NULL;
    f->len = 0;
    switch (f->type) {
    case 0: return wire_varint(w, &f->v) ? 1 : -1;
    case 1:
    case 5: {
        size_t n = f->type == 1 ? 8 : 4;
        if ((size_t)(w->end - w->p) < n) return -1;
        f->data = w->p;
        f->len = n;
        w->p += n;
        return 1;
    }
    case 2: {
        const uint8_t *at = w->p;
        uint64_t n;
        if (!wire_varint(w, &n) || w->p - at > 5 || n > INT32_MAX || n > (uint64_t)(w->end - w->p)) return -1;
        f->data = w->p;
        f->len = (size_t)n;
        w->p += n;
        return 1;
    }
    default: return -1;
    }
}

/* wire_next for callers that want the parts: number, wire type, and the
 * bytes of a length-delimited field. */
static inline int next_field(wire *w, uint32_t *num, uint32_t *type, const uint8_t **data, size_t *len) {
    wire_field f;
    int r = wire_next(w, &f);
    if (r != 1) return r;
    *num = f.num;
    *type = f.type;
    *data = f.type == 2 ? f.data : NULL;
    *len = f.type == 2 ? f.len : 0;
    return 1;
}

/* The NodeProto or ValueInfoProto in data[0, len), decoded into structures
 * from `alloc` exactly as protobuf_c_message_unpack would decode it, when
 * it has the common shape: a node with string inputs and outputs and
 * attributes of the plain kinds (float, int, string and their lists), a
 * value with a tensor type. NULL for anything else, malformed bytes
 * included, and when alloc fails: the caller then unpacks it with
 * protobuf-c. */
Onnx__NodeProto *wire_node_proto(const uint8_t *data, size_t len, ProtobufCAllocator *alloc);
Onnx__ValueInfoProto *wire_value_info(const uint8_t *data, size_t len, ProtobufCAllocator *alloc);

/* How many messages this thread's loads decoded by hand and how many they
 * left to protobuf-c, since the thread started (for tests). */
void wire_counts(size_t *by_hand, size_t *by_protobuf_c);
void wire_count_fallback(void);

#endif
