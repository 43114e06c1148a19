/*
 * _seam: the CPython extension under the package seam, a thin layer over
 * the C API (seam.h, seam_backend.h). The friendly API (trace, analyze,
 * PartitionerConfig, Model) is Python, in seam/__init__.py; this module
 * gives it three types:
 *
 *     Target(spec)    a backend table: "dnnl", "cpu", a rules file (.json),
 *                     a backend library (.so)
 *     Graph(path|bytes)  a context and a model: inputs, outputs, fold,
 *                     set_input_shape, partition (+ apply), save,
 *                     replace_weights
 *     Session(graph, targets, threads, dynamic_batch)  run(feeds) -> dict
 *     Pipeline(path, comm, ...)  a staged model over MPI ranks (_pipeline.c;
 *                     built with MPI only)
 *
 * Threads: seam wants one thread per context at a time, so each Graph has a
 * lock that every call on it, or on a session made from it, holds. The GIL
 * is released while waiting for the lock and during compile (Session()),
 * partition and run, so sessions of different graphs run in parallel.
 *
 * Errors: seam's status becomes the exception type (ValueError for bad
 * input, UnsupportedError, MemoryError, OSError for files, RuntimeError
 * for a bug in seam), its message the context's message.
 */
#define SEAM_PY_IMPORT_ARRAY /* numpy's API is imported here */
#include "_seam.h" /* first: Python.h and numpy's header, as this module includes them */
#include <pythread.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static PyObject *UnsupportedError;

PyObject *raise_status(seam_status st, const char *msg) {
    PyObject *type = PyExc_ValueError;
    switch (st) {
    case SEAM_STATUS_UNSUPPORTED: type = UnsupportedError; break;
    case SEAM_STATUS_OUT_OF_MEMORY: type = PyExc_MemoryError; break;
    case SEAM_STATUS_IO_ERROR: type = PyExc_OSError; break;
    case SEAM_STATUS_INTERNAL: type = PyExc_RuntimeError; break;
    default: break;
    }
    PyErr_SetString(type, msg && msg[0] ? msg : seam_status_string(st));
    return NULL;
}

/* ---- dtypes ---- */

static const struct {
    seam_dtype seam;
    int npy;
} dtype_map[] = {
    {SEAM_DTYPE_FLOAT32, NPY_FLOAT32}, {SEAM_DTYPE_FLOAT64, NPY_FLOAT64}, {SEAM_DTYPE_FLOAT16, NPY_FLOAT16},
    {SEAM_DTYPE_INT8, NPY_INT8},       {SEAM_DTYPE_INT16, NPY_INT16},     {SEAM_DTYPE_INT32, NPY_INT32},
    {SEAM_DTYPE_INT64, NPY_INT64},     {SEAM_DTYPE_UINT8, NPY_UINT8},     {SEAM_DTYPE_UINT16, NPY_UINT16},
    {SEAM_DTYPE_UINT32, NPY_UINT32},   {SEAM_DTYPE_UINT64, NPY_UINT64},   {SEAM_DTYPE_BOOL, NPY_BOOL},
    {SEAM_DTYPE_COMPLEX64, NPY_COMPLEX64}, {SEAM_DTYPE_COMPLEX128, NPY_COMPLEX128},
    /* bfloat16 and the float8 types have no numpy dtype: their bits, as
     * uint16 / uint8 (ml_dtypes' types view them) */
    {SEAM_DTYPE_BFLOAT16, NPY_UINT16},
    {SEAM_DTYPE_FLOAT8E4M3FN, NPY_UINT8}, {SEAM_DTYPE_FLOAT8E4M3FNUZ, NPY_UINT8},
    {SEAM_DTYPE_FLOAT8E5M2, NPY_UINT8}, {SEAM_DTYPE_FLOAT8E5M2FNUZ, NPY_UINT8},
};

static bool is_float8(seam_dtype d) { return d >= SEAM_DTYPE_FLOAT8E4M3FN && d <= SEAM_DTYPE_FLOAT8E5M2FNUZ; }
#define N_DTYPES ((int)(sizeof(dtype_map) / sizeof(dtype_map[0])))

seam_dtype seam_of_npy(int npy) {
    for (int k = 0; k < N_DTYPES; k++)
        if (PyArray_EquivTypenums(dtype_map[k].npy, npy)) return dtype_map[k].seam;
    return SEAM_DTYPE_UNDEFINED;
}

int npy_of_seam(seam_dtype d) {
    for (int k = 0; k < N_DTYPES; k++)
        if (dtype_map[k].seam == d) return dtype_map[k].npy;
    return -1;
}

/* ---- Target ---- */


static void Target_dealloc(TargetObject *self) {
    seam_backend_free(self->owned);
    Py_XDECREF(self->base); /* after the instance that forwards to it */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Target("BASE:K", threads=N) or Target(spec, threads=N): an instance of
 * the target BASE (seam_backend_instance), under BASE:K or its own name,
 * whose compiles get "threads=N" when N > 0. */
static int target_instance(TargetObject *self, PyObject *base_spec, int32_t index, int threads) {
    PyObject *base = PyObject_CallFunctionObjArgs((PyObject *)&TargetType, base_spec, NULL);
    if (!base) return -1;
    char opt[32];
    snprintf(opt, sizeof(opt), "threads=%d", threads);
    const char *opts[1] = {opt};
    seam_context *ctx;
    seam_status st = seam_context_create(&ctx);
    if (!st) st = seam_backend_instance(ctx, ((TargetObject *)base)->backend, index, opts, threads > 0 ? 1 : 0, &self->owned);
    if (st) raise_status(st, ctx ? seam_context_last_error(ctx) : "out of memory");
    seam_context_free(ctx);
    if (st) return Py_DECREF(base), -1;
    self->backend = self->owned;
    self->base = base;
    self->memory = ((TargetObject *)base)->memory;
    return 0;
}

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

static int Target_init(TargetObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"spec", "threads", "memory", NULL};
    const char *spec;
    int threads = 0;
    long long memory = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|iL", kwlist, &spec, &threads, &memory)) return -1;
    if (self->backend) {
        PyErr_SetString(PyExc_TypeError, "Target is already initialized");
        return -1;
    }
    if (threads < 0 || memory < 0) {
        PyErr_Format(PyExc_ValueError, "Target('%s'): threads and memory must be >= 0", spec);
        return -1;
    }
    const char *colon = strrchr(spec, ':');
    size_t digits = colon ? strspn(colon + 1, "0123456789") : 0;
    bool instance = colon && colon > spec && digits > 0 && digits <= 6 && !colon[1 + digits] && access(spec, F_OK) != 0;
    if ((instance || threads > 0) && strncmp(spec, "cpu", instance ? (size_t)(colon - spec) + 1 : 4) == 0 &&
        (instance ? colon - spec == 3 : true)) {
        PyErr_SetString(PyExc_ValueError, "Target('cpu'): cpu has no instances or thread option (Session's threads= sets its threads)");
        return -1;
    }
    if (instance || threads > 0) {
        PyObject *base = instance ? PyUnicode_FromStringAndSize(spec, colon - spec) : PyUnicode_FromString(spec);
        if (!base) return -1;
        int rc = target_instance(self, base, instance ? atoi(colon + 1) : -1, threads);
        Py_DECREF(base);
        if (!rc && memory > 0) self->memory = memory;
        return rc;
    }
    self->memory = memory;
    if (strcmp(spec, "cpu") == 0) {
        self->backend = seam_backend_cpu();
        return 0;
    }
    if (strcmp(spec, "dnnl") == 0) {
        if (!strstr(SEAM_TARGETS_BUILT, "dnnl")) {
            PyErr_Format(UnsupportedError,
                         "target 'dnnl': this seam was built without oneDNN (-DSEAM_WITH_DNNL=OFF); its built-in "
                         "targets are: %s (rules files and backend libraries add more)",
                         SEAM_TARGETS_BUILT);
            return -1;
        }
        self->backend = seam_backend_dnnl();
        return 0;
    }
    seam_context *ctx;
    seam_status st = seam_context_create(&ctx);
    if (st) return raise_status(st, "out of memory"), -1;
    bool bare = spec[0] && strspn(spec, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == strlen(spec);
    if (ends_with(spec, ".so")) st = seam_backend_load_library(ctx, spec, &self->backend);
    else if (bare && access(spec, F_OK) != 0) st = seam_backend_find(ctx, spec, &self->backend); /* a plug-in: "cuda" */
    else if ((st = seam_rules_load(ctx, spec, &self->owned)) == SEAM_STATUS_OK) self->backend = self->owned;
    if (st) raise_status(st, seam_context_last_error(ctx));
    else if (!self->memory) self->memory = seam_rules_memory_bytes(self->backend);
    seam_context_free(ctx);
    return st ? -1 : 0;
}

static PyObject *Target_name(TargetObject *self, void *closure) {
    if (!self->backend) Py_RETURN_NONE;
    return PyUnicode_FromString(self->backend->name);
}

static PyObject *Target_memory(TargetObject *self, void *closure) { return PyLong_FromLongLong(self->memory); }

static PyGetSetDef Target_getset[] = {
    {"name", (getter)Target_name, NULL, "the target's name, as plans show it", NULL},
    {"memory", (getter)Target_memory, NULL, "what its memory holds, in bytes (0: no limit)", NULL},
    {NULL},
};

PyTypeObject TargetType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seam._seam.Target",
    .tp_basicsize = sizeof(TargetObject),
    .tp_dealloc = (destructor)Target_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Target(spec, threads=0, memory=0): 'dnnl', 'cpu', a rules file or a backend library (.so); 'dnnl:1' "
              "an instance of one (its own memory budget and threads)",
    .tp_init = (initproc)Target_init,
    .tp_new = PyType_GenericNew,
    .tp_getset = Target_getset,
};

