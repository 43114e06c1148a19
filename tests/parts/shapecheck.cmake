# The runtime's shape self-check (SEAM_CHECK_SHAPES; tests/checks/
# check_shape_check.py): on in every test (tests/CMakeLists.txt sets it for
# all), and a disagreement between a kernel's or a device subgraph's output
# and its type fails the run naming the node.
add_test(NAME shape_self_check
  COMMAND ${PY} ${CHECKS}/check_shape_check.py $<TARGET_FILE:seam> ${TEST_WORK}/shape-check --expect-env)
set_tests_properties(shape_self_check PROPERTIES LABELS "standalone;python;dnnl")
