# Tests of the emulated cluster and `dagsgd validate` (label netns: they need root and network
# namespaces, and skip with a message otherwise).
set(dagsgd_emucluster ${CMAKE_SOURCE_DIR}/tools/emucluster)
add_test(NAME validate.emucluster
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/emucluster_test.sh ${dagsgd_emucluster})
set_tests_properties(validate.emucluster PROPERTIES LABELS "netns" SKIP_RETURN_CODE 77
                     TIMEOUT 300 RUN_SERIAL TRUE)
if(DAGSGD_WITH_MPI)
  # No two ranks of the emulated hosts pinned to one core (--report-bindings and the ranks'
  # affinity), and a 2-host ping-pong out of the scheduler-tick regime.
  add_test(NAME validate.placement
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/placement_test.sh ${dagsgd_emucluster}
                   $<TARGET_FILE:dagsgd-pingpong-bench>)
  set_tests_properties(validate.placement PROPERTIES LABELS "netns;mpi" SKIP_RETURN_CODE 77
                       TIMEOUT 300 RUN_SERIAL TRUE)
  # The short validation: one source/target pair, 2 ranks, about a minute.
  add_test(NAME validate.quick
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/validate_quick_test.sh $<TARGET_FILE:dagsgd>
                   ${dagsgd_emucluster} ${CMAKE_CURRENT_BINARY_DIR}/validate-quick)
  set_tests_properties(validate.quick PROPERTIES LABELS "netns;mpi" SKIP_RETURN_CODE 77
                       TIMEOUT 600 RUN_SERIAL TRUE)
endif()