/* ---- Graph ---- */

typedef struct {
    PyObject_HEAD
    seam_context *ctx;
    seam_model *model;
    PyThread_type_lock lock;
} GraphObject;

/* Takes the graph's lock, with the GIL released while waiting. */
static void graph_lock(GraphObject *g) {
    if (PyThread_acquire_lock(g->lock, NOWAIT_LOCK)) return;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(g->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
}

static void graph_unlock(GraphObject *g) { PyThread_release_lock(g->lock); }

/* The error of the last call on g's context (call with the lock held). */
static PyObject *graph_fail(GraphObject *g, seam_status st) { return raise_status(st, seam_context_last_error(g->ctx)); }

static void Graph_dealloc(GraphObject *self) {
    seam_model_free(self->model);
    seam_context_free(self->ctx);
    if (self->lock) PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Graph_init(GraphObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"source", "base_dir", NULL};
    PyObject *source;
    const char *base_dir = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|z", kwlist, &source, &base_dir)) return -1;
    if (self->ctx) {
        PyErr_SetString(PyExc_TypeError, "Graph is already initialized");
        return -1;
    }
    self->lock = PyThread_allocate_lock();
    if (!self->lock) return PyErr_NoMemory(), -1;
    seam_status st = seam_context_create(&self->ctx);
    if (st) return raise_status(st, "out of memory"), -1;
    if (PyBytes_Check(source)) {
        char *data;
        Py_ssize_t size;
        PyBytes_AsStringAndSize(source, &data, &size);
        Py_BEGIN_ALLOW_THREADS
        st = seam_model_load_buffer(self->ctx, data, (size_t)size, base_dir, &self->model);
        Py_END_ALLOW_THREADS
    } else {
        PyObject *path = NULL;
        if (!PyUnicode_FSConverter(source, &path)) return -1;
        const char *p = PyBytes_AS_STRING(path);
        Py_BEGIN_ALLOW_THREADS
        st = seam_model_load(self->ctx, p, &self->model);
        Py_END_ALLOW_THREADS
        Py_DECREF(path);
    }
    if (st) return graph_fail(self, st), -1;
    return 0;
}

static PyObject *value_tuple(const seam_value_info *v) {
    PyObject *shape = NULL;
    if (v->rank >= 0) {
        shape = PyTuple_New(v->rank);
        if (!shape) return NULL;
        for (int32_t d = 0; d < v->rank; d++) {
            PyObject *dim;
            if (v->dims[d] >= 0) dim = PyLong_FromLongLong(v->dims[d]);
            else if (v->dim_params && v->dim_params[d]) dim = PyUnicode_FromString(v->dim_params[d]);
            else dim = (Py_INCREF(Py_None), Py_None);
            if (!dim) return Py_DECREF(shape), NULL;
            PyTuple_SET_ITEM(shape, d, dim);
        }
    } else {
        shape = (Py_INCREF(Py_None), Py_None);
    }
    return Py_BuildValue("(ssN)", v->name, seam_dtype_name(v->dtype), shape);
}

/* "float32", or for other kinds "sequence(float32)", "optional(float32)",
 * "optional(sequence(float32))", "map(int64,float32)". */
static void type_name(const seam_type_info *t, char *buf, size_t n) {
    const char *e = seam_dtype_name(t->elem_dtype);
    char inner[96];
    if (t->kind == SEAM_KIND_SEQUENCE) snprintf(inner, sizeof(inner), "sequence(%s)", e);
    else if (t->kind == SEAM_KIND_MAP) snprintf(inner, sizeof(inner), "map(%s,%s)", seam_dtype_name(t->key_dtype), e);
    else snprintf(inner, sizeof(inner), "%s", e);
    if (t->optional) snprintf(buf, n, "optional(%s)", inner);
    else snprintf(buf, n, "%s", inner);
}

/* [(name, dtype name, shape)], shape a tuple of ints, symbol names or None. */
static PyObject *graph_values(GraphObject *self, bool outputs) {
    graph_lock(self);
    int32_t n = outputs ? seam_model_output_count(self->model) : seam_model_input_count(self->model);
    PyObject *list = PyList_New(n);
    for (int32_t k = 0; list && k < n; k++) {
        seam_value_info v;
        seam_status st = outputs ? seam_model_output(self->model, k, &v) : seam_model_input(self->model, k, &v);
        PyObject *t = st ? graph_fail(self, st) : value_tuple(&v);
        seam_type_info ti;
        if (t && !seam_model_value_type(self->model, v.name, &ti) && (ti.kind != SEAM_KIND_TENSOR || ti.optional)) {
            char name[160];
            type_name(&ti, name, sizeof(name));
            PyObject *d = PyUnicode_FromString(name);
            if (!d || PyTuple_SetItem(t, 1, d)) Py_CLEAR(t);
        }
        if (!t) Py_CLEAR(list);
        else PyList_SET_ITEM(list, k, t);
    }
    graph_unlock(self);
    return list;
}

static PyObject *Graph_inputs(GraphObject *self, PyObject *unused) { return graph_values(self, false); }
static PyObject *Graph_outputs(GraphObject *self, PyObject *unused) { return graph_values(self, true); }

static PyObject *Graph_node_count(GraphObject *self, PyObject *unused) {
    graph_lock(self);
    int32_t n = seam_model_node_count(self->model);
    graph_unlock(self);
    return PyLong_FromLong(n);
}

static PyObject *Graph_fold(GraphObject *self, PyObject *unused) {
    int32_t folded = 0;
    graph_lock(self);
    seam_status st = seam_model_fold(self->model, &folded);
    PyObject *r = st ? graph_fail(self, st) : PyLong_FromLong(folded);
    graph_unlock(self);
    return r;
}

/* fuse_qdq() -> dict: QDQ units made QLinear nodes (seam_model_fuse_qdq,
 * units and constant folding), as `seam run` does before placement. */
static PyObject *Graph_fuse_qdq(GraphObject *self, PyObject *unused) {
    seam_qdq_stats q = {0};
    graph_lock(self);
    seam_status st = seam_model_fuse_qdq(self->model, SEAM_QDQ_UNITS | SEAM_QDQ_FOLD, &q);
    PyObject *r = st ? graph_fail(self, st)
                     : Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "conv_units", q.conv_units, "matmul_units",
                                     q.matmul_units, "gemm_units", q.gemm_units, "relus", q.relus, "dq_folded",
                                     q.dq_folded, "dq_left", q.dq_left, "q_left", q.q_left);
    graph_unlock(self);
    return r;
}

