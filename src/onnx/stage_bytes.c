/* onnx_stage_bytes and onnx_peek_metadata (stage_bytes.h): ModelProto and
 * GraphProto walked field by field (wire.h); fields kept are copied as
 * they are, fields dropped are skipped by their lengths, so the weights of
 * other stages are never read (with inline weights, never paged in beyond
 * the page a tensor's header sits on; with external data, never opened by
 * the loader). The stage's inputs and outputs are new ValueInfoProtos,
 * packed by protobuf-c. */
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "onnx/stage_bytes.h"
#include "onnx/wire.h"

enum {
    MODEL_GRAPH = 7,
    MODEL_METADATA = 14,
    GRAPH_NODE = 1,
    GRAPH_INITIALIZER = 5,
    GRAPH_INPUT = 11,
    GRAPH_OUTPUT = 12,
    GRAPH_VALUE_INFO = 13,
    TENSOR_NAME = 8,
    ENTRY_KEY = 1,
    ENTRY_VALUE = 2,
};

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} buf;

static void put(buf *b, const void *data, size_t len) {
    if (b->oom) return;
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + len) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
    if (len) memcpy(b->p + b->n, data, len);
    b->n += len;
}

static void put_varint(buf *b, uint64_t v) {
    uint8_t t[10];
    size_t n = 0;
    do {
        t[n] = (uint8_t)(v & 0x7F);
        v >>= 7;
        if (v) t[n] |= 0x80;
        n++;
    } while (v);
    put(b, t, n);
}

/* A length-delimited field: tag, length, bytes. */
static void put_field(buf *b, uint32_t num, const void *data, size_t len) {
    put_varint(b, (uint64_t)num << 3 | 2);
    put_varint(b, len);
    put(b, data, len);
}

/* The string field `num` of the message at data[0, len), or NULL (*n its
 * length). Stops at the first one. */
