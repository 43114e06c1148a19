# Winograd F(4x4, 3x3) against im2col + sgemm on the benchmark models' 3x3
# stride-1 conv shapes (bench/results/wino.md).
add_executable(wino_bench wino_bench.c)
target_include_directories(wino_bench PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(wino_bench PRIVATE -Wall -Wextra -Werror -O3)
target_compile_definitions(wino_bench PRIVATE _DEFAULT_SOURCE)
target_link_libraries(wino_bench PRIVATE seam_static)
