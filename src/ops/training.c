/* Op family: the optimizers of ai.onnx.preview.training (Adagrad, Adam,
 * Momentum): each output group has the shapes of the matching inputs. */
#include <string.h>

#include "ops/infer.h"

/* Inputs: R, T, then `groups` lists of n tensors; outputs: `out_groups`
 * lists of n, the k-th output list shaped like input list `k` (X is list
 * 0, and the state lists follow G). */
static void infer_optimizer(seam_infer *ic) {
    const char *op = ic->n->op_type;
    int32_t in_lists = strcmp(op, "Adam") == 0 ? 4 : 3; /* X, G, then V (and H) */
    int32_t n = (infer_n_inputs(ic) - 2) / in_lists;
    for (int32_t o = 0; o < infer_n_outputs(ic) && n > 0; o++) {
        int32_t list = o / n, item = o % n;
        int32_t from = list == 0 ? 0 : list + 1; /* skip G */
        infer_copy_type(ic, o, 2 + from * n + item);
    }
}

const seam_op_def seam_ops_training[] = {
    {"ai.onnx.preview.training", "Adagrad", 1, infer_optimizer},
    {"ai.onnx.preview.training", "Adam", 1, infer_optimizer},
    {"ai.onnx.preview.training", "Momentum", 1, infer_optimizer},
};
const size_t seam_ops_training_count = sizeof(seam_ops_training) / sizeof(seam_ops_training[0]);
