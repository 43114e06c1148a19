/* What the extension's two files share: _seam.c (targets, graphs,
 * sessions, the module) and _pipeline.c (seam.Pipeline over MPI, built
 * with SEAM_WITH_MPI alone). numpy's C API is imported once, in
 * _seam.c's module init. */
#ifndef SEAM_PY_SEAM_H
#define SEAM_PY_SEAM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define PY_ARRAY_UNIQUE_SYMBOL seam_py_ARRAY_API
#ifndef SEAM_PY_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "seam.h"
#include "seam_backend.h"

typedef struct {
    PyObject_HEAD
    const seam_backend *backend;
    seam_backend *owned; /* a rules target or an instance, freed with the object */
    PyObject *base;      /* an instance's base Target, kept while the instance lives */
    int64_t memory;      /* what its memory holds (memory=, or a rules file's memory_bytes; 0: no limit) */
} TargetObject;

extern PyTypeObject TargetType;

/* seam's status as the exception its type says (ValueError, UnsupportedError,
 * MemoryError, OSError, RuntimeError), msg its message; returns NULL. */
PyObject *raise_status(seam_status st, const char *msg);
/* numpy's type numbers and seam's dtypes, both ways (-1 / UNDEFINED: none). */
seam_dtype seam_of_npy(int npy);
int npy_of_seam(seam_dtype d);

/* Adds the type Pipeline to the module (_pipeline.c); -1 on an error. */
int pipeline_add_type(PyObject *module);

#endif
