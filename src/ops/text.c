/* Op family: text: TfIdfVectorizer and StringNormalizer. */
#include "ops/infer.h"

/* TfIdfVectorizer: [C] -> [max(ngram_indexes) + 1], [N, C] -> [N, that]. */
static void infer_tfidf(seam_infer *ic) {
    const int64_t *idx;
    int32_t n = node_attr_ints(ic->n, "ngram_indexes", &idx);
    int64_t width = -1;
    for (int32_t k = 0; k < n; k++)
        if (idx[k] + 1 > width) width = idx[k] + 1;
    const ir_type *x = infer_in(ic, 0);
    int32_t r = x && x->kind == IR_TYPE_TENSOR ? x->rank : -1;
    if (r == 1) {
        infer_set_tensor_i64(ic, 0, SEAM_DTYPE_FLOAT32, 1, &width);
    } else if (r == 2) {
        ir_dim d[2] = {x->dims[0], {width, NULL}};
        infer_set_tensor(ic, 0, SEAM_DTYPE_FLOAT32, 2, d);
    } else {
        infer_set_dtype(ic, 0, SEAM_DTYPE_FLOAT32);
    }
}

/* StringNormalizer: strings; the last dim depends on the stop words. */
static void infer_string_normalizer(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    int32_t r = x && x->kind == IR_TYPE_TENSOR ? x->rank : -1;
    if (r == 1 || r == 2) {
        ir_dim d[2] = {x->dims[0], IR_DIM_UNKNOWN};
        if (r == 1) d[0] = IR_DIM_UNKNOWN;
        infer_set_tensor(ic, 0, SEAM_DTYPE_STRING, r, d);
    } else {
        infer_set_dtype(ic, 0, SEAM_DTYPE_STRING);
    }
}

const seam_op_def seam_ops_text[] = {
    {"", "TfIdfVectorizer", 9, infer_tfidf},
    {"", "StringNormalizer", 10, infer_string_normalizer},
};
const size_t seam_ops_text_count = sizeof(seam_ops_text) / sizeof(seam_ops_text[0]);
