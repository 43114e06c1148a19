/*
 * seam IR -> ONNX file. The protobuf structures are built in a scratch
 * arena, pointing at the IR's strings and tensor bytes (no copies), packed
 * into one buffer and written to a temporary file that is then renamed
 * over the destination.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "ir/ir.h"
#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"

typedef struct saver {
    seam_context *ctx;
    seam_arena a;
    const seam_save_options *opts;
    size_t ext_min;
    FILE *ext;             /* external data file being written, or NULL */
    const char *ext_name;
    uint64_t ext_off;
    bool oom, io_err;
    /* FunctionProtos and TrainingInfoProtos unpacked for re-packing */
    ProtobufCMessage **unpacked;
    int32_t n_unpacked;
} saver;

#define NEW(S, T) ((T *)new_msg(S, sizeof(T)))

static void *new_msg(saver *S, size_t size) {
    void *p = seam_arena_calloc(&S->a, 1, size);
    if (!p) S->oom = true;
    return p;
}

static void *arr(saver *S, size_t n, size_t elem) {
    void *p = seam_arena_calloc(&S->a, n + 1, elem);
    if (!p) S->oom = true;
    return p;
}

static char *str(const char *s) { return (char *)(s ? s : ""); }
/* Optional strings: an empty one is left out of the file. */
static char *opt_str(const char *s) { return s && s[0] ? (char *)s : NULL; }

static Onnx__TensorProto *save_tensor(saver *S, const ir_tensor *t) {
    Onnx__TensorProto *tp = NEW(S, Onnx__TensorProto);
    if (!tp) return NULL;
    onnx__tensor_proto__init(tp);
    tp->name = opt_str(t->name);
    tp->doc_string = opt_str(t->doc);
    tp->has_data_type = 1;
    tp->data_type = t->dtype;
    tp->n_dims = (size_t)t->rank;
    tp->dims = t->dims;
    if (t->dtype == SEAM_DTYPE_STRING) {
        tp->n_string_data = (size_t)t->numel;
        tp->string_data = arr(S, (size_t)t->numel, sizeof(ProtobufCBinaryData));
        if (!tp->string_data) return NULL;
        const ir_bytes *b = t->data;
        for (int64_t k = 0; k < t->numel; k++)
            tp->string_data[k] = (ProtobufCBinaryData){b[k].len, (uint8_t *)b[k].data};
        return tp;
    }
    if (S->ext && t->nbytes >= S->ext_min && t->name && t->name[0]) {
        /* Aligned offsets let a loader mmap the weights. */
        uint64_t pad = (4096 - S->ext_off % 4096) % 4096;
        static const char zeros[4096];
        if (pad && fwrite(zeros, 1, pad, S->ext) != pad) S->io_err = true;
        S->ext_off += pad;
        if (fwrite(t->data, 1, t->nbytes, S->ext) != t->nbytes) S->io_err = true;
        char buf[64];
        Onnx__StringStringEntryProto **e = arr(S, 3, sizeof(*e));
        if (!e) return NULL;
        const char *keys[3] = {"location", "offset", "length"};
        for (int k = 0; k < 3; k++) {
            e[k] = NEW(S, Onnx__StringStringEntryProto);
            if (!e[k]) return NULL;
            onnx__string_string_entry_proto__init(e[k]);
            e[k]->key = (char *)keys[k];
            if (k == 0) {
                e[k]->value = (char *)S->ext_name;
            } else {
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(k == 1 ? S->ext_off : t->nbytes));
                e[k]->value = seam_arena_strdup(&S->a, buf);
            }
        }
        S->ext_off += t->nbytes;
        tp->n_external_data = 3;
        tp->external_data = e;
        tp->has_data_location = 1;
        tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        return tp;
    }
    tp->has_raw_data = 1;
    tp->raw_data = (ProtobufCBinaryData){t->nbytes, t->data};
    return tp;
}

