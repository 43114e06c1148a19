/*
 * The quantizer's parts (include/seam_quantize.h): quantize.c drives it
 * (options, the calibration session, the ranges seen), quantize_graph.c
 * decides what to quantize, quantize_rewrite.c rewrites the graph.
 */
#ifndef SEAM_RUNTIME_QUANTIZE_H
#define SEAM_RUNTIME_QUANTIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"
#include "seam.h"

/* The histogram of a value's observations, for percentile calibration: bins
 * of equal width from `left`, the range doubled (bins merged in pairs)
 * whenever a value falls outside it. */
#define QUANT_BINS 2048

/* One value the quantizer gives a QuantizeLinear + DequantizeLinear. */
typedef struct quant_act {
    int32_t v;        /* the value (its index in the graph) */
    int32_t root;     /* the act whose parameters it takes (itself, or a
                         MaxPool/Flatten/Reshape's input's) */
    int32_t output;   /* its index among the calibration session's outputs,
                         or -1: a graph input, read from the bound data */
    bool seen;
    double lo, hi;    /* the smallest and largest value seen */
    double left, width;
    uint64_t *bins;   /* QUANT_BINS (percentile calibration), or NULL */
    uint64_t count;
    float scale;      /* chosen at finish */
    uint8_t zero_point;
} quant_act;

/* What each node becomes. */
enum {
    QN_FLOAT = 0,     /* left as it is */
    QN_OP,            /* a quantized op: its float inputs and output[0] get Q/DQ */
    QN_SHARED,        /* MaxPool/Flatten/Reshape of a quantized value: its
                         output quantized with its input's parameters */
    QN_REMOVED,       /* a Relu/Clip from 0 the Q after its producer makes redundant */
    QN_DYNAMIC,       /* a MatMul (or Gemm) made DynamicQuantizeLinear + MatMulInteger */
};

typedef struct quant_input {
    const char *name;
    seam_dtype dtype;
    int32_t rank;
    const int64_t *dims;
    const void *data;
} quant_input;

struct seam_quantizer {
    seam_context *ctx;
    seam_model *m;
    seam_quantize_options o;
    bool finished;
    int32_t opset;            /* the model's default-domain opset */
    bool per_channel;         /* weights, as options and opset allow */
    uint8_t *role;            /* per node: QN_* */
    int32_t *act_of;          /* per value: index in acts, or -1 */
    quant_act *acts;
    int32_t n_acts;
    /* the calibration session, on the model with the values to observe
     * as extra outputs */
    seam_session *s;
    int32_t n_outputs0;       /* the model's own outputs */
    int32_t *outputs0;
    quant_input *bound;       /* inputs set for the next observation */
    int32_t n_bound, cap_bound;
    seam_quantize_stats st;
    /* nodes left in float, grouped by reason (a static string) */
    struct quant_reason {
        const char *why;
        int32_t count;
        const char *first[3];
    } reasons[16];
    int32_t n_reasons;
    char *notes;              /* made by seam_quantizer_notes */
    const char **exclude_own; /* o.exclude once seam_quantizer_exclude added to it */
    int32_t n_exclude_user;   /* o.exclude's first entries, the options' own */
    const char *exclude_why;  /* the reason of the ones added (arena), or NULL */
    bool replan;              /* exclusions were added: plan again at finish */
    uint8_t *packed;          /* the float model's bytes, for variants (malloc'd) */
    size_t n_packed;
};

/* Marks every node's role and fills acts (quantize_graph.c). */
seam_status quant_plan(seam_quantizer *q);

/* The quantized graph, from the acts' parameters (quantize_graph.c). */
seam_status quant_rewrite(seam_quantizer *q);

/* Node `node` stays float for reason `why` (a static string): counted in
 * stats.left_float and said in the notes. */
void quant_left_float(seam_quantizer *q, int32_t node, const char *why);

#endif
