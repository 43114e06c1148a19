# The depthwise convolution on the depthwise net's conv shapes against an
# FMA and a memory roofline (bench/results/cpudw.md).
add_executable(dw_bench dw_bench.c)
target_include_directories(dw_bench PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(dw_bench PRIVATE -Wall -Wextra -Werror -O3)
target_compile_definitions(dw_bench PRIVATE _DEFAULT_SOURCE)
target_link_libraries(dw_bench PRIVATE seam_static)
