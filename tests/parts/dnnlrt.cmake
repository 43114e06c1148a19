# The dnnl backend's run path (src/backends/dnnl/dnnl.c): boundary values
# bound to the caller's buffers at each run, checked against the CPU
# kernels when the caller moves to other input or output buffers between
# runs or overwrites one it gave before; oneDNN on 1 and 2 threads, and
# fusion off. Under a second.
seam_c_test(test_dnnl_rebind unit/test_dnnl_rebind.c)
target_link_libraries(test_dnnl_rebind PRIVATE m)
add_test(NAME dnnl_rebind COMMAND test_dnnl_rebind)
set_tests_properties(dnnl_rebind PROPERTIES LABELS "unit;dnnl")
