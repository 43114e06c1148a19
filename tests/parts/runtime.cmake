# The runtime's own pieces in C (tests/unit/test_runtime.c): the shape
# signature that picks a device subgraph's compiled variant, every position
# of it changed in turn.
seam_c_test(test_runtime unit/test_runtime.c)
add_test(NAME unit_runtime COMMAND test_runtime)
set_tests_properties(unit_runtime PROPERTIES LABELS "unit")
