/*
 * seam._seam.Pipeline: a staged model's pipeline over an MPI communicator
 * (include/seam_mpi.h); seam.Pipeline in __init__.py wraps it and takes
 * mpi4py's communicators. Built with SEAM_WITH_MPI alone.
 *
 *     Pipeline(path, comm_f, threads, micro_batches, stage_timeout, targets)
 *         comm_f: the communicator's Fortran handle (mpi4py's comm.py2f()),
 *         which MPI_Comm_f2c makes a C one; MPI initialised by the caller
 *     run(feeds or None) -> {name: array} on rank 0, None on the others
 *     rank, stages, inputs(), outputs(), stats(), close()
 *
 * Each Pipeline has a context of its own. The GIL is released while the
 * pipeline is made and while it runs (both wait for other ranks).
 */
#include "_seam.h"

#include <mpi.h>

#include "seam_mpi.h"

typedef struct {
    PyObject_HEAD
    seam_context *ctx;
    seam_pipeline *p;
} PipelineObject;

static PyObject *fail(PipelineObject *self, seam_status st) {
    return raise_status(st, seam_context_last_error(self->ctx));
}

static void Pipeline_dealloc(PipelineObject *self) {
    seam_pipeline_free(self->p);
    seam_context_free(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Pipeline_init(PipelineObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "comm_f", "threads", "micro_batches", "stage_timeout", "targets", NULL};
    const char *path;
    long long comm_f;
    int threads = 0, micro = 1;
    double timeout = 10;
    PyObject *targets = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sL|iidO", kwlist, &path, &comm_f, &threads, &micro, &timeout, &targets))
        return -1;
    if (self->p) {
        PyErr_SetString(PyExc_TypeError, "Pipeline is already initialized");
        return -1;
    }
    const seam_backend *tl[32];
    int32_t n = 0;
    if (targets && targets != Py_None) {
        if (!PyList_Check(targets) || PyList_GET_SIZE(targets) > 32) {
            PyErr_SetString(PyExc_TypeError, "targets: a list of at most 32 seam targets");
            return -1;
        }
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(targets); k++) {
            PyObject *t = PyList_GET_ITEM(targets, k);
            if (!PyObject_TypeCheck(t, &TargetType) || !((TargetObject *)t)->backend) {
                PyErr_SetString(PyExc_TypeError, "targets: a list of seam targets");
                return -1;
            }
            tl[n++] = ((TargetObject *)t)->backend;
        }
    }
    if (!self->ctx && seam_context_create(&self->ctx)) { /* (an init called again after a failed one keeps it) */
        PyErr_NoMemory();
        return -1;
    }
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
        PyErr_SetString(PyExc_RuntimeError, "MPI is not initialized: import mpi4py.MPI first");
        return -1;
    }
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)comm_f);
    seam_pipeline_options o = {threads, micro, timeout, tl, n};
    seam_status st;
    Py_BEGIN_ALLOW_THREADS
    st = seam_pipeline_create(self->ctx, path, comm, &o, &self->p);
    Py_END_ALLOW_THREADS
    if (st) {
        fail(self, st);
        return -1;
    }
    return 0;
}

static bool ready(PipelineObject *self) {
    if (self->p) return true;
    PyErr_SetString(PyExc_ValueError, "the pipeline is closed");
    return false;
}

/* Rank 0: the feeds given; false (a Python exception set) at the first
 * that cannot be, which the pipeline is told, so that the run that
 * follows fails on every rank alike. A feed seam refuses is remembered by
 * the pipeline itself. */