static Onnx__SparseTensorProto *save_sparse(saver *S, const ir_sparse_tensor *s) {
    Onnx__SparseTensorProto *sp = NEW(S, Onnx__SparseTensorProto);
    if (!sp) return NULL;
    onnx__sparse_tensor_proto__init(sp);
    sp->values = save_tensor(S, s->values);
    sp->indices = s->indices ? save_tensor(S, s->indices) : NULL;
    sp->n_dims = (size_t)s->rank;
    sp->dims = s->dims;
    return sp;
}

static Onnx__TensorShapeProto *save_shape(saver *S, const ir_type *t) {
    if (t->rank < 0) return NULL;
    Onnx__TensorShapeProto *sh = NEW(S, Onnx__TensorShapeProto);
    if (!sh) return NULL;
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)t->rank;
    sh->dim = arr(S, (size_t)t->rank, sizeof(*sh->dim));
    if (!sh->dim) return NULL;
    for (int32_t k = 0; k < t->rank; k++) {
        Onnx__TensorShapeProto__Dimension *d = NEW(S, Onnx__TensorShapeProto__Dimension);
        if (!d) return NULL;
        onnx__tensor_shape_proto__dimension__init(d);
        /* A named dim stays named even when inference (or --shape) found
         * its size here: the file keeps the model as general as it was. */
        if (t->dims[k].sym) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = (char *)t->dims[k].sym;
        } else if (t->dims[k].v >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = t->dims[k].v;
        }
        sh->dim[k] = d;
    }
    return sh;
}

static Onnx__TypeProto *save_type(saver *S, const ir_type *t) {
    if (!t || t->kind == IR_TYPE_NONE) return NULL;
    Onnx__TypeProto *tp = NEW(S, Onnx__TypeProto);
    if (!tp) return NULL;
    onnx__type_proto__init(tp);
    tp->denotation = opt_str(t->denotation);
    switch (t->kind) {
    case IR_TYPE_TENSOR: {
        Onnx__TypeProto__Tensor *x = NEW(S, Onnx__TypeProto__Tensor);
        if (!x) return NULL;
        onnx__type_proto__tensor__init(x);
        x->has_elem_type = 1;
        x->elem_type = t->elem;
        x->shape = save_shape(S, t);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        tp->tensor_type = x;
        break;
    }
    case IR_TYPE_SPARSE_TENSOR: {
        Onnx__TypeProto__SparseTensor *x = NEW(S, Onnx__TypeProto__SparseTensor);
        if (!x) return NULL;
        onnx__type_proto__sparse_tensor__init(x);
        x->has_elem_type = 1;
        x->elem_type = t->elem;
        x->shape = save_shape(S, t);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE;
        tp->sparse_tensor_type = x;
        break;
    }
    case IR_TYPE_SEQUENCE: {
        Onnx__TypeProto__Sequence *x = NEW(S, Onnx__TypeProto__Sequence);
        if (!x) return NULL;
        onnx__type_proto__sequence__init(x);
        x->elem_type = save_type(S, t->inner);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        tp->sequence_type = x;
        break;
    }
    case IR_TYPE_OPTIONAL: {
        Onnx__TypeProto__Optional *x = NEW(S, Onnx__TypeProto__Optional);
        if (!x) return NULL;
        onnx__type_proto__optional__init(x);
        x->elem_type = save_type(S, t->inner);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        tp->optional_type = x;
        break;
    }
    case IR_TYPE_MAP: {
        Onnx__TypeProto__Map *x = NEW(S, Onnx__TypeProto__Map);
        if (!x) return NULL;
        onnx__type_proto__map__init(x);
        x->has_key_type = 1;
        x->key_type = t->elem;
        x->value_type = save_type(S, t->inner);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
        tp->map_type = x;
        break;
    }
    default:
        break;
    }
    return tp;
}

