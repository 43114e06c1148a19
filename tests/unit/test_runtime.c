/*
 * The runtime's shape signature (runtime/subgraph.h): a compiled variant of
 * a device subgraph is reused exactly when two runs' signatures are equal,
 * so a signature that misses any position returns another shape's program
 * (an issue-35 escape: a signature without the last dim of the last input
 * gave a 1x4x5 output for a 1x4x9 input, silently).
 *
 * Inputs of ranks 0 to 4, one of them a parameter (its values count): the
 * same inputs give the same signature; changing any single dim, the dtype,
 * the rank (same element count) or one value of the parameter changes it;
 * changing the data of an input that is not a parameter does not.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/tensor.h"
#include "runtime/subgraph.h"
#include "seam.h"

enum { N_IN = 5 };

static int64_t param_data[16] = {2, -1, 7}; /* room for a changed dim */
static float data[64];

static void inputs(seam_tensor *xs) {
    static const int32_t ranks[N_IN] = {4, 1, 0, 3, 2};
    static const int64_t dims[N_IN][4] = {{1, 3, 8, 8}, {3}, {0}, {2, 4, 5}, {6, 7}};
    for (int32_t i = 0; i < N_IN; i++) {
        seam_tensor *t = &xs[i];
        memset(t, 0, sizeof(*t));
        t->dtype = i == 1 ? SEAM_DTYPE_INT64 : SEAM_DTYPE_FLOAT32;
        t->rank = ranks[i];
        t->numel = 1;
        for (int32_t d = 0; d < t->rank; d++) t->dims[d] = dims[i][d], t->numel *= dims[i][d];
        t->data = i == 1 ? (void *)param_data : (void *)data;
    }
}

static void renumel(seam_tensor *t) {
    t->numel = 1;
    for (int32_t d = 0; d < t->rank; d++) t->numel *= t->dims[d];
}

static bool same(const seam_tensor *a, const seam_tensor *b, const bool *param) {
    const seam_tensor *pa[N_IN], *pb[N_IN];
    for (int32_t i = 0; i < N_IN; i++) pa[i] = &a[i], pb[i] = &b[i];
    int64_t *sa = NULL, *sb = NULL;
    int32_t la = 0, lb = 0;
    CHECK(subgraph_signature(pa, N_IN, param, &sa, &la));
    CHECK(subgraph_signature(pb, N_IN, param, &sb, &lb));
    bool eq = sa && sb && la == lb && memcmp(sa, sb, sizeof(int64_t) * (size_t)la) == 0;
    free(sa);
    free(sb);
    return eq;
}

int main(void) {
    static const bool param[N_IN] = {false, true, false, false, false};
    seam_tensor base[N_IN], x[N_IN];
    inputs(base);
    inputs(x);
    CHECK(same(base, x, param));
    int changed = 0;
    for (int32_t i = 0; i < N_IN; i++) {
        for (int32_t d = 0; d < base[i].rank; d++) { /* every dim of every input, in turn */
            inputs(x);
            x[i].dims[d] += 1;
            renumel(&x[i]);
            if (same(base, x, param)) fprintf(stderr, "input %d dim %d does not count\n", i, d);
            CHECK(!same(base, x, param));
            changed++;
        }
        inputs(x); /* the dtype */
        x[i].dtype = x[i].dtype == SEAM_DTYPE_FLOAT32 ? SEAM_DTYPE_FLOAT16 : SEAM_DTYPE_INT32;
        CHECK(!same(base, x, param));
        inputs(x); /* the rank, with the same element count */
        x[i].dims[x[i].rank] = 1;
        x[i].rank += 1;
        CHECK(!same(base, x, param));
    }
    CHECK(changed == 4 + 1 + 0 + 3 + 2);
    for (int32_t e = 0; e < 3; e++) { /* each value of the parameter */
        inputs(x);
        int64_t other[16] = {param_data[0], param_data[1], param_data[2]};
        other[e] += 5;
        x[1].data = other;
        CHECK(!same(base, x, param));
    }
    inputs(x); /* the data of a tensor that is not a parameter does not count */
    float other_data[64] = {1};
    x[0].data = other_data;
    CHECK(same(base, x, param));
    CHECK_DONE();
}
