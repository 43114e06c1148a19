# Models with symbolic dims on the dnnl backend: support decided without
# sizes, subgraphs specialized per shape at run time (tests/checks/
# check_dynamic.py, with the session driver tests/drivers/dynamic_session.c).
seam_c_test(dynamic_session drivers/dynamic_session.c)
add_test(NAME dynamic_shapes
  COMMAND ${PY} ${CHECKS}/check_dynamic.py $<TARGET_FILE:seam> $<TARGET_FILE:dynamic_session> ${TEST_WORK}/dynamic)
set_tests_properties(dynamic_shapes PROPERTIES LABELS "standalone;dnnl;python" TIMEOUT 900)
