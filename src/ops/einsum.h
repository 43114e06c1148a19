/* Einsum equations: parsed once, shared by inference and the kernel. */
#ifndef SEAM_EINSUM_H
#define SEAM_EINSUM_H

#include <stddef.h>
#include <stdint.h>

#define EINSUM_MAX_IN 8
#define EINSUM_MAX_RANK 16
/* Labels: 0-25 'a'-'z', 26-51 'A'-'Z', 52 + k the k-th ellipsis dim
 * (counted from the left of the widest ellipsis). */
#define EINSUM_N_LABELS (52 + EINSUM_MAX_RANK)

typedef struct einsum_spec {
    int32_t n_in;
    int32_t rank[EINSUM_MAX_IN];
    int32_t label[EINSUM_MAX_IN][EINSUM_MAX_RANK];
    int32_t out_rank;
    int32_t out_label[EINSUM_MAX_RANK];
} einsum_spec;

/* Parses eq for n_in inputs of the given ranks. Returns 0, or -1 with a
 * message in err. */
int einsum_parse(const char *eq, size_t len, int32_t n_in, const int32_t *ranks, einsum_spec *s, char *err,
                 size_t err_size);

#endif