/* nodes() -> [(name, op_type, domain)] in the graph's order. */
static PyObject *Graph_nodes(GraphObject *self, PyObject *unused) {
    graph_lock(self);
    int32_t n = seam_model_node_count(self->model);
    PyObject *list = PyList_New(n);
    for (int32_t k = 0; list && k < n; k++) {
        seam_node_info ni;
        seam_status st = seam_model_node(self->model, k, &ni);
        PyObject *t = st ? graph_fail(self, st) : Py_BuildValue("(sss)", ni.name, ni.op_type, ni.domain);
        if (!t) Py_CLEAR(list);
        else PyList_SET_ITEM(list, k, t);
    }
    graph_unlock(self);
    return list;
}

/* metadata() -> dict of the ModelProto's and GraphProto's descriptive
 * fields, "props" the metadata_props as a dict. */
static PyObject *Graph_metadata(GraphObject *self, PyObject *unused) {
    seam_model_meta mm;
    graph_lock(self);
    seam_status st = seam_model_metadata(self->model, &mm);
    PyObject *props = st ? graph_fail(self, st) : PyDict_New(), *r = NULL;
    for (int32_t k = 0; props && k < mm.n_props; k++) {
        PyObject *v = PyUnicode_FromString(mm.prop_values[k]);
        if (!v || PyDict_SetItemString(props, mm.prop_keys[k], v)) Py_CLEAR(props);
        Py_XDECREF(v);
    }
    if (props)
        r = Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:s,s:L,s:L,s:N}", "producer_name", mm.producer_name,
                          "producer_version", mm.producer_version, "domain", mm.domain, "description", mm.description,
                          "graph_name", mm.graph_name, "graph_description", mm.graph_description, "version",
                          (long long)mm.version, "ir_version", (long long)mm.ir_version, "props", props);
    graph_unlock(self);
    return r;
}

static PyObject *Graph_set_input_shape(GraphObject *self, PyObject *args) {
    const char *name;
    PyObject *dims_obj;
    if (!PyArg_ParseTuple(args, "sO", &name, &dims_obj)) return NULL;
    PyObject *seq = PySequence_Fast(dims_obj, "set_input_shape: the shape must be a sequence of ints");
    if (!seq) return NULL;
    Py_ssize_t rank = PySequence_Fast_GET_SIZE(seq);
    int64_t dims[64];
    if (rank > 64) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "set_input_shape: rank %zd is more than seam's 64", rank);
    }
    for (Py_ssize_t d = 0; d < rank; d++) {
        dims[d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, d));
        if (dims[d] == -1 && PyErr_Occurred()) return Py_DECREF(seq), NULL;
    }
    Py_DECREF(seq);
    graph_lock(self);
    seam_status st = seam_model_set_input_shape(self->model, name, (int32_t)rank, dims);
    PyObject *r = st ? graph_fail(self, st) : (Py_INCREF(Py_None), Py_None);
    graph_unlock(self);
    return r;
}

static PyObject *Graph_save(GraphObject *self, PyObject *args) {
    PyObject *path_obj, *path = NULL;
    const char *weights = NULL;
    if (!PyArg_ParseTuple(args, "O|z", &path_obj, &weights)) return NULL;
    if (!PyUnicode_FSConverter(path_obj, &path)) return NULL;
    seam_save_options so = {weights, 0};
    const char *p = PyBytes_AS_STRING(path);
    graph_lock(self);
    seam_status st;
    Py_BEGIN_ALLOW_THREADS
    st = seam_model_save(self->model, p, weights ? &so : NULL);
    Py_END_ALLOW_THREADS
    PyObject *r = st ? graph_fail(self, st) : (Py_INCREF(Py_None), Py_None);
    graph_unlock(self);
    Py_DECREF(path);
    return r;
}

static PyTypeObject GraphType;

static PyObject *Graph_replace_weights(GraphObject *self, PyObject *args) {
    GraphObject *donor;
    if (!PyArg_ParseTuple(args, "O!", &GraphType, &donor)) return NULL;
    if (donor == self) return PyLong_FromLong(0);
    int32_t n = 0;
    graph_lock(self);
    graph_lock(donor); /* always taken in this order: self's, then the donor's */
    seam_status st = seam_model_replace_weights(self->model, donor->model, &n);
    PyObject *r = st ? graph_fail(self, st) : PyLong_FromLong(n);
    graph_unlock(donor);
    graph_unlock(self);
    return r;
}

/* Fills a list of backend tables from a sequence of Target objects. */
/* The Target objects of a sequence; mem (may be NULL) gets each one's memory. */
static int targets_mem_of(PyObject *seq_obj, const seam_backend **out, int64_t *mem, int32_t max, int32_t *n_out) {
    PyObject *seq = PySequence_Fast(seq_obj, "targets must be a sequence of Target");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > max) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "at most %d targets, got %zd", max, n);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, k);
        if (!PyObject_TypeCheck(t, &TargetType) || !((TargetObject *)t)->backend) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_TypeError, "targets must be a sequence of Target");
            return -1;
        }
        out[k] = ((TargetObject *)t)->backend;
        if (mem) mem[k] = ((TargetObject *)t)->memory;
    }
    *n_out = (int32_t)n;
    Py_DECREF(seq);
    return 0;
}

static int targets_of(PyObject *seq_obj, const seam_backend **out, int32_t max, int32_t *n_out) {
    return targets_mem_of(seq_obj, out, NULL, max, n_out);
}

/* A list of str as a C array kept in a bytes-holding list (for the
 * lifetime of the call). */
static int strings_of(PyObject *seq_obj, const char **out, int32_t max, int32_t *n_out, const char *what) {
    *n_out = 0;
    if (seq_obj == Py_None) return 0;
    PyObject *seq = PySequence_Fast(seq_obj, what);
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > max) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: at most %d entries, got %zd", what, max, n);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        /* the strings live as long as the caller's objects (the caller keeps them) */
        out[k] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, k));
        if (!out[k]) return Py_DECREF(seq), -1;
    }
    *n_out = (int32_t)n;
    Py_DECREF(seq);
    return 0;
}

#define MAX_TARGETS 16
#define MAX_LIST 256

/* The plan's JSON *text with the stages' object as its "pipeline" (the
 * text seam partition --stages --json prints); *text reallocated. */
static seam_status with_stages(const seam_plan *plan, const seam_stage_options *so, int micro, char **text) {
    seam_stages *st = NULL;
    seam_status rc = seam_plan_stages(plan, so, &st);
    size_t need = 0;
    char *pipe = NULL;
    if (!rc) rc = seam_stages_json(st, micro, NULL, 0, &need);
    if (!rc && !(pipe = malloc(need))) rc = SEAM_STATUS_OUT_OF_MEMORY;
    if (!rc) rc = seam_stages_json(st, micro, pipe, need, NULL);
    size_t n = *text ? strlen(*text) : 0;
    while (n && (*text)[n - 1] != '}') n--;
    char *all = !rc && n ? malloc(n + strlen(pipe) + 16) : NULL;
    if (!rc && !all) rc = SEAM_STATUS_OUT_OF_MEMORY;
    if (!rc) {
        sprintf(all, "%.*s,\"pipeline\":%s}", (int)(n - 1), *text, pipe);
        free(*text);
        *text = all;
    }
    free(pipe);
    seam_stages_free(st);
    return rc;
}

/* partition(targets, min_support, min_subgraph_size, max_subgraph_count,
 *           on_violation_error, cpu_ops, pins, analysis, apply,
 *           target_options, name, capability, rewrite, stages, stage_memory,
 *           link_gbits, link_latency_us, micro_batches) -> JSON text
 * With stages (> 0), the text has the plan cut into that many pipeline
 * stages as "pipeline" (and the schedule of micro_batches when > 0).
 * With analysis, no constraints apply and the text is the analysis; with
 * apply, the model is rewritten as the plan says (ai.seam Subgraph nodes). */
