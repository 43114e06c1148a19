/*
 * The loader and IR at scale (issue 16 part 2), on models written here
 * byte by byte from the protobuf wire format and onnx.proto's field
 * numbers (no protobuf library makes them, so they can hold what no
 * encoder writes):
 *
 *   - the streamed walk of the top graph takes exactly what protobuf-c's
 *     whole-file unpack takes: tags and length prefixes longer than
 *     protobuf-c reads (6 bytes) are refused by both, a 5-byte tag taken
 *     by both;
 *   - a node the loader unpacks twice (its second pass) whose bytes
 *     changed in between (a file written under the map) gives an error
 *     naming the node, never a write past what the first pass sized;
 *   - replacing weights indexes the names once instead of scanning the
 *     values for every weight;
 *   - doc strings, now kept beside the nodes and values, survive loading
 *     and saving; a model without any allocates no side array.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/context.h"
#include "ir/ir.h"
#include "onnx/onnx.h"
#include "seam.h"

/* ---- a protobuf writer ---- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (!n) return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void varint(buf *b, uint64_t v) {
    do {
        uint8_t c = (uint8_t)(v & 0x7F);
        v >>= 7;
        if (v) c |= 0x80;
        put(b, &c, 1);
    } while (v);
}

static void field_varint(buf *b, uint32_t num, uint64_t v) {
    varint(b, (uint64_t)num << 3 | 0);
    varint(b, v);
}

static void field_bytes(buf *b, uint32_t num, const void *d, size_t n) {
    varint(b, (uint64_t)num << 3 | 2);
    varint(b, n);
    put(b, d, n);
}

static void field_str(buf *b, uint32_t num, const char *s) { field_bytes(b, num, s, strlen(s)); }

/* field num holding message m, which is freed */
static void field_msg(buf *b, uint32_t num, buf *m) {
    field_bytes(b, num, m->p, m->n);
    free(m->p);
    *m = (buf){0};
}

/* ValueInfoProto: a float tensor of one dim of 2 */
static void value_info(buf *g, uint32_t field, const char *name, const char *doc) {
    buf dim = {0}, shape = {0}, tensor = {0}, type = {0}, vi = {0};
    field_varint(&dim, 1, 2);         /* Dimension.dim_value */
    field_msg(&shape, 1, &dim);       /* TensorShapeProto.dim */
    field_varint(&tensor, 1, 1);      /* TypeProto.Tensor.elem_type FLOAT */
    field_msg(&tensor, 2, &shape);    /* .shape */
    field_msg(&type, 1, &tensor);     /* TypeProto.tensor_type */
    field_str(&vi, 1, name);          /* ValueInfoProto.name */
    field_msg(&vi, 2, &type);         /* .type */
    if (doc) field_str(&vi, 3, doc);  /* .doc_string */
    field_msg(g, field, &vi);
}

/* NodeProto with one output */
static void node(buf *g, const char *name, const char *op, const char *const *ins, int n_in, const char *out,
                 const char *doc) {
    buf n = {0};
    for (int k = 0; k < n_in; k++) field_str(&n, 1, ins[k]);
    field_str(&n, 2, out);
    if (name) field_str(&n, 3, name);
    field_str(&n, 4, op);
    if (doc) field_str(&n, 6, doc);
    field_msg(g, 1, &n);
}

/* TensorProto: float [2] named name, raw data (a, b) */
static void initializer(buf *g, const char *name, float a, float b) {
    buf t = {0};
    float d[2] = {a, b};
    field_varint(&t, 1, 2);            /* dims */
    field_varint(&t, 2, 1);            /* data_type FLOAT */
    field_str(&t, 8, name);            /* name */
    field_bytes(&t, 9, d, sizeof(d));  /* raw_data */
    field_msg(g, 5, &t);
}

/* ModelProto around graph g (freed): IR version 8, opset 13 */
static buf model(buf *g) {
    buf m = {0}, op = {0};
    field_varint(&m, 1, 8);
    field_varint(&op, 2, 13);
    field_msg(&m, 8, &op);
    field_msg(&m, 7, g);
    return m;
}