static Onnx__ValueInfoProto *save_value_info(saver *S, const ir_graph *g, int32_t idx) {
    const ir_value *v = &g->values[idx];
    Onnx__ValueInfoProto *vi = NEW(S, Onnx__ValueInfoProto);
    if (!vi) return NULL;
    onnx__value_info_proto__init(vi);
    vi->name = str(v->name);
    vi->doc_string = opt_str(ir_value_doc(g, idx));
    /* Only what the file declared: an inferred type is seam's knowledge,
     * found again on load, and writing it would change the model. */
    vi->type = (v->flags & IR_VALUE_DECLARED) ? save_type(S, &v->type) : NULL;
    return vi;
}

static Onnx__GraphProto *save_graph(saver *S, const ir_graph *g);

static Onnx__AttributeProto *save_attr(saver *S, const ir_attr *at) {
    Onnx__AttributeProto *ap = NEW(S, Onnx__AttributeProto);
    if (!ap) return NULL;
    onnx__attribute_proto__init(ap);
    ap->name = str(at->name);
    ap->doc_string = opt_str(at->doc);
    ap->ref_attr_name = at->ref_attr_name ? (char *)at->ref_attr_name : NULL;
    ap->has_type = 1;
    ap->type = (Onnx__AttributeProto__AttributeType)at->kind;
    size_t n = (size_t)at->n;
    switch (at->kind) {
    case IR_ATTR_FLOAT: ap->has_f = 1; ap->f = at->f; break;
    case IR_ATTR_INT: ap->has_i = 1; ap->i = at->i; break;
    case IR_ATTR_STRING: ap->has_s = 1; ap->s = (ProtobufCBinaryData){at->s.len, (uint8_t *)at->s.data}; break;
    case IR_ATTR_TENSOR: ap->t = save_tensor(S, at->t); break;
    case IR_ATTR_GRAPH: ap->g = save_graph(S, at->g); break;
    case IR_ATTR_SPARSE_TENSOR: ap->sparse_tensor = save_sparse(S, at->sparse); break;
    case IR_ATTR_TYPE_PROTO: ap->tp = save_type(S, at->tp); break;
    case IR_ATTR_FLOATS: ap->n_floats = n; ap->floats = at->floats; break;
    case IR_ATTR_INTS: ap->n_ints = n; ap->ints = at->ints; break;
    case IR_ATTR_STRINGS:
        ap->n_strings = n;
        ap->strings = arr(S, n, sizeof(ProtobufCBinaryData));
        if (!ap->strings) return NULL;
        for (size_t k = 0; k < n; k++)
            ap->strings[k] = (ProtobufCBinaryData){at->strings[k].len, (uint8_t *)at->strings[k].data};
        break;
    case IR_ATTR_TENSORS:
        ap->n_tensors = n;
        ap->tensors = arr(S, n, sizeof(*ap->tensors));
        if (!ap->tensors) return NULL;
        for (size_t k = 0; k < n; k++) ap->tensors[k] = save_tensor(S, at->tensors[k]);
        break;
    case IR_ATTR_GRAPHS:
        ap->n_graphs = n;
        ap->graphs = arr(S, n, sizeof(*ap->graphs));
        if (!ap->graphs) return NULL;
        for (size_t k = 0; k < n; k++) ap->graphs[k] = save_graph(S, at->graphs[k]);
        break;
    case IR_ATTR_SPARSE_TENSORS:
        ap->n_sparse_tensors = n;
        ap->sparse_tensors = arr(S, n, sizeof(*ap->sparse_tensors));
        if (!ap->sparse_tensors) return NULL;
        for (size_t k = 0; k < n; k++) ap->sparse_tensors[k] = save_sparse(S, at->sparse_tensors[k]);
        break;
    case IR_ATTR_TYPE_PROTOS:
        ap->n_type_protos = n;
        ap->type_protos = arr(S, n, sizeof(*ap->type_protos));
        if (!ap->type_protos) return NULL;
        for (size_t k = 0; k < n; k++) ap->type_protos[k] = save_type(S, at->type_protos[k]);
        break;
    default:
        break;
    }
    return ap;
}

