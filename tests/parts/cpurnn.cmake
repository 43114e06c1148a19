# LSTM, GRU and RNN on the CPU, where each layer's steps run as one
# parallel region (src/backends/cpu/rnn.c on seam_parallel_steps,
# src/runtime/pool.c).
#
# cpu_rnn (tests/checks/check_cpu_rnn.py): against torch.nn.LSTM / GRU /
# RNN in float64, on sizes that split the steps over threads (partial unit
# blocks, batch 1 and 3, every direction, T = 1, sequence_lens, initial
# states, layout 1, R packed in check or per run, the benchmark's layer),
# each model on 1, 2, 3 and 5 threads, bitwise equal. A few seconds.
add_test(NAME cpu_rnn
  COMMAND ${PY} ${CHECKS}/check_cpu_rnn.py $<TARGET_FILE:seam> ${TEST_WORK}/cpu_rnn)
set_tests_properties(cpu_rnn PROPERTIES LABELS "standalone;python")

# unit_pool_steps (tests/unit/test_pool_steps.c): seam_parallel_steps'
# barrier and taking over of late parts, on an integer recurrence checked
# exactly against a serial run; pools of 1 to 6 threads. Also in the
# ThreadSanitizer build (label tsan): scripts/test.sh builds only the
# test_threads target there, so that target depends on this one.
seam_c_test(test_pool_steps unit/test_pool_steps.c)
add_dependencies(test_threads test_pool_steps)
add_test(NAME unit_pool_steps COMMAND test_pool_steps)
set_tests_properties(unit_pool_steps PROPERTIES LABELS "unit;tsan" TIMEOUT 120
  ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1")
