/* The CPU session of seam.h: a model, a thread pool and one executor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cpu/kernels.h"
#include "core/context.h"
#include "runtime/exec.h"
#include "runtime/exec_impl.h"
#include "runtime/subgraph.h"

struct seam_session {
    seam_context *ctx;
    seam_model *model;
    seam_pool *pool;
    seam_exec *exec;
    /* dynamic batch: the caller's whole inputs (indexed like graph inputs)
     * and the joined outputs of the last run, when it was cut in chunks */
    bool dynamic_batch;
    seam_tensor *whole;
    bool *has_whole;
    seam_tensor *joined;
    bool joined_valid;
    /* padding (model metadata "seam.pad" and "seam.buckets", written by
     * seam partition --pad): inputs padded up to the smallest bucket that
     * fits, outputs sliced back */
    struct pad_axis *pads;
    int32_t n_pads;
    struct bucket_in *bucket_ins;
    int32_t n_bucket_ins, n_buckets;
    /* sequences: the element tables of bound sequence inputs (by graph
     * input; the data stays the caller's), and the views of sequence
     * outputs handed out since the last run (by graph output) */
    seam_tensor **seq_in;
    seam_tensor_view **seq_out;
    /* the graph computes shapes from its inputs' named dims (DimExpr,
     * ops/symdim.c): inputs that name a dim alike must agree on it */
    bool named_dims;
};

typedef struct pad_axis {
    int32_t value;      /* the input's value index */
    int32_t axis;
    double fill;
} pad_axis;

typedef struct bucket_in {
    int32_t bucket;
    int32_t value;      /* the input's value index */
    int32_t rank;
    int64_t dims[SEAM_MAX_RANK];
} bucket_in;

/* The fixed dim 0 of input value v, or -1. */
static int64_t batch_of(const ir_value *val) {
    return val->type.kind == IR_TYPE_TENSOR && val->type.rank >= 1 && val->type.dims[0].v > 0 ? val->type.dims[0].v : -1;
}

/* The targets a session is given are checked here, where they enter seam,
 * as partition targets and library backends are where they enter. */
static seam_status check_targets(seam_context *ctx, const seam_session_options *opts) {
    if (!opts || (!opts->targets && opts->n_targets == 0)) return SEAM_STATUS_OK;
    if (opts->n_targets < 0 || !opts->targets)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "seam_session_options: n_targets is %d and targets is %s", opts->n_targets,
                          opts->targets ? "set" : "NULL");
    for (int32_t k = 0; k < opts->n_targets; k++) {
        char where[48];
        snprintf(where, sizeof(where), "seam_session_options.targets[%d]", k);
        seam_status st = backend_check(ctx, opts->targets[k], where);
        if (st) return st;
    }
    return SEAM_STATUS_OK;
}

static const char *metadata(const seam_model *m, const char *key) {
    for (int32_t k = 0; k < m->n_metadata; k++)
        if (!strcmp(m->metadata[k].key, key)) return m->metadata[k].value;
    return NULL;
}

/* The value index of graph input name[0..len), or -1. */
static int32_t input_named(const ir_graph *g, const char *name, size_t len) {
    for (int32_t k = 0; k < g->n_inputs; k++) {
        const ir_value *v = &g->values[g->inputs[k]];
        if (!(v->flags & IR_VALUE_INIT) && strlen(v->name) == len && !strncmp(v->name, name, len)) return g->inputs[k];
    }
    return -1;
}

/* Reads the padding metadata: "seam.pad" NAME:AXIS[=VALUE];... and
 * "seam.buckets" NAME=AxBxC;... (the k-th of each input make bucket k). */
