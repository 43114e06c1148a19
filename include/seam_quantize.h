/*
 * seam's quantizer (seam quantize): a float ONNX model made a quantized one
 * in the forms ONNX Runtime's quantization tool writes, so that int8
 * targets (dnnl, an NPU's rules) run it in int8 and ONNX Runtime runs the
 * same file. Included by seam.h; docs/quantized.md says what each form
 * holds.
 *
 * Static (QDQ) quantization from calibration inputs:
 *
 *     seam_quantizer *q;
 *     seam_quantizer_create(model, &opts, &q);     // folds, picks what to quantize
 *     for each calibration set:
 *         seam_quantizer_set_input(q, "x", SEAM_DTYPE_FLOAT32, 4, dims, data);
 *         seam_quantizer_observe(q);               // runs the float model once
 *     seam_quantizer_finish(q, &stats);            // the model is now QDQ
 *     seam_model_save(model, "model.int8.onnx", NULL);
 *     seam_quantizer_free(q);
 *
 * Dynamic quantization (opts.mode SEAM_QUANT_DYNAMIC) needs no calibration:
 * create, then finish.
 */
#ifndef SEAM_QUANTIZE_H
#define SEAM_QUANTIZE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum seam_quant_mode {
    /* QDQ: QuantizeLinear + DequantizeLinear around every activation a
     * quantized op reads or writes (uint8, per tensor, from calibration),
     * int8 symmetric weights behind a DequantizeLinear, int32 biases.
     * Quantized ops: Conv, MatMul, Gemm, Add, Mul, MaxPool, AveragePool,
     * GlobalAveragePool, Concat, and Flatten/Reshape between them. */
    SEAM_QUANT_STATIC = 0,
    /* DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul for every MatMul
     * with a constant 2-D float weight (transformers); the activations'
     * ranges are found at run time. */
    SEAM_QUANT_DYNAMIC = 1,
} seam_quant_mode;

typedef enum seam_calib_method {
    SEAM_CALIB_MINMAX = 0,     /* the smallest and largest value seen */
    SEAM_CALIB_PERCENTILE = 1, /* the range holding `percentile` percent of the
                                  values seen, the same share cut from each end */
} seam_calib_method;

typedef enum seam_quant_granularity {
    SEAM_QUANT_AUTO = 0,        /* static: per channel; dynamic: per tensor
                                   (ONNX Runtime's defaults) */
    SEAM_QUANT_PER_CHANNEL = 1, /* a scale per output channel (Conv, Gemm) or column (MatMul) */
    SEAM_QUANT_PER_TENSOR = 2,
} seam_quant_granularity;

typedef struct seam_quantize_options {
    seam_quant_mode mode;
    seam_calib_method method;
    double percentile;                 /* SEAM_CALIB_PERCENTILE, in (50, 100]; default 99.999 */
    seam_quant_granularity weights;
    /* nodes (by name) left in float */
    const char *const *exclude;
    int32_t n_exclude;
    int32_t n_threads;                 /* the calibration runs; 0: one per core */
    /* weights of 7 bits, in [-64, 64] (ONNX Runtime's reduce_range): int8
     * products on a CPU without VNNI then cannot saturate, so oneDNN's
     * int8 kernels (dnnl) take them there; a little coarser weights */
    bool reduce_range;
} seam_quantize_options;

SEAM_API seam_quantize_options seam_quantize_defaults(void);

typedef struct seam_quantizer seam_quantizer;

/* Prepares to quantize model (in place): folds what is constant, refuses a
 * model that is quantized already, picks the nodes to quantize and, for
 * static quantization, the values to observe, and makes the session that
 * runs the float model on the calibration sets. The model must outlive the
 * quantizer and must not be used elsewhere until seam_quantizer_finish.
 * A bad option fails with SEAM_STATUS_INVALID_ARGUMENT naming it. */
SEAM_API seam_status seam_quantizer_create(seam_model *model, const seam_quantize_options *opts,
                                           seam_quantizer **quantizer_out);

/* Binds one input of the next calibration run (as seam_session_set_input:
 * the data must stay valid until seam_quantizer_observe returns). */
SEAM_API seam_status seam_quantizer_set_input(seam_quantizer *q, const char *name, seam_dtype dtype, int32_t rank,
                                              const int64_t *dims, const void *data);

