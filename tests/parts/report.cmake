# seam partition/run --html, --profile, --workdir (tests/checks/check_report.py):
# pages checked in headless Chromium (Debian's chromium, started by the test)
# with a screenshot kept under test-work/report, the trace against the
# trace event format, device subgraphs run alone against the full run.
# Under ASan, LeakSanitizer skips what graphviz itself never frees
# (tests/browser/lsan.supp).
add_test(NAME report_views
  COMMAND ${PY} ${CHECKS}/check_report.py $<TARGET_FILE:seam> $<TARGET_FILE:seam_toy_backend>
          $<TARGET_FILE:gen_graph> ${TEST_WORK}/report --models ${SEAM_MODELS_DIR})
set_tests_properties(report_views PROPERTIES FIXTURES_REQUIRED models LABELS "models;python;dnnl" TIMEOUT 900
  ENVIRONMENT "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/browser/lsan.supp")