static char *value_name(const ir_graph *g, int32_t v) {
    return v < 0 ? (char *)"" : (char *)g->values[v].name;
}

static Onnx__GraphProto *save_graph(saver *S, const ir_graph *g) {
    Onnx__GraphProto *gp = NEW(S, Onnx__GraphProto);
    if (!gp) return NULL;
    onnx__graph_proto__init(gp);
    gp->name = str(g->name);
    gp->doc_string = opt_str(g->doc);

    gp->n_node = (size_t)g->n_nodes;
    gp->node = arr(S, gp->n_node, sizeof(*gp->node));
    if (!gp->node) return NULL;
    /* in topological order, which ONNX requires (the loader accepts any;
     * for a file that was sorted this is its own order) */
    for (int32_t p = 0; p < g->n_nodes; p++) {
        int32_t i = g->topo ? g->topo[p] : p;
        const ir_node *n = &g->nodes[i];
        Onnx__NodeProto *np = NEW(S, Onnx__NodeProto);
        if (!np) return NULL;
        onnx__node_proto__init(np);
        /* seam's generated names are not written: the file stays as it was */
        np->name = n->name_generated ? NULL : (char *)n->name;
        np->op_type = (char *)n->op_type;
        np->domain = opt_str(n->domain);
        np->doc_string = opt_str(ir_node_doc(g, i));
        np->n_input = (size_t)n->n_inputs;
        np->input = arr(S, np->n_input, sizeof(char *));
        np->n_output = (size_t)n->n_outputs;
        np->output = arr(S, np->n_output, sizeof(char *));
        np->n_attribute = (size_t)n->n_attrs;
        np->attribute = arr(S, np->n_attribute, sizeof(*np->attribute));
        if (!np->input || !np->output || !np->attribute) return NULL;
        for (int32_t k = 0; k < n->n_inputs; k++) np->input[k] = value_name(g, n->inputs[k]);
        for (int32_t k = 0; k < n->n_outputs; k++) np->output[k] = value_name(g, n->outputs[k]);
        for (int32_t k = 0; k < n->n_attrs; k++) np->attribute[k] = save_attr(S, &n->attrs[k]);
        gp->node[p] = np;
    }

    gp->n_initializer = (size_t)g->n_inits;
    gp->initializer = arr(S, gp->n_initializer, sizeof(*gp->initializer));
    if (!gp->initializer) return NULL;
    for (int32_t k = 0; k < g->n_inits; k++) gp->initializer[k] = save_tensor(S, g->values[g->inits[k]].init);
    gp->n_sparse_initializer = (size_t)g->n_sparse_inits;
    gp->sparse_initializer = arr(S, gp->n_sparse_initializer, sizeof(*gp->sparse_initializer));
    if (!gp->sparse_initializer) return NULL;
    for (int32_t k = 0; k < g->n_sparse_inits; k++) gp->sparse_initializer[k] = save_sparse(S, g->sparse_inits[k]);

    gp->n_input = (size_t)g->n_inputs;
    gp->input = arr(S, gp->n_input, sizeof(*gp->input));
    gp->n_output = (size_t)g->n_outputs;
    gp->output = arr(S, gp->n_output, sizeof(*gp->output));
    if (!gp->input || !gp->output) return NULL;
    for (int32_t k = 0; k < g->n_inputs; k++) gp->input[k] = save_value_info(S, g, g->inputs[k]);
    for (int32_t k = 0; k < g->n_outputs; k++) gp->output[k] = save_value_info(S, g, g->outputs[k]);

    /* value_info: what the file declared for intermediate values */
    size_t nvi = 0;
    for (int32_t v = 0; v < g->n_values; v++) {
        uint32_t f = g->values[v].flags;
        if ((f & IR_VALUE_DECLARED) && !(f & (IR_VALUE_INPUT | IR_VALUE_OUTPUT | IR_VALUE_INIT | IR_VALUE_OUTER))) nvi++;
    }
    gp->value_info = arr(S, nvi, sizeof(*gp->value_info));
    if (!gp->value_info) return NULL;
    for (int32_t v = 0; v < g->n_values; v++) {
        uint32_t f = g->values[v].flags;
        if ((f & IR_VALUE_DECLARED) && !(f & (IR_VALUE_INPUT | IR_VALUE_OUTPUT | IR_VALUE_INIT | IR_VALUE_OUTER)))
            gp->value_info[gp->n_value_info++] = save_value_info(S, g, v);
    }
    return gp;
}