/* x -> Relu -> y, then the bytes `extra` at the end of the GraphProto */
static buf relu_model(const uint8_t *extra, size_t n_extra) {
    buf g = {0};
    const char *x = "x";
    node(&g, "r", "Relu", &x, 1, "y", NULL);
    field_str(&g, 2, "g");
    value_info(&g, 11, "x", NULL);
    value_info(&g, 12, "y", NULL);
    put(&g, extra, n_extra);
    return model(&g);
}

/* Status of loading bytes, streamed or whole; the message into msg. */
static seam_status load(seam_context *ctx, const buf *b, bool whole, char *msg, size_t n) {
    seam_model *m = NULL;
    ctx->load_whole = whole;
    seam_status st = seam_model_load_buffer(ctx, b->p, b->n, NULL, &m);
    ctx->load_whole = false;
    snprintf(msg, n, "%s", st ? seam_context_last_error(ctx) : "");
    seam_model_free(m);
    return st;
}

static void test_tag_limits(seam_context *ctx) {
    char a[SEAM_ERROR_MAX], b[SEAM_ERROR_MAX];
    /* an unknown varint field 100 (tag 800) in 6 bytes: protobuf-c reads
     * at most 5 */
    static const uint8_t long_tag[] = {0xA0, 0x86, 0x80, 0x80, 0x80, 0x00, 0x01};
    /* an unknown length-delimited field 101 (tag 810) of 1 byte whose
     * length takes 6 bytes: protobuf-c reads at most 5 */
    static const uint8_t long_len[] = {0xAA, 0x06, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00, 'z'};
    /* an unknown varint field 2^29 - 1, its tag in 5 bytes: read by both */
    static const uint8_t five_byte_tag[] = {0xF8, 0xFF, 0xFF, 0xFF, 0x0F, 0x01};
    struct {
        const uint8_t *bytes;
        size_t n;
        bool loads;
    } cases[] = {
        {long_tag, sizeof(long_tag), false},
        {long_len, sizeof(long_len), false},
        {five_byte_tag, sizeof(five_byte_tag), true},
        {NULL, 0, true},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        buf m = relu_model(cases[k].bytes, cases[k].n);
        seam_status streamed = load(ctx, &m, false, a, sizeof(a));
        seam_status whole = load(ctx, &m, true, b, sizeof(b));
        if (streamed != whole || strcmp(a, b) != 0)
            fprintf(stderr, "case %zu: streamed %d '%s', whole %d '%s'\n", k, streamed, a, whole, b);
        CHECK(streamed == whole);
        CHECK(strcmp(a, b) == 0);
        CHECK((whole == SEAM_STATUS_OK) == cases[k].loads);
        free(m.p);
    }
}

/* ---- bytes changed between the loader's passes ---- */

typedef struct change {
    uint8_t *bytes;
    size_t n;
    const uint8_t *from, *to;
    size_t len;
    int done;
} change;

static void change_bytes(void *arg) {
    change *c = arg;
    uint8_t *at = memmem(c->bytes, c->n, c->from, c->len);
    if (!at) return;
    memcpy(at, c->to, c->len);
    c->done++;
}

