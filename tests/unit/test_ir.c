/* Unit tests for the arena, the name map and the graph IR's linking and
 * checks, on graphs built by hand.
 *
 * With `--stream-check DIR...`: every .onnx file under the folders is
 * loaded twice, as the loader does (streaming the top graph's nodes) and
 * with the whole file unpacked at once by protobuf-c; both IRs must be
 * equal. Then random byte mutations of the smaller files must load (or
 * fail) the same way on both paths. And every NodeProto and graph
 * ValueInfoProto of the top graphs, and mutations of each, are decoded by
 * the loader's hand decoders (onnx/wire.c) and by protobuf-c: whatever the
 * hand decoder takes, protobuf-c must decode to the same message. */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "tiny_model.h"
#include "core/context.h"
#include "ir/ir.h"
#include "ir/names.h"
#include "onnx/wire.h"

static void test_arena(void) {
    seam_arena a;
    seam_arena_init(&a, 1024);
    for (int k = 1; k < 2000; k += 37) {
        void *p = seam_arena_alloc(&a, (size_t)k);
        CHECK(p != NULL);
        CHECK(((uintptr_t)p & 15) == 0);
        memset(p, 0xab, (size_t)k);
    }
    char *big = seam_arena_alloc(&a, 100000);
    CHECK(big != NULL);
    memset(big, 1, 100000);
    CHECK(strcmp(seam_arena_strdup(&a, "conv1"), "conv1") == 0);
    CHECK(strcmp(seam_arena_strdup(&a, NULL), "") == 0);
    CHECK(seam_arena_calloc(&a, SIZE_MAX / 2, 4) == NULL);
    CHECK(seam_arena_memdup(&a, NULL, 0) != NULL);
    seam_arena_free(&a);
    CHECK(a.head == NULL);
}

static void test_names(void) {
    seam_arena a;
    seam_arena_init(&a, 1 << 16);
    ir_name_map *m = ir_names_new(&a, 4);
    char buf[32];
    for (int k = 0; k < 20000; k++) {
        snprintf(buf, sizeof(buf), "v%d", k);
        CHECK(ir_names_put(m, seam_arena_strdup(&a, buf), k));
    }
    int bad = 0;
    for (int k = 0; k < 20000; k++) {
        snprintf(buf, sizeof(buf), "v%d", k);
        if (ir_names_get(m, buf) != k) bad++;
    }
    CHECK(bad == 0);
    CHECK(ir_names_get(m, "v20000") == -1);
    CHECK(ir_names_get(m, "") == -1);
    seam_arena_free(&a);
}

static void test_numel(void) {
    int64_t d1[] = {2, 3, 4};
    CHECK(ir_numel(d1, 3) == 24);
    CHECK(ir_numel(d1, 0) == 1);
    int64_t d2[] = {2, -1};
    CHECK(ir_numel(d2, 2) == -1);
    int64_t d3[] = {IR_MAX_DIM, IR_MAX_DIM};
    CHECK(ir_numel(d3, 2) == -1);
    int64_t d4[] = {IR_MAX_DIM + 1};
    CHECK(ir_numel(d4, 1) == -1);
    int64_t d5[] = {0, IR_MAX_DIM};
    CHECK(ir_numel(d5, 2) == 0);
}

/* A model with one graph, built without a file. */
typedef struct fixture {
    seam_context ctx;
    struct seam_model m;
    ir_graph *g;
} fixture;

static void fx_init(fixture *f) {
    memset(f, 0, sizeof(*f));
    f->m.ctx = &f->ctx;
    seam_arena_init(&f->m.arena, 1 << 16);
    f->g = ir_graph_new(&f->m, NULL);
    f->m.graph = f->g;
}

static void fx_free(fixture *f) { seam_arena_free(&f->m.arena); }

static int32_t val(fixture *f, const char *name) {
    int32_t v = ir_graph_find(f->g, name);
    return v >= 0 ? v : ir_graph_add_value(f->g, seam_arena_strdup(&f->m.arena, name));
}

/* Adds node `name` (op) reading ins and writing outs (comma-separated). */
static void node(fixture *f, const char *name, const char *op, const char *ins, const char *outs) {
    int32_t i = ir_graph_add_node(f->g);
    ir_node *n = &f->g->nodes[i];
    n->name = name;
    n->op_type = op;
    n->domain = "";
    n->inputs = seam_arena_alloc(&f->m.arena, sizeof(int32_t) * 8);
    n->outputs = seam_arena_alloc(&f->m.arena, sizeof(int32_t) * 8);
    char buf[256];
    for (int pass = 0; pass < 2; pass++) {
        snprintf(buf, sizeof(buf), "%s", pass ? outs : ins);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            int32_t v = strcmp(tok, "-") == 0 ? -1 : val(f, tok);
            if (pass) n->outputs[n->n_outputs++] = v;
            else n->inputs[n->n_inputs++] = v;
        }
    }
}

