# The dnnl backend's convolution algorithms (tests/checks/check_dnnl_conv.py):
# conv=auto, direct and winograd, fusion on and off, and Winograd refused
# (oneDNN capped at AVX2), on shapes that take every branch of the choice,
# against the CPU kernels and torch within 1e-4 of the output's scale; the
# implementation oneDNN picked must be the one the rule says. A few seconds.
# Exit 77 (skipped) when seam does not parse conv= and only conv=auto ran.
add_test(NAME dnnl_conv
  COMMAND ${PY} ${CHECKS}/check_dnnl_conv.py $<TARGET_FILE:seam> ${TEST_WORK}/dnnl_conv)
set_tests_properties(dnnl_conv PROPERTIES LABELS "standalone;python;dnnl" SKIP_RETURN_CODE 77 TIMEOUT 600)