static seam_status read_padding(seam_session *s) {
    const char *pads = metadata(s->model, "seam.pad"), *bks = metadata(s->model, "seam.buckets");
    if (!pads || !pads[0]) return SEAM_STATUS_OK;
    const ir_graph *g = s->model->graph;
    size_t n = 1;
    for (const char *p = pads; *p; p++) n += *p == ';';
    for (const char *p = bks ? bks : ""; *p; p++) n += *p == ';';
    s->pads = calloc(n + 1, sizeof(pad_axis));
    s->bucket_ins = calloc(n + 1, sizeof(bucket_in));
    if (!s->pads || !s->bucket_ins) return seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (const char *p = pads; *p;) {
        const char *end = strchr(p, ';'), *colon = NULL;
        if (!end) end = p + strlen(p);
        for (const char *q = p; q < end; q++)
            if (*q == ':') colon = q;
        char *e;
        long axis = colon ? strtol(colon + 1, &e, 10) : -1;
        int32_t v = colon ? input_named(g, p, (size_t)(colon - p)) : -1;
        double fill = colon && *e == '=' ? strtod(e + 1, &e) : 0;
        if (v < 0 || e != end || axis < 0 || axis >= g->values[v].type.rank)
            return seam_error(s->ctx, SEAM_STATUS_INVALID_MODEL,
                              "metadata seam.pad: '%.*s' is not INPUT:AXIS[=VALUE] with AXIS an axis of an input",
                              (int)(end - p), p);
        /* a dim fixed since (seam_model_set_input_shape) is no longer padded:
         * the memory of the values it sizes is planned for that size */
        if (g->values[v].type.dims[axis].v < 0) s->pads[s->n_pads++] = (pad_axis){v, (int32_t)axis, fill};
        p = *end ? end + 1 : end;
    }
    for (const char *p = bks ? bks : ""; *p;) {
        const char *end = strchr(p, ';'), *eq = NULL;
        if (!end) end = p + strlen(p);
        for (const char *q = p; q < end; q++)
            if (*q == '=') eq = q;
        int32_t v = eq ? input_named(g, p, (size_t)(eq - p)) : -1;
        bucket_in *b = &s->bucket_ins[s->n_bucket_ins];
        b->value = v;
        const char *q = eq ? eq + 1 : end;
        while (v >= 0 && q < end && b->rank < SEAM_MAX_RANK) {
            char *e;
            b->dims[b->rank++] = strtoll(q, &e, 10);
            q = e < end && *e == 'x' ? e + 1 : e;
            if (e == q && q < end) break;
        }
        if (v < 0 || q != end || b->rank != g->values[v].type.rank)
            return seam_error(s->ctx, SEAM_STATUS_INVALID_MODEL, "metadata seam.buckets: '%.*s' is not INPUT=AxBxC of "
                              "an input's rank", (int)(end - p), p);
        for (int32_t k = 0; k < s->n_bucket_ins; k++) b->bucket += s->bucket_ins[k].value == v;
        if (b->bucket + 1 > s->n_buckets) s->n_buckets = b->bucket + 1;
        s->n_bucket_ins++;
        p = *end ? end + 1 : end;
    }
    if (!s->joined && !(s->joined = calloc((size_t)g->n_outputs + 1, sizeof(seam_tensor))))
        return seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    return SEAM_STATUS_OK;
}

