# MPI integration tests of the training runtime (label `mpi`): they launch mpirun.
if(DAGSGD_WITH_MPI)
  set(dagsgd_mpirun mpirun --allow-run-as-root --oversubscribe)

  add_executable(runtime_exchange_mpi ${CMAKE_CURRENT_LIST_DIR}/exchange_mpi.cc)
  target_link_libraries(runtime_exchange_mpi PRIVATE dagsgd_runtime MPI::MPI_CXX GTest::gtest)
  dagsgd_warnings(runtime_exchange_mpi)
  foreach(np 2 3 4)
    add_test(NAME runtime.exchange_mpi.np${np}
             COMMAND ${dagsgd_mpirun} -np ${np} $<TARGET_FILE:runtime_exchange_mpi>)
    set_tests_properties(runtime.exchange_mpi.np${np} PROPERTIES LABELS "runtime;mpi"
                         TIMEOUT 300 RUN_SERIAL TRUE)
  endforeach()

  add_executable(runtime_train_mpi ${CMAKE_CURRENT_LIST_DIR}/train_mpi.cc)
  target_link_libraries(runtime_train_mpi PRIVATE nlohmann_json::nlohmann_json GTest::gtest
                        GTest::gtest_main)
  target_compile_definitions(runtime_train_mpi PRIVATE DAGSGD_BINARY="$<TARGET_FILE:dagsgd>")
  add_dependencies(runtime_train_mpi dagsgd)
  dagsgd_warnings(runtime_train_mpi)
  gtest_discover_tests(runtime_train_mpi TEST_PREFIX "runtime.train." PROPERTIES
                       LABELS mpi TIMEOUT 600 RUN_SERIAL TRUE DISCOVERY_TIMEOUT 60)

  # --device cuda where no GPU can be used (GPUs hidden), on every build.
  add_executable(runtime_train_device_mpi ${CMAKE_CURRENT_LIST_DIR}/train_device_mpi.cc)
  target_link_libraries(runtime_train_device_mpi PRIVATE GTest::gtest GTest::gtest_main)
  target_compile_definitions(runtime_train_device_mpi PRIVATE
    DAGSGD_BINARY="$<TARGET_FILE:dagsgd>" $<$<BOOL:${DAGSGD_HAVE_CUDA}>:DAGSGD_HAVE_CUDA=1>)
  add_dependencies(runtime_train_device_mpi dagsgd)
  dagsgd_warnings(runtime_train_device_mpi)
  gtest_discover_tests(runtime_train_device_mpi TEST_PREFIX "runtime.train_device." PROPERTIES
                       LABELS mpi TIMEOUT 300 RUN_SERIAL TRUE DISCOVERY_TIMEOUT 60)
endif()