static const uint8_t *string_field(const uint8_t *data, size_t len, uint32_t num, size_t *n) {
    wire w = {data, data + len};
    wire_field f;
    while (wire_next(&w, &f) == 1)
        if (f.num == num && f.type == 2) return *n = f.len, f.data;
    return NULL;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool kept_weight(const onnx_stage_cut *cut, const uint8_t *tensor, size_t len) {
    size_t n;
    const uint8_t *name = string_field(tensor, len, TENSOR_NAME, &n);
    if (!name || n >= 4096 || !cut->n_weights) return false;
    char s[4096];
    memcpy(s, name, n);
    s[n] = 0;
    const char *key = s;
    return bsearch(&key, cut->weights, (size_t)cut->n_weights, sizeof(char *), cmp_str) != NULL;
}

/* io as a ValueInfoProto, field `num` of the graph. */
static void put_value_info(buf *b, uint32_t num, const onnx_stage_io *io) {
    Onnx__ValueInfoProto vi = ONNX__VALUE_INFO_PROTO__INIT;
    Onnx__TypeProto tp = ONNX__TYPE_PROTO__INIT;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    Onnx__TensorShapeProto sh = ONNX__TENSOR_SHAPE_PROTO__INIT;
    Onnx__TensorShapeProto__Dimension dims[16], *dp[16];
    vi.name = (char *)io->name;
    vi.type = &tp;
    tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp.tensor_type = &tt;
    tt.has_elem_type = true;
    tt.elem_type = io->dtype;
    if (io->rank >= 0 && io->rank <= 16) {
        tt.shape = &sh;
        sh.n_dim = (size_t)io->rank;
        sh.dim = dp;
        for (int32_t d = 0; d < io->rank; d++) {
            dims[d] = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
            if (io->dims[d] >= 0) {
                dims[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                dims[d].dim_value = io->dims[d];
            } else if (io->syms && io->syms[d]) {
                dims[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                dims[d].dim_param = (char *)io->syms[d];
            }
            dp[d] = &dims[d];
        }
    }
    size_t n = onnx__value_info_proto__get_packed_size(&vi);
    uint8_t *p = malloc(n ? n : 1);
    if (!p) {
        b->oom = true;
        return;
    }
    onnx__value_info_proto__pack(&vi, p);
    put_field(b, num, p, n);
    free(p);
}

static seam_status stage_graph(seam_context *ctx, const uint8_t *data, size_t len, const onnx_stage_cut *cut, buf *g) {
    wire w = {data, data + len};
    wire_field f;
    int32_t node = 0;
    int r;
    for (const uint8_t *at = w.p; (r = wire_next(&w, &f)) == 1; at = w.p) {
        if (f.type == 2 && f.num == GRAPH_NODE) {
            if (node < cut->n_nodes && cut->keep_node[node]) put(g, at, (size_t)(w.p - at));
            node++;
        } else if (f.type == 2 && f.num == GRAPH_INITIALIZER) {
            if (kept_weight(cut, f.data, f.len)) put(g, at, (size_t)(w.p - at));
        } else if (f.type == 2 && (f.num == GRAPH_INPUT || f.num == GRAPH_OUTPUT || f.num == GRAPH_VALUE_INFO)) {
            continue;
        } else {
            put(g, at, (size_t)(w.p - at));
        }
    }
    if (r < 0) return seam_error(ctx, SEAM_STATUS_PARSE_ERROR, "not an ONNX model: the graph's protobuf is malformed");
    if (node != cut->n_nodes)
        return seam_error(ctx, SEAM_STATUS_INVALID_MODEL,
                          "the graph has %d nodes, the stages describe %d: the file was changed after seam partition wrote it",
                          node, cut->n_nodes);
    for (int32_t k = 0; k < cut->n_inputs; k++) put_value_info(g, GRAPH_INPUT, &cut->inputs[k]);
    for (int32_t k = 0; k < cut->n_outputs; k++) put_value_info(g, GRAPH_OUTPUT, &cut->outputs[k]);
    return SEAM_STATUS_OK;
}

static bool is_key(const uint8_t *entry, size_t len, const char *key) {
    size_t n;
    const uint8_t *k = string_field(entry, len, ENTRY_KEY, &n);
    return k && n == strlen(key) && memcmp(k, key, n) == 0;
}

seam_status onnx_stage_bytes(seam_context *ctx, const uint8_t *model, size_t size, const onnx_stage_cut *cut,
                             uint8_t **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    buf m = {0}, g = {0};
    wire w = {model, model + size};
    wire_field f;
    bool graph = false;
    int r;
    seam_status st = SEAM_STATUS_OK;
    for (const uint8_t *at = w.p; !st && (r = wire_next(&w, &f)) == 1; at = w.p) {
        if (f.type == 2 && f.num == MODEL_GRAPH) {
            g.n = 0;
            st = stage_graph(ctx, f.data, f.len, cut, &g);
            if (!st) put_field(&m, MODEL_GRAPH, g.p, g.n);
            graph = true;
        } else if (!(f.type == 2 && f.num == MODEL_METADATA && cut->drop_metadata &&
                     is_key(f.data, f.len, cut->drop_metadata))) {
            put(&m, at, (size_t)(w.p - at));
        }
    }
    if (!st && (r < 0 || !graph))
        st = seam_error(ctx, SEAM_STATUS_PARSE_ERROR, "not an ONNX model: the protobuf is malformed or has no graph");
    if (!st && (m.oom || g.oom)) st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    free(g.p);
    if (st) {
        free(m.p);
        return st;
    }
    *out = m.p;
    *n_out = m.n;
    return SEAM_STATUS_OK;
}

seam_status onnx_peek_metadata(seam_context *ctx, const uint8_t *model, size_t size, const char *key,
                               char **value_out) {
    *value_out = NULL;
    wire w = {model, model + size};
    wire_field f;
    int r;
    while ((r = wire_next(&w, &f)) == 1) {
        if (f.type != 2 || f.num != MODEL_METADATA || !is_key(f.data, f.len, key)) continue;
        size_t n = 0;
        const uint8_t *v = string_field(f.data, f.len, ENTRY_VALUE, &n);
        char *s = malloc(n + 1);
        if (!s) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        if (n) memcpy(s, v, n);
        s[n] = 0;
        free(*value_out); /* the last entry wins, as in the loader */
        *value_out = s;
    }
    if (r < 0) {
        free(*value_out);
        *value_out = NULL;
        return seam_error(ctx, SEAM_STATUS_PARSE_ERROR, "not an ONNX model: the protobuf is malformed or truncated");
    }
    return SEAM_STATUS_OK;
}
