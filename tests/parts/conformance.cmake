# ONNX node tests: at least 900 of them must pass on the CPU backend. The
# conformance_node test (tests/CMakeLists.txt) checks it in the same run
# that compares the others with tests/conformance/node.txt, so the node
# tests are run once, not twice.

# Sequences, optionals and strings inside models, through `seam run`:
# against numpy, and hostile models that must fail naming the node.
add_test(NAME sequence_values
  COMMAND ${PY} ${CMAKE_CURRENT_SOURCE_DIR}/conformance/check_sequences.py $<TARGET_FILE:seam> ${TEST_WORK}/sequences)
set_tests_properties(sequence_values PROPERTIES TIMEOUT 300 LABELS "conformance;python")
