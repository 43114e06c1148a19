# The packed GEMM reading a 1x1 conv's input in place, and X W with W
# packed once, against OpenBLAS (bench/gemm2_bench.c).
add_executable(gemm2_bench ${CMAKE_CURRENT_SOURCE_DIR}/gemm2_bench.c)
target_include_directories(gemm2_bench PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(gemm2_bench PRIVATE seam_static)
target_compile_definitions(gemm2_bench PRIVATE _DEFAULT_SOURCE)