static ProtobufCMessage *unpack_blob(saver *S, const ProtobufCMessageDescriptor *d, const ir_bytes *b) {
    ProtobufCMessage *msg = protobuf_c_message_unpack(d, NULL, b->len, b->data);
    if (!msg) {
        S->oom = true;
        return NULL;
    }
    S->unpacked[S->n_unpacked++] = msg;
    return msg;
}

/* m's opset imports into mp->opset_import (allocated, n_opset_import of
 * them); false when out of memory. */
static bool save_opsets(saver *S, const struct seam_model *m, Onnx__ModelProto *mp) {
    for (int32_t k = 0; k < m->n_opsets; k++) {
        Onnx__OperatorSetIdProto *o = NEW(S, Onnx__OperatorSetIdProto);
        if (!o) return false;
        onnx__operator_set_id_proto__init(o);
        o->domain = (char *)m->opsets[k].domain;
        o->has_version = 1;
        o->version = m->opsets[k].version;
        mp->opset_import[k] = o;
    }
    return true;
}

static Onnx__ModelProto *save_model(saver *S, const struct seam_model *m) {
    Onnx__ModelProto *mp = NEW(S, Onnx__ModelProto);
    if (!mp) return NULL;
    onnx__model_proto__init(mp);
    mp->has_ir_version = 1;
    mp->ir_version = m->ir_version ? m->ir_version : 8;
    mp->producer_name = opt_str(m->producer_name);
    mp->producer_version = opt_str(m->producer_version);
    mp->domain = opt_str(m->domain);
    mp->doc_string = opt_str(m->doc);
    if (m->model_version) {
        mp->has_model_version = 1;
        mp->model_version = m->model_version;
    }
    mp->n_opset_import = (size_t)m->n_opsets;
    mp->opset_import = arr(S, mp->n_opset_import, sizeof(*mp->opset_import));
    mp->n_metadata_props = (size_t)m->n_metadata;
    mp->metadata_props = arr(S, mp->n_metadata_props, sizeof(*mp->metadata_props));
    S->unpacked = arr(S, (size_t)(m->n_functions + m->n_training_infos), sizeof(ProtobufCMessage *));
    mp->functions = arr(S, (size_t)m->n_functions, sizeof(*mp->functions));
    mp->training_info = arr(S, (size_t)m->n_training_infos, sizeof(*mp->training_info));
    if (!mp->opset_import || !mp->metadata_props || !S->unpacked || !mp->functions || !mp->training_info ||
        !save_opsets(S, m, mp))
        return NULL;
    for (int32_t k = 0; k < m->n_metadata; k++) {
        Onnx__StringStringEntryProto *e = NEW(S, Onnx__StringStringEntryProto);
        if (!e) return NULL;
        onnx__string_string_entry_proto__init(e);
        e->key = (char *)m->metadata[k].key;
        e->value = (char *)m->metadata[k].value;
        mp->metadata_props[k] = e;
    }
    for (int32_t k = 0; k < m->n_functions; k++) {
        ProtobufCMessage *f = unpack_blob(S, &onnx__function_proto__descriptor, &m->functions[k]);
        if (!f) return NULL;
        mp->functions[mp->n_functions++] = (Onnx__FunctionProto *)f;
    }
    for (int32_t k = 0; k < m->n_training_infos; k++) {
        ProtobufCMessage *t = unpack_blob(S, &onnx__training_info_proto__descriptor, &m->training_infos[k]);
        if (!t) return NULL;
        mp->training_info[mp->n_training_info++] = (Onnx__TrainingInfoProto *)t;
    }
    mp->graph = save_graph(S, m->graph);
    return mp;
}

