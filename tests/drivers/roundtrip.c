/*
 * roundtrip MODEL... [--out DIR] [--external]
 *
 * For each model: load (check + infer), save, load the saved file again and
 * compare the two IRs deeply. With --out, the saved files stay in DIR
 * (named <n>.onnx, listed on stdout as "<n>.onnx <MODEL>") so that an
 * independent tool (onnx.checker) can read them. With --external, tensors
 * of 1 KiB or more are saved to <n>.weights next to each copy. Exit 1 if
 * any model fails.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ir.h"
#include "seam.h"

int main(int argc, char **argv) {
    const char *out_dir = NULL;
    bool external = false;
    int failed = 0, done = 0;
    seam_context *ctx;
    if (seam_context_create(&ctx)) return 2;
    char tmp_dir[] = "/tmp/seam_rt_XXXXXX";
    for (int k = 1; k < argc; k++)
        if (strcmp(argv[k], "--out") == 0 && k + 1 < argc) out_dir = argv[k + 1];
        else if (strcmp(argv[k], "--external") == 0) external = true;
    if (!out_dir) {
        if (!mkdtemp(tmp_dir)) return 2;
        out_dir = tmp_dir;
    }
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--out") == 0) {
            k++;
            continue;
        }
        if (strcmp(argv[k], "--external") == 0) continue;
        char path[4096], weights[64], wpath[4200];
        snprintf(path, sizeof(path), "%s/%d.onnx", out_dir, done);
        snprintf(weights, sizeof(weights), "%d.weights", done);
        snprintf(wpath, sizeof(wpath), "%s/%s", out_dir, weights);
        seam_save_options opts = {external ? weights : NULL, 0};
        seam_model *a = NULL, *b = NULL;
        seam_status st = seam_model_load(ctx, argv[k], &a);
        if (!st) st = seam_model_save(a, path, &opts);
        if (!st) st = seam_model_load(ctx, path, &b);
        if (st) {
            printf("FAIL %s: %s: %s\n", argv[k], seam_status_string(st), seam_context_last_error(ctx));
            failed++;
        } else {
            char why[1024] = "";
            if (!ir_graph_equal(a->graph, b->graph, why, sizeof(why))) {
                printf("FAIL %s: round trip differs: %s\n", argv[k], why);
                failed++;
            } else if (a->n_opsets != b->n_opsets || a->n_metadata != b->n_metadata ||
                       a->n_functions != b->n_functions || a->ir_version != b->ir_version) {
                printf("FAIL %s: model fields differ after the round trip\n", argv[k]);
                failed++;
            } else {
                printf("%d.onnx %s\n", done, argv[k]);
            }
        }
        seam_model_free(a);
        seam_model_free(b);
        if (out_dir == tmp_dir) {
            unlink(path);
            unlink(wpath);
        }
        done++;
    }
    if (out_dir == tmp_dir) rmdir(tmp_dir);
    fprintf(stderr, "roundtrip: %d models, %d failed\n", done, failed);
    seam_context_free(ctx);
    return failed ? 1 : 0;
}