seam_status seam_session_create(seam_model *model, const seam_session_options *opts, seam_session **out) {
    if (!out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    if (!model) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = model->ctx;
    int32_t threads = opts ? opts->n_threads : 0;
    if (threads < 0) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "threads must be >= 0, got %d", threads);
    seam_status st = check_targets(ctx, opts);
    if (st) return st;
    seam_session *s = calloc(1, sizeof(*s));
    if (!s) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    s->ctx = ctx;
    s->model = model;
    s->pool = seam_pool_create(threads);
    if (!s->pool) {
        free(s);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    st = seam_exec_create_with(ctx, model->graph, NULL, s->pool, cpu_host_kernels(), opts ? opts->targets : NULL,
                               opts ? opts->n_targets : 0,
                               opts ? opts->progress : NULL, opts ? opts->progress_user : NULL, &s->exec);
    if (st) {
        seam_session_free(s);
        return st;
    }
    for (int32_t i = 0; i < model->graph->n_nodes && !s->named_dims; i++)
        s->named_dims = !strcmp(model->graph->nodes[i].op_type, "DimExpr") && !strcmp(model->graph->nodes[i].domain, "ai.seam");
    if (opts && opts->dynamic_batch) {
        const ir_graph *g = model->graph;
        s->dynamic_batch = true;
        s->whole = calloc((size_t)g->n_inputs + 1, sizeof(seam_tensor));
        s->has_whole = calloc((size_t)g->n_inputs + 1, sizeof(bool));
        s->joined = calloc((size_t)g->n_outputs + 1, sizeof(seam_tensor));
        if (!s->whole || !s->has_whole || !s->joined) {
            seam_session_free(s);
            return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        }
    }
    if ((st = read_padding(s))) {
        seam_session_free(s);
        return st;
    }
    if (opts && opts->profile) {
        s->exec->node_ms = calloc((size_t)model->graph->n_nodes + 1, sizeof(double));
        s->exec->node_start_ms = calloc((size_t)model->graph->n_nodes + 1, sizeof(double));
        if (!s->exec->node_ms || !s->exec->node_start_ms) {
            seam_session_free(s);
            return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        s->exec->profile = true;
    }
    *out = s;
    return SEAM_STATUS_OK;
}

static void drop_joined(seam_session *s) {
    for (int32_t k = 0; s->joined && k < s->model->graph->n_outputs; k++) {
        free(s->joined[k].data);
        s->joined[k].data = NULL;
    }
    s->joined_valid = false;
}

void seam_session_free(seam_session *s) {
    if (!s) return;
    drop_joined(s);
    free(s->whole);
    free(s->has_whole);
    free(s->joined);
    free(s->pads);
    free(s->bucket_ins);
    for (int32_t k = 0; s->seq_in && k < s->model->graph->n_inputs; k++) free(s->seq_in[k]);
    for (int32_t k = 0; s->seq_out && k < s->model->graph->n_outputs; k++) free(s->seq_out[k]);
    free(s->seq_in);
    free(s->seq_out);
    seam_exec_free(s->exec);
    seam_pool_free(s->pool);
    free(s);
}

static void format_shape(char *buf, size_t n, seam_dtype dtype, int32_t rank, const int64_t *dims, const ir_dim *idims) {
    size_t off = (size_t)snprintf(buf, n, "%s [", seam_dtype_name(dtype));
    for (int32_t k = 0; k < rank && off < n; k++) {
        if (idims && idims[k].v < 0)
            off += (size_t)snprintf(buf + off, n - off, "%s%s", k ? "," : "", idims[k].sym ? idims[k].sym : "?");
        else
            off += (size_t)snprintf(buf + off, n - off, "%s%lld", k ? "," : "",
                                    (long long)(idims ? idims[k].v : dims[k]));
    }
    if (off < n) snprintf(buf + off, n - off, "]");
}

static const char *kind_name(const ir_type *t) {
    switch (t ? t->kind : IR_TYPE_NONE) {
    case IR_TYPE_TENSOR: return "a tensor";
    case IR_TYPE_SEQUENCE: return "a sequence";
    case IR_TYPE_OPTIONAL: return "an optional";
    case IR_TYPE_MAP: return "a map";
    case IR_TYPE_SPARSE_TENSOR: return "a sparse tensor";
    default: return "a value of unknown type";
    }
}

/* Graph input `name`: its value index and input position; -1 with the
 * error set when the model has none. */
static int32_t lookup_input(seam_session *s, const char *name, int32_t *pos) {
    const ir_graph *g = s->model->graph;
    for (int32_t k = 0; k < g->n_inputs; k++)
        if (strcmp(g->values[g->inputs[k]].name, name) == 0) {
            *pos = k;
            return g->inputs[k];
        }
    char list[512] = "";
    size_t off = 0;
    for (int32_t k = 0; k < g->n_inputs && off < sizeof(list); k++)
        if (!(g->values[g->inputs[k]].flags & IR_VALUE_INIT))
            off += (size_t)snprintf(list + off, sizeof(list) - off, "%s'%s'", off ? ", " : "", g->values[g->inputs[k]].name);
    seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "the model has no input '%s' (its inputs: %s)", name, list);
    return -1;
}

/* Checks a tensor against type t (a tensor type, or NONE: anything) and
 * fills out; `what` names it in errors ("input 'x'", "input 'x' element
 * 2"). dims_ok allows dim 0 to differ (dynamic batch). */
static seam_status check_tensor(seam_session *s, const char *what, const ir_type *t, seam_dtype dtype, int32_t rank,
                                const int64_t *dims, const void *data, bool batch_free, seam_tensor *out) {
    char want[256], got[256];
    bool ok = rank >= 0 && rank <= SEAM_MAX_RANK && (dims || rank == 0) && dtype > SEAM_DTYPE_UNDEFINED &&
              dtype < SEAM_DTYPE_COUNT_;
    if (ok && t && t->kind == IR_TYPE_TENSOR) {
        if (t->elem && t->elem != (int32_t)dtype) ok = false;
        if (t->rank >= 0 && t->rank != rank) ok = false;
        for (int32_t k = 0; ok && t->rank >= 0 && k < rank; k++)
            if (t->dims[k].v >= 0 && t->dims[k].v != dims[k] && !(k == 0 && batch_free && dims[0] >= 1)) ok = false;
    }
    int64_t numel = ok ? seam_shape_numel(dims, rank) : -1;
    if (!ok || numel < 0) {
        if (t && t->kind == IR_TYPE_TENSOR && t->rank >= 0)
            format_shape(want, sizeof(want), (seam_dtype)t->elem, t->rank, NULL, t->dims);
        else
            snprintf(want, sizeof(want), "%s of any shape",
                     seam_dtype_name(t && t->kind == IR_TYPE_TENSOR ? (seam_dtype)t->elem : SEAM_DTYPE_UNDEFINED));
        format_shape(got, sizeof(got), dtype, rank > SEAM_MAX_RANK || rank < 0 || !dims ? 0 : rank, dims, NULL);
        return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: expected %s, got %s", what, want, got);
    }
    if (!data && numel > 0) return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: data is NULL", what);
    size_t per = dtype == SEAM_DTYPE_STRING ? sizeof(ir_bytes) : seam_dtype_size(dtype);
    if (per && (uint64_t)numel > SIZE_MAX / per)
        return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: %lld elements do not fit in memory", what,
                          (long long)numel);
    *out = (seam_tensor){.dtype = (int32_t)dtype, .rank = rank, .numel = numel, .nbytes = (size_t)numel * per,
                         .data = (void *)data};
    for (int32_t k = 0; k < rank; k++) out->dims[k] = dims[k];
    if (dtype == SEAM_DTYPE_STRING)
        for (int64_t i = 0; i < numel; i++) {
            const ir_bytes *b = &((const ir_bytes *)data)[i];
            if (!b->data && b->len)
                return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                                  "%s: string element %lld has %zu bytes at NULL", what, (long long)i, b->len);
        }
    return SEAM_STATUS_OK;
}

