# ONNX node tests: at least 900 of them must pass on the CPU backend. The
# conformance_node test (tests/CMakeLists.txt) checks it in the same run
# that compares the others with tests/conformance/node.txt, so the node
# tests are run once, not twice.

# Sequences, optionals and strings inside models, through `seam run`:
# against numpy, and hostile models that must fail naming the node; and
# sequences, optionals, strings and bfloat16 as seam run's files.
add_test(NAME sequence_values
  COMMAND ${PY} ${CMAKE_CURRENT_SOURCE_DIR}/conformance/check_sequences.py $<TARGET_FILE:seam> ${TEST_WORK}/sequences)
set_tests_properties(sequence_values PROPERTIES TIMEOUT 300 LABELS "conformance;python")

# Every node test through `seam run` with its own .pb files, outputs read
# back by numpy and onnx: test by test, the same tests pass as through the
# C API driver (issue 29); Bernoulli and training Dropout by their
# statistics, counted apart. Under the sanitizers, a share (SEAM_TEST_SAMPLE).
add_test(NAME cli_node_tests
  COMMAND ${PY} ${CMAKE_CURRENT_SOURCE_DIR}/checks/check_cli_node_tests.py $<TARGET_FILE:seam>
          $<TARGET_FILE:conformance> ${TEST_WORK}/cli-node-tests ${TESTDATA}/node)
set_tests_properties(cli_node_tests PROPERTIES TIMEOUT 900 LABELS "conformance;python")

# The 8-bit floats: Cast in and out over every value of each type, the
# ties and the range's ends, against a reference written from the ONNX
# spec and against ONNX Runtime; float8 through .pb and uint8 .npy files.
add_test(NAME float8_values
  COMMAND ${PY} ${CMAKE_CURRENT_SOURCE_DIR}/checks/check_float8.py $<TARGET_FILE:seam> ${TEST_WORK}/float8)
set_tests_properties(float8_values PROPERTIES TIMEOUT 600 LABELS "standalone;python;dnnl")
