# The mask and shape ops on dnnl (src/backends/dnnl/mask.c): comparisons,
# Where, Expand, Tile, Cast over dtypes, broadcasts and edge values against
# numpy; three mask models torch exports against torch; and the sweep that
# every node supports() accepts compiles under every target option
# (tests/checks/check_dnnl_ops.py). No generated models: it makes its own.
add_test(NAME dnnl_ops
  COMMAND ${PY} ${CHECKS}/check_dnnl_ops.py $<TARGET_FILE:seam> ${TEST_WORK}/dnnl_ops)
set_tests_properties(dnnl_ops PROPERTIES LABELS "standalone;dnnl;python" TIMEOUT 600)
