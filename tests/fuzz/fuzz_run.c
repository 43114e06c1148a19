/* libFuzzer target: the whole path a model takes in `seam run --target
 * dnnl`, from bytes: load (with inference and op validation), partition
 * for dnnl, apply the plan, make the session (dnnl compiles its
 * subgraphs) and one run on zero-filled inputs. Each step must succeed or
 * return an error status, never crash, leak, hang or hit undefined
 * behaviour. Models whose inputs are not all known small tensors are only
 * loaded and partitioned: the run needs data of a known shape. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "seam.h"
#include "seam_backend.h"

#define MAX_FEED_BYTES 65536 /* zero-filled inputs stay tiny */
#define MAX_FEEDS 16

/* Zero-filled data for every model input; false when one has an unknown
 * or non-tensor type, a symbolic dim or too many bytes. */
static bool make_feeds(seam_model *m, void **data, int32_t *n) {
    *n = seam_model_input_count(m);
    if (*n > MAX_FEEDS) return false;
    for (int32_t k = 0; k < *n; k++) {
        seam_value_info vi;
        if (seam_model_input(m, k, &vi) != SEAM_STATUS_OK || vi.dtype == SEAM_DTYPE_UNDEFINED || vi.rank < 0 ||
            vi.dtype == SEAM_DTYPE_STRING)
            return false;
        size_t bytes = seam_dtype_size(vi.dtype);
        for (int32_t d = 0; d < vi.rank; d++) {
            if (vi.dims[d] < 0 || vi.dims[d] > MAX_FEED_BYTES) return false;
            bytes *= (size_t)vi.dims[d];
            if (bytes > MAX_FEED_BYTES) return false;
        }
        data[k] = calloc(1, bytes ? bytes : 1);
        if (!data[k]) return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
    seam_context *ctx;
    if (seam_context_create(&ctx)) return 0;
    seam_model *m = NULL;
    seam_plan *plan = NULL;
    seam_session *s = NULL;
    void *feeds[MAX_FEEDS] = {0};
    int32_t n_feeds = 0;
    const seam_backend *targets[1] = {seam_backend_dnnl()};
    if (seam_model_load_buffer(ctx, bytes, size, NULL, &m) != SEAM_STATUS_OK) goto done;
    if (!make_feeds(m, feeds, &n_feeds)) goto done;
    seam_partition_options opts = seam_partition_defaults();
    opts.targets = targets;
    opts.n_targets = 1;
    opts.placement = SEAM_PLACEMENT_CAPABILITY; /* dnnl sees every node it takes, however small the model */
    if (seam_partition(m, &opts, &plan) != SEAM_STATUS_OK) goto done;
    if (seam_plan_apply(m, plan, targets, 1, NULL, 0) != SEAM_STATUS_OK) goto done;
    seam_session_options so = {1, false, false, targets, 1, NULL, NULL};
    if (seam_session_create(m, &so, &s) != SEAM_STATUS_OK) goto done;
    for (int32_t k = 0; k < n_feeds; k++) {
        seam_value_info vi;
        seam_model_input(m, k, &vi);
        if (seam_session_set_input(s, vi.name, vi.dtype, vi.rank, vi.dims, feeds[k]) != SEAM_STATUS_OK) goto done;
    }
    seam_session_run(s);
done:
    seam_session_free(s);
    seam_plan_free(plan);
    for (int32_t k = 0; k < MAX_FEEDS; k++) free(feeds[k]);
    seam_model_free(m);
    seam_context_free(ctx);
    return 0;
}
