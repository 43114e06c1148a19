/* libFuzzer target: any bytes handed to the loader must give a model or an
 * error status, never a crash, a leak or undefined behaviour. A model that
 * loads is also walked the way `seam inspect` walks it. */
#include <stddef.h>
#include <stdint.h>

#include "seam.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    seam_context *ctx;
    if (seam_context_create(&ctx)) return 0;
    seam_model *m = NULL;
    if (seam_model_load_buffer(ctx, data, size, NULL, &m) == SEAM_STATUS_OK) {
        seam_value_info vi;
        seam_node_info ni;
        for (int32_t k = 0; k < seam_model_input_count(m); k++) seam_model_input(m, k, &vi);
        for (int32_t k = 0; k < seam_model_output_count(m); k++) seam_model_output(m, k, &vi);
        for (int32_t k = 0; k < seam_model_node_count(m); k++) seam_model_node(m, k, &ni);
    }
    seam_model_free(m);
    seam_context_free(ctx);
    return 0;
}