/* Runs the float model on the bound inputs and takes in the range of every
 * value to be quantized. A value that is not finite (NaN, inf) fails,
 * naming the value. */
SEAM_API seam_status seam_quantizer_observe(seam_quantizer *q);

typedef struct seam_quantize_stats {
    int32_t quantized_ops;        /* nodes of a quantized op with Q/DQ around them */
    int32_t activations;          /* values with a QuantizeLinear + DequantizeLinear */
    int32_t weights;              /* constant weights stored quantized (biases included) */
    int32_t removed_activations;  /* Relu/Clip from 0 made redundant by their Q */
    int32_t dynamic_matmuls;      /* MatMuls made DynamicQuantizeLinear + MatMulInteger */
    int32_t left_float;           /* nodes of a quantizable op left in float (see seam_quantizer_notes) */
    int32_t calibration_runs;
} seam_quantize_stats;

/* Rewrites the model in its quantized form. Static quantization needs at
 * least one observed calibration run. The model is then an ordinary model
 * (seam_model_save writes it; ONNX Runtime runs the file). */
SEAM_API seam_status seam_quantizer_finish(seam_quantizer *q, seam_quantize_stats *stats_out);

/* After the calibration runs (static) or at once (dynamic): a new model,
 * the quantized form with the nodes named in exclude (names of the float
 * model's nodes; others are ignored) left in float as well, from the same
 * calibrated ranges; q's own model stays as it is. Any number of times
 * before seam_quantizer_finish: --max-error tries variants. The new model
 * is the caller's to free; stats_out (may be NULL) gets its counts. */
SEAM_API seam_status seam_quantizer_variant(seam_quantizer *q, const char *const *exclude, int32_t n_exclude,
                                            seam_model **model_out, seam_quantize_stats *stats_out);

/* Adds nodes (by name; names the model lacks are ignored) to leave in
 * float at seam_quantizer_finish and in later variants; the calibrated
 * ranges stay. why (may be NULL) is the reason the notes give for them. */
SEAM_API seam_status seam_quantizer_exclude(seam_quantizer *q, const char *const *names, int32_t n, const char *why);

/* Binds calibration set `set` (0 .. n_sets - 1) as the inputs of session s
 * (seam_session_set_input for each; the data stays valid until the run
 * after it returns): how the caller hands its calibration sets to
 * seam_quantizer_keep_within. SEAM_STATUS_OK, or an error that stops it. */
typedef seam_status (*seam_calibration_bind_fn)(void *user, int32_t set, seam_session *s);

struct seam_partition_options;

/* Accuracy chosen per subgraph (--max-error; Python's
 * seam.quantize(max_error=...)): after the calibration runs, before
 * seam_quantizer_finish. The model's error is the largest, over the n_sets
 * calibration sets and its float32 outputs, of max |y - y_fp32| / max
 * |y_fp32|, run on the CPU kernels (QDQ units as int8). When the whole
 * model quantized is off by more than max_error, it is partitioned for
 * opts' targets (after seam_model_rewrite, as seam_partition would be),
 * each subgraph holding quantized nodes is measured quantized alone, and
 * subgraphs go back to float, the worst first, until the model is within
 * max_error or none is left; their nodes are excluded from q as
 * seam_quantizer_exclude does. *error_out (may be NULL): the error of the
 * model as it will be finished. report (may be NULL): one line per such
 * subgraph ("subgraph ID (TARGET, N nodes): kept in fp32|int8; quantized
 * alone it is off by E%") and a last line with the model's error. */
SEAM_API seam_status seam_quantizer_keep_within(seam_quantizer *q, const struct seam_partition_options *opts,
                                                double max_error, int32_t n_sets, seam_calibration_bind_fn bind,
                                                void *user, double *error_out, char *report, size_t report_len);

/* What the quantizer left in float and why, one line per reason with the
 * nodes it concerns (at most a few named): "" when nothing. Valid until
 * seam_quantizer_free. */
SEAM_API const char *seam_quantizer_notes(const seam_quantizer *q);

SEAM_API void seam_quantizer_free(seam_quantizer *q);

#ifdef __cplusplus
}
#endif

#endif /* SEAM_QUANTIZE_H */
