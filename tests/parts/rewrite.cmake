# Rewrites that heal partitions (seam_model_rewrite, src/runtime/rewrite.c):
# a reflect/edge Pad, a Split, a Sum, HardSwish, the normalizations
# (Instance, Layer, Group), Gelu, Mish and HardSigmoid the target lacks,
# rewritten only where that leaves fewer device subgraphs, and their
# outputs against numpy or torch on the rewritten and the saved model, and
# against --no-rewrite.
add_test(NAME rewrites
  COMMAND ${PY} ${CMAKE_CURRENT_SOURCE_DIR}/checks/check_rewrite.py $<TARGET_FILE:seam> ${TEST_WORK}/rewrite)
set_tests_properties(rewrites PROPERTIES TIMEOUT 300 LABELS "standalone;python")