/* Writes buf to path through a temporary file in the same folder. */
seam_status onnx_write_atomic(seam_context *ctx, const char *path, const uint8_t *buf, size_t n) {
    size_t len = strlen(path);
    char *tmp = malloc(len + 32);
    if (!tmp) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    snprintf(tmp, len + 32, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        seam_status st = seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: cannot create a temporary file: %s", path, strerror(errno));
        free(tmp);
        return st;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, buf + done, n - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    bool ok = done == n && fchmod(fd, 0644) == 0 && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        seam_status st = seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: write failed: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return st;
    }
    free(tmp);
    return SEAM_STATUS_OK;
}

seam_status seam_model_save(seam_model *model, const char *path, const seam_save_options *opts) {
    if (!model) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = model->ctx;
    if (!path || !path[0]) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "no output path given");
    saver S = {0};
    S.ctx = ctx;
    S.opts = opts;
    seam_arena_init(&S.a, (size_t)1 << 20);
    char *ext_path = NULL;
    seam_status st = SEAM_STATUS_OK;
    if (opts && opts->external_data) {
        const char *e = opts->external_data;
        if (!e[0] || strchr(e, '/') || strcmp(e, ".") == 0 || strcmp(e, "..") == 0) {
            seam_arena_free(&S.a);
            return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                              "external data name '%s' must be a plain file name (it is written next to the model)", e);
        }
        S.ext_min = opts->external_min_bytes ? opts->external_min_bytes : 1024;
        S.ext_name = e;
        const char *slash = strrchr(path, '/');
        size_t dl = slash ? (size_t)(slash - path + 1) : 0;
        ext_path = malloc(dl + strlen(e) + 1);
        if (!ext_path) {
            seam_arena_free(&S.a);
            return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        memcpy(ext_path, path, dl);
        strcpy(ext_path + dl, e);
        S.ext = fopen(ext_path, "wb");
        if (!S.ext) {
            st = seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: cannot create: %s", ext_path, strerror(errno));
            free(ext_path);
            seam_arena_free(&S.a);
            return st;
        }
    }
    Onnx__ModelProto *mp = save_model(&S, model);
    if (S.ext && fclose(S.ext) != 0) S.io_err = true;
    if (!mp || S.oom) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while saving '%s'", path);
    } else if (S.io_err) {
        st = seam_error(ctx, SEAM_STATUS_IO_ERROR, "%s: writing external data failed", ext_path);
    } else {
        size_t n = onnx__model_proto__get_packed_size(mp);
        if (n > (size_t)INT32_MAX) {
            st = seam_error(ctx, SEAM_STATUS_UNSUPPORTED,
                            "%s: the model is %zu bytes, over protobuf's 2 GB limit; save its weights as external data",
                            path, n);
        } else {
            uint8_t *buf = malloc(n ? n : 1);
            if (!buf) {
                st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while saving '%s'", path);
            } else {
                onnx__model_proto__pack(mp, buf);
                st = onnx_write_atomic(ctx, path, buf, n);
                free(buf);
            }
        }
    }
    for (int32_t k = 0; k < S.n_unpacked; k++) protobuf_c_message_free_unpacked(S.unpacked[k], NULL);
    if (st && ext_path) unlink(ext_path);
    free(ext_path);
    seam_arena_free(&S.a);
    return st;
}