static void test_changed_between_passes(seam_context *ctx) {
    /* an unnamed node waits for the second pass: Sum(abcdefg) -> y */
    buf g = {0};
    const char *in = "abcdefg";
    node(&g, NULL, "Sum", &in, 1, "y", NULL);
    field_str(&g, 2, "g");
    value_info(&g, 11, "a", NULL);
    value_info(&g, 11, "abcdefg", NULL);
    value_info(&g, 12, "y", NULL);
    buf m = model(&g);

    seam_model *ok = NULL;
    CHECK(seam_model_load_buffer(ctx, m.p, m.n, NULL, &ok) == SEAM_STATUS_OK);
    CHECK(ok && ok->graph->n_nodes == 1 && ok->graph->nodes[0].n_inputs == 1);
    seam_model_free(ok);

    /* the same 11 bytes now say Sum(a, a, a) -> y: three inputs where the
     * first pass sized one */
    static const uint8_t from[] = {0x0A, 7, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 0x12, 1, 'y'};
    static const uint8_t to[] = {0x0A, 1, 'a', 0x0A, 1, 'a', 0x0A, 1, 'a', 0x12, 1, 'y'};
    change c = {m.p, m.n, from, to, sizeof(from), 0};
    ctx->load_between_passes = change_bytes;
    ctx->load_between_passes_arg = &c;
    seam_model *bad = NULL;
    seam_status st = seam_model_load_buffer(ctx, m.p, m.n, NULL, &bad);
    ctx->load_between_passes = NULL;
    ctx->load_between_passes_arg = NULL;
    CHECK(c.done == 1);
    CHECK(st == SEAM_STATUS_IO_ERROR);
    CHECK(bad == NULL);
    if (st) {
        CHECK_CONTAINS(seam_context_last_error(ctx), "node 0 'Sum_0' (Sum) changed while the file was read");
        CHECK_CONTAINS(seam_context_last_error(ctx), "1 inputs and 1 outputs, now 3 and 1");
    }
    seam_model_free(bad);
    free(m.p);
}

/* ---- replacing weights ---- */

static buf weights_model(int n, float scale) {
    buf g = {0};
    field_str(&g, 2, "g");
    char name[32], prev[32] = "x";
    for (int k = 0; k < n; k++) {
        snprintf(name, sizeof(name), "w%d", k);
        initializer(&g, name, scale * (float)k, -scale * (float)k);
    }
    for (int k = 0; k < n && scale == 1.0f; k++) { /* the model; the donor has only weights */
        char out[32], wname[32];
        snprintf(wname, sizeof(wname), "w%d", k);
        snprintf(out, sizeof(out), "t%d", k);
        const char *ins[2] = {prev, wname};
        node(&g, NULL, "Add", ins, 2, out, NULL);
        snprintf(prev, sizeof(prev), "%s", out);
    }
    if (scale == 1.0f) {
        value_info(&g, 11, "x", NULL);
        value_info(&g, 12, prev, NULL);
    }
    return model(&g);
}

static void test_replace_weights(seam_context *ctx) {
    enum { N = 300 };
    buf mb = weights_model(N, 1.0f), db = weights_model(N, 3.0f);
    seam_model *m = NULL, *d = NULL;
    CHECK(seam_model_load_buffer(ctx, mb.p, mb.n, NULL, &m) == SEAM_STATUS_OK);
    CHECK(seam_model_load_buffer(ctx, db.p, db.n, NULL, &d) == SEAM_STATUS_OK);
    if (m && d) {
        CHECK(m->graph->names == NULL); /* the loader dropped the top graph's map */
        int32_t replaced = 0;
        CHECK(seam_model_replace_weights(m, d, &replaced) == SEAM_STATUS_OK);
        CHECK(replaced == N);
        /* the lookups went through a map made once, not a scan per weight */
        CHECK(m->graph->names != NULL);
        for (int32_t k = 0; k < m->graph->n_inits; k++) {
            const ir_value *v = &m->graph->values[m->graph->inits[k]];
            int w = atoi(v->name + 1);
            const float *p = v->init->data;
            CHECK(p[0] == 3.0f * (float)w && p[1] == -3.0f * (float)w);
        }
        CHECK(ir_graph_find(m->graph, "w7") == m->graph->inits[7]);
        CHECK(ir_graph_find(m->graph, "nope") == -1);
    }
    seam_model_free(m);
    seam_model_free(d);
    free(mb.p);
    free(db.p);
}

/* ---- doc strings beside nodes and values ---- */

