/*
 * dnnl, an op family (see program.h for the order): LSTM and GRU on
 * oneDNN's recurrent primitives (rnn.c).
 */
#ifndef SEAM_DNNL_RNN_H
#define SEAM_DNNL_RNN_H

#include "builder.h"

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_rnn_rows[];

#endif
