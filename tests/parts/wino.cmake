# The CPU Winograd F(4x4, 3x3) convolution (src/backends/cpu/winograd.c)
# against a float64 direct convolution written in the test: odd and tiny
# sizes, every pad pattern, groups, batch 2, every post-op activation,
# bias or not, and 1/2/3 threads bitwise equal; and cpu_wino_fits' size
# rule. Under a second (wino_test --model-shapes: the benchmark models'
# shapes, the accuracy table of bench/results/wino.md, a few seconds).
seam_c_test(wino_test drivers/wino_test.c)
target_link_libraries(wino_test PRIVATE m)
add_test(NAME wino COMMAND wino_test)
set_tests_properties(wino PROPERTIES LABELS "standalone")
add_test(NAME wino_model_shapes COMMAND wino_test --model-shapes)
set_tests_properties(wino_model_shapes PROPERTIES LABELS "standalone")