/* The public seam_bytes is ir_bytes, element for element. */
_Static_assert(sizeof(seam_bytes) == sizeof(ir_bytes) && offsetof(seam_bytes, len) == offsetof(ir_bytes, len),
               "seam_bytes and ir_bytes differ");

/* Binds a checked value to input k (value v). */
static void bind(seam_session *s, int32_t k, int32_t v, const seam_tensor *t) {
    if (s->seq_in && s->seq_in[k] && (t->dtype != SEAM_VALUE_SEQUENCE || t->data != s->seq_in[k])) {
        free(s->seq_in[k]);
        s->seq_in[k] = NULL;
    }
    if (s->dynamic_batch) { /* kept whole; run() cuts it into chunks */
        s->whole[k] = *t;
        s->has_whole[k] = t->dtype != SEAM_VALUE_SEQUENCE && t->dtype != SEAM_VALUE_NONE;
    }
    exec_value *ev = &s->exec->vals[v];
    ev->t = *t;
    ev->bound = true;
}

seam_status seam_session_set_input(seam_session *s, const char *name, seam_dtype dtype, int32_t rank,
                                   const int64_t *dims, const void *data) {
    if (!s || !name) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_tensor_view tv = {.name = name, .dtype = dtype, .rank = rank, .dims = dims, .data = data};
    seam_value_view vv = {.kind = SEAM_KIND_TENSOR, .tensor = tv};
    return seam_session_set_input_value(s, name, &vv);
}

seam_status seam_session_set_input_value(seam_session *s, const char *name, const seam_value_view *val) {
    if (!s || !name || !val) return SEAM_STATUS_INVALID_ARGUMENT;
    const ir_graph *g = s->model->graph;
    int32_t k = -1, v = lookup_input(s, name, &k);
    if (v < 0) return SEAM_STATUS_INVALID_ARGUMENT;
    const ir_type *t = &g->values[v].type;
    bool optional = t->kind == IR_TYPE_OPTIONAL;
    const ir_type *held = optional ? t->inner : t; /* NULL: an optional of unknown type */
    char what[300];
    snprintf(what, sizeof(what), "input '%s'", name);
    seam_tensor x = {0};
    seam_status st;
    switch (val->kind) {
    case SEAM_KIND_TENSOR:
        if (held && held->kind != IR_TYPE_TENSOR && held->kind != IR_TYPE_NONE)
            return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s' is %s%s; a tensor was given", name,
                              optional ? "an optional of " : "", kind_name(held));
        if ((st = check_tensor(s, what, held, val->tensor.dtype, val->tensor.rank, val->tensor.dims,
                               val->tensor.data, s->dynamic_batch, &x)))
            return st;
        break;
    case SEAM_KIND_SEQUENCE: {
        if (!held || held->kind != IR_TYPE_SEQUENCE)
            return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s' is %s%s; a sequence was given", name,
                              optional ? "an optional of " : "", kind_name(held));
        if (s->dynamic_batch)
            return seam_error(s->ctx, SEAM_STATUS_UNSUPPORTED,
                              "input '%s' is a sequence; dynamic batch cuts tensors only", name);
        if (val->count < 0 || (val->count > 0 && !val->elements))
            return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s': a sequence of %d elements at %p", name,
                              val->count, (const void *)val->elements);
        const ir_type *et = held->inner && held->inner->kind == IR_TYPE_TENSOR ? held->inner : NULL;
        int32_t elem = et && et->elem ? et->elem : (int32_t)val->elem_dtype;
        if (et && et->elem && val->elem_dtype && (int32_t)val->elem_dtype != et->elem)
            return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s': expected a sequence of %s, got one of %s",
                              name, seam_dtype_name((seam_dtype)et->elem), seam_dtype_name(val->elem_dtype));
        seam_tensor *els = calloc((size_t)val->count + 1, sizeof(seam_tensor));
        if (!els) return seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int32_t i = 0; i < val->count; i++) {
            const seam_tensor_view *e = &val->elements[i];
            char ew[340];
            snprintf(ew, sizeof(ew), "input '%s' element %d", name, i);
            /* elements of one sequence share a dtype; their shapes may differ */
            ir_type any = {.kind = IR_TYPE_TENSOR, .elem = elem, .rank = -1};
            if ((st = check_tensor(s, ew, &any, e->dtype, e->rank, e->dims, e->data, false, &els[i]))) {
                free(els);
                return st;
            }
            if (!elem) elem = (int32_t)e->dtype;
        }
        x = (seam_tensor){.dtype = SEAM_VALUE_SEQUENCE, .numel = val->count,
                          .nbytes = (size_t)val->count * sizeof(seam_tensor), .data = els, .elem = elem};
        if (!s->seq_in && !(s->seq_in = calloc((size_t)g->n_inputs + 1, sizeof(seam_tensor *)))) {
            free(els);
            return seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        free(s->seq_in[k]);
        s->seq_in[k] = els;
        break;
    }
    case SEAM_KIND_NONE:
        if (!optional)
            return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                              "input '%s' is %s, not an optional: it cannot be left without a value", name,
                              kind_name(t));
        x = (seam_tensor){.dtype = SEAM_VALUE_NONE};
        break;
    default:
        return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s': kind %d is not a value kind seam takes",
                          name, (int)val->kind);
    }
    bind(s, k, v, &x);
    return SEAM_STATUS_OK;
}

