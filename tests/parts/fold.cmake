# Folding finishes the job (tests/checks/check_fold.py): a windowed-
# attention model's shape arithmetic (Mod, Pow, Range, Expand, Where,
# ScatterND, Tile, ConstantOfShape, ...) all constants, one dnnl subgraph,
# no unknown dim, outputs equal to numpy's; a fold above the size limit,
# a kernel's refusal and a random generator left to the run. A few seconds.
add_test(NAME fold_constants
  COMMAND ${PY} ${CHECKS}/check_fold.py $<TARGET_FILE:seam> ${TEST_WORK}/fold)
set_tests_properties(fold_constants PROPERTIES LABELS "standalone;python;dnnl")
