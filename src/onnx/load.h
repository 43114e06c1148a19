/* The loader's internals, shared by load.c (graphs, attributes, types, the
 * entry points), tensor.c (TensorProto), external.c (external data) and
 * stream.c (the streamed top graph). Protobuf-c's structures appear here
 * and in those files only. */
#ifndef SEAM_ONNX_LOAD_H
#define SEAM_ONNX_LOAD_H

#include "core/arena.h"
#include "core/context.h"
#include "ir/ir.h"
#include "ir/names.h"
#include "onnx/onnx.pb-c.h"
#include "onnx/wire.h"

/* ---- the scratch allocator handed to protobuf-c (load.c) ---- */

#define BIG_BLOCK ((size_t)64 << 10)

typedef struct scratch {
    seam_arena arena;
    void **big; /* malloc'd blocks >= BIG_BLOCK, adoptable by the model */
    size_t n_big, cap_big;
    bool oom;
} scratch;

/* ProtobufCAllocator's alloc and free over a scratch (data). */
void *scratch_alloc(void *data, size_t size);
void scratch_free(void *data, void *p);
/* Orders big[] for scratch_adopt (qsort with it once unpacking is done). */
int scratch_cmp_ptr(const void *a, const void *b);
/* Takes block p away from the scratch, so it survives scratch_release.
 * Returns false if p is not a big block. big[] is sorted by then. */
bool scratch_adopt(scratch *s, const void *p);
void scratch_release(scratch *s);

/* ---- conversion state ---- */

typedef struct loader {
    seam_context *ctx;
    struct seam_model *m;
    seam_arena *a;
    scratch *sc;
    const char *base_dir;  /* realpath of the model's folder, or NULL */
    ir_name_map *interned; /* op types and domains, stored once */
    const char **strings;
    int32_t n_interned, cap_interned;
    size_t n_stream_outputs; /* output count of the streamed top graph's nodes */
    seam_arena tmp;          /* what only loading needs (name maps), freed after it */
    const char *recent[4];   /* the last interned strings, newest first */
} loader;

#define OOM(L) seam_error((L)->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while loading the model")

/* Empty strings (most doc strings) share one constant. */
static inline const char *dup_str(loader *L, const char *s) {
    return s && s[0] ? seam_arena_strdup(L->a, s) : "";
}

/* ---- tensors (tensor.c, external.c) ---- */

/* Buffer for n bytes of tensor data: the model's arena when small, an
 * owned malloc block when big. */
void *onnx_tensor_buf(loader *L, size_t n);
/* tp as a tensor of the model; errors name "<what> '<name>'". */
seam_status onnx_convert_tensor(loader *L, const Onnx__TensorProto *tp, const char *what, ir_tensor **out);
seam_status onnx_convert_sparse(loader *L, const Onnx__SparseTensorProto *sp, const char *what, ir_sparse_tensor **out);
/* t's want bytes from tp's external data file (external.c). */
seam_status onnx_read_external(loader *L, const Onnx__TensorProto *tp, ir_tensor *t, size_t want);

/* ---- the streamed top graph (stream.c) ---- */

typedef struct span {
    const uint8_t *data;
    size_t len;
} span;

/* The nodes of a graph being converted: gp->node, or the NodeProto fields
 * of the top graph's bytes, each unpacked when it is reached into a
 * scratch reset for the next. Nodes are read once, in order; the few the
 * first pass cannot finish (convert_graph) are unpacked again from their
 * bytes. The top graph's outputs and value_info are streamed the same way:
 * a graph of a million nodes may have hundreds of thousands of typed
 * outputs. */
typedef struct node_src {
    const Onnx__GraphProto *gp;
    const uint8_t *bytes;  /* the GraphProto's bytes when streamed, else NULL */
    size_t len, n, next;
    wire at;
    const uint8_t *cur;    /* the bytes of the node node_src_next gave last */
    size_t cur_len;
    span *outputs, *value_infos; /* the streamed graph's, else NULL */
    /* The bytes are the loader's own private map of the file: the pages
     * the walk has passed are given back (they stay in the page cache),
     * so the file is not resident next to the graph it becomes. */
    bool release;
    const uint8_t *released;
    scratch sc;
    ProtobufCAllocator alloc;
} node_src;

/* Back to the first node (the walk restarts, nothing released yet). */
void node_src_rewind(node_src *ns);
/* Node ns->next, or NULL with *st set. */
const Onnx__NodeProto *node_src_next(loader *L, node_src *ns, seam_status *st);
/* Unpacks the NodeProto at data into the node scratch: by hand when it
 * has the common shape (wire.c), else by protobuf-c. NULL with *st set. */
const Onnx__NodeProto *node_src_unpack(loader *L, node_src *ns, const uint8_t *data, size_t len, seam_status *st);
/* Frees what the last streamed node left in the scratch (big blocks the
 * model did not adopt) and makes it ready for the next. */
void node_src_reset(node_src *ns);
/* Graph output k (value_info false) or value_info k of gp: from gp, or
 * when streamed decoded from its bytes into the node scratch, which the
 * next one reuses. NULL with *st set. */
const Onnx__ValueInfoProto *node_src_value_info(loader *L, node_src *ns, const Onnx__GraphProto *gp, bool value_info,
                                                size_t k, seam_status *st);
/* A ModelProto whose one graph field is streamed: everything else is
 * unpacked as one ModelProto (without the graph) into *mp_out, the graph's
 * fields but its nodes, outputs and value_info into *gp_out, those left to
 * ns; *n_outputs counts the nodes' outputs. false when the layout is not
 * the expected one (the caller then unpacks the whole model). */
bool onnx_stream_model(scratch *sc, ProtobufCAllocator *alloc, const uint8_t *data, size_t size,
                       Onnx__ModelProto **mp_out, Onnx__GraphProto **gp_out, node_src *ns, size_t *n_outputs);

#endif
