/* Target options shared by analyze, partition and run: --target, --min-support,
 * --min-subgraph-size, --max-subgraph-count, --on-violation, --cpu-ops, --pin,
 * --shape. */
#ifndef SEAM_CLI_TARGETS_H
#define SEAM_CLI_TARGETS_H

#include "seam_backend.h"

#define MAX_TARGETS 16
#define MAX_PINS 256

typedef struct cli_targets {
    const char *paths[MAX_TARGETS];
    int32_t n_paths;
    seam_backend *loaded[MAX_TARGETS];
    const seam_backend *list[MAX_TARGETS];
    seam_pin pins[MAX_PINS];
    const char *cpu_ops[256];
    char *cpu_ops_buf;
    const char *shapes[64];     /* --shape NAME=AxBxC, applied after load */
    int32_t n_shapes;
    bool no_fold;               /* --no-fold */
    bool no_rewrite;            /* --no-rewrite */
    const char *memory_args[MAX_TARGETS]; /* --target-memory NAME=SIZE */
    int32_t n_memory_args;
    int64_t memory[MAX_TARGETS]; /* per target in list: bytes its memory holds (0: no limit) */
    const char *thread_args[MAX_TARGETS]; /* --target-threads NAME=N */
    int32_t n_thread_args;
    seam_backend *instances[MAX_TARGETS]; /* per target in list: the instance made for it (NAME:K, or threads) */
    bool measured;              /* --placement measured */
    const char *target_options[64]; /* --target-option, passed through */
    int32_t n_target_options;
    const char *libs[MAX_TARGETS]; /* --backend-lib */
    int32_t n_libs;
    const char *buckets[64];    /* --bucket NAME=AxBxC, checked against the model in targets_apply_shapes */
    int32_t n_buckets;
    bool no_jit;                /* --no-jit */
    const char *pads[64];       /* --pad NAME:AXIS[=VALUE] */
    int32_t n_pads;
    char *bucket_opts[129];     /* their "seam.bucket=...", "seam.pad=..." and "seam.jit=off" target options */
    const seam_backend *avail[2 * MAX_TARGETS]; /* every backend loaded, for sessions */
    int32_t n_avail;
    bool targets_loaded;        /* targets_load ran */
    const char *precision;      /* --precision (NULL: fp32) */
    const char *calibration;    /* --calibration DIR */
    double max_error;           /* --max-error (0: none) */
    int32_t threads;            /* the command's --threads, for the calibration runs */
    bool quiet;                 /* the command's --quiet */
    seam_partition_options opts;
} cli_targets;

/* targets_option's return for a usage error (printed). */
#define TARGETS_USAGE (2 + 10)

void targets_init(cli_targets *t);
/* Consumes argv[*k] (and its value) if it is a target option. Returns 1 if
 * consumed, 0 if not one, or CLI_USAGE+10 after printing a usage error. */
int targets_option(cli_targets *t, const char *cmd, int argc, char **argv, int *k);
/* Loads the rules files; "cpu" is accepted and ignored (always last). */
int targets_load(cli_targets *t, const char *cmd, seam_context *ctx);
/* Applies the --shape options to a loaded model, checks the --bucket
 * shapes against it (they become target options seam_plan_apply reads),
 * then folds constants (unless --no-fold). */
/* Partitions m as the options say: by seam_partition, or by
 * seam_partition_measured (--placement measured) with n_threads. */
seam_status targets_partition(cli_targets *t, seam_model *m, int32_t n_threads, seam_plan **plan);
int targets_apply_shapes(cli_targets *t, const char *cmd, seam_context *ctx, seam_model *m);
void targets_free(cli_targets *t);

/* precision.c: --precision, --calibration, --max-error (1 consumed, 0 not
 * one, TARGETS_USAGE after a usage error); and the quantization they ask
 * for, applied to m in place before its units are made (called by
 * targets_apply_shapes after folding). */
int precision_option(cli_targets *t, const char *cmd, int argc, char **argv, int *k);
int targets_precision(cli_targets *t, const char *cmd, seam_context *ctx, seam_model *m);

