# The published-measurement set (datasets/published/, docs/published.md): every source file
# against the schema and the catalogs, bad files refused, and the evaluation runs with every
# end-to-end point predicted or skipped with a reason. Accuracy is reported, not asserted.
find_program(DAGSGD_PYTHON3 python3)
if(DAGSGD_PYTHON3)
  set(published_check ${CMAKE_CURRENT_LIST_DIR}/published_check.py)
  add_test(NAME published.validate
           COMMAND ${DAGSGD_PYTHON3} ${published_check} validate)
  add_test(NAME published.bad_input
           COMMAND ${DAGSGD_PYTHON3} ${published_check} bad-input
                   ${CMAKE_CURRENT_BINARY_DIR}/published-bad)
  add_test(NAME published.evaluate
           COMMAND ${DAGSGD_PYTHON3} ${published_check} evaluate $<TARGET_FILE:dagsgd>
                   ${CMAKE_CURRENT_BINARY_DIR}/published-eval.json)
  set_tests_properties(published.validate published.bad_input PROPERTIES LABELS "published"
                       TIMEOUT 60)
  set_tests_properties(published.evaluate PROPERTIES LABELS "published" TIMEOUT 1500)
endif()