seam_status seam_session_set_output_buffer(seam_session *s, const char *name, void *data, size_t capacity) {
    if (!s || !name) return SEAM_STATUS_INVALID_ARGUMENT;
    const ir_graph *g = s->model->graph;
    for (int32_t k = 0; k < g->n_outputs; k++) {
        int32_t v = g->outputs[k];
        if (strcmp(g->values[v].name, name) != 0) continue;
        exec_value *ev = &s->exec->vals[v];
        if (g->values[v].producer < 0)
            return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                              "output '%s' is an input or initializer of the model; it cannot take a buffer", name);
        ev->user = data;
        ev->capacity = data ? capacity : 0;
        return SEAM_STATUS_OK;
    }
    return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "the model has no output '%s'", name);
}

/* Dynamic batch: cut the inputs into chunks of the model's batch, run
 * each, join the outputs. A run whose batch equals the model's is plain. */
static seam_status run_chunked(seam_session *s) {
    const ir_graph *g = s->model->graph;
    drop_joined(s);
    int64_t B = -1, N = -1;
    for (int32_t k = 0; k < g->n_inputs; k++) {
        if (!s->has_whole[k]) continue;
        int64_t b = batch_of(&g->values[g->inputs[k]]);
        if (b < 0) return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                                     "dynamic batch: input '%s' has no fixed batch (dim 0) in the model",
                                     g->values[g->inputs[k]].name);
        if (B >= 0 && (b != B || s->whole[k].dims[0] != N))
            return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "dynamic batch: input '%s' has batch %lld; the others %lld",
                              g->values[g->inputs[k]].name, (long long)s->whole[k].dims[0], (long long)N);
        B = b, N = s->whole[k].dims[0];
    }
    if (B < 0 || N == B) return seam_exec_run(s->exec);
    int64_t chunks = (N + B - 1) / B;
    void **bufs = calloc((size_t)g->n_inputs + 1, sizeof(void *));
    if (!bufs) return seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    seam_status st = SEAM_STATUS_OK;
    for (int64_t c = 0; c < chunks && !st; c++) {
        int64_t rows = N - c * B < B ? N - c * B : B;
        for (int32_t k = 0; k < g->n_inputs; k++) {
            if (!s->has_whole[k]) continue;
            const seam_tensor *w = &s->whole[k];
            size_t row = w->nbytes / (size_t)N;
            if (!bufs[k] && !(bufs[k] = calloc((size_t)B * row + 1, 1))) {
                st = seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            memcpy(bufs[k], (const char *)w->data + (size_t)(c * B) * row, (size_t)rows * row);
            if (rows < B) memset((char *)bufs[k] + (size_t)rows * row, 0, (size_t)(B - rows) * row); /* padding */
            exec_value *ev = &s->exec->vals[g->inputs[k]];
            ev->t = *w;
            ev->t.dims[0] = B;
            ev->t.numel = w->numel / N * B;
            ev->t.nbytes = (size_t)B * row;
            ev->t.data = bufs[k];
        }
        if (st || (st = seam_exec_run(s->exec))) break;
        for (int32_t o = 0; o < g->n_outputs; o++) {
            const seam_tensor *t = &s->exec->vals[g->outputs[o]].t;
            if (t->rank < 1 || t->dims[0] != B) {
                st = seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                                "dynamic batch: output '%s' does not have the batch (%lld) as dim 0",
                                g->values[g->outputs[o]].name, (long long)B);
                break;
            }
            seam_tensor *j = &s->joined[o];
            size_t row = t->nbytes / (size_t)B;
            if (c == 0) {
                *j = *t;
                j->dims[0] = N;
                j->numel = t->numel / B * N;
                j->nbytes = (size_t)N * row;
                if (!(j->data = malloc(j->nbytes + 1))) {
                    st = seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
                    break;
                }
            }
            memcpy((char *)j->data + (size_t)(c * B) * row, t->data, (size_t)rows * row);
        }
    }
    /* the whole inputs stay bound, for the next run */
    for (int32_t k = 0; k < g->n_inputs; k++) {
        if (s->has_whole[k]) s->exec->vals[g->inputs[k]].t = s->whole[k];
        free(bufs[k]);
    }
    free(bufs);
    if (st) drop_joined(s);
    else s->joined_valid = true;
    return st;
}