static PyObject *Graph_partition(GraphObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"targets", "min_support", "min_subgraph_size", "max_subgraph_count", "on_violation_error",
                             "cpu_ops", "pins", "analysis", "apply", "target_options", "name", "capability",
                             "rewrite", "stages", "stage_memory", "link_gbits", "link_latency_us", "micro_batches", NULL};
    PyObject *targets_obj, *cpu_ops_obj = Py_None, *pins_obj = Py_None, *topts_obj = Py_None;
    double min_support = 0;
    int min_size = 1, max_count = 0, on_error = 0, analysis = 0, apply = 0, capability = 0, rewrite = 0, micro = 0;
    const char *name = "";
    seam_stage_options so = seam_stage_defaults();
    so.n_stages = 0; /* (none unless asked) */
    long long stage_mem = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|diipOOppOsppiLddi", kwlist, &targets_obj, &min_support, &min_size,
                                     &max_count, &on_error, &cpu_ops_obj, &pins_obj, &analysis, &apply, &topts_obj,
                                     &name, &capability, &rewrite, &so.n_stages, &stage_mem, &so.link_gbits,
                                     &so.link_latency_us, &micro))
        return NULL;
    so.memory_bytes = (int64_t)stage_mem;
    const seam_backend *targets[MAX_TARGETS];
    int64_t memory[MAX_TARGETS];
    const char *cpu_ops[MAX_LIST], *topts[MAX_LIST], *pin_strs[2 * MAX_LIST];
    seam_pin pins[MAX_LIST];
    int32_t n_targets, n_cpu_ops, n_topts, n_pin_strs;
    if (targets_mem_of(targets_obj, targets, memory, MAX_TARGETS, &n_targets) ||
        strings_of(cpu_ops_obj, cpu_ops, MAX_LIST, &n_cpu_ops, "cpu_ops must be a sequence of op types") ||
        strings_of(topts_obj, topts, MAX_LIST, &n_topts, "target_options must be a sequence of str") ||
        strings_of(pins_obj, pin_strs, 2 * MAX_LIST, &n_pin_strs, "pins must be a flat sequence node, target, ..."))
        return NULL;
    if (n_pin_strs % 2) return PyErr_Format(PyExc_ValueError, "pins must be a flat sequence node, target, ...");
    for (int32_t k = 0; k < n_pin_strs / 2; k++) pins[k] = (seam_pin){pin_strs[2 * k], pin_strs[2 * k + 1]};

    seam_partition_options o = seam_partition_defaults();
    o.targets = targets;
    o.n_targets = n_targets;
    for (int32_t k = 0; k < n_targets; k++) /* the targets' memory budgets, when any has one */
        if (memory[k] > 0) o.memory_bytes = memory;
    o.placement = capability ? SEAM_PLACEMENT_CAPABILITY : SEAM_PLACEMENT_COST;
    if (!analysis) {
        o.min_support = min_support;
        o.min_subgraph_size = min_size;
        o.max_subgraph_count = max_count;
        o.on_violation = on_error ? SEAM_ON_VIOLATION_ERROR : SEAM_ON_VIOLATION_FALLBACK;
        o.cpu_ops = cpu_ops;
        o.n_cpu_ops = n_cpu_ops;
        o.pins = pins;
        o.n_pins = n_pin_strs / 2;
    }
    seam_plan *plan = NULL;
    char *text = NULL;
    size_t need = 0;
    seam_status st;
    graph_lock(self);
    Py_BEGIN_ALLOW_THREADS
    st = rewrite ? seam_model_rewrite(self->model, &o, NULL) : SEAM_STATUS_OK;
    if (!st) st = seam_partition(self->model, &o, &plan);
    if (!st) st = analysis ? seam_plan_analysis_json(plan, name, NULL, 0, &need) : seam_plan_json(plan, name, NULL, 0, &need);
    if (!st && !(text = malloc(need))) st = SEAM_STATUS_OUT_OF_MEMORY;
    if (!st) st = analysis ? seam_plan_analysis_json(plan, name, text, need, NULL) : seam_plan_json(plan, name, text, need, NULL);
    if (!st && so.n_stages > 0) st = with_stages(plan, &so, micro, &text);
    if (!st && apply) st = seam_plan_apply(self->model, plan, targets, n_targets, n_topts ? topts : NULL, n_topts);
    seam_plan_free(plan);
    Py_END_ALLOW_THREADS
    PyObject *r = st ? graph_fail(self, st) : PyUnicode_FromString(text);
    graph_unlock(self);
    free(text);
    return r;
}

/* One calibration set (a dict of arrays) bound and observed. */
static int quantize_observe(GraphObject *g, seam_quantizer *q, PyObject *feeds) {
    if (!PyDict_Check(feeds)) return PyErr_SetString(PyExc_TypeError, "quantize: each calibration set must be a dict "
                                                                      "of input name -> array"), -1;
    Py_ssize_t n = PyDict_Size(feeds), pos = 0, k = 0;
    PyObject **arrays = PyMem_Calloc((size_t)n + 1, sizeof(PyObject *)), *key, *value;
    int rc = arrays ? 0 : (PyErr_NoMemory(), -1);
    while (!rc && PyDict_Next(feeds, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        PyArrayObject *a = (PyArrayObject *)(arrays[k++] = PyArray_FROM_OF(value, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED));
        if (!name || !a) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "quantize: input names must be str");
            rc = -1;
            break;
        }
        int64_t dims[NPY_MAXDIMS];
        for (int d = 0; d < PyArray_NDIM(a); d++) dims[d] = PyArray_DIM(a, d);
        seam_status st = seam_quantizer_set_input(q, name, seam_of_npy(PyArray_TYPE(a)), PyArray_NDIM(a), dims, PyArray_DATA(a));
        if (st) rc = (graph_fail(g, st), -1);
    }
    if (!rc) {
        seam_status st;
        Py_BEGIN_ALLOW_THREADS
        st = seam_quantizer_observe(q);
        Py_END_ALLOW_THREADS
        if (st) rc = (graph_fail(g, st), -1);
    }
    for (Py_ssize_t j = 0; arrays && j < n; j++) Py_XDECREF(arrays[j]);
    PyMem_Free(arrays);
    return rc;
}

/* seam_quantizer_keep_within's binder: set k of a list of dicts of
 * C-contiguous arrays (Python's seam.quantize makes them so), read in
 * place; called with the GIL held. */
typedef struct bind_sets {
    PyObject *sets;  /* a list */
    const char *why; /* what was wrong with a set, or NULL */
} bind_sets;

static seam_status bind_set(void *user, int32_t set, seam_session *s) {
    bind_sets *b = user;
    PyObject *feeds = PyList_GetItem(b->sets, set), *key, *value;
    Py_ssize_t pos = 0;
    if (!feeds || !PyDict_Check(feeds))
        return b->why = "each calibration set must be a dict of input name -> array", SEAM_STATUS_INVALID_ARGUMENT;
    while (PyDict_Next(feeds, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (!name || !PyArray_Check(value) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)value) ||
            !PyArray_ISALIGNED((PyArrayObject *)value))
            return b->why = "each calibration set must map str names to C-contiguous numpy arrays",
                   SEAM_STATUS_INVALID_ARGUMENT;
        PyArrayObject *a = (PyArrayObject *)value;
        int64_t dims[NPY_MAXDIMS];
        for (int d = 0; d < PyArray_NDIM(a); d++) dims[d] = PyArray_DIM(a, d);
        seam_status st = seam_session_set_input(s, name, seam_of_npy(PyArray_TYPE(a)), PyArray_NDIM(a), dims, PyArray_DATA(a));
        if (st) return st;
    }
    return SEAM_STATUS_OK;
}

