# The packed GEMM's newer paths through seam run (tests/checks/check_cpugemm2.py):
# 1x1 convs reading their input in place, MatMul and Gemm with the weight
# packed at session creation (transA/transB, alpha, beta, every C form,
# fused activations, edge tiles, 1 and 2 rows), each against float64
# numpy or torch, 1 and 2 threads bitwise equal, and all of it again with
# SEAM_CPU_PACKED_GEMM=0 (the OpenBLAS path). Some 15 seconds.
add_test(NAME cpugemm2
  COMMAND ${PY} ${CHECKS}/check_cpugemm2.py $<TARGET_FILE:seam> ${TEST_WORK}/cpugemm2)
set_tests_properties(cpugemm2 PROPERTIES LABELS "standalone;python")
# The packed GEMM's entry points in C (tests/drivers/gemm2_test.c): a plain
# B read in place, packed, or as the rule picks (bitwise equal), and X W
# with W packed (transposes, alpha, accumulating, K = 0, one and two rows),
# against float64 products, 1/2/3 threads bitwise equal. About a second.
seam_c_test(gemm2_test drivers/gemm2_test.c)
target_link_libraries(gemm2_test PRIVATE m)
add_test(NAME gemm2 COMMAND gemm2_test)
set_tests_properties(gemm2 PROPERTIES LABELS "unit")