/* Copies the box of src (dims sd) that fits in dst (dims dd) to the same
 * place in dst, row-major, es bytes an element. */
static void copy_box(char *dst, const int64_t *dd, const char *src, const int64_t *sd, int32_t rank, size_t es) {
    if (rank == 0) {
        memcpy(dst, src, es);
        return;
    }
    size_t dstride = es, sstride = es;
    for (int32_t d = 1; d < rank; d++) dstride *= (size_t)dd[d], sstride *= (size_t)sd[d];
    int64_t n = dd[0] < sd[0] ? dd[0] : sd[0];
    if (rank == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    for (int64_t i = 0; i < n; i++) copy_box(dst + (size_t)i * dstride, dd + 1, src + (size_t)i * sstride, sd + 1, rank - 1, es);
}

static bool is_pad_axis(const seam_session *s, int32_t v, int32_t axis) {
    for (int32_t k = 0; k < s->n_pads; k++)
        if (s->pads[k].value == v && s->pads[k].axis == axis) return true;
    return false;
}

/* Padding: the bound inputs padded up to the smallest bucket they fit (a
 * padded axis no longer than the bucket's, every other the same), the
 * run, and the outputs' axes that carry a padded axis's symbolic dim
 * sliced back. A run that fits no bucket, or is one, runs as it is. */
static seam_status run_padded(seam_session *s) {
    const ir_graph *g = s->model->graph;
    int32_t best = -1;
    double best_n = 0;
    bool exact = false;
    for (int32_t b = 0; b < s->n_buckets; b++) {
        bool fits = true, same = true;
        double n = 0;
        for (int32_t k = 0; k < s->n_bucket_ins && fits; k++) {
            const bucket_in *bi = &s->bucket_ins[k];
            if (bi->bucket != b) continue;
            const seam_tensor *t = &s->exec->vals[bi->value].t;
            fits = t->rank == bi->rank;
            double e = 1;
            for (int32_t d = 0; fits && d < t->rank; d++) {
                fits = is_pad_axis(s, bi->value, d) ? t->dims[d] <= bi->dims[d] : t->dims[d] == bi->dims[d];
                same &= t->dims[d] == bi->dims[d];
                e *= (double)bi->dims[d];
            }
            n += e;
        }
        if (fits && (best < 0 || n < best_n)) best = b, best_n = n, exact = same;
    }
    if (best < 0 || exact) return seam_exec_run(s->exec);
    drop_joined(s);
    seam_tensor *saved = calloc((size_t)g->n_values + 1, sizeof(seam_tensor));
    void **bufs = calloc((size_t)s->n_bucket_ins + 1, sizeof(void *));
    /* per padded input value: its size before padding, by symbolic dim */
    seam_status st = SEAM_STATUS_OK;
    if (!saved || !bufs) {
        st = seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int32_t k = 0; k < s->n_bucket_ins; k++) {
        const bucket_in *bi = &s->bucket_ins[k];
        if (bi->bucket != best) continue;
        exec_value *ev = &s->exec->vals[bi->value];
        saved[bi->value] = ev->t;
        seam_tensor t = ev->t;
        size_t es = seam_dtype_size((seam_dtype)t.dtype);
        for (int32_t d = 0; d < t.rank; d++) t.dims[d] = bi->dims[d];
        t.numel = seam_shape_numel(t.dims, t.rank);
        t.nbytes = (size_t)t.numel * es;
        if (!es || t.numel < 0 || !(bufs[k] = malloc(t.nbytes + 1))) {
            st = seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        double fill = 0;
        for (int32_t p = 0; p < s->n_pads; p++)
            if (s->pads[p].value == bi->value) fill = s->pads[p].fill;
        if (t.dtype == SEAM_DTYPE_FLOAT32 && fill != 0)
            for (int64_t i = 0; i < t.numel; i++) ((float *)bufs[k])[i] = (float)fill;
        else memset(bufs[k], 0, t.nbytes);
        copy_box(bufs[k], t.dims, ev->t.data, ev->t.dims, t.rank, es);
        t.data = bufs[k];
        ev->t = t;
    }
    st = seam_exec_run(s->exec);
    for (int32_t o = 0; !st && o < g->n_outputs; o++) {
        const ir_type *ty = &g->values[g->outputs[o]].type;
        const seam_tensor *t = &s->exec->vals[g->outputs[o]].t;
        seam_tensor *j = &s->joined[o];
        *j = *t;
        /* an axis with a padded input axis's symbolic dim: back to that input's size */
        for (int32_t d = 0; d < t->rank && ty->kind == IR_TYPE_TENSOR && d < ty->rank; d++) {
            const char *sym = ty->dims[d].v < 0 ? ty->dims[d].sym : NULL;
            for (int32_t p = 0; sym && p < s->n_pads; p++) {
                const ir_dim *in = &g->values[s->pads[p].value].type.dims[s->pads[p].axis];
                if (in->sym && !strcmp(in->sym, sym) && saved[s->pads[p].value].data)
                    j->dims[d] = saved[s->pads[p].value].dims[s->pads[p].axis];
            }
        }
        size_t es = exec_elem_bytes(t->dtype);
        j->numel = seam_shape_numel(j->dims, j->rank);
        j->nbytes = (size_t)j->numel * es;
        if (!(j->data = malloc(j->nbytes + 1))) {
            st = seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
            break;
        }
        if (j->numel > 0) copy_box(j->data, j->dims, t->data, t->dims, j->rank, es);
    }
    if (!st) s->joined_valid = true;
    else drop_joined(s);
done:
    for (int32_t k = 0; saved && k < s->n_bucket_ins; k++) { /* the caller's inputs stay bound */
        const bucket_in *bi = &s->bucket_ins[k];
        if (bi->bucket == best && saved[bi->value].data) s->exec->vals[bi->value].t = saved[bi->value];
        if (bufs) free(bufs[k]);
    }
    free(bufs);
    free(saved);
    return st;
}

/* Inputs whose declared dims share a name (`seq` on input_ids and on
 * attention_mask) given different sizes there: DimExpr nodes read each
 * name from one input, so the run is refused, naming both. */
static seam_status check_named_dims(seam_session *s) {
    const ir_graph *g = s->model->graph;
    for (int32_t a = 0; a < g->n_inputs; a++) {
        const ir_value *va = &g->values[g->inputs[a]];
        const seam_tensor *ta = &s->exec->vals[g->inputs[a]].t;
        if ((va->flags & IR_VALUE_INIT) || va->type.kind != IR_TYPE_TENSOR || ta->rank != va->type.rank) continue;
        for (int32_t da = 0; da < va->type.rank; da++) {
            const char *nm = va->type.dims[da].sym; /* (kept when the shape was fixed: seam run's --input files) */
            for (int32_t b = a; nm && b < g->n_inputs; b++) {
                const ir_value *vb = &g->values[g->inputs[b]];
                const seam_tensor *tb = &s->exec->vals[g->inputs[b]].t;
                if ((vb->flags & IR_VALUE_INIT) || vb->type.kind != IR_TYPE_TENSOR || tb->rank != vb->type.rank) continue;
                for (int32_t db = b == a ? da + 1 : 0; db < vb->type.rank; db++)
                    if (vb->type.dims[db].sym && !strcmp(vb->type.dims[db].sym, nm) &&
                        tb->dims[db] != ta->dims[da])
                        return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                                          "inputs '%s' (axis %d) and '%s' (axis %d) both have the dim '%s' but were "
                                          "given %lld and %lld: the model computes shapes from it",
                                          va->name, da, vb->name, db, nm, (long long)ta->dims[da], (long long)tb->dims[db]);
            }
        }
    }
    return SEAM_STATUS_OK;
}

seam_status seam_session_run(seam_session *s) {
    if (!s) return SEAM_STATUS_INVALID_ARGUMENT;
    const ir_graph *g = s->model->graph;
    for (int32_t k = 0; k < g->n_inputs; k++) {
        int32_t v = g->inputs[k];
        if (g->values[v].flags & IR_VALUE_INIT) continue;
        if (!s->exec->vals[v].bound)
            return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s' was not set", g->values[v].name);
    }
    if (s->named_dims && !s->dynamic_batch) { /* (ONNX: one dim_param names one size in a model) */
        seam_status st = check_named_dims(s);
        if (st) return st;
    }
    if (s->dynamic_batch) return run_chunked(s);
    drop_joined(s);
    if (s->n_pads) return run_padded(s);
    return seam_exec_run(s->exec);
}

/* Output index's value (*v its value index); NULL with the error set when
 * the index is out of range. */
static const seam_tensor *output_at(seam_session *s, int32_t index, int32_t *v) {
    const ir_graph *g = s->model->graph;
    if (index < 0 || index >= g->n_outputs) {
        seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "output index %d is out of range (%d outputs)", index,
                   g->n_outputs);
        return NULL;
    }
    *v = g->outputs[index];
    return s->joined_valid ? &s->joined[index] : &s->exec->vals[*v].t;
}