static PyObject *Graph_quantize(GraphObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"calibration", "dynamic", "method", "percentile", "per_channel", "exclude", "threads",
                             "reduce_range", "max_error", "targets", NULL};
    PyObject *calib = Py_None, *per_channel = Py_None, *exclude = NULL, *targets_obj = Py_None;
    int dynamic = 0, threads = 0, reduce_range = 0;
    const char *method = "minmax";
    double percentile = 99.999, max_error = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OpsdOOipdO", kwlist, &calib, &dynamic, &method, &percentile,
                                     &per_channel, &exclude, &threads, &reduce_range, &max_error, &targets_obj))
        return NULL;
    const seam_backend *targets[MAX_TARGETS];
    int32_t n_targets = 0;
    if (targets_obj != Py_None && targets_of(targets_obj, targets, MAX_TARGETS, &n_targets)) return NULL;
    if (max_error != 0 && !(max_error > 0 && isfinite(max_error)))
        return PyErr_Format(PyExc_ValueError, "quantize: max_error must be a relative error above 0 (0.02 for 2%%), got %g",
                            max_error);
    if (max_error > 0 && (dynamic || !PyList_Check(calib)))
        return PyErr_Format(PyExc_ValueError, "quantize: max_error needs static quantization and a list of calibration "
                            "sets: the error is measured on them");
    seam_quantize_options o = seam_quantize_defaults();
    o.mode = dynamic ? SEAM_QUANT_DYNAMIC : SEAM_QUANT_STATIC;
    if (!strcmp(method, "percentile")) o.method = SEAM_CALIB_PERCENTILE;
    else if (strcmp(method, "minmax")) return PyErr_Format(PyExc_ValueError, "quantize: method must be 'minmax' or 'percentile', got '%s'", method);
    o.percentile = percentile;
    o.weights = per_channel == Py_None ? SEAM_QUANT_AUTO : PyObject_IsTrue(per_channel) ? SEAM_QUANT_PER_CHANNEL : SEAM_QUANT_PER_TENSOR;
    o.n_threads = threads;
    o.reduce_range = reduce_range != 0;
    PyObject *ex = exclude ? PySequence_Fast(exclude, "quantize: exclude must be a sequence of node names") : NULL;
    if (exclude && !ex) return NULL;
    Py_ssize_t n_ex = ex ? PySequence_Fast_GET_SIZE(ex) : 0;
    const char **names = PyMem_Calloc((size_t)n_ex + 1, sizeof(char *));
    PyObject *it = NULL, *r = NULL;
    seam_quantizer *q = NULL;
    if (!names) goto out;
    for (Py_ssize_t k = 0; k < n_ex; k++)
        if (!(names[k] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(ex, k)))) goto out;
    o.exclude = names, o.n_exclude = (int32_t)n_ex;
    if (calib != Py_None && !(it = PyObject_GetIter(calib))) goto out;
    graph_lock(self);
    seam_status st = seam_quantizer_create(self->model, &o, &q);
    PyObject *set;
    int rc = st ? (graph_fail(self, st), -1) : 0;
    while (!rc && it && (set = PyIter_Next(it))) {
        rc = quantize_observe(self, q, set);
        Py_DECREF(set);
    }
    if (!rc && PyErr_Occurred()) rc = -1;
    size_t report_len = (size_t)1 << 20; /* a line per subgraph (about 100 bytes) and the summary */
    char *report = !rc && max_error > 0 ? PyMem_Malloc(report_len) : NULL;
    double err = -1;
    if (!rc && max_error > 0 && !report) rc = (PyErr_NoMemory(), -1);
    if (!rc && max_error > 0) {
        seam_partition_options po = seam_partition_defaults();
        po.targets = targets, po.n_targets = n_targets;
        bind_sets bs = {calib, NULL};
        st = seam_quantizer_keep_within(q, &po, max_error, (int32_t)PyList_Size(calib), bind_set, &bs, &err, report,
                                        report_len);
        if (st && bs.why) rc = (PyErr_Format(PyExc_TypeError, "quantize: %s", bs.why), -1);
        else if (st) rc = (graph_fail(self, st), -1);
    }
    seam_quantize_stats qs;
    if (!rc && (st = seam_quantizer_finish(q, &qs))) rc = (graph_fail(self, st), -1);
    if (!rc)
        r = Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:d,s:s}", "quantized_ops", qs.quantized_ops, "activations",
                          qs.activations, "weights", qs.weights, "removed_activations", qs.removed_activations,
                          "dynamic_matmuls", qs.dynamic_matmuls, "left_float", qs.left_float, "calibration_runs",
                          qs.calibration_runs, "notes", seam_quantizer_notes(q), "error", err, "max_error_report",
                          report ? report : "");
    PyMem_Free(report);
    seam_quantizer_free(q);
    graph_unlock(self);
out:
    Py_XDECREF(it);
    Py_XDECREF(ex);
    PyMem_Free(names);
    return r;
}

static PyMethodDef Graph_methods[] = {
    {"inputs", (PyCFunction)Graph_inputs, METH_NOARGS, "[(name, dtype, shape)] of the graph inputs"},
    {"outputs", (PyCFunction)Graph_outputs, METH_NOARGS, "[(name, dtype, shape)] of the graph outputs"},
    {"node_count", (PyCFunction)Graph_node_count, METH_NOARGS, "number of nodes"},
    {"fold", (PyCFunction)Graph_fold, METH_NOARGS, "fold constant nodes; returns how many"},
    {"fuse_qdq", (PyCFunction)Graph_fuse_qdq, METH_NOARGS, "make QDQ units QLinear nodes; returns counts"},
    {"nodes", (PyCFunction)Graph_nodes, METH_NOARGS, "[(name, op_type, domain)] of the nodes"},
    {"metadata", (PyCFunction)Graph_metadata, METH_NOARGS, "the model's metadata fields as a dict"},
    {"set_input_shape", (PyCFunction)Graph_set_input_shape, METH_VARARGS, "fix an input's shape"},
    {"save", (PyCFunction)Graph_save, METH_VARARGS, "save(path, weights_file=None)"},
    {"quantize", (PyCFunction)(void (*)(void))Graph_quantize, METH_VARARGS | METH_KEYWORDS,
     "quantize(calibration=None, dynamic=False, method='minmax', percentile=99.999, per_channel=None, exclude=(), "
     "threads=0, reduce_range=False, max_error=0, targets=None) -> stats dict; the graph becomes its quantized form"},
    {"replace_weights", (PyCFunction)Graph_replace_weights, METH_VARARGS, "replace_weights(donor) -> count"},
    {"partition", (PyCFunction)(void (*)(void))Graph_partition, METH_VARARGS | METH_KEYWORDS,
     "partition(targets, ...) -> JSON text of the plan (or analysis)"},
    {NULL},
};

static PyTypeObject GraphType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seam._seam.Graph",
    .tp_basicsize = sizeof(GraphObject),
    .tp_dealloc = (destructor)Graph_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Graph(path_or_bytes, base_dir=None): a loaded ONNX model",
    .tp_init = (initproc)Graph_init,
    .tp_new = PyType_GenericNew,
    .tp_methods = Graph_methods,
};

/* ---- Session ---- */

typedef struct {
    PyObject_HEAD
    GraphObject *graph;
    PyObject *targets; /* the Target objects: their tables must outlive the session */
    const seam_backend *tables[MAX_TARGETS];
    seam_session *session;
    long long input_copies;  /* feeds run() had to copy (not C-contiguous, aligned, of a seam dtype) */
    long long output_copies; /* outputs given as arrays that seam wrote elsewhere first */
} SessionObject;

static void Session_dealloc(SessionObject *self) {
    if (self->session) {
        graph_lock(self->graph);
        seam_session_free(self->session);
        graph_unlock(self->graph);
    }
    Py_XDECREF(self->graph);
    Py_XDECREF(self->targets);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Session_init(SessionObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"graph", "targets", "threads", "dynamic_batch", "profile", NULL};
    GraphObject *graph;
    PyObject *targets_obj = NULL;
    int threads = 0, dynamic_batch = 0, profile = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|Oipp", kwlist, &GraphType, &graph, &targets_obj, &threads,
                                     &dynamic_batch, &profile))
        return -1;
    if (self->graph) {
        PyErr_SetString(PyExc_TypeError, "Session is already initialized");
        return -1;
    }
    int32_t n_targets = 0;
    if (targets_obj && targets_obj != Py_None) {
        if (targets_of(targets_obj, self->tables, MAX_TARGETS, &n_targets)) return -1;
        self->targets = PySequence_Tuple(targets_obj);
        if (!self->targets) return -1;
    }
    Py_INCREF(graph);
    self->graph = graph;
    seam_session_options o = {0};
    o.n_threads = threads;
    o.dynamic_batch = dynamic_batch;
    o.profile = profile;
    o.targets = n_targets ? self->tables : NULL;
    o.n_targets = n_targets;
    seam_status st;
    graph_lock(graph);
    Py_BEGIN_ALLOW_THREADS
    st = seam_session_create(graph->model, &o, &self->session);
    Py_END_ALLOW_THREADS
    if (st) graph_fail(graph, st);
    graph_unlock(graph);
    return st ? -1 : 0;
}

/* The seam dtype of an ml_dtypes array (a numpy user dtype: bfloat16,
 * float8_e4m3fn, ...), or UNDEFINED. */
