/* A program built against an installed seam (pkg-config or find_package):
 * loads a tiny model (y = Relu(x) + 1, written by run_install_test.sh's
 * Python), runs it on x = [-2, -1, 0, 3] and checks y = [1, 1, 1, 4]; then
 * checks that a bad path fails with a message instead of aborting. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <seam.h>
#include <seam_backend.h>
#include <seam_report.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: consumer MODEL.onnx\n");
        return 2;
    }
    seam_context *ctx;
    seam_model *model;
    seam_session *s;
    if (seam_context_create(&ctx)) return 1;
    seam_status st = seam_model_load(ctx, argv[1], &model);
    if (!st) st = seam_session_create(model, NULL, &s);
    if (st) {
        fprintf(stderr, "consumer: %s: %s\n", seam_status_string(st), seam_context_last_error(ctx));
        return 1;
    }
    const float x[4] = {-2, -1, 0, 3}, want[4] = {1, 1, 1, 4};
    const int64_t dims[1] = {4};
    seam_tensor_view y;
    if ((st = seam_session_set_input(s, "x", SEAM_DTYPE_FLOAT32, 1, dims, x)) || (st = seam_session_run(s)) ||
        (st = seam_session_output(s, 0, &y))) {
        fprintf(stderr, "consumer: %s: %s\n", seam_status_string(st), seam_context_last_error(ctx));
        return 1;
    }
    int bad = y.dtype != SEAM_DTYPE_FLOAT32 || y.rank != 1 || y.dims[0] != 4;
    for (int k = 0; !bad && k < 4; k++) bad |= fabsf(((const float *)y.data)[k] - want[k]) > 0;
    seam_model *none = NULL;
    st = seam_model_load(ctx, "/nonexistent/model.onnx", &none);
    bad |= st != SEAM_STATUS_IO_ERROR || none || !strstr(seam_context_last_error(ctx), "/nonexistent/model.onnx");
    printf("consumer: seam %d.%d.%d, %s, targets cpu and %s\n", SEAM_VERSION_MAJOR, SEAM_VERSION_MINOR,
           SEAM_VERSION_PATCH, bad ? "WRONG" : "ok", seam_backend_dnnl()->name);
    seam_session_free(s);
    seam_model_free(model);
    seam_context_free(ctx);
    return bad;
}
