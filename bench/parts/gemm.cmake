# The packed AVX-512 GEMM against OpenBLAS on conv shapes (bench/gemm_bench.c).
add_executable(gemm_bench ${CMAKE_CURRENT_SOURCE_DIR}/gemm_bench.c)
target_include_directories(gemm_bench PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(gemm_bench PRIVATE seam_static)
target_compile_definitions(gemm_bench PRIVATE _DEFAULT_SOURCE)