static seam_dtype ml_dtype(PyArrayObject *a) {
    PyArray_Descr *d = PyArray_DESCR(a);
    if (PyArray_TYPE(a) < NPY_USERDEF || !d->typeobj) return SEAM_DTYPE_UNDEFINED;
    const char *n = strrchr(d->typeobj->tp_name, '.');
    n = n ? n + 1 : d->typeobj->tp_name;
    static const struct {
        const char *name;
        seam_dtype dtype;
        int size;
    } ml[] = {{"bfloat16", SEAM_DTYPE_BFLOAT16, 2},           {"float8_e4m3fn", SEAM_DTYPE_FLOAT8E4M3FN, 1},
              {"float8_e4m3fnuz", SEAM_DTYPE_FLOAT8E4M3FNUZ, 1}, {"float8_e5m2", SEAM_DTYPE_FLOAT8E5M2, 1},
              {"float8_e5m2fnuz", SEAM_DTYPE_FLOAT8E5M2FNUZ, 1}};
    for (size_t k = 0; k < sizeof(ml) / sizeof(ml[0]); k++)
        if (strcmp(n, ml[k].name) == 0 && PyArray_ITEMSIZE(a) == ml[k].size) return ml[k].dtype;
    return SEAM_DTYPE_UNDEFINED;
}

/* Whether array a holds the bits of dtype d, which numpy lacks: uint16 for
 * bfloat16, uint8 for the float8 types, or ml_dtypes' own type. */
static bool bits_of(PyArrayObject *a, seam_dtype d) {
    if (ml_dtype(a) == d && d != SEAM_DTYPE_UNDEFINED) return true;
    return (d == SEAM_DTYPE_BFLOAT16 && PyArray_TYPE(a) == NPY_UINT16) || (is_float8(d) && PyArray_TYPE(a) == NPY_UINT8);
}

/* Binds each array of `outputs` ({output name: ndarray}) as that output's
 * buffer; an array must be writeable, C-contiguous and of the output's
 * dtype. *n counts those bound into bound[], also when one fails (-1), so
 * the caller unbinds every one. */
static int bind_outputs(SessionObject *self, PyObject *outputs, PyObject **names, PyArrayObject **bound, int max,
                        int *n_bound) {
    GraphObject *g = self->graph;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    int n = 0;
    *n_bound = 0;
    while (PyDict_Next(outputs, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (!name) return PyErr_SetString(PyExc_TypeError, "outputs: output names must be str"), -1;
        if (!PyArray_Check(value))
            return PyErr_Format(PyExc_TypeError, "outputs: '%s' must be a numpy array (got %s)", name,
                                Py_TYPE(value)->tp_name), -1;
        PyArrayObject *a = (PyArrayObject *)value;
        if (!PyArray_ISCARRAY(a))
            return PyErr_Format(PyExc_ValueError, "outputs: the array for '%s' must be writeable, C-contiguous and "
                                "aligned", name), -1;
        int32_t n_out = seam_model_output_count(g->model), i = 0;
        seam_value_info v = {0};
        for (; i < n_out; i++)
            if (!seam_model_output(g->model, i, &v) && strcmp(v.name, name) == 0) break;
        if (i == n_out) return PyErr_Format(PyExc_ValueError, "outputs: the model has no output '%s'", name), -1;
        if (v.dtype != SEAM_DTYPE_UNDEFINED && seam_of_npy(PyArray_TYPE(a)) != v.dtype &&
            !bits_of(a, v.dtype))
            return PyErr_Format(PyExc_ValueError, "outputs: output '%s' is %s; the array given is %s", name,
                                seam_dtype_name(v.dtype), PyArray_DESCR(a)->typeobj->tp_name), -1;
        if (n == max) return PyErr_SetString(PyExc_ValueError, "outputs: too many arrays"), -1;
        seam_status st = seam_session_set_output_buffer(self->session, name, PyArray_DATA(a), (size_t)PyArray_NBYTES(a));
        if (st) return graph_fail(g, st), -1;
        names[n] = key;
        bound[n++] = a;
        *n_bound = n;
    }
    return 0;
}

/* ---- feeds and results of every kind ---- */


/* A numpy array of str or bytes (dtype U, S, or object holding str/bytes)
 * as seam's string data: numel seam_bytes and then their bytes, in one
 * bytes object appended to keep (alive until the run returns). */
static int string_feed(const char *name, PyArrayObject *a, PyObject *keep, const void **data) {
    npy_intp n = PyArray_SIZE(a);
    PyObject *items = PyList_New(n); /* each element as a bytes object (UTF-8 for str) */
    if (!items) return -1;
    size_t text = 0;
    PyObject *flat = PyArray_Ravel(a, NPY_CORDER);
    if (!flat) return Py_DECREF(items), -1;
    for (npy_intp i = 0; i < n; i++) {
        PyObject *e = PySequence_GetItem(flat, i), *b = NULL;
        if (e && PyUnicode_Check(e)) b = PyUnicode_AsUTF8String(e);
        else if (e && PyBytes_Check(e)) b = (Py_INCREF(e), e);
        else if (e) PyErr_Format(PyExc_ValueError, "input '%s': element %zd is %s; strings are str or bytes", name,
                                 (Py_ssize_t)i, Py_TYPE(e)->tp_name);
        Py_XDECREF(e);
        if (!b) return Py_DECREF(flat), Py_DECREF(items), -1;
        text += (size_t)PyBytes_GET_SIZE(b);
        PyList_SET_ITEM(items, i, b);
    }
    Py_DECREF(flat);
    PyObject *block = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((size_t)n * sizeof(seam_bytes) + text + 1));
    if (!block || PyList_Append(keep, block)) return Py_XDECREF(block), Py_DECREF(items), -1;
    Py_DECREF(block); /* keep holds it */
    seam_bytes *sb = (seam_bytes *)PyBytes_AS_STRING(block);
    char *at = (char *)(sb + n);
    for (npy_intp i = 0; i < n; i++) {
        PyObject *b = PyList_GET_ITEM(items, i);
        size_t len = (size_t)PyBytes_GET_SIZE(b);
        memcpy(at, PyBytes_AS_STRING(b), len);
        sb[i] = (seam_bytes){at, len};
        at += len;
    }
    Py_DECREF(items);
    *data = sb;
    return 0;
}

/* One tensor feed as a view (dims into dims[], data kept alive by keep).
 * declared: the dtype the model declares (UNDEFINED: any); uint16 for a
 * bfloat16 input is its bits. Counts copies in self->input_copies. */
