# The CPU kernels outside Conv and GEMM that the benchmark models spend
# time in (tests/checks/check_cpu_misc.py): LSTM and GRU in every direction,
# batch 1 and 3, sequence_lens, initial states, layout 1, R packed in check
# or at run time, and the forms left to the general loop, against the ONNX
# spec's equations (themselves checked against torch); Pad in every mode
# against numpy.pad. Each model on 1 and 2 threads, bitwise equal. A few
# seconds.
add_test(NAME cpu_misc
  COMMAND ${PY} ${CHECKS}/check_cpu_misc.py $<TARGET_FILE:seam> ${TEST_WORK}/cpu_misc)
set_tests_properties(cpu_misc PROPERTIES LABELS "standalone;python")
