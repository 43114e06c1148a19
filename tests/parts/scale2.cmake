# The loader and IR at scale, continued (issue 16 part 2): the streamed
# walk's tag and length limits against protobuf-c's, bytes changed between
# the loader's two passes, replace-weights' name index, doc strings beside
# nodes and values (tests/unit/test_scale2.c; models written byte by byte).
seam_c_test(test_scale2 unit/test_scale2.c)
add_test(NAME load_scale2 COMMAND test_scale2)
set_tests_properties(load_scale2 PROPERTIES LABELS "unit")
