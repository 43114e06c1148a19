/* The streamed top graph (node_src in load.h): the wire format of
 * ModelProto and GraphProto walked by tags and lengths, everything but the
 * graph's nodes, outputs and value_info unpacked by protobuf-c up front,
 * and each of those decoded when the conversion reaches it (wire.c for
 * the common shapes, protobuf-c otherwise) into a scratch reset after it;
 * the file's pages behind the walk given back. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/context.h"
#include "onnx/load.h"

#define RELEASE_STEP ((size_t)4 << 20)

static void release_behind(node_src *ns, const uint8_t *p) {
    if (!ns->release || p < ns->released || (size_t)(p - ns->released) < RELEASE_STEP) return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)ns->released + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t to = (uintptr_t)p & ~(uintptr_t)(page - 1);
    if (to > from) madvise((void *)from, to - from, MADV_DONTNEED);
    ns->released = p;
}

void node_src_rewind(node_src *ns) {
    ns->next = 0;
    ns->at = (wire){ns->bytes, ns->bytes + ns->len};
    ns->released = ns->bytes;
}

/* Unpacks the NodeProto at data into the node scratch: by hand when it
 * has the common shape (wire.c), else by protobuf-c. */
const Onnx__NodeProto *node_src_unpack(loader *L, node_src *ns, const uint8_t *data, size_t len, seam_status *st) {
    node_src_reset(ns);
    Onnx__NodeProto *np = wire_node_proto(data, len, &ns->alloc);
    if (!np) {
        node_src_reset(ns);
        ns->sc.oom = false; /* what protobuf-c meets decides the error */
        wire_count_fallback();
        np = onnx__node_proto__unpack(&ns->alloc, len, data);
    }
    if (!np) {
        *st = ns->sc.oom ? OOM(L)
                         : seam_error(L->ctx, SEAM_STATUS_PARSE_ERROR,
                                      "not an ONNX model: the protobuf is malformed or truncated");
        return NULL;
    }
    if (ns->sc.n_big) qsort(ns->sc.big, ns->sc.n_big, sizeof(void *), scratch_cmp_ptr);
    return np;
}

/* Frees what the last streamed node left in the scratch (big blocks the
 * model did not adopt) and makes it ready for the next. */
void node_src_reset(node_src *ns) {
    for (size_t k = 0; k < ns->sc.n_big; k++) free(ns->sc.big[k]);
    ns->sc.n_big = 0;
    seam_arena_reset(&ns->sc.arena);
}

/* Node ns->next, or NULL with *st set. */
const Onnx__NodeProto *node_src_next(loader *L, node_src *ns, seam_status *st) {
    size_t i = ns->next++;
    if (!ns->bytes) return ns->gp->node[i];
    uint32_t num, type;
    const uint8_t *data;
    size_t len;
    while (next_field(&ns->at, &num, &type, &data, &len) == 1) {
        if (num != 1) continue;
        release_behind(ns, data);
        ns->cur = data;
        ns->cur_len = len;
        return node_src_unpack(L, ns, data, len, st);
    }
    *st = seam_error(L->ctx, SEAM_STATUS_PARSE_ERROR, "not an ONNX model: the protobuf is malformed or truncated");
    return NULL;
}

/* Graph output k (value_info false) or value_info k of gp: from gp, or
 * when streamed decoded from its bytes into the node scratch, which the
 * next one reuses. NULL with *st set. */
const Onnx__ValueInfoProto *node_src_value_info(loader *L, node_src *ns, const Onnx__GraphProto *gp,
                                                bool value_info, size_t k, seam_status *st) {
    if (!ns->bytes) return value_info ? gp->value_info[k] : gp->output[k];
    span s = value_info ? ns->value_infos[k] : ns->outputs[k];
    node_src_reset(ns);
    const Onnx__ValueInfoProto *vi = wire_value_info(s.data, s.len, &ns->alloc);
    if (vi) return vi;
    node_src_reset(ns);
    ns->sc.oom = false;
    wire_count_fallback();
    vi = onnx__value_info_proto__unpack(&ns->alloc, s.len, s.data);
    if (!vi)
        *st = ns->sc.oom ? OOM(L)
                         : seam_error(L->ctx, SEAM_STATUS_PARSE_ERROR,
                                      "not an ONNX model: the protobuf is malformed or truncated");
    return vi;
}

/* Output count of the streamed NodeProto at data, for presizing. */
static size_t node_output_count(const uint8_t *data, size_t len) {
    /* most nodes: one-byte tags of length-delimited fields shorter than
     * 128 bytes */
    const uint8_t *p = data, *end = data + len;
    size_t n = 0;
    while (end - p >= 2 && p[0] < 0x80 && (p[0] & 7) == 2 && p[1] < 0x80) {
        n += p[0] == (2 << 3 | 2);
        p += 2 + p[1];
    }
    if (p == end) return n;
    wire w = {data, end};
    uint32_t num, type;
    const uint8_t *d;
    size_t l;
    n = 0;
    while (next_field(&w, &num, &type, &d, &l) == 1) n += num == 2 && type == 2;
    return n;
}

/* The top GraphProto at data without its nodes: every other field is
 * unpacked on its own into gp; the NodeProto, output and value_info fields
 * are left to ns (gp->n_output and n_value_info count them). false
 * when the bytes hold something the walk does not expect (the caller then
 * unpacks the whole model). */
