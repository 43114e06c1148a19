/* Op family: sequences and optionals (ONNX's non-tensor types). Their
 * values run on the CPU backend only (backends/cpu/sequence.c). */
#include "ops/infer.h"

static void infer_seq_of_input(seam_infer *ic) {
    const ir_type *t = infer_in(ic, 0);
    ir_type inner = t ? *t : (ir_type){IR_TYPE_NONE, 0, -1, NULL, NULL, NULL};
    if (inner.kind == IR_TYPE_TENSOR) inner.rank = -1; /* elements may differ in shape */
    ir_type seq = {IR_TYPE_SEQUENCE, 0, -1, NULL, &inner, NULL};
    infer_set_type(ic, 0, &seq);
}

static void infer_seq_same(seam_infer *ic) { infer_copy_type(ic, 0, 0); }

static void infer_seq_empty(seam_infer *ic) {
    ir_type inner = {IR_TYPE_TENSOR, (int32_t)node_attr_int(ic->n, "dtype", SEAM_DTYPE_FLOAT32), -1, NULL, NULL, NULL};
    ir_type seq = {IR_TYPE_SEQUENCE, 0, -1, NULL, &inner, NULL};
    infer_set_type(ic, 0, &seq);
}

static void infer_seq_at(seam_infer *ic) {
    const ir_type *t = infer_in(ic, 0);
    if (t && t->kind == IR_TYPE_SEQUENCE && t->inner) infer_set_type(ic, 0, t->inner);
}

static void infer_seq_length(seam_infer *ic) { infer_set_tensor(ic, 0, SEAM_DTYPE_INT64, 0, NULL); }

static void infer_concat_from_seq(seam_infer *ic) {
    const ir_type *t = infer_in(ic, 0);
    int32_t dt = t && t->kind == IR_TYPE_SEQUENCE && t->inner ? t->inner->elem : 0;
    infer_set_dtype(ic, 0, dt);
}

static void infer_optional(seam_infer *ic) {
    const ir_type *t = infer_in(ic, 0);
    const ir_attr *a = node_attr(ic->n, "type");
    const ir_type *inner = t ? t : (a && a->kind == IR_ATTR_TYPE_PROTO ? a->tp : NULL);
    if (!inner) return;
    ir_type opt = {IR_TYPE_OPTIONAL, 0, -1, NULL, (ir_type *)inner, NULL};
    infer_set_type(ic, 0, &opt);
}

static void infer_optional_get(seam_infer *ic) {
    const ir_type *t = infer_in(ic, 0);
    if (t && t->kind == IR_TYPE_OPTIONAL && t->inner) infer_set_type(ic, 0, t->inner);
    else if (t) infer_set_type(ic, 0, t);
}

static void infer_optional_has(seam_infer *ic) { infer_set_tensor(ic, 0, SEAM_DTYPE_BOOL, 0, NULL); }

const seam_op_def seam_ops_sequence[] = {
    {"", "SequenceConstruct", 11, infer_seq_of_input},
    {"", "SplitToSequence", 11, infer_seq_of_input},
    {"", "SequenceEmpty", 11, infer_seq_empty},
    {"", "SequenceInsert", 11, infer_seq_same},
    {"", "SequenceErase", 11, infer_seq_same},
    {"", "SequenceAt", 11, infer_seq_at},
    {"", "SequenceLength", 11, infer_seq_length},
    {"", "ConcatFromSequence", 11, infer_concat_from_seq},
    {"", "Optional", 15, infer_optional},
    {"", "OptionalGetElement", 15, infer_optional_get},
    {"", "OptionalHasElement", 15, infer_optional_has},
};
const size_t seam_ops_sequence_count = sizeof(seam_ops_sequence) / sizeof(seam_ops_sequence[0]);
