#include <stdbool.h>

#include "seam.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[SEAM_DTYPE_COUNT_] = {
    [SEAM_DTYPE_UNDEFINED] = {"undefined", 0}, [SEAM_DTYPE_FLOAT32] = {"float32", 4},
    [SEAM_DTYPE_UINT8] = {"uint8", 1},         [SEAM_DTYPE_INT8] = {"int8", 1},
    [SEAM_DTYPE_UINT16] = {"uint16", 2},       [SEAM_DTYPE_INT16] = {"int16", 2},
    [SEAM_DTYPE_INT32] = {"int32", 4},         [SEAM_DTYPE_INT64] = {"int64", 8},
    [SEAM_DTYPE_STRING] = {"string", 0},       [SEAM_DTYPE_BOOL] = {"bool", 1},
    [SEAM_DTYPE_FLOAT16] = {"float16", 2},     [SEAM_DTYPE_FLOAT64] = {"float64", 8},
    [SEAM_DTYPE_UINT32] = {"uint32", 4},       [SEAM_DTYPE_UINT64] = {"uint64", 8},
    [SEAM_DTYPE_COMPLEX64] = {"complex64", 8}, [SEAM_DTYPE_COMPLEX128] = {"complex128", 16},
    [SEAM_DTYPE_BFLOAT16] = {"bfloat16", 2},
    [SEAM_DTYPE_FLOAT8E4M3FN] = {"float8e4m3fn", 1}, [SEAM_DTYPE_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1},
    [SEAM_DTYPE_FLOAT8E5M2] = {"float8e5m2", 1},     [SEAM_DTYPE_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1},
};

const char *seam_dtype_name(seam_dtype dtype) {
    if ((int)dtype < 0 || dtype >= SEAM_DTYPE_COUNT_) return "undefined";
    return dtypes[dtype].name;
}

size_t seam_dtype_size(seam_dtype dtype) {
    if ((int)dtype < 0 || dtype >= SEAM_DTYPE_COUNT_) return 0;
    return dtypes[dtype].size;
}
