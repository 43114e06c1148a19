# The runtime's shape self-check (SEAM_SELF_CHECK; tests/checks/
# check_self_check.py): on in every test (tests/CMakeLists.txt sets it for
# all), and a disagreement between a kernel's or a device subgraph's output
# and its type fails the run naming the node.
add_test(NAME self_check
  COMMAND ${PY} ${CHECKS}/check_self_check.py $<TARGET_FILE:seam> ${TEST_WORK}/self-check --expect-env)
set_tests_properties(self_check PROPERTIES LABELS "standalone;python;dnnl")
