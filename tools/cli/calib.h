/* Calibration sets for seam quantize and --precision (calib.c): read from a
 * folder into memory, bound to a quantizer, or run through a session. */
#ifndef SEAM_CLI_CALIB_H
#define SEAM_CLI_CALIB_H

#include "core/tensor.h"
#include "seam.h"

typedef struct cli_calib {
    int32_t n_sets, n_inputs;
    int32_t n_slots;        /* sets t has room for (zeroed or read) */
    char **set_names;       /* [n_sets]: the folder or file of each set */
    const char **inputs;    /* [n_inputs]: the model's input names (the model's strings) */
    seam_tensor *t;         /* [n_sets * n_inputs], data malloc'd */
} cli_calib;

/* Reads every set of DIR for model m: DIR/SET/ folders with one file per
 * input (NAME.npy, NAME.pb, or input_K.npy/.pb), or, for a model of one
 * input, one .npy or .pb per set in DIR. CLI_OK, or CLI_BAD_INPUT after
 * a message naming the folder or file. c is to be freed either way. */
int cli_calib_load(const char *cmd, seam_context *ctx, const seam_model *m, const char *dir, cli_calib *c);
void cli_calib_free(cli_calib *c);

/* Binds each set to q and observes it, in order. */
int cli_calib_observe(const char *cmd, seam_context *ctx, seam_quantizer *q, const cli_calib *c);

/* Binds set k to a session (its inputs by name). */
seam_status cli_calib_bind(const cli_calib *c, int32_t k, seam_session *s);

#endif
