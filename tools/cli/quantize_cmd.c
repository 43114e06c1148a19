/* seam quantize MODEL -o OUT.onnx [--calibration DIR | --dynamic] [options] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cli.h"

static const char *HELP =
    "usage: seam quantize MODEL -o OUT.onnx --calibration DIR [options]\n"
    "       seam quantize MODEL -o OUT.onnx --dynamic [options]\n"
    "\n"
    "Writes MODEL quantized to int8 in the form ONNX Runtime's quantizer\n"
    "writes, which seam's int8 targets and ONNX Runtime both run.\n"
    "\n"
    "Static (QDQ, the default): activations uint8 per tensor, their ranges\n"
    "measured by running MODEL on the calibration sets; weights int8\n"
    "symmetric per output channel; biases int32. Quantized: Conv, MatMul,\n"
    "Gemm, Add, Mul, AveragePool, GlobalAveragePool, Concat, and MaxPool,\n"
    "Flatten, Reshape between them; a Relu or Clip from 0 after a quantized\n"
    "op is absorbed by its QuantizeLinear.\n"
    "\n"
    "Dynamic (--dynamic): each MatMul and Gemm with constant 2-D weights\n"
    "becomes DynamicQuantizeLinear -> MatMulInteger (weights int8 per\n"
    "tensor); for transformers, no calibration.\n"
    "\n"
    "  --calibration DIR    the calibration sets: DIR/SET/ folders, each with one\n"
    "                       file per input (NAME.npy or NAME.pb, or input_K.pb as\n"
    "                       ONNX's test data names them; output_K.pb is skipped);\n"
    "                       for a model of one input, DIR may instead hold one\n"
    "                       .npy or .pb per set\n"
    "  --method M           minmax (default) or percentile\n"
    "  --percentile P       the share of values the range keeps, in percent\n"
    "                       (default 99.999; implies --method percentile)\n"
    "  --per-tensor         one scale per weight (default: per output channel;\n"
    "                       per tensor for --dynamic)\n"
    "  --per-channel        one scale per output channel or column\n"
    "  --reduce-range       weights of 7 bits, in [-64, 64] (ONNX Runtime's\n"
    "                       reduce_range): on a CPU without VNNI oneDNN's int8\n"
    "                       kernels then cannot saturate, so dnnl runs them there\n"
    "  --exclude NODE,...   nodes left in float (may repeat)\n"
    "  --threads N          calibration threads (default: one per core)\n"
    "  --quiet              print nothing but errors\n"
    "\n"
    "OUT is written to a temporary file and renamed; it may not be MODEL.\n"
    "Exit status: 0 written, 1 bad model or calibration data, 2 bad usage.\n";

#define MAX_EXCLUDE 256

typedef struct qopts {
    const char *path, *out, *calib;
    seam_quantize_options o;
    const char *exclude[MAX_EXCLUDE];
    char *exclude_buf[MAX_EXCLUDE];
    int n_exclude_buf;
    bool quiet;
} qopts;

static int parse(qopts *a, int argc, char **argv) {
    a->o = seam_quantize_defaults();
    for (int k = 1; k < argc; k++) {
        const char *s = argv[k];
        bool val = k + 1 < argc;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(HELP, stdout);
            return -1;
        } else if (!strcmp(s, "-o") || !strcmp(s, "--calibration") || !strcmp(s, "--method") ||
                   !strcmp(s, "--percentile") || !strcmp(s, "--exclude") || !strcmp(s, "--threads")) {
            if (!val) return cli_usage("quantize", "%s needs a value", s);
            const char *v = argv[++k];
            char *end;
            if (!strcmp(s, "-o")) a->out = v;
            else if (!strcmp(s, "--calibration")) a->calib = v;
            else if (!strcmp(s, "--method")) {
                if (!strcmp(v, "minmax")) a->o.method = SEAM_CALIB_MINMAX;
                else if (!strcmp(v, "percentile")) a->o.method = SEAM_CALIB_PERCENTILE;
                else return cli_usage("quantize", "--method wants minmax or percentile, got '%s'", v);
            } else if (!strcmp(s, "--percentile")) {
                a->o.percentile = strtod(v, &end);
                if (*end || end == v || !(a->o.percentile > 50 && a->o.percentile <= 100))
                    return cli_usage("quantize", "--percentile wants a number in (50, 100], got '%s'", v);
                a->o.method = SEAM_CALIB_PERCENTILE;
            } else if (!strcmp(s, "--threads")) {
                long n = strtol(v, &end, 10);
                if (*end || end == v || n < 0 || n > 4096) return cli_usage("quantize", "--threads wants a number >= 0, got '%s'", v);
                a->o.n_threads = (int32_t)n;
            } else {
                if (a->n_exclude_buf == MAX_EXCLUDE) return cli_usage("quantize", "too many --exclude options");
                char *buf = strdup(v);
                if (!buf) return cli_usage("quantize", "out of memory");
                a->exclude_buf[a->n_exclude_buf++] = buf;
                for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
                    if (a->o.n_exclude == MAX_EXCLUDE) return cli_usage("quantize", "too many nodes in --exclude");
                    a->exclude[a->o.n_exclude++] = t;
                }
            }
        } else if (!strcmp(s, "--dynamic")) {
            a->o.mode = SEAM_QUANT_DYNAMIC;
        } else if (!strcmp(s, "--reduce-range")) {
            a->o.reduce_range = true;
        } else if (!strcmp(s, "--per-tensor") || !strcmp(s, "--per-channel")) {
            a->o.weights = s[6] == 't' ? SEAM_QUANT_PER_TENSOR : SEAM_QUANT_PER_CHANNEL;
        } else if (!strcmp(s, "--quiet")) {
            a->quiet = true;
        } else if (s[0] == '-' && s[1]) {
            return cli_usage("quantize", "unknown option '%s'", s);
        } else if (a->path) {
            return cli_usage("quantize", "one model at a time ('%s' and '%s' given)", a->path, s);
        } else {
            a->path = s;
        }
    }
    a->o.exclude = a->exclude;
    if (!a->path) return cli_usage("quantize", "no model given");
    if (!a->out) return cli_usage("quantize", "-o OUT.onnx is required");
    if (a->o.mode == SEAM_QUANT_STATIC && !a->calib)
        return cli_usage("quantize", "static quantization needs --calibration DIR (or --dynamic)");
    if (a->o.mode == SEAM_QUANT_DYNAMIC && a->calib)
        return cli_usage("quantize", "--dynamic takes no --calibration: its ranges are found at run time");
    if (a->o.mode == SEAM_QUANT_DYNAMIC && a->o.method == SEAM_CALIB_PERCENTILE)
        return cli_usage("quantize", "--dynamic has no calibration --method or --percentile");
    if (cli_same_file(a->path, a->out))
        return cli_usage("quantize", "-o %s would overwrite the float model; write the quantized one elsewhere", a->out);
    return CLI_OK;
}

int cmd_quantize(int argc, char **argv) {
    qopts a;
    memset(&a, 0, sizeof(a));
    int rc = parse(&a, argc, argv);
    seam_context *ctx = NULL;
    seam_model *m = NULL;
    seam_quantizer *q = NULL;
    if (rc) goto done;
    if (seam_context_create(&ctx)) {
        rc = CLI_BAD_INPUT;
        goto done;
    }
    seam_status st = seam_model_load(ctx, a.path, &m);
    if (!st) st = seam_quantizer_create(m, &a.o, &q);
    if (st) {
        rc = cli_fail("quantize", ctx, st);
        goto done;
    }
    if (a.calib) {
        cli_calib sets;
        rc = cli_calib_load("quantize", ctx, m, a.calib, &sets);
        if (!rc) rc = cli_calib_observe("quantize", ctx, q, &sets);
        cli_calib_free(&sets);
        if (rc) goto done;
    }
    seam_quantize_stats qs;
    st = seam_quantizer_finish(q, &qs);
    if (!st) st = seam_model_save(m, a.out, NULL);
    if (st) {
        rc = cli_fail("quantize", ctx, st) == CLI_USAGE ? CLI_USAGE : CLI_BAD_INPUT;
        goto done;
    }
    if (!a.quiet) {
        const char *notes = seam_quantizer_notes(q);
        for (const char *p = notes; *p;) {
            const char *e = strchr(p, '\n');
            int len = e ? (int)(e - p) : (int)strlen(p);
            fprintf(stderr, "seam quantize: note: %.*s\n", len, p);
            p += len + (e ? 1 : 0);
        }
        if (a.o.mode == SEAM_QUANT_DYNAMIC)
            printf("quantized %d MatMul/Gemm dynamically (weights int8 %s); wrote %s\n", qs.dynamic_matmuls,
                   a.o.weights == SEAM_QUANT_PER_CHANNEL ? "per column" : "per tensor", a.out);
        else
            printf("quantized %d ops from %d calibration set%s (%s): %d activations uint8, %d weights int8/int32, "
                   "%d Relu/Clip absorbed; wrote %s\n",
                   qs.quantized_ops, qs.calibration_runs, qs.calibration_runs == 1 ? "" : "s",
                   a.o.method == SEAM_CALIB_PERCENTILE ? "percentile" : "minmax", qs.activations, qs.weights,
                   qs.removed_activations, a.out);
    }
done:
    seam_quantizer_free(q);
    seam_model_free(m);
    seam_context_free(ctx);
    for (int k = 0; k < a.n_exclude_buf; k++) free(a.exclude_buf[k]);
    return rc < 0 ? CLI_OK : rc;
}
