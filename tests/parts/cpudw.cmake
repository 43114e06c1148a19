# The CPU depthwise convolution (src/backends/cpu/dwconv.c) against a
# float64 direct convolution written in the test (tests/drivers/dw_test.c):
# kernels 1x1-7x7 and non-square, strides 1-3, dilations, asymmetric pads,
# depth multipliers, channel counts that fill no lane block, tiny to large
# planes, batch 2, every post-op activation, bias or not; 1/2/3 threads
# bitwise equal; fails if the small-plane lanes, the rows (AVX-512 or AVX2
# with FMA, whichever the CPU has) or the generic loop went untested. A few
# seconds. cpudw_avx2 runs the AVX2 rows on a CPU with AVX-512 too.
seam_c_test(dw_test drivers/dw_test.c)
target_link_libraries(dw_test PRIVATE m)
add_test(NAME cpudw COMMAND dw_test)
set_tests_properties(cpudw PROPERTIES LABELS "unit")
add_test(NAME cpudw_model_shapes COMMAND dw_test --model-shapes)
set_tests_properties(cpudw_model_shapes PROPERTIES LABELS "unit")
add_test(NAME cpudw_avx2 COMMAND dw_test)
set_tests_properties(cpudw_avx2 PROPERTIES LABELS "unit" ENVIRONMENT "SEAM_CPU_DW=avx2")