static int tensor_feed(SessionObject *self, const char *name, PyObject *value, seam_dtype declared, PyObject *keep,
                       seam_tensor_view *tv, int64_t *dims) {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROM_OF(value, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (!a) return -1;
    if ((PyObject *)a != value) self->input_copies++;
    int r = PyList_Append(keep, (PyObject *)a);
    Py_DECREF(a);
    if (r) return -1;
    if (PyArray_NDIM(a) > 16) return PyErr_Format(PyExc_ValueError, "input '%s': rank %d is above 16", name,
                                                  PyArray_NDIM(a)), -1;
    for (int d = 0; d < PyArray_NDIM(a); d++) dims[d] = PyArray_DIM(a, d);
    *tv = (seam_tensor_view){.name = name, .rank = PyArray_NDIM(a), .dims = dims, .data = PyArray_DATA(a),
                             .nbytes = (size_t)PyArray_NBYTES(a)};
    char kind = PyArray_DESCR(a)->kind;
    if (kind == 'U' || kind == 'S' || kind == 'O') {
        tv->dtype = SEAM_DTYPE_STRING;
        return string_feed(name, a, keep, &tv->data);
    }
    if (ml_dtype(a) != SEAM_DTYPE_UNDEFINED || bits_of(a, declared)) {
        tv->dtype = ml_dtype(a) != SEAM_DTYPE_UNDEFINED ? ml_dtype(a) : declared;
        return 0;
    }
    tv->dtype = seam_of_npy(PyArray_TYPE(a));
    if (tv->dtype == SEAM_DTYPE_UNDEFINED)
        return PyErr_Format(PyExc_ValueError, "input '%s': numpy dtype %s has no seam dtype", name,
                            PyArray_DESCR(a)->typeobj->tp_name), -1;
    return 0;
}

/* Binds one feed of any kind: None (an empty optional), a list or tuple
 * (a sequence of tensors), or an array. */
static int bind_feed(SessionObject *self, const char *name, PyObject *value, PyObject *keep) {
    seam_type_info ti = {0};
    GraphObject *g = self->graph;
    if (seam_model_value_type(g->model, name, &ti)) ti.elem_dtype = SEAM_DTYPE_UNDEFINED;
    seam_value_view vv = {.kind = SEAM_KIND_TENSOR};
    int64_t dims[16];
    seam_tensor_view *els = NULL;
    int64_t (*edims)[16] = NULL;
    int r = 0;
    if (value == Py_None) {
        vv.kind = SEAM_KIND_NONE;
    } else if (PyList_Check(value) || PyTuple_Check(value)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
        if (n > INT32_MAX) return PyErr_Format(PyExc_ValueError, "input '%s': a sequence too long", name), -1;
        els = PyMem_Calloc((size_t)n + 1, sizeof(seam_tensor_view));
        edims = PyMem_Calloc((size_t)n + 1, sizeof(*edims));
        if (!els || !edims) r = (PyErr_NoMemory(), -1);
        for (Py_ssize_t i = 0; !r && i < n; i++)
            r = tensor_feed(self, name, PySequence_Fast_GET_ITEM(value, i), ti.elem_dtype, keep, &els[i], edims[i]);
        vv = (seam_value_view){.kind = SEAM_KIND_SEQUENCE, .elem_dtype = n ? els[0].dtype : ti.elem_dtype,
                               .count = (int32_t)n, .elements = els};
    } else {
        r = tensor_feed(self, name, value, ti.elem_dtype, keep, &vv.tensor, dims);
    }
    seam_status st = r ? SEAM_STATUS_OK : seam_session_set_input_value(self->session, name, &vv);
    PyMem_Free(els);
    PyMem_Free(edims);
    if (st) graph_fail(g, st);
    return r || st ? -1 : 0;
}

/* A tensor view as a new numpy array (a copy): strings as numpy unicode
 * (bytes that are not UTF-8: an object array of bytes), bfloat16 as its
 * uint16 bits. */
static PyObject *tensor_result(const seam_tensor_view *v) {
    npy_intp dims[NPY_MAXDIMS];
    for (int32_t d = 0; d < v->rank && d < NPY_MAXDIMS; d++) dims[d] = (npy_intp)v->dims[d];
    if (v->dtype == SEAM_DTYPE_STRING) {
        npy_intp n = 1;
        for (int32_t d = 0; d < v->rank; d++) n *= dims[d];
        PyObject *list = PyList_New(n);
        bool utf8 = true;
        const seam_bytes *sb = v->data;
        for (npy_intp i = 0; list && i < n; i++) {
            PyObject *e = utf8 ? PyUnicode_DecodeUTF8(sb[i].data, (Py_ssize_t)sb[i].len, "strict") : NULL;
            if (!e && utf8) { /* not UTF-8: every element as bytes, from the first */
                PyErr_Clear();
                utf8 = false;
                i = -1;
                continue;
            }
            if (!e) e = PyBytes_FromStringAndSize(sb[i].data, (Py_ssize_t)sb[i].len);
            if (!e) Py_CLEAR(list);
            else PyList_SetItem(list, i, e); /* drops a str put there before */
        }
        if (!list) return NULL;
        PyObject *flat = utf8 ? PyArray_FROM_O(list) : PyArray_FROMANY(list, NPY_OBJECT, 1, 1, 0);
        if (utf8 && flat && n == 0) { /* an empty list gives float64: make it a string array */
            Py_DECREF(flat);
            flat = PyArray_SimpleNew(1, &n, NPY_UNICODE);
        }
        if (flat && utf8 && n > 0 && PyArray_DESCR((PyArrayObject *)flat)->kind != 'U') { /* all empty strings */
            PyObject *u = PyObject_CallMethod(flat, "astype", "s", "U1");
            Py_DECREF(flat);
            flat = u;
        }
        Py_DECREF(list);
        if (!flat) return NULL;
        PyArray_Dims shape = {dims, v->rank};
        PyObject *arr = PyArray_Newshape((PyArrayObject *)flat, &shape, NPY_CORDER);
        Py_DECREF(flat);
        return arr;
    }
    int npy = npy_of_seam(v->dtype);
    if (npy < 0)
        return PyErr_Format(UnsupportedError, "output '%s': seam dtype %s has no numpy dtype", v->name,
                            seam_dtype_name(v->dtype));
    PyObject *arr = PyArray_SimpleNew(v->rank, dims, npy);
    if (arr && v->nbytes) memcpy(PyArray_DATA((PyArrayObject *)arr), v->data, v->nbytes);
    return arr;
}

/* A sequence or an empty optional as a list of arrays or None. */
static PyObject *value_result(const seam_value_view *v) {
    if (v->kind == SEAM_KIND_NONE) Py_RETURN_NONE;
    PyObject *list = PyList_New(v->count);
    for (int32_t i = 0; list && i < v->count; i++) {
        PyObject *e = tensor_result(&v->elements[i]);
        if (!e) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, e);
    }
    return list;
}

/* run(feeds: dict name -> array-like, outputs=None) -> dict name -> ndarray.
 * Every input must be given (seam keeps pointers to the data only during
 * this call); a C-contiguous, aligned array of the right dtype is read in
 * place, anything else is copied first (counted: stats()["input_copies"]).
 * outputs: {name: ndarray} written in place; those come back as the same
 * arrays (a view when the output's shape differs). */
static PyObject *Session_run(SessionObject *self, PyObject *args) {
    PyObject *feeds, *outputs = Py_None;
    if (!PyArg_ParseTuple(args, "O!|O", &PyDict_Type, &feeds, &outputs)) return NULL;
    if (outputs != Py_None && !PyDict_Check(outputs))
        return PyErr_Format(PyExc_TypeError, "outputs must be a dict {output name: numpy array} or None");
    if (!self->session) return PyErr_Format(PyExc_ValueError, "the session is not initialized");
    GraphObject *g = self->graph;
    int32_t n_in = seam_model_input_count(g->model);
    PyObject *keep = PyList_New(0); /* what the feeds' data lives in, until the run returns */
    PyObject *result = NULL, *out_names[MAX_LIST];
    PyArrayObject *bound[MAX_LIST];
    int n_bound = 0;
    if (!keep) return NULL;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    graph_lock(g);
    seam_status st = SEAM_STATUS_OK;
    /* seam checks each name, kind, dtype and shape */
    while (PyDict_Next(feeds, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (!name) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "feeds: input names must be str");
            goto unlock;
        }
        if (bind_feed(self, name, value, keep)) goto unlock;
    }
    /* Every input given: an input left from an earlier run would point at freed data. */
    for (int32_t i = 0; i < n_in; i++) {
        seam_value_info v;
        seam_model_input(g->model, i, &v);
        PyObject *name = PyUnicode_FromString(v.name);
        int has = name ? PyDict_Contains(feeds, name) : -1;
        Py_XDECREF(name);
        if (has <= 0) {
            if (has == 0) PyErr_Format(PyExc_ValueError, "input '%s' was not given", v.name);
            goto unlock;
        }
    }
    if (outputs != Py_None && bind_outputs(self, outputs, out_names, bound, MAX_LIST, &n_bound) < 0) goto unlock;
    Py_BEGIN_ALLOW_THREADS
    st = seam_session_run(self->session);
    Py_END_ALLOW_THREADS
    if (st) {
        graph_fail(g, st);
        goto unlock;
    }
    result = PyDict_New();
    int32_t n_out = seam_model_output_count(g->model);
    for (int32_t i = 0; result && i < n_out; i++) {
        seam_value_view vv;
        st = seam_session_output_value(self->session, i, &vv);
        if (st) {
            graph_fail(g, st);
            Py_CLEAR(result);
            break;
        }
        if (vv.kind != SEAM_KIND_TENSOR || vv.tensor.dtype == SEAM_DTYPE_STRING) { /* lists, None, strings: new objects */
            seam_value_info oi;
            PyObject *arr = vv.kind == SEAM_KIND_TENSOR ? tensor_result(&vv.tensor) : value_result(&vv);
            if (!arr || seam_model_output(g->model, i, &oi) || PyDict_SetItemString(result, oi.name, arr))
                Py_CLEAR(result);
            Py_XDECREF(arr);
            continue;
        }
        seam_tensor_view v = vv.tensor;
        int npy = npy_of_seam(v.dtype);
        if (npy < 0) {
            PyErr_Format(UnsupportedError, "output '%s': seam dtype %s has no numpy dtype", v.name,
                         seam_dtype_name(v.dtype));
            Py_CLEAR(result);
            break;
        }
        npy_intp dims[NPY_MAXDIMS];
        for (int32_t d = 0; d < v.rank && d < NPY_MAXDIMS; d++) dims[d] = (npy_intp)v.dims[d];
        PyArrayObject *given = NULL;
        for (int b = 0; b < n_bound && !given; b++)
            if (strcmp(PyUnicode_AsUTF8(out_names[b]), v.name) == 0) given = bound[b];
        PyObject *arr = NULL;
        if (given && v.data != PyArray_DATA(given) && v.nbytes) {
            if (v.nbytes > (size_t)PyArray_NBYTES(given)) {
                PyErr_Format(PyExc_ValueError, "output '%s' needs %zu bytes; the array given for it holds %zd",
                             v.name, v.nbytes, (Py_ssize_t)PyArray_NBYTES(given));
                given = NULL;
            } else { /* seam wrote it elsewhere (an output that is another's alias): copied, and counted */
                memcpy(PyArray_DATA(given), v.data, v.nbytes);
                self->output_copies++;
            }
        }
        if (PyErr_Occurred()) {
        } else if (given && PyArray_NDIM(given) == v.rank &&
                   memcmp(PyArray_DIMS(given), dims, sizeof(npy_intp) * (size_t)v.rank) == 0) {
            arr = (PyObject *)given; /* written in place, the shape the caller gave */
            Py_INCREF(arr);
        } else if (given) { /* written in place, another shape: a view of the caller's array */
            Py_INCREF(PyArray_DESCR(given));
            arr = PyArray_NewFromDescr(&PyArray_Type, PyArray_DESCR(given), v.rank, dims, NULL,
                                       PyArray_DATA(given), NPY_ARRAY_CARRAY, NULL);
            if (arr && PyArray_SetBaseObject((PyArrayObject *)arr, (PyObject *)given) == 0) Py_INCREF(given);
            else Py_CLEAR(arr);
        } else {
            arr = PyArray_SimpleNew(v.rank, dims, npy);
            if (arr && v.nbytes) memcpy(PyArray_DATA((PyArrayObject *)arr), v.data, v.nbytes);
        }
        if (!arr || PyDict_SetItemString(result, v.name, arr)) Py_CLEAR(result);
        Py_XDECREF(arr);
    }
