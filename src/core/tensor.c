/* Host values (core/tensor.h): element counts, freeing and copying. */
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"

int64_t seam_shape_numel(const int64_t *dims, int32_t rank) {
    int64_t n = 1;
    for (int32_t k = 0; k < rank; k++) {
        if (dims[k] < 0 || dims[k] > SEAM_MAX_DIM) return -1;
        if (dims[k] == 0) return 0;
        if (n > SEAM_MAX_NUMEL / dims[k]) return -1;
        n *= dims[k];
    }
    return n;
}

seam_value_view seam_value_view_of(const char *name, const seam_tensor *t, seam_tensor_view **elems) {
    *elems = NULL;
    if (t->dtype == SEAM_VALUE_NONE) return (seam_value_view){.kind = SEAM_KIND_NONE};
    if (t->dtype != SEAM_VALUE_SEQUENCE)
        return (seam_value_view){.kind = SEAM_KIND_TENSOR,
                                 .tensor = {name, (seam_dtype)t->dtype, t->rank, t->dims, t->data, t->nbytes}};
    const seam_tensor *els = t->data;
    *elems = calloc((size_t)t->numel + 1, sizeof(seam_tensor_view));
    for (int64_t i = 0; *elems && i < t->numel; i++)
        (*elems)[i] = (seam_tensor_view){name, (seam_dtype)els[i].dtype, els[i].rank, els[i].dims, els[i].data,
                                         els[i].nbytes};
    return (seam_value_view){.kind = SEAM_KIND_SEQUENCE, .elem_dtype = (seam_dtype)t->elem,
                             .count = *elems ? (int32_t)t->numel : -1, .elements = *elems};
}

void seam_value_free(seam_tensor *t) {
    if (t->dtype == SEAM_VALUE_SEQUENCE && t->data)
        for (int64_t i = 0; i < t->numel; i++) seam_value_free(&((seam_tensor *)t->data)[i]);
    free(t->data);
    t->data = NULL;
}

bool seam_value_copy(seam_tensor *dst, const seam_tensor *src) {
    seam_tensor c = *src;
    c.data = NULL;
    if (src->dtype == SEAM_VALUE_NONE) {
        *dst = c;
        return true;
    }
    c.data = malloc(src->nbytes ? src->nbytes : 1);
    if (!c.data) return false;
    if (src->dtype != SEAM_VALUE_SEQUENCE) {
        if (src->nbytes) memcpy(c.data, src->data, src->nbytes);
        *dst = c;
        return true;
    }
    seam_tensor *to = c.data;
    const seam_tensor *from = src->data;
    for (int64_t i = 0; i < src->numel; i++)
        if (!seam_value_copy(&to[i], &from[i])) {
            c.numel = i; /* free the ones made */
            seam_value_free(&c);
            return false;
        }
    *dst = c;
    return true;
}
