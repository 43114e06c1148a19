/* NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order). */
#ifndef SEAM_NPY_H
#define SEAM_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/tensor.h"

/* Parses .npy bytes into t (t->data malloc'd: the caller frees it). On
 * error returns false and writes why into err. */
bool npy_parse(const unsigned char *buf, size_t n, seam_tensor *t, char *err, size_t errn);
/* Writes t to path as a .npy file; false on I/O error or a dtype .npy
 * cannot hold (bfloat16, string). */
bool npy_write(const char *path, const seam_tensor *t, char *err, size_t errn);
/* Writes a .npy of the given dtype, dims and bytes to f (the caller opens
 * and closes it). Returns 0, 1 for a dtype .npy cannot hold, or 2 for a
 * failed write. */
int npy_write_file(FILE *f, seam_dtype dtype, int32_t rank, const int64_t *dims, const void *data, size_t nbytes);
/* A file name for a value's name: [A-Za-z0-9._-] kept, everything else
 * '_'; fallback instead of "", "." or "..". */
void npy_file_name(const char *name, char *out, size_t n, const char *fallback);

#endif