static void graph_io(fixture *f, const char *in, const char *out) {
    f->g->inputs = seam_arena_alloc(&f->m.arena, sizeof(int32_t) * 4);
    f->g->outputs = seam_arena_alloc(&f->m.arena, sizeof(int32_t) * 4);
    int32_t v = val(f, in);
    f->g->values[v].flags |= IR_VALUE_INPUT;
    f->g->inputs[f->g->n_inputs++] = v;
    v = val(f, out);
    f->g->values[v].flags |= IR_VALUE_OUTPUT;
    f->g->outputs[f->g->n_outputs++] = v;
}

static void test_link_sorted_and_unsorted(void) {
    fixture f;
    fx_init(&f);
    /* file order: c (needs b), a, b (needs a): topo must be a, b, c */
    node(&f, "c", "Relu", "t2", "y");
    node(&f, "a", "Relu", "x", "t1");
    node(&f, "b", "Add", "t1,t1", "t2");
    graph_io(&f, "x", "y");
    CHECK(ir_graph_link(&f.ctx, f.g) == SEAM_STATUS_OK);
    CHECK(f.g->topo[0] == 1 && f.g->topo[1] == 2 && f.g->topo[2] == 0);
    const ir_value *t1 = &f.g->values[ir_graph_find(f.g, "t1")];
    CHECK(t1->producer == 1);
    CHECK(t1->n_consumers == 2 && t1->consumers[0] == 2 && t1->consumers[1] == 2);
    CHECK(f.g->values[ir_graph_find(f.g, "x")].producer == -1);
    fx_free(&f);
}

static void test_link_optional_inputs(void) {
    fixture f;
    fx_init(&f);
    node(&f, "clip", "Clip", "x,-,-", "y,-");
    graph_io(&f, "x", "y");
    CHECK(ir_graph_link(&f.ctx, f.g) == SEAM_STATUS_OK);
    CHECK(f.g->nodes[0].inputs[1] == -1 && f.g->nodes[0].outputs[1] == -1);
    fx_free(&f);
}

static void test_link_cycle(void) {
    fixture f;
    fx_init(&f);
    node(&f, "a", "Add", "x,t3", "t1");
    node(&f, "b", "Relu", "t1", "t2");
    node(&f, "c", "Neg", "t2", "t3");
    node(&f, "d", "Relu", "t3", "y");
    graph_io(&f, "x", "y");
    CHECK(ir_graph_link(&f.ctx, f.g) == SEAM_STATUS_INVALID_MODEL);
    const char *e = seam_context_last_error(&f.ctx);
    CHECK_CONTAINS(e, "cycle");
    CHECK_CONTAINS(e, "node 0 'a' (Add)");
    CHECK_CONTAINS(e, "node 1 'b' (Relu)");
    CHECK_CONTAINS(e, "node 2 'c' (Neg)");
    CHECK(strstr(e, "'d'") == NULL);
    fx_free(&f);
}

static void test_link_errors(void) {
    fixture f;
    fx_init(&f);
    node(&f, "a", "Relu", "x", "t");
    node(&f, "b", "Relu", "x", "t");
    graph_io(&f, "x", "t");
    CHECK(ir_graph_link(&f.ctx, f.g) == SEAM_STATUS_INVALID_MODEL);
    CHECK_CONTAINS(seam_context_last_error(&f.ctx), "value 't' is produced twice");
    CHECK_CONTAINS(seam_context_last_error(&f.ctx), "node 1 'b' (Relu)");
    fx_free(&f);

    fx_init(&f);
    node(&f, "a", "Add", "x,ghost", "y");
    graph_io(&f, "x", "y");
    CHECK(ir_graph_link(&f.ctx, f.g) == SEAM_STATUS_INVALID_MODEL);
    CHECK_CONTAINS(seam_context_last_error(&f.ctx), "value 'ghost' is used by node 0 'a' (Add) but never defined");
    fx_free(&f);

    fx_init(&f);
    node(&f, "a", "Relu", "x", "t");
    graph_io(&f, "x", "nothing");
    CHECK(ir_graph_link(&f.ctx, f.g) == SEAM_STATUS_INVALID_MODEL);
    CHECK_CONTAINS(seam_context_last_error(&f.ctx), "graph output 'nothing'");
    fx_free(&f);
}

