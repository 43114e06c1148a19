/* --precision, --calibration and --max-error (analyze, partition, run): a
 * float model quantized on the way in, as seam quantize does, and with
 * --max-error, per subgraph, kept in float where int8 would be off by more
 * than asked.
 *
 * --max-error E: the error of a model is the largest, over the calibration
 * sets and the float32 outputs, of max |y - y_fp32| / max |y_fp32|. The
 * whole model quantized is tried first; if it is off by more than E, it is
 * partitioned for the targets, and each subgraph holding quantized nodes
 * is measured quantized alone (every other node in float). The subgraphs
 * go back to float worst first until the model is within E
 * (seam_quantizer_keep_within, src/runtime/quantize_error.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cli.h"
#include "targets.h"

int precision_option(cli_targets *t, const char *cmd, int argc, char **argv, int *k) {
    const char *a = argv[*k];
    bool prec = !strcmp(a, "--precision"), cal = !strcmp(a, "--calibration"), err = !strcmp(a, "--max-error");
    if (!prec && !cal && !err) return 0;
    if (*k + 1 >= argc) {
        cli_usage(cmd, "%s needs a value", a);
        return TARGETS_USAGE;
    }
    const char *v = argv[++*k];
    if (prec) {
        if (strcmp(v, "fp32") && strcmp(v, "int8") && strcmp(v, "int8-dynamic") && strcmp(v, "bf16")) {
            cli_usage(cmd, "--precision wants fp32, int8, int8-dynamic or bf16, got '%s'", v);
            return TARGETS_USAGE;
        }
        t->precision = v;
    } else if (cal) {
        t->calibration = v;
    } else {
        char *end;
        double e = strtod(v, &end);
        if (*end == '%') e /= 100, end++;
        if (*end || end == v || !(e > 0 && e < 1e9)) {
            cli_usage(cmd, "--max-error wants a relative error above 0 (0.02 or 2%%), got '%s'", v);
            return TARGETS_USAGE;
        }
        t->max_error = e;
    }
    return 1;
}

/* The options that go together; CLI_OK or CLI_USAGE after the message. */
static int precision_usage(const cli_targets *t, const char *cmd) {
    const char *p = t->precision ? t->precision : "fp32";
    bool int8 = !strncmp(p, "int8", 4);
    bool bf16 = !strcmp(p, "bf16");
    if (bf16 && t->n_paths == 0)
        return cli_usage(cmd, "--precision bf16 runs on dnnl's subgraphs (Conv, MatMul and Gemm in bfloat16): give "
                              "--target dnnl");
    if (!int8 && !bf16 && (t->calibration || t->max_error > 0))
        return cli_usage(cmd, "--calibration and --max-error go with --precision int8, int8-dynamic or bf16");
    if (bf16 && t->calibration && t->max_error <= 0)
        return cli_usage(cmd, "--precision bf16 takes --calibration for --max-error only (bf16 needs no ranges)");
    if (!strcmp(p, "int8") && !t->calibration)
        return cli_usage(cmd, "--precision int8 needs --calibration DIR (or --precision int8-dynamic)");
    if (t->max_error > 0 && !t->calibration)
        return cli_usage(cmd, "--max-error needs --calibration DIR: the error is measured on those inputs");
    if (t->no_fold && int8) return cli_usage(cmd, "--precision %s folds the model; it does not go with --no-fold", p);
    return CLI_OK;
}

static seam_status bind_set(void *user, int32_t set, seam_session *s) { return cli_calib_bind(user, set, s); }

/* --max-error: which subgraphs stay in float (seam_quantizer_keep_within),
 * said on stderr line by line. */
static seam_status keep_within(cli_targets *t, const char *cmd, seam_quantizer *q, const cli_calib *c) {
    size_t len = (size_t)1 << 20; /* a line per subgraph (about 100 bytes) and the summary */
    char *report = malloc(len);
    if (!report) return SEAM_STATUS_OUT_OF_MEMORY;
    seam_status st = seam_quantizer_keep_within(q, &t->opts, t->max_error, c->n_sets, bind_set, (void *)c, NULL, report, len);
    for (const char *p = report; !st && *p;) {
        const char *e = strchr(p, '\n');
        int n = e ? (int)(e - p) : (int)strlen(p);
        fprintf(stderr, "seam %s: %.*s\n", cmd, n, p);
        p += n + (e ? 1 : 0);
    }
    free(report);
    return st;
}

int targets_precision(cli_targets *t, const char *cmd, seam_context *ctx, seam_model *m) {
    int32_t threads = t->threads;
    bool quiet = t->quiet;
    int rc = precision_usage(t, cmd);
    if (rc || !t->precision || !strcmp(t->precision, "fp32")) return rc;
    if (!strcmp(t->precision, "bf16")) return CLI_OK; /* a target option of dnnl's (targets.c own_options) */
    bool dynamic = !strcmp(t->precision, "int8-dynamic");
    cli_calib c;
    memset(&c, 0, sizeof(c));
    if (t->calibration && (rc = cli_calib_load(cmd, ctx, m, t->calibration, &c))) return cli_calib_free(&c), rc;
    if (t->max_error > 0 && (rc = targets_load(t, cmd, ctx))) return cli_calib_free(&c), rc;
    seam_quantize_options o = seam_quantize_defaults();
    o.mode = dynamic ? SEAM_QUANT_DYNAMIC : SEAM_QUANT_STATIC;
    o.n_threads = threads;
    seam_quantizer *q = NULL;
    seam_status st = seam_quantizer_create(m, &o, &q);
    if (!st && !dynamic && (rc = cli_calib_observe(cmd, ctx, q, &c))) goto done;
    if (!st && t->max_error > 0) st = keep_within(t, cmd, q, &c);
    seam_quantize_stats qs;
    if (!st) st = seam_quantizer_finish(q, &qs);
    if (st) {
        rc = cli_fail(cmd, ctx, st) == CLI_USAGE ? CLI_USAGE : CLI_BAD_INPUT;
        goto done;
    }
    if (!quiet) {
        const char *notes = seam_quantizer_notes(q);
        for (const char *p = notes; *p;) {
            const char *e = strchr(p, '\n');
            int len = e ? (int)(e - p) : (int)strlen(p);
            fprintf(stderr, "seam %s: --precision %s: %.*s\n", cmd, t->precision, len, p);
            p += len + (e ? 1 : 0);
        }
        if (dynamic)
            fprintf(stderr, "seam %s: --precision int8-dynamic: %d MatMul/Gemm quantized dynamically\n", cmd, qs.dynamic_matmuls);
        else
            fprintf(stderr, "seam %s: --precision int8: %d ops quantized from %d calibration sets (%d activations, %d weights)\n",
                    cmd, qs.quantized_ops, qs.calibration_runs, qs.activations, qs.weights);
    }
done:
    seam_quantizer_free(q);
    cli_calib_free(&c);
    return rc;
}