seam_status seam_session_output(seam_session *s, int32_t index, seam_tensor_view *view) {
    if (!s || !view) return SEAM_STATUS_INVALID_ARGUMENT;
    const ir_graph *g = s->model->graph;
    int32_t v;
    const seam_tensor *t = output_at(s, index, &v);
    if (!t) return SEAM_STATUS_INVALID_ARGUMENT;
    if (t->dtype == SEAM_VALUE_SEQUENCE || t->dtype == SEAM_VALUE_NONE)
        return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "output '%s' is %s, not a tensor: read it with seam_session_output_value", g->values[v].name,
                          t->dtype == SEAM_VALUE_SEQUENCE ? "a sequence" : "an empty optional");
    *view = (seam_tensor_view){g->values[v].name, (seam_dtype)t->dtype, t->rank, t->dims, t->data, t->nbytes};
    return SEAM_STATUS_OK;
}

seam_status seam_session_output_value(seam_session *s, int32_t index, seam_value_view *out) {
    if (!s || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    const ir_graph *g = s->model->graph;
    int32_t v;
    const seam_tensor *t = output_at(s, index, &v);
    if (!t) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = (seam_value_view){.kind = SEAM_KIND_TENSOR};
    if (t->dtype == SEAM_VALUE_NONE) {
        out->kind = SEAM_KIND_NONE;
        return SEAM_STATUS_OK;
    }
    if (t->dtype != SEAM_VALUE_SEQUENCE) return seam_session_output(s, index, &out->tensor);
    if (t->numel < 0 || t->numel > INT32_MAX || (t->numel > 0 && !t->data))
        return seam_error(s->ctx, SEAM_STATUS_INTERNAL, "output '%s': a sequence of %lld elements at %p",
                          g->values[v].name, (long long)t->numel, t->data);
    if (!s->seq_out && !(s->seq_out = calloc((size_t)g->n_outputs + 1, sizeof(seam_tensor_view *))))
        return seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    seam_tensor_view *views = realloc(s->seq_out[index], ((size_t)t->numel + 1) * sizeof(seam_tensor_view));
    if (!views) return seam_error(s->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    s->seq_out[index] = views;
    const seam_tensor *els = t->data;
    for (int64_t i = 0; i < t->numel; i++)
        views[i] = (seam_tensor_view){g->values[v].name, (seam_dtype)els[i].dtype, els[i].rank, els[i].dims,
                                      els[i].data, els[i].nbytes};
    out->kind = SEAM_KIND_SEQUENCE;
    out->elem_dtype = (seam_dtype)(t->elem ? t->elem : t->numel ? els[0].dtype : 0);
    out->count = (int32_t)t->numel;
    out->elements = views;
    return SEAM_STATUS_OK;
}

const char *seam_session_log(const seam_session *s) { return s && s->exec && s->exec->log ? s->exec->log : ""; }

seam_status seam_session_node_stats(seam_session *s, int32_t node, seam_node_stats *out) {
    if (!s || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    const ir_graph *g = s->model->graph;
    if (node < 0 || node >= g->n_nodes)
        return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "node %d is out of range (%d nodes)", node, g->n_nodes);
    if (!s->exec->profile)
        return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "the session was made without options.profile");
    const ir_node *n = &g->nodes[node];
    const char *target = strcmp(n->domain, "ai.seam") == 0 ? node_attr_string(n, "target", "cpu") : "cpu";
    const seam_kernel *k = &s->exec->kernels[node];
    *out = (seam_node_stats){n->name,      n->op_type, target,      s->exec->node_ms[node], k->bytes_in, k->bytes_out,
                             s->exec->node_start_ms[node], k->check_ms, k->copy_ms};
    return SEAM_STATUS_OK;
}

seam_status seam_session_stats_get(const seam_session *s, seam_session_stats *out) {
    if (!s || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    subgraph_counts sum = {0, 0, 0, 0, 0, 0};
    for (int32_t i = 0; i < s->model->graph->n_nodes; i++) subgraph_add_counts(s->exec, i, &sum);
    *out = (seam_session_stats){sum.compiles, sum.run_compiles, sum.cache_hits, sum.evictions, sum.cpu_shapes, sum.compile_ms};
    return SEAM_STATUS_OK;
}

seam_status seam_session_set_shape_cache(seam_session *s, int32_t n) {
    if (!s) return SEAM_STATUS_INVALID_ARGUMENT;
    if (n < 1) return seam_error(s->ctx, SEAM_STATUS_INVALID_ARGUMENT, "the shape cache must hold at least 1 shape, got %d", n);
    for (int32_t i = 0; i < s->model->graph->n_nodes; i++) subgraph_set_cache_size(s->exec, i, n);
    return SEAM_STATUS_OK;
}