static bool stream_graph(scratch *sc, ProtobufCAllocator *alloc, const uint8_t *data, size_t len,
                         Onnx__GraphProto **gp_out, node_src *ns, size_t *n_outputs) {
    const ProtobufCMessageDescriptor *desc = &onnx__graph_proto__descriptor;
    Onnx__GraphProto *gp = scratch_alloc(sc, sizeof(*gp));
    if (!gp) return false;
    onnx__graph_proto__init(gp);
    /* first pass: check the framing, count each repeated field */
    size_t count[32] = {0};
    size_t n_nodes = 0, n_out = 0;
    wire w = {data, data + len};
    uint32_t num, type;
    const uint8_t *d;
    size_t l;
    int r;
    while ((r = next_field(&w, &num, &type, &d, &l)) == 1) {
        if (num == 1 && type == 2) {
            n_nodes++;
            n_out += node_output_count(d, l);
            continue;
        }
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(desc, num);
        if (!f) continue; /* unknown to this schema: protobuf-c skips it too */
        if (type != 2 || num >= 32) return false;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            if (f->type != PROTOBUF_C_TYPE_MESSAGE) return false;
            count[num]++;
        } else if (f->type != PROTOBUF_C_TYPE_STRING) {
            return false;
        }
    }
    if (r < 0) return false;
    ns->outputs = count[12] ? scratch_alloc(sc, sizeof(span) * count[12]) : NULL;
    ns->value_infos = count[13] ? scratch_alloc(sc, sizeof(span) * count[13]) : NULL;
    if ((count[12] && !ns->outputs) || (count[13] && !ns->value_infos)) return false;
    for (unsigned k = 0; k < desc->n_fields; k++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[k];
        if (f->id == 1 || f->id == 12 || f->id == 13 || f->label != PROTOBUF_C_LABEL_REPEATED || !count[f->id])
            continue;
        void **arr = scratch_alloc(sc, sizeof(void *) * count[f->id]);
        if (!arr) return false;
        *(void ***)((char *)gp + f->offset) = arr;
    }
    /* second pass: unpack every field but the nodes */
    w = (wire){data, data + len};
    while (next_field(&w, &num, &type, &d, &l) == 1) {
        if (num == 1) continue;
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(desc, num);
        if (!f) continue;
        /* The counts come from the first walk: bytes that changed since
         * (a file written under the map) must not write past them. */
        if (num == 12 || num == 13) {
            size_t *n = num == 12 ? &gp->n_output : &gp->n_value_info;
            if (type != 2 || *n >= count[num]) return false;
            (num == 12 ? ns->outputs : ns->value_infos)[(*n)++] = (span){d, l};
        } else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t *n = (size_t *)((char *)gp + f->quantifier_offset);
            if (num >= 32 || type != 2 || f->type != PROTOBUF_C_TYPE_MESSAGE || *n >= count[num]) return false;
            ProtobufCMessage *msg = protobuf_c_message_unpack(f->descriptor, alloc, l, d);
            if (!msg) return false;
            (*(void ***)((char *)gp + f->offset))[(*n)++] = msg;
        } else {
            if (type != 2) return false;
            char *str = scratch_alloc(sc, l + 1);
            if (!str) return false;
            memcpy(str, d, l);
            str[l] = 0;
            *(char **)((char *)gp + f->offset) = str; /* the last one wins, as in protobuf */
        }
    }
    *gp_out = gp;
    ns->gp = gp;
    ns->bytes = data;
    ns->len = len;
    ns->n = n_nodes;
    *n_outputs = n_out;
    return true;
}

/* A ModelProto whose one graph field is streamed: everything else is
 * unpacked as one ModelProto (without the graph), the graph by
 * stream_graph. false when the layout is not the expected one. */
bool onnx_stream_model(scratch *sc, ProtobufCAllocator *alloc, const uint8_t *data, size_t size,
                       Onnx__ModelProto **mp_out, Onnx__GraphProto **gp_out, node_src *ns, size_t *n_outputs) {
    wire w = {data, data + size};
    uint32_t num, type;
    const uint8_t *d, *gdata = NULL, *field_start = data, *gstart = NULL, *gend = NULL;
    size_t l, glen = 0;
    int r, n_graph = 0;
    while ((r = next_field(&w, &num, &type, &d, &l)) == 1) {
        if (num == 7) {
            if (type != 2) return false;
            n_graph++;
            gdata = d;
            glen = l;
            gstart = field_start;
            gend = w.p;
        }
        field_start = w.p;
    }
    if (r < 0 || n_graph != 1) return false;
    size_t rest = size - (size_t)(gend - gstart);
    uint8_t *buf = malloc(rest ? rest : 1);
    if (!buf) return false;
    memcpy(buf, data, (size_t)(gstart - data));
    memcpy(buf + (gstart - data), gend, (size_t)(data + size - gend));
    Onnx__ModelProto *mp = onnx__model_proto__unpack(alloc, rest, buf);
    free(buf);
    if (!mp) return false;
    *mp_out = mp;
    return stream_graph(sc, alloc, gdata, glen, gp_out, ns, n_outputs);
}