static void test_load_buffer_garbage(void) {
    seam_context *ctx;
    CHECK(seam_context_create(&ctx) == SEAM_STATUS_OK);
    seam_model *m = (seam_model *)1;
    CHECK(seam_model_load_buffer(ctx, "", 0, NULL, &m) == SEAM_STATUS_PARSE_ERROR);
    CHECK(m == NULL);
    unsigned char junk[256];
    srand(7);
    int parsed = 0;
    for (int round = 0; round < 200; round++) {
        for (size_t k = 0; k < sizeof(junk); k++) junk[k] = (unsigned char)rand();
        seam_status st = seam_model_load_buffer(ctx, junk, sizeof(junk), NULL, &m);
        CHECK(st != SEAM_STATUS_OK || m != NULL);
        if (!st) parsed++;
        seam_model_free(m);
        CHECK(strlen(seam_context_last_error(ctx)) > 0);
    }
    CHECK(parsed == 0);
    CHECK(seam_model_load(ctx, "/nonexistent/model.onnx", &m) == SEAM_STATUS_IO_ERROR);
    CHECK_CONTAINS(seam_context_last_error(ctx), "/nonexistent/model.onnx");
    CHECK(seam_model_load(ctx, "/tmp", &m) == SEAM_STATUS_IO_ERROR);
    seam_context_free(ctx);
}

static void test_strings(void) {
    for (int s = SEAM_STATUS_OK; s <= SEAM_STATUS_RUN_FAILED; s++) CHECK(seam_status_string((seam_status)s)[0] != 0);
    CHECK(strcmp(seam_status_string(SEAM_STATUS_INVALID_MODEL), "invalid model") == 0);
    CHECK(strcmp(seam_status_string(SEAM_STATUS_RUN_FAILED), "run failed") == 0);
    CHECK(strcmp(seam_dtype_name(SEAM_DTYPE_FLOAT32), "float32") == 0);
    CHECK(strcmp(seam_dtype_name((seam_dtype)99), "undefined") == 0);
    CHECK(seam_dtype_size(SEAM_DTYPE_INT64) == 8 && seam_dtype_size(SEAM_DTYPE_BOOL) == 1);
    CHECK(seam_dtype_size(SEAM_DTYPE_STRING) == 0);
}

/* ---- streamed against whole-file loading ---- */

typedef struct wire_stats wire_stats;
typedef struct stream_stats {
    int files, loaded, failed, mutants, mutants_ok, parse_differs;
    size_t by_hand, by_pbc; /* messages the streamed loads decoded by hand, by protobuf-c */
    wire_stats *ws;
} stream_stats;

/* Loads bytes streamed and whole; both results must agree. */
static void stream_compare(seam_context *ctx, const unsigned char *bytes, size_t n, const char *what,
                           stream_stats *ss, bool mutant) {
    seam_model *a = NULL, *b = NULL;
    size_t h0, p0, h1, p1;
    wire_counts(&h0, &p0);
    seam_status sa = seam_model_load_buffer(ctx, bytes, n, NULL, &a);
    wire_counts(&h1, &p1);
    ss->by_hand += h1 - h0;
    ss->by_pbc += p1 - p0;
    char msg_a[SEAM_ERROR_MAX];
    snprintf(msg_a, sizeof(msg_a), "%s", seam_context_last_error(ctx));
    ctx->load_whole = true;
    seam_status sb = seam_model_load_buffer(ctx, bytes, n, NULL, &b);
    ctx->load_whole = false;
    const char *msg_b = seam_context_last_error(ctx);
    if ((sa == SEAM_STATUS_OK) != (sb == SEAM_STATUS_OK)) {
        fprintf(stderr, "%s: streamed %s (%s), whole %s (%s)\n", what, seam_status_string(sa), msg_a,
                seam_status_string(sb), msg_b);
        CHECK(!"streamed and whole-file loading disagree on success");
    } else if (sa == SEAM_STATUS_OK) {
        char why[512] = "";
        bool eq = ir_graph_equal(((struct seam_model *)a)->graph, ((struct seam_model *)b)->graph, why, sizeof(why));
        if (!eq) fprintf(stderr, "%s: streamed and whole IR differ: %s\n", what, why);
        CHECK(eq);
        if (mutant) ss->mutants_ok++;
        else ss->loaded++;
    } else {
        /* A node is unpacked only when it is reached, so a streamed load
         * can report a model error found before a malformed node that the
         * whole unpack reports first; anything else must match. */
        bool same = sa == sb && strcmp(msg_a, msg_b) == 0;
        if (!same && sb == SEAM_STATUS_PARSE_ERROR) ss->parse_differs++;
        else if (!same) {
            fprintf(stderr, "%s: streamed '%s', whole '%s'\n", what, msg_a, msg_b);
            CHECK(same);
        }
        if (!mutant) ss->failed++;
    }
    seam_model_free(a);
    seam_model_free(b);
}

