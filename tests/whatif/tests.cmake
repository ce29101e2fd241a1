# `dagsgd whatif` end to end: the MPI split (label mpi) and the report in a real browser.
set(whatif_check ${CMAKE_CURRENT_LIST_DIR}/whatif_check.sh)
if(DAGSGD_WITH_MPI)
  foreach(np 2 3)
    add_test(NAME whatif.mpi_identical.np${np}
             COMMAND ${whatif_check} mpi $<TARGET_FILE:dagsgd>
                     ${CMAKE_CURRENT_BINARY_DIR}/whatif-mpi-np${np} ${np})
    set_tests_properties(whatif.mpi_identical.np${np} PROPERTIES LABELS "reports;mpi"
                         TIMEOUT 300 RUN_SERIAL TRUE)
  endforeach()
  add_test(NAME whatif.traced_run
           COMMAND ${whatif_check} run $<TARGET_FILE:dagsgd> ${CMAKE_CURRENT_BINARY_DIR}/whatif-run)
  set_tests_properties(whatif.traced_run PROPERTIES LABELS "reports;mpi" TIMEOUT 300
                       RUN_SERIAL TRUE)
endif()
add_test(NAME whatif.browser
         COMMAND ${whatif_check} browser $<TARGET_FILE:dagsgd> ${CMAKE_CURRENT_BINARY_DIR}/whatif-browser)
set_tests_properties(whatif.browser PROPERTIES LABELS "reports;browser" TIMEOUT 180
                     SKIP_RETURN_CODE 77)
# The realistic sweep of docs/reports.md ("Large sweeps"): 1,920 scenarios.
add_test(NAME whatif.browser_at_scale
         COMMAND ${whatif_check} scale $<TARGET_FILE:dagsgd> ${CMAKE_CURRENT_BINARY_DIR}/whatif-scale)
set_tests_properties(whatif.browser_at_scale PROPERTIES LABELS "reports;browser" TIMEOUT 1500
                     SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
