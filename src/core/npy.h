/* NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order). */
#ifndef SEAM_NPY_H
#define SEAM_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/tensor.h"

/* Parses .npy bytes into t (t->data malloc'd: the caller frees it). On
 * error returns false and writes why into err. numpy strings (unicode
 * '<Un', bytes '|Sn') become a string tensor: numel seam_bytes, then their
 * bytes (UTF-8 for unicode), one block; object arrays (pickles) are
 * refused. */
bool npy_parse(const unsigned char *buf, size_t n, seam_tensor *t, char *err, size_t errn);
/* Whether .npy holds t as it is: not bfloat16, and strings only when
 * each is UTF-8 without NULs (written as numpy unicode). */
bool npy_holds(const seam_tensor *t);
/* Writes t to path as a .npy file; false on I/O error or what .npy
 * cannot hold (npy_holds). */
bool npy_write(const char *path, const seam_tensor *t, char *err, size_t errn);
/* Writes a .npy of the given dtype, dims and bytes to f (the caller opens
 * and closes it). Returns 0, 1 for a dtype .npy cannot hold, or 2 for a
 * failed write. */
int npy_write_file(FILE *f, seam_dtype dtype, int32_t rank, const int64_t *dims, const void *data, size_t nbytes);
/* A file name for a value's name: [A-Za-z0-9._-] kept, everything else
 * '_'; fallback instead of "", "." or "..". */
void npy_file_name(const char *name, char *out, size_t n, const char *fallback);

#endif
