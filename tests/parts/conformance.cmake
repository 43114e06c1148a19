# ONNX node tests: at least 900 of them pass on the CPU backend (the list
# in tests/conformance/node.txt names the others, each with why; the
# conformance_node test fails when that list is out of date).
add_test(NAME conformance_node_count COMMAND conformance --min-passes 900 ${TESTDATA}/node)
set_tests_properties(conformance_node_count PROPERTIES TIMEOUT 600 LABELS "conformance")
