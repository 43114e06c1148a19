# ONNX node tests: at least 900 of them pass on the CPU backend (the list
# in tests/conformance/node.txt names the others, each with why; the
# conformance_node test fails when that list is out of date).
add_test(NAME conformance_node_count COMMAND conformance --min-passes 900 ${TESTDATA}/node)
set_tests_properties(conformance_node_count PROPERTIES TIMEOUT 600 LABELS "conformance")

# Sequences, optionals and strings inside models, through `seam run`:
# against numpy, and hostile models that must fail naming the node.
add_test(NAME sequence_values
  COMMAND ${PY} ${CMAKE_CURRENT_SOURCE_DIR}/conformance/check_sequences.py $<TARGET_FILE:seam> ${TEST_WORK}/sequences)
set_tests_properties(sequence_values PROPERTIES TIMEOUT 300 LABELS "conformance;python")
