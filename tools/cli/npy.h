/* NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order). */
#ifndef SEAM_NPY_H
#define SEAM_NPY_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/tensor.h"

/* Parses .npy bytes into t (t->data malloc'd: the caller frees it). On
 * error returns false and writes why into err. */
bool npy_parse(const unsigned char *buf, size_t n, seam_tensor *t, char *err, size_t errn);
/* Writes t to path as a .npy file; false on I/O error or a dtype .npy
 * cannot hold (bfloat16, string). */
bool npy_write(const char *path, const seam_tensor *t, char *err, size_t errn);

#endif