seam_status onnx_model_pack(seam_model *model, uint8_t **buf_out, size_t *n_out) {
    *buf_out = NULL;
    *n_out = 0;
    seam_context *ctx = model->ctx;
    saver S = {0};
    S.ctx = ctx;
    seam_arena_init(&S.a, (size_t)1 << 20);
    seam_status st = SEAM_STATUS_OK;
    Onnx__ModelProto *mp = save_model(&S, model);
    if (!mp || S.oom) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory while copying the model");
    } else {
        size_t n = onnx__model_proto__get_packed_size(mp);
        uint8_t *buf = n > (size_t)INT32_MAX ? NULL : malloc(n ? n : 1);
        if (!buf) {
            st = seam_error(ctx, n > (size_t)INT32_MAX ? SEAM_STATUS_UNSUPPORTED : SEAM_STATUS_OUT_OF_MEMORY,
                            "cannot copy the model (%zu bytes)", n);
        } else {
            onnx__model_proto__pack(mp, buf);
            *buf_out = buf;
            *n_out = n;
        }
    }
    for (int32_t k = 0; k < S.n_unpacked; k++) protobuf_c_message_free_unpacked(S.unpacked[k], NULL);
    seam_arena_free(&S.a);
    return st;
}

/* A tensor type with every dim a number (a symbolic dim's name dropped),
 * allocated in S; NULL when a dim is not known. */
static ir_type *concrete_type(saver *S, const ir_type *t) {
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0 || t->elem == SEAM_DTYPE_UNDEFINED) return NULL;
    ir_type *c = NEW(S, ir_type);
    ir_dim *d = arr(S, (size_t)t->rank, sizeof(ir_dim));
    if (!c || !d) return NULL;
    *c = *t;
    c->denotation = NULL;
    for (int32_t k = 0; k < t->rank; k++) {
        if (t->dims[k].v < 0) return NULL;
        d[k] = (ir_dim){t->dims[k].v, NULL};
    }
    c->dims = d;
    return c;
}

/* The name node n's input k (out: output k) has in its own model. */
static char *io_name(saver *S, const ir_graph *g, const ir_node *n, int32_t k, bool out, bool canonical) {
    int32_t v = out ? n->outputs[k] : n->inputs[k];
    if (!canonical || v < 0) return value_name(g, v);
    if (!out)
        for (int32_t j = 0; j < k; j++)
            if (n->inputs[j] == v) k = j; /* (a value read twice keeps its first position) */
    char buf[32];
    snprintf(buf, sizeof(buf), "%s%d", out ? "out" : "in", (int)k);
    char *s = seam_arena_strdup(&S->a, buf);
    if (!s) S->oom = true;
    return s;
}