static bool give(PipelineObject *self, PyObject *feeds, PyObject *held) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(feeds, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (!name && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "run: input names must be str");
        PyArrayObject *a = name ? (PyArrayObject *)PyArray_FROMANY(value, NPY_NOTYPE, 0, 0, NPY_ARRAY_IN_ARRAY) : NULL;
        if (!a || PyList_Append(held, (PyObject *)a) < 0) {
            Py_XDECREF(a);
            seam_pipeline_refuse_run(self->p, SEAM_STATUS_INVALID_ARGUMENT,
                                     "an input on rank 0 is not an array of a dtype seam takes (Python raised it there)");
            return false;
        }
        Py_DECREF(a);
        int64_t dims[NPY_MAXDIMS];
        for (int d = 0; d < PyArray_NDIM(a); d++) dims[d] = PyArray_DIM(a, d);
        seam_pipeline_set_input(self->p, name, seam_of_npy(PyArray_TYPE(a)), PyArray_NDIM(a), dims, PyArray_DATA(a));
    }
    return true;
}

static PyObject *output_array(PipelineObject *self, int32_t k) {
    seam_tensor_view v;
    seam_status st = seam_pipeline_output(self->p, k, &v);
    if (st) return fail(self, st);
    int npy = npy_of_seam(v.dtype);
    if (npy < 0) return raise_status(SEAM_STATUS_UNSUPPORTED, "an output of a dtype numpy does not have");
    npy_intp dims[NPY_MAXDIMS];
    for (int32_t d = 0; d < v.rank; d++) dims[d] = (npy_intp)v.dims[d];
    PyObject *arr = PyArray_SimpleNew(v.rank, dims, npy);
    if (arr && v.nbytes) memcpy(PyArray_DATA((PyArrayObject *)arr), v.data, v.nbytes);
    return arr;
}

static PyObject *Pipeline_run(PipelineObject *self, PyObject *args) {
    PyObject *feeds = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &feeds) || !ready(self)) return NULL;
    bool root = seam_pipeline_rank(self->p) == 0;
    PyObject *held = PyList_New(0);
    if (!held) return NULL;
    /* a mistake here still runs (and fails on every rank), so that no
     * rank waits for this one */
    bool given = true;
    if (feeds != Py_None && !PyDict_Check(feeds)) {
        PyErr_SetString(PyExc_TypeError, "run: feeds must be a dict {input name: array} or None");
        seam_pipeline_refuse_run(self->p, SEAM_STATUS_INVALID_ARGUMENT, "run: feeds that are not a dict");
        given = false;
    } else if (!root && feeds != Py_None && PyDict_Size(feeds) > 0) {
        PyErr_Format(PyExc_ValueError, "run: feeds on rank %d: rank 0 gives the inputs (run() with none here)",
                     seam_pipeline_rank(self->p));
        seam_pipeline_refuse_run(self->p, SEAM_STATUS_INVALID_ARGUMENT, "run: feeds given on a rank other than 0");
        given = false;
    } else if (root && feeds != Py_None) {
        given = give(self, feeds, held);
    }
    PyObject *exc_type = NULL, *exc_value = NULL, *exc_tb = NULL;
    if (!given) PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    seam_status st;
    Py_BEGIN_ALLOW_THREADS
    st = seam_pipeline_run(self->p);
    Py_END_ALLOW_THREADS
    Py_DECREF(held);
    if (!given) {
        PyErr_Restore(exc_type, exc_value, exc_tb);
        return NULL;
    }
    if (st) return fail(self, st);
    if (!root) Py_RETURN_NONE;
    PyObject *out = PyDict_New();
    for (int32_t k = 0; out && k < seam_pipeline_output_count(self->p); k++) {
        PyObject *arr = output_array(self, k);
        if (!arr || PyDict_SetItemString(out, seam_pipeline_output_name(self->p, k), arr) < 0) {
            Py_XDECREF(arr);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(arr);
    }
    return out;
}

/* A run this rank refuses (an input Python could not convert): every
 * rank's run fails with why; the caller raises its own exception. */