/* ---- the hand decoders against protobuf-c, message by message ---- */

typedef struct wire_stats {
    size_t msgs, taken, mutants, mutants_taken, mutants_refused;
} wire_stats;

static void *arena_pb_alloc(void *data, size_t n) { return seam_arena_alloc(data, n); }
static void arena_pb_free(void *data, void *p) {
    (void)data;
    (void)p;
}

/* Same message: protobuf-c packs both to the same bytes. */
static bool same_message(const ProtobufCMessage *a, const ProtobufCMessage *b) {
    size_t na = protobuf_c_message_get_packed_size(a), nb = protobuf_c_message_get_packed_size(b);
    if (na != nb) return false;
    uint8_t *x = malloc(na + 1), *y = malloc(nb + 1);
    bool same = x && y && protobuf_c_message_pack(a, x) == na && protobuf_c_message_pack(b, y) == nb &&
                memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* One NodeProto (node) or ValueInfoProto at d[0, n). */
static void wire_one(const uint8_t *d, size_t n, bool node, wire_stats *ws, bool mutant, const char *what) {
    seam_arena a;
    seam_arena_init(&a, 1 << 12);
    ProtobufCAllocator alloc = {arena_pb_alloc, arena_pb_free, &a};
    const ProtobufCMessage *h = node ? (const ProtobufCMessage *)wire_node_proto(d, n, &alloc)
                                     : (const ProtobufCMessage *)wire_value_info(d, n, &alloc);
    ProtobufCMessage *p = protobuf_c_message_unpack(
        node ? &onnx__node_proto__descriptor : &onnx__value_info_proto__descriptor, NULL, n, d);
    if (mutant) ws->mutants++;
    else ws->msgs++;
    if (h) {
        if (mutant) ws->mutants_taken++;
        else ws->taken++;
        bool same = p && same_message(h, p);
        if (!same) fprintf(stderr, "%s: a %s the hand decoder took, protobuf-c %s\n", what,
                           node ? "NodeProto" : "ValueInfoProto", p ? "decodes differently" : "refuses");
        CHECK(same);
    } else if (mutant && !p) {
        ws->mutants_refused++;
    }
    if (p) protobuf_c_message_free_unpacked(p, NULL);
    seam_arena_free(&a);
}

/* The messages of the top graph in a model's bytes, each as it is and in
 * mutants (a byte or two changed, or cut short). */
static void wire_file(const uint8_t *bytes, size_t n, const char *path, wire_stats *ws) {
    wire w = {bytes, bytes + n};
    uint32_t num, type;
    const uint8_t *g = NULL, *d;
    size_t gl = 0, l;
    while (next_field(&w, &num, &type, &d, &l) == 1)
        if (num == 7 && type == 2) g = d, gl = l;
    if (!g) return;
    w = (wire){g, g + gl};
    uint32_t r = (uint32_t)n * 2654435761u + 7;
    int n_mutated = 0;
    while (next_field(&w, &num, &type, &d, &l) == 1) {
        if (type != 2 || (num != 1 && num != 11 && num != 12 && num != 13)) continue;
        bool node = num == 1;
        wire_one(d, l, node, ws, false, path);
        if (n_mutated >= 64 || l == 0 || l > 4096) continue;
        n_mutated++;
        uint8_t *m = malloc(l);
        for (int round = 0; round < 12; round++) {
            memcpy(m, d, l);
            size_t len = l;
            if (round == 0) {
                len = l - 1;
            } else {
                for (int k = 0; k < 1 + round % 2; k++) {
                    r = r * 1664525u + 1013904223u;
                    size_t at = (r >> 8) % l;
                    r = r * 1664525u + 1013904223u;
                    m[at] = (uint8_t)(r >> 24);
                }
            }
            wire_one(m, len, node, ws, true, path);
        }
        free(m);
    }
}

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = len > 0 ? malloc((size_t)len) : NULL;
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = p ? (size_t)len : 0;
    return p;
}