seam_status onnx_node_model_pack(seam_model *m, int32_t node, bool canonical, uint8_t **buf_out, size_t *n_out) {
    *buf_out = NULL;
    *n_out = 0;
    seam_context *ctx = m->ctx;
    const ir_graph *g = m->graph;
    if (node < 0 || node >= g->n_nodes) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "no node %d", node);
    const ir_node *n = &g->nodes[node];
    if (ir_node_has_body(n)) return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "%s has a body", n->op_type);
    saver S = {0};
    S.ctx = ctx;
    seam_arena_init(&S.a, (size_t)1 << 16);
    seam_status st = SEAM_STATUS_OK;
    Onnx__ModelProto *mp = NEW(&S, Onnx__ModelProto);
    Onnx__GraphProto *gp = NEW(&S, Onnx__GraphProto);
    Onnx__NodeProto *np = NEW(&S, Onnx__NodeProto);
    if (!mp || !gp || !np) goto oom;
    onnx__model_proto__init(mp);
    onnx__graph_proto__init(gp);
    onnx__node_proto__init(np);
    mp->has_ir_version = 1;
    mp->ir_version = m->ir_version ? m->ir_version : 8;
    mp->producer_name = (char *)"seam";
    mp->n_opset_import = (size_t)m->n_opsets;
    mp->opset_import = arr(&S, mp->n_opset_import, sizeof(*mp->opset_import));
    if (!mp->opset_import || !save_opsets(&S, m, mp)) goto oom;
    mp->graph = gp;
    gp->name = canonical ? (char *)"node" : (char *)(n->name ? n->name : n->op_type);
    np->name = canonical || n->name_generated ? NULL : (char *)n->name;
    np->op_type = (char *)n->op_type;
    np->domain = opt_str(n->domain);
    np->n_input = (size_t)n->n_inputs;
    np->input = arr(&S, np->n_input, sizeof(char *));
    np->n_output = (size_t)n->n_outputs;
    np->output = arr(&S, np->n_output, sizeof(char *));
    np->n_attribute = (size_t)n->n_attrs;
    np->attribute = arr(&S, np->n_attribute, sizeof(*np->attribute));
    gp->node = arr(&S, 1, sizeof(*gp->node));
    gp->input = arr(&S, np->n_input, sizeof(*gp->input));
    gp->initializer = arr(&S, np->n_input, sizeof(*gp->initializer));
    gp->output = arr(&S, np->n_output, sizeof(*gp->output));
    if (!np->input || !np->output || !np->attribute || !gp->node || !gp->input || !gp->initializer || !gp->output)
        goto oom;
    gp->node[gp->n_node++] = np;
    for (int32_t k = 0; k < n->n_attrs; k++)
        if (!(np->attribute[k] = save_attr(&S, &n->attrs[k]))) goto oom;
    for (int32_t k = 0; k < n->n_inputs; k++) {
        int32_t v = n->inputs[k];
        np->input[k] = io_name(&S, g, n, k, false, canonical);
        if (v < 0) continue;
        bool seen = false; /* (a value read twice is declared once) */
        for (int32_t j = 0; j < k && !seen; j++) seen = n->inputs[j] == v;
        if (seen) continue;
        const ir_value *val = &g->values[v];
        if (val->flags & IR_VALUE_OUTER) {
            st = seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "input '%s' is of an enclosing graph", val->name);
            goto done;
        }
        if (val->konst) {
            if (val->konst->dtype == SEAM_DTYPE_STRING) {
                st = seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "input '%s' is a constant of strings", val->name);
                goto done;
            }
            ir_tensor *t = NEW(&S, ir_tensor);
            if (!t) goto oom;
            *t = *val->konst;
            t->name = np->input[k], t->doc = NULL;
            if (!(gp->initializer[gp->n_initializer++] = save_tensor(&S, t))) goto oom;
            continue;
        }
        ir_type *c = concrete_type(&S, &val->type);
        if (S.oom) goto oom;
        if (!c) {
            st = seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "input '%s' has no known tensor shape", val->name);
            goto done;
        }
        Onnx__ValueInfoProto *vi = NEW(&S, Onnx__ValueInfoProto);
        if (!vi) goto oom;
        onnx__value_info_proto__init(vi);
        vi->name = np->input[k];
        if (!(vi->type = save_type(&S, c))) goto oom;
        gp->input[gp->n_input++] = vi;
    }
    for (int32_t k = 0; k < n->n_outputs; k++) {
        int32_t v = n->outputs[k];
        np->output[k] = io_name(&S, g, n, k, true, canonical);
        if (v < 0) continue;
        Onnx__ValueInfoProto *vi = NEW(&S, Onnx__ValueInfoProto);
        if (!vi) goto oom;
        onnx__value_info_proto__init(vi);
        vi->name = np->output[k];
        ir_type *c = concrete_type(&S, &g->values[v].type);
        if (S.oom) goto oom;
        vi->type = c ? save_type(&S, c) : NULL; /* (an output's type may stay for the loader to infer) */
        gp->output[gp->n_output++] = vi;
    }
    if (S.oom) goto oom;
    size_t len = onnx__model_proto__get_packed_size(mp);
    uint8_t *buf = len > (size_t)INT32_MAX ? NULL : malloc(len ? len : 1);
    if (!buf) {
        st = seam_error(ctx, len > (size_t)INT32_MAX ? SEAM_STATUS_UNSUPPORTED : SEAM_STATUS_OUT_OF_MEMORY,
                        "node %d as a model: %zu bytes", node, len);
        goto done;
    }
    onnx__model_proto__pack(mp, buf);
    *buf_out = buf;
    *n_out = len;
    goto done;
oom:
    st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
done:
    seam_arena_free(&S.a);
    return st;
}