static PyObject *Pipeline_run_refused(PipelineObject *self, PyObject *args) {
    const char *why;
    if (!PyArg_ParseTuple(args, "s", &why) || !ready(self)) return NULL;
    seam_pipeline_refuse_run(self->p, SEAM_STATUS_INVALID_ARGUMENT, why);
    Py_BEGIN_ALLOW_THREADS
    seam_pipeline_run(self->p);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *names(PipelineObject *self, bool inputs) {
    if (!ready(self)) return NULL;
    int32_t n = inputs ? seam_pipeline_input_count(self->p) : seam_pipeline_output_count(self->p);
    PyObject *l = PyList_New(n);
    for (int32_t k = 0; l && k < n; k++)
        PyList_SET_ITEM(l, k, PyUnicode_FromString(inputs ? seam_pipeline_input_name(self->p, k)
                                                          : seam_pipeline_output_name(self->p, k)));
    return l;
}

static PyObject *Pipeline_inputs(PipelineObject *self, PyObject *unused) { return names(self, true); }
static PyObject *Pipeline_outputs(PipelineObject *self, PyObject *unused) { return names(self, false); }

static PyObject *Pipeline_stats(PipelineObject *self, PyObject *unused) {
    seam_pipeline_stats s;
    if (!ready(self)) return NULL;
    seam_status st = seam_pipeline_get_stats(self->p, &s);
    if (st) return fail(self, st);
    return Py_BuildValue("{s:i,s:i,s:i,s:L,s:i,s:d,s:d,s:d}", "rank", s.rank, "stages", s.stages, "nodes", s.n_nodes,
                         "weight_bytes", (long long)s.weight_bytes, "micro_batches", s.micro_batches, "run_ms", s.run_ms,
                         "compute_ms", s.compute_ms, "wait_ms", s.wait_ms);
}

static PyObject *Pipeline_close(PipelineObject *self, PyObject *unused) {
    seam_pipeline_free(self->p);
    self->p = NULL;
    Py_RETURN_NONE;
}

static PyObject *Pipeline_rank(PipelineObject *self, void *unused) {
    return ready(self) ? PyLong_FromLong(seam_pipeline_rank(self->p)) : NULL;
}

static PyObject *Pipeline_stages(PipelineObject *self, void *unused) {
    return ready(self) ? PyLong_FromLong(seam_pipeline_stages(self->p)) : NULL;
}

static PyMethodDef Pipeline_methods[] = {
    {"run", (PyCFunction)Pipeline_run, METH_VARARGS,
     "run(feeds=None): every rank; rank 0 gives the feeds {name: array} and gets {name: array}, the others None"},
    {"run_refused", (PyCFunction)Pipeline_run_refused, METH_VARARGS,
     "run_refused(why): this rank takes part in the run only to fail it on every rank"},
    {"inputs", (PyCFunction)Pipeline_inputs, METH_NOARGS, "the model's input names"},
    {"outputs", (PyCFunction)Pipeline_outputs, METH_NOARGS, "the model's output names"},
    {"stats", (PyCFunction)Pipeline_stats, METH_NOARGS, "this rank's stage and the last run's times"},
    {"close", (PyCFunction)Pipeline_close, METH_NOARGS, "frees the pipeline (every rank)"},
    {NULL},
};

static PyGetSetDef Pipeline_getset[] = {
    {"rank", (getter)Pipeline_rank, NULL, "this process's pipeline rank (its stage)", NULL},
    {"stages", (getter)Pipeline_stages, NULL, "the stage count", NULL},
    {NULL},
};

static PyTypeObject PipelineType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "seam._seam.Pipeline",
    .tp_basicsize = sizeof(PipelineObject),
    .tp_dealloc = (destructor)Pipeline_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Pipeline(path, comm_f, threads=0, micro_batches=1, stage_timeout=10.0, targets=None)",
    .tp_init = (initproc)Pipeline_init,
    .tp_new = PyType_GenericNew,
    .tp_methods = Pipeline_methods,
    .tp_getset = Pipeline_getset,
};

int pipeline_add_type(PyObject *m) {
    if (PyType_Ready(&PipelineType) < 0) return -1;
    Py_INCREF(&PipelineType);
    return PyModule_AddObject(m, "Pipeline", (PyObject *)&PipelineType);
}
