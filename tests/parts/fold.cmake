# Folding finishes the job (tests/checks/check_fold.py): a windowed-
# attention model's shape arithmetic (Mod, Pow, Range, Expand, Where,
# ScatterND, Tile, ConstantOfShape, ...) all constants, one dnnl subgraph,
# no unknown dim, outputs equal to numpy's; a fold above the size limit,
# a kernel's refusal and a random generator left to the run. A few seconds.
add_test(NAME fold_constants
  COMMAND ${PY} ${CHECKS}/check_fold.py $<TARGET_FILE:seam> ${TEST_WORK}/fold)
set_tests_properties(fold_constants PROPERTIES LABELS "standalone;python;dnnl")

# Symbolic dims as expressions (tests/checks/check_symdim.py): shape
# arithmetic on named input dims becomes DimExpr nodes that read only the
# inputs' shapes and cut no device subgraph; the dims inspect prints; saved
# cpu and dnnl partitions at many shapes against numpy, ONNX Runtime and
# torch; malformed DimExpr nodes refused by name. About half a minute.
add_test(NAME symbolic_dims
  COMMAND ${PY} ${CHECKS}/check_symdim.py $<TARGET_FILE:seam> ${TEST_WORK}/symdim)
set_tests_properties(symbolic_dims PROPERTIES LABELS "standalone;python;dnnl")
