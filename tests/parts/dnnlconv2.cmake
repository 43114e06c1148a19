# The dnnl backend's Linear layers reading a Transpose (tests/checks/
# check_dnnl_conv2.py): the rows copied dense and the product run flat with
# packed weights exactly where the rule applies, fusion on and off, against
# the CPU kernels and torch within 1e-4 of the output's scale, no reference
# kernel; and transformer_encoder from the test models. A few seconds.
add_test(NAME dnnl_conv2
  COMMAND ${PY} ${CHECKS}/check_dnnl_conv2.py $<TARGET_FILE:seam> ${TEST_WORK}/dnnl_conv2 ${SEAM_MODELS_DIR})
set_tests_properties(dnnl_conv2 PROPERTIES LABELS "models;python;dnnl" FIXTURES_REQUIRED models TIMEOUT 600)
