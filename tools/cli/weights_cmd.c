/* seam replace-weights MODEL --weights NEW.onnx -o OUT.onnx */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char *HELP =
    "usage: seam replace-weights MODEL --weights NEW.onnx -o OUT.onnx\n"
    "\n"
    "Writes MODEL with its weights replaced by NEW.onnx's initializers of the\n"
    "same names (a partitioned model keeps its partitioning). Every weight in\n"
    "NEW.onnx must exist in MODEL with the same dtype and shape. OUT is written\n"
    "to a temporary file and renamed, so it is never left half-written (OUT\n"
    "may be MODEL itself).\n";

int cmd_replace_weights(int argc, char **argv) {
    const char *path = NULL, *weights = NULL, *out = NULL;
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            fputs(HELP, stdout);
            return CLI_OK;
        } else if (strcmp(argv[k], "--weights") == 0 || strcmp(argv[k], "-o") == 0) {
            if (k + 1 >= argc) return cli_usage("replace-weights", "%s needs a file", argv[k]);
            if (argv[k][1] == 'o') out = argv[++k];
            else weights = argv[++k];
        } else if (argv[k][0] == '-' && argv[k][1]) {
            return cli_usage("replace-weights", "unknown option '%s'", argv[k]);
        } else if (path) {
            return cli_usage("replace-weights", "one model at a time ('%s' and '%s' given)", path, argv[k]);
        } else {
            path = argv[k];
        }
    }
    if (!path) return cli_usage("replace-weights", "no model given");
    if (!weights) return cli_usage("replace-weights", "--weights NEW.onnx is required");
    if (!out) return cli_usage("replace-weights", "-o OUT.onnx is required");
    seam_context *ctx;
    if (seam_context_create(&ctx)) return CLI_BAD_INPUT;
    seam_model *m = NULL, *w = NULL;
    int32_t n = 0;
    int rc = CLI_OK;
    seam_status st = seam_model_load(ctx, path, &m);
    if (!st) st = seam_model_load(ctx, weights, &w);
    if (!st) st = seam_model_replace_weights(m, w, &n);
    if (!st) st = seam_model_save(m, out, NULL);
    if (st) {
        cli_fail("replace-weights", ctx, st);
        rc = CLI_BAD_INPUT;
    } else {
        printf("replaced %d weight%s; wrote %s\n", n, n == 1 ? "" : "s", out);
    }
    seam_model_free(w);
    seam_model_free(m);
    seam_context_free(ctx);
    return rc;
}
