# The dnnl backend's Concat without oneDNN's concat primitive
# (src/backends/dnnl/concat.c; tests/checks/check_dnnl_concat.py): sources
# written in place into the output, or reordered into place. Inception-like
# blocks at batch 1 and 2, plain, blocked and channels-last producers, a
# source read twice or used twice, a graph input as a source, a Concat that
# is the graph's output, a densenet-like chain, axis 0 and axis 2, against
# torch and the CPU kernels within 1e-5 with fusion on and off, and the
# compile log's word for each Concat; densenet-like dense layers whose
# Concat, BatchNormalization and Relu become one pass, and
# GlobalAveragePools of channels-last values (host steps, host.c), with and
# without AVX-512 (SEAM_DNNL_HOST_SIMD=0). No generated models: it makes
# its own. A few seconds.
add_test(NAME dnnl_concat
  COMMAND ${PY} ${CHECKS}/check_dnnl_concat.py $<TARGET_FILE:seam> ${TEST_WORK}/dnnl_concat)
set_tests_properties(dnnl_concat PROPERTIES LABELS "standalone;python;dnnl" TIMEOUT 600)
