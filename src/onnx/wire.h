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

typedef struct wire {
    const uint8_t *p, *end;
} wire;

static inline bool read_varint(wire *w, uint64_t *v) {
    if (w->p < w->end && *w->p < 0x80) { /* most tags and lengths: one byte */
        *v = *w->p++;
        return true;
    }
    uint64_t x = 0;
    for (int shift = 0; shift < 64 && w->p < w->end; shift += 7) {
        uint8_t b = *w->p++;
        x |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

/* The next field of the message in w: its number and wire type, and for
 * length-delimited fields its bytes. 1: a field; 0: the end; -1: malformed
 * or a group. */
static inline int next_field(wire *w, uint32_t *num, uint32_t *type, const uint8_t **data, size_t *len) {
    if (w->p >= w->end) return 0;
    uint64_t tag, v;
    if (!read_varint(w, &tag) || tag >> 3 == 0 || tag >> 3 > UINT32_MAX) return -1;
    *num = (uint32_t)(tag >> 3);
    *type = (uint32_t)(tag & 7);
    *data = NULL;
    *len = 0;
    switch (*type) {
    case 0: return read_varint(w, &v) ? 1 : -1;
    case 1:
        if (w->end - w->p < 8) return -1;
        w->p += 8;
        return 1;
    case 5:
        if (w->end - w->p < 4) return -1;
        w->p += 4;
        return 1;
    case 2:
        if (!read_varint(w, &v) || v > (uint64_t)(w->end - w->p)) return -1;
        *data = w->p;
        *len = (size_t)v;
        w->p += v;
        return 1;
    default: return -1;
    }
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