static void stream_file(seam_context *ctx, const char *path, stream_stats *ss) {
    size_t n;
    unsigned char *bytes = read_all(path, &n);
    if (!bytes) return;
    ss->files++;
    stream_compare(ctx, bytes, n, path, ss, false);
    wire_file(bytes, n, path, ss->ws);
    /* mutations of the small files: a few bytes changed at random */
    if (n <= 4096) {
        uint32_t r = (uint32_t)n * 2654435761u + 1;
        for (int round = 0; round < 8; round++) {
            unsigned char *mut = malloc(n);
            memcpy(mut, bytes, n);
            for (int k = 0; k < 3; k++) {
                r = r * 1664525u + 1013904223u;
                size_t at = (r >> 8) % n;
                r = r * 1664525u + 1013904223u;
                mut[at] = (unsigned char)(r >> 24);
            }
            char what[600];
            snprintf(what, sizeof(what), "%s (mutant %d)", path, round);
            stream_compare(ctx, mut, n, what, ss, true);
            ss->mutants++;
            free(mut);
        }
    }
    free(bytes);
}

static void stream_dir(seam_context *ctx, const char *dir, stream_stats *ss) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0) continue;
        size_t len = strlen(e->d_name);
        if (S_ISDIR(sb.st_mode)) stream_dir(ctx, path, ss);
        else if (len > 5 && strcmp(e->d_name + len - 5, ".onnx") == 0) stream_file(ctx, path, ss);
    }
    closedir(d);
}

static int stream_check(int argc, char **argv) {
    seam_context *ctx;
    CHECK(seam_context_create(&ctx) == SEAM_STATUS_OK);
    wire_stats ws = {0};
    stream_stats ss = {.ws = &ws};
    for (int k = 2; k < argc; k++) stream_dir(ctx, argv[k], &ss);
    printf("stream check: %d files (%d loaded, %d refused on both paths), %d mutants (%d loaded), "
           "%d with a model error reported before a malformed node; streamed nodes and values decoded "
           "by hand %zu, by protobuf-c %zu\n",
           ss.files, ss.loaded, ss.failed, ss.mutants, ss.mutants_ok, ss.parse_differs, ss.by_hand, ss.by_pbc);
    CHECK(ss.files > 0 && ss.loaded > 0);
    /* both decoders of the streamed path are exercised */
    CHECK(ss.by_hand > 0 && ss.by_pbc > 0);
    printf("hand decoders against protobuf-c: %zu messages (%zu taken by hand), %zu mutants (%zu taken by hand, "
           "%zu refused by both)\n",
           ws.msgs, ws.taken, ws.mutants, ws.mutants_taken, ws.mutants_refused);
    CHECK(ws.taken > ws.msgs / 2 && ws.mutants_taken > 0 && ws.mutants_refused > 0);
    seam_context_free(ctx);
    CHECK_DONE();
}

/* Introspection hands out the same arrays while a value's shape stays
 * the same: asking at every run (a serving loop) does not grow the model. */
static void test_introspection_reuses(void) {
    seam_context *ctx = NULL;
    seam_model *m = NULL;
    size_t n = 0;
    uint8_t *bytes = tiny_model_bytes(&n);
    CHECK(seam_context_create(&ctx) == SEAM_STATUS_OK);
    CHECK(bytes && seam_model_load_buffer(ctx, bytes, n, NULL, &m) == SEAM_STATUS_OK);
    free(bytes);
    if (m) {
        seam_value_info a, b, o1, o2;
        CHECK(seam_model_input(m, 0, &a) == SEAM_STATUS_OK && seam_model_input(m, 0, &b) == SEAM_STATUS_OK);
        CHECK(a.rank == 4 && a.dims == b.dims && a.dim_params == b.dim_params);
        CHECK(a.dims[0] == 1 && a.dims[1] == TINY_C && a.dims[2] == TINY_HW && a.dims[3] == TINY_HW);
        CHECK(seam_model_output(m, 0, &o1) == SEAM_STATUS_OK && seam_model_output(m, 0, &o2) == SEAM_STATUS_OK);
        CHECK(o1.rank == 2 && o1.dims == o2.dims && o1.dims[1] == 5 && o1.dims != a.dims);
        seam_model_meta x, y;
        CHECK(seam_model_metadata(m, &x) == SEAM_STATUS_OK && seam_model_metadata(m, &y) == SEAM_STATUS_OK);
        CHECK(x.n_props == y.n_props && x.prop_keys == y.prop_keys);
        CHECK(seam_model_metadata(m, NULL) == SEAM_STATUS_INVALID_ARGUMENT);
    }
    seam_model_free(m);
    seam_context_free(ctx);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--stream-check") == 0) return stream_check(argc, argv);
    test_arena();
    test_names();
    test_numel();
    test_link_sorted_and_unsorted();
    test_link_optional_inputs();
    test_link_cycle();
    test_link_errors();
    test_load_buffer_garbage();
    test_strings();
    test_introspection_reuses();
    CHECK_DONE();
}