static void test_docs(seam_context *ctx) {
    buf g = {0};
    const char *x = "x", *t = "t";
    node(&g, "a", "Relu", &x, 1, "t", NULL);
    node(&g, "b", "Neg", &t, 1, "y", "the node's doc");
    field_str(&g, 2, "g");
    value_info(&g, 11, "x", "the input's doc");
    value_info(&g, 12, "y", NULL);
    value_info(&g, 13, "t", "an inner value's doc");
    buf mb = model(&g);
    seam_model *m = NULL, *back = NULL;
    CHECK(seam_model_load_buffer(ctx, mb.p, mb.n, NULL, &m) == SEAM_STATUS_OK);
    if (!m) return;
    for (int round = 0; round < 2; round++) {
        const ir_graph *gr = round ? back->graph : m->graph;
        int32_t vx = ir_graph_find(gr, "x"), vt = ir_graph_find(gr, "t"), vy = ir_graph_find(gr, "y");
        CHECK(vx >= 0 && vt >= 0 && vy >= 0);
        CHECK(strcmp(ir_value_doc(gr, vx), "the input's doc") == 0);
        CHECK(strcmp(ir_value_doc(gr, vt), "an inner value's doc") == 0);
        CHECK(strcmp(ir_value_doc(gr, vy), "") == 0);
        CHECK(strcmp(ir_node_doc(gr, 0), "") == 0);
        CHECK(strcmp(ir_node_doc(gr, 1), "the node's doc") == 0);
        CHECK(ir_node_folded_op(gr, 0) == NULL);
        if (round) break;
        uint8_t *packed = NULL;
        size_t n = 0;
        CHECK(onnx_model_pack(m, &packed, &n) == SEAM_STATUS_OK);
        CHECK(seam_model_load_buffer(ctx, packed, n, NULL, &back) == SEAM_STATUS_OK);
        free(packed);
        if (!back) break;
    }
    seam_model_free(back);
    seam_model_free(m);
    free(mb.p);

    /* no doc anywhere: no side array */
    buf plain = relu_model(NULL, 0);
    CHECK(seam_model_load_buffer(ctx, plain.p, plain.n, NULL, &m) == SEAM_STATUS_OK);
    if (m) {
        CHECK(m->graph->value_docs == NULL && m->graph->node_docs == NULL && m->graph->folded_ops == NULL);
        CHECK(strcmp(ir_node_doc(m->graph, 0), "") == 0);
    }
    seam_model_free(m);
    free(plain.p);
}

/* A doc string early in a long graph: the side arrays grow with the value
 * and node arrays, not on every value or node added (which made loading
 * quadratic in memory once any doc string was present). */
static void test_docs_scale(seam_context *ctx) {
    enum { N = 4000 };
    buf g = {0};
    char in[32], out[32];
    for (int i = 0; i < N; i++) {
        snprintf(in, sizeof in, i ? "v%d" : "x", i);
        snprintf(out, sizeof out, i == N - 1 ? "y" : "v%d", i + 1);
        const char *pin = in;
        node(&g, out, "Relu", &pin, 1, out, i == 0 ? "the first node's doc" : NULL);
    }
    field_str(&g, 2, "g");
    value_info(&g, 11, "x", "the input's doc");
    value_info(&g, 12, "y", NULL);
    buf mb = model(&g);
    seam_model *m = NULL;
    CHECK(seam_model_load_buffer(ctx, mb.p, mb.n, NULL, &m) == SEAM_STATUS_OK);
    if (m) {
        CHECK(m->graph->n_nodes == N && m->graph->node_docs && m->graph->value_docs);
        CHECK(strcmp(ir_node_doc(m->graph, 0), "the first node's doc") == 0);
        /* a few MB; the quadratic growth took 2 x N^2 x 8 bytes = 256 MB */
        CHECK(m->arena.total < ((size_t)32 << 20));
    }
    seam_model_free(m);
    free(mb.p);
}

int main(void) {
    seam_context *ctx = NULL;
    if (seam_context_create(&ctx) != SEAM_STATUS_OK) return 1;
    test_tag_limits(ctx);
    test_changed_between_passes(ctx);
    test_replace_weights(ctx);
    test_docs(ctx);
    test_docs_scale(ctx);
    seam_context_free(ctx);
    CHECK_DONE();
}
