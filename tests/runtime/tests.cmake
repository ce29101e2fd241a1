# MPI integration tests of the training runtime (label `mpi`): they launch mpirun.
if(DAGSGD_WITH_MPI)
  set(dagsgd_mpirun mpirun --allow-run-as-root --oversubscribe)

  add_executable(runtime_exchange_mpi ${CMAKE_CURRENT_LIST_DIR}/exchange_mpi.cc)
  target_link_libraries(runtime_exchange_mpi PRIVATE dagsgd_runtime MPI::MPI_CXX GTest::gtest)
  target_include_directories(runtime_exchange_mpi PRIVATE ${CMAKE_SOURCE_DIR}/runtime/src)
  dagsgd_warnings(runtime_exchange_mpi)
  foreach(np 2 3 4)
    add_test(NAME runtime.exchange_mpi.np${np}
             COMMAND ${dagsgd_mpirun} -np ${np} $<TARGET_FILE:runtime_exchange_mpi>)
    set_tests_properties(runtime.exchange_mpi.np${np} PROPERTIES LABELS "runtime;mpi"
                         TIMEOUT 300 RUN_SERIAL TRUE)
  endforeach()

  # A GoogleTest program `runtime_<src>` that runs `dagsgd train` under mpirun as a user would.
  function(dagsgd_train_test src prefix timeout)
    set(name runtime_${src})
    add_executable(${name} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${src}.cc)
    target_link_libraries(${name} PRIVATE ${ARGN} GTest::gtest GTest::gtest_main)
    target_compile_definitions(${name} PRIVATE DAGSGD_BINARY="$<TARGET_FILE:dagsgd>"
                               $<$<BOOL:${DAGSGD_HAVE_CUDA}>:DAGSGD_HAVE_CUDA=1>)
    add_dependencies(${name} dagsgd)
    dagsgd_warnings(${name})
    gtest_discover_tests(${name} TEST_PREFIX "${prefix}." PROPERTIES
                         LABELS mpi TIMEOUT ${timeout} RUN_SERIAL TRUE DISCOVERY_TIMEOUT 60)
  endfunction()

  dagsgd_train_test(train_mpi runtime.train 600 nlohmann_json::nlohmann_json)
  # A rank SIGKILLed mid-training: the traces of every rank still import (train --trace streams).
  dagsgd_train_test(train_kill_mpi runtime.train 600 dagsgd_trace nlohmann_json::nlohmann_json)
  # --device cuda where no GPU can be used (GPUs hidden), on every build.
  dagsgd_train_test(train_device_mpi runtime.train_device 300)
endif()