#define TARGET_HELP                                                                          \
    "  --target T            a target: a rules file (JSON) or cpu; repeat for more, in\n"    \
    "                        priority order (cpu is always last)\n"                          \
    "  --min-support F       fail if fewer than this fraction of nodes are supported\n"      \
    "  --min-subgraph-size N device subgraphs with fewer nodes go back to the CPU\n"         \
    "  --max-subgraph-count N at most N subgraphs in all: the device subgraphs doing the\n" \
    "                        least work move to the CPU until the plan fits\n"              \
    "  --on-violation P      fallback (default: move to the CPU and say so) or error\n"     \
    "  --cpu-ops A,B         op types forced to the CPU even where supported\n"              \
    "  --pin NODE=TARGET     force one node onto a target (or cpu)\n"                      \
    "  --placement P         cost (default): a supported node stays on the CPU when\n"    \
    "                        the cost model says offloading it costs more than it\n"    \
    "                        saves; capability: everything supported is offloaded;\n"  \
    "                        measured: the device subgraphs and the CPU are timed on\n" \
    "                        the model's shapes (a few runs, at most ~2 s) and each\n" \
    "                        subgraph goes where it ran faster\n"                     \
    "  --shape NAME=AxBxC    fix an input's symbolic dims before deciding support\n"       \
    "  --backend-lib PATH    load a backend from a shared library (it exports\n"      \
    "                        seam_backend_register); --target NAME then uses it.\n"   \
    "                        A --target that is not a file is also looked up as\n"  \
    "                        NAME.so in the folders of $SEAM_BACKEND_PATH\n"          \
    "  --target-option OPT   an option for the targets' compilers (repeatable),\n"    \
    "                        stored with each device subgraph, passed untouched\n"    \
    "  --no-fold             keep nodes computed from constants and static shapes as\n"  \
    "                        they are (by default they become constants first)\n"    \
    "  --target-memory NAME=SIZE  what target NAME's memory holds (bytes, or with\n" \
    "                        K, M, G): no plan puts more on it (a rules file's\n"  \
    "                        \"memory_bytes\" says the same)\n"                   \
    "  --target T:K          instance K of target T (dnnl:0, npu.json:1): a target\n" \
    "                        of its own, with its own memory and threads\n"        \
    "  --target-threads NAME=N  target NAME's compiles get threads=N\n"            \
    "  --no-rewrite          keep the nodes no target takes as they are (by default\n" \
    "                        a reflect/edge Pad, a Split or a Sum is written as\n"   \
    "                        Slices, Concats and Adds when a target then takes it\n" \
    "                        and the plan is estimated faster or has fewer device\n" \
    "                        subgraphs; each rewrite is a note of the plan)\n"       \
    "  --bucket NAME=AxBxC   with -o: a shape of input NAME that the saved model's\n"  \
    "                        device subgraphs compile when a session is made, not at\n" \
    "                        the first run with it (repeat: the k-th of each input\n" \
    "                        make bucket k); see docs/dynamic.md\n"                  \
    "  --no-jit              with -o: a run whose shapes are no bucket is refused\n" \
    "                        instead of compiled at run time\n"                      \
    "  --pad NAME:AXIS[=V]   with --bucket: input NAME's symbolic dim AXIS is padded\n" \
    "                        with V (default 0) up to the smallest bucket that fits,\n" \
    "                        and the outputs' axes with the same dim sliced back\n"   \
    "                        (safe for per-position ops only; see docs/dynamic.md)\n" \
    "  --precision P         fp32 (default); int8: quantize the float model first as\n" \
    "                        seam quantize does (QDQ from --calibration); int8-dynamic:\n" \
    "                        MatMul/Gemm weights, ranges at run time; bf16: dnnl's\n"  \
    "                        Conv/MatMul/Gemm in bfloat16 (AVX512_BF16 or AMX CPUs)\n" \
    "                        (docs/quantized.md)\n"                                    \
    "  --calibration DIR     the calibration sets (seam quantize --help says how)\n" \
    "  --max-error E         with int8 or bf16: subgraphs whose reduced precision on\n" \
    "                        the calibration sets would put the outputs off by more\n" \
    "                        than E (0.02 or 2%: of each output's largest magnitude)\n" \
    "                        stay in fp32\n"

/* Says once what became of a quantized model's QDQ units (made into
 * QLinear nodes for targets, or run in float on the CPU). */
void cli_qdq_note(const char *cmd, seam_model *m, const seam_qdq_stats *q, bool units);

/* A size in bytes, or with K, M or G (1024-based): false when s is not one. */
bool cli_parse_size(const char *s, int64_t *out);

/* Every backend loaded (t->avail), with the built-in dnnl added when it is
 * not there (a saved model's dnnl subgraphs need it): the targets a
 * session of the command is given. */
void targets_for_sessions(cli_targets *t);

/* --precision bf16 --max-error E: after the plan is applied, subgraphs put
 * back to float32, the worst first, until the outputs on the calibration
 * sets are within E of the float32 model's (bf16_error.c). */
int targets_bf16_within(cli_targets *t, const char *cmd, seam_context *ctx, seam_model *m);

#endif
