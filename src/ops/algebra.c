/* Op family: Einsum and Det. */
#include <string.h>

#include "ops/einsum.h"
#include "ops/infer.h"

static void infer_einsum(seam_infer *ic) {
    int32_t dt = infer_in_dtype(ic, 0), n = infer_n_inputs(ic), ranks[EINSUM_MAX_IN];
    const char *eq = node_attr_string(ic->n, "equation", NULL);
    bool known = eq && n <= EINSUM_MAX_IN;
    for (int32_t i = 0; known && i < n; i++) known = (ranks[i] = infer_in_rank(ic, i)) >= 0;
    einsum_spec s;
    char err[128];
    if (!known || einsum_parse(eq, strlen(eq), n, ranks, &s, err, sizeof(err))) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    /* each output label takes its size from an input where it is not a
     * broadcast 1 */
    ir_dim out[EINSUM_MAX_RANK];
    for (int32_t d = 0; d < s.out_rank; d++) {
        ir_dim best = {1, NULL};
        bool any = false;
        for (int32_t i = 0; i < n; i++) {
            const ir_type *t = infer_in(ic, i);
            for (int32_t a = 0; a < s.rank[i]; a++) {
                if (s.label[i][a] != s.out_label[d]) continue;
                ir_dim x = t->dims[a];
                if (!any || best.v == 1 || (best.v < 0 && x.v > 1)) best = x;
                any = true;
            }
        }
        out[d] = best;
    }
    infer_set_tensor(ic, 0, dt, s.out_rank, out);
}

/* Det: [..., M, M] -> [...]. */
static void infer_det(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank < 2) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    infer_set_tensor(ic, 0, dt, x->rank - 2, x->dims);
}

const seam_op_def seam_ops_algebra[] = {
    {"", "Einsum", 12, infer_einsum},
    {"", "Det", 11, infer_det},
};
const size_t seam_ops_algebra_count = sizeof(seam_ops_algebra) / sizeof(seam_ops_algebra[0]);