unlock:
    /* the caller's arrays are bound for this run only */
    for (int b = 0; b < n_bound; b++)
        seam_session_set_output_buffer(self->session, PyUnicode_AsUTF8(out_names[b]), NULL, 0);
    graph_unlock(g);
    Py_DECREF(keep);
    return result;
}

static PyObject *Session_log(SessionObject *self, PyObject *unused) {
    if (!self->session) Py_RETURN_NONE;
    graph_lock(self->graph);
    PyObject *r = PyUnicode_FromString(seam_session_log(self->session));
    graph_unlock(self->graph);
    return r;
}

/* The session's compile counts (seam_session_stats) as a dict. */
static PyObject *Session_stats(SessionObject *self, PyObject *unused) {
    if (!self->session) Py_RETURN_NONE;
    seam_session_stats st;
    graph_lock(self->graph);
    seam_session_stats_get(self->session, &st);
    graph_unlock(self->graph);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:d,s:L,s:L}", "compiles", (long long)st.compiles, "run_compiles",
                         (long long)st.run_compiles, "cache_hits", (long long)st.cache_hits, "evictions",
                         (long long)st.evictions, "cpu_shapes", (long long)st.cpu_shapes, "compile_ms", st.compile_ms,
                         "input_copies", self->input_copies, "output_copies", self->output_copies);
}

static PyObject *Session_set_shape_cache(SessionObject *self, PyObject *args) {
    int n;
    if (!PyArg_ParseTuple(args, "i", &n)) return NULL;
    if (!self->session) Py_RETURN_NONE;
    graph_lock(self->graph);
    seam_status st = seam_session_set_shape_cache(self->session, n);
    PyObject *r = st ? graph_fail(self->graph, st) : (Py_INCREF(Py_None), Py_None);
    graph_unlock(self->graph);
    return r;
}

/* node_stats() -> [(name, op_type, target, start_ms, ms)] of the last run,
 * one per node (a session made with profile=True; seam_session_node_stats). */
static PyObject *Session_node_stats(SessionObject *self, PyObject *unused) {
    if (!self->session) return PyErr_Format(PyExc_ValueError, "the session is not initialized");
    graph_lock(self->graph);
    int32_t n = seam_model_node_count(self->graph->model);
    PyObject *list = PyList_New(n);
    for (int32_t k = 0; list && k < n; k++) {
        seam_node_stats ns;
        seam_status st = seam_session_node_stats(self->session, k, &ns);
        PyObject *t = st ? graph_fail(self->graph, st)
                         : Py_BuildValue("(sssdd)", ns.name, ns.op_type, ns.target, ns.start_ms, ns.ms);
        if (!t) Py_CLEAR(list);
        else PyList_SET_ITEM(list, k, t);
    }
    graph_unlock(self->graph);
    return list;
}

static PyMethodDef Session_methods[] = {
    {"run", (PyCFunction)Session_run, METH_VARARGS,
     "run(feeds: dict, outputs=None) -> dict of numpy arrays; outputs: {name: array} written in place"},
    {"log", (PyCFunction)Session_log, METH_NOARGS, "the compile log of the device subgraphs"},
    {"node_stats", (PyCFunction)Session_node_stats, METH_NOARGS,
     "node_stats() -> [(name, op_type, target, start_ms, ms)] of the last run (profile=True)"},
    {"stats", (PyCFunction)Session_stats, METH_NOARGS,
     "compile counts: compiles, run_compiles, cache_hits, evictions, cpu_shapes, compile_ms"},
    {"set_shape_cache", (PyCFunction)Session_set_shape_cache, METH_VARARGS,
     "set_shape_cache(n): shape signatures each device subgraph keeps compiled"},
    {NULL},
};

static PyTypeObject SessionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seam._seam.Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_dealloc = (destructor)Session_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Session(graph, targets=None, threads=0, dynamic_batch=False, profile=False)",
    .tp_init = (initproc)Session_init,
    .tp_new = PyType_GenericNew,
    .tp_methods = Session_methods,
};

/* ---- module ---- */

static PyObject *version(PyObject *m, PyObject *unused) {
    return PyUnicode_FromFormat("%d.%d.%d", SEAM_VERSION_MAJOR, SEAM_VERSION_MINOR, SEAM_VERSION_PATCH);
}

static PyObject *builtin_targets(PyObject *m, PyObject *unused) { return PyUnicode_FromString(SEAM_TARGETS_BUILT); }

static PyMethodDef module_methods[] = {
    {"version", version, METH_NOARGS, "seam's version"},
    {"builtin_targets", builtin_targets, METH_NOARGS, "the built-in targets of this build, e.g. 'cpu, dnnl'"},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "seam._seam", .m_doc = "seam's C API", .m_size = -1, .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__seam(void) {
    import_array();
    if (PyType_Ready(&TargetType) < 0 || PyType_Ready(&GraphType) < 0 || PyType_Ready(&SessionType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    UnsupportedError = PyErr_NewExceptionWithDoc("seam.UnsupportedError",
                                                 "seam cannot do this (an op, a dtype, a constraint that cannot be met)",
                                                 PyExc_ValueError, NULL);
    if (!UnsupportedError || PyModule_AddObject(m, "UnsupportedError", UnsupportedError) < 0) goto fail;
    Py_INCREF(UnsupportedError); /* the module's reference, and ours */
    Py_INCREF(&TargetType);
    Py_INCREF(&GraphType);
    Py_INCREF(&SessionType);
    if (PyModule_AddObject(m, "Target", (PyObject *)&TargetType) < 0 ||
        PyModule_AddObject(m, "Graph", (PyObject *)&GraphType) < 0 ||
        PyModule_AddObject(m, "Session", (PyObject *)&SessionType) < 0)
        goto fail;
#if SEAM_WITH_MPI
    if (pipeline_add_type(m) < 0) goto fail;
#endif
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
