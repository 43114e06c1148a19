# The dnnl backend on efficientnet's and mobilenet_v3's blocks
# (tests/checks/check_dnnl_eff.py): torch-exported depthwise + SiLU or
# HardSwish + squeeze-excite + projection blocks at 112x112 and 7x7, batch
# 1 and 2, against torch (float64) and the CPU kernels within 1e-5 with
# fusion on and off, no reference kernel, and the compile log's choice for
# the squeeze-excite Mul (folded into the projection's weights, or a step
# of its own). No generated models: it exports its own. A few seconds.
add_test(NAME dnnl_eff
  COMMAND ${PY} ${CHECKS}/check_dnnl_eff.py $<TARGET_FILE:seam> ${TEST_WORK}/dnnl_eff)
set_tests_properties(dnnl_eff PROPERTIES LABELS "standalone;python;dnnl" TIMEOUT 600)
