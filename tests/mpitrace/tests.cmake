# The PMPI tracer's tests (label tracer): recorder and CLI-usage tests without mpirun, and mpirun
# integration tests (label mpi too) on the bundled benchmark and on mpi_calls.cc.
if(DAGSGD_WITH_MPI)
  set(mpitrace_test_dir ${CMAKE_CURRENT_LIST_DIR})

  add_executable(dagsgd-mpitrace-calls ${mpitrace_test_dir}/mpi_calls.cc)
  target_link_libraries(dagsgd-mpitrace-calls PRIVATE MPI::MPI_C)
  target_compile_definitions(dagsgd-mpitrace-calls PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  dagsgd_warnings(dagsgd-mpitrace-calls)
  add_executable(dagsgd-mpitrace-threads ${mpitrace_test_dir}/mpi_threads.cc)
  target_link_libraries(dagsgd-mpitrace-threads PRIVATE MPI::MPI_C Threads::Threads)
  target_compile_definitions(dagsgd-mpitrace-threads PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  dagsgd_warnings(dagsgd-mpitrace-threads)

  function(dagsgd_mpitrace_test name src labels)
    add_executable(${name} ${mpitrace_test_dir}/${src})
    target_link_libraries(${name} PRIVATE dagsgd_mpitrace dagsgd_trace nlohmann_json::nlohmann_json
      GTest::gtest GTest::gtest_main)
    target_compile_definitions(${name} PRIVATE
      DAGSGD_BINARY="$<TARGET_FILE:dagsgd>"
      DAGSGD_MPITRACE_LIB="$<TARGET_FILE:dagsgd-mpitrace>"
      DAGSGD_ALLREDUCE_BENCH="$<TARGET_FILE:dagsgd-allreduce-bench>"
      DAGSGD_CPU_SHARE_BENCH="$<TARGET_FILE:dagsgd-cpu-share-bench>"
      DAGSGD_MPI_CALLS="$<TARGET_FILE:dagsgd-mpitrace-calls>"
      DAGSGD_MPI_THREADS="$<TARGET_FILE:dagsgd-mpitrace-threads>"
      DAGSGD_MPIEXEC="${MPIEXEC_EXECUTABLE}")
    add_dependencies(${name} dagsgd dagsgd-mpitrace dagsgd-allreduce-bench dagsgd-mpitrace-calls
      dagsgd-mpitrace-threads dagsgd-cpu-share-bench)
    dagsgd_warnings(${name})
    dagsgd_add_gtests(${name} SOURCES ${mpitrace_test_dir}/${src} LABELS ${labels}
      PROPERTIES RUN_SERIAL TRUE TIMEOUT 300)
  endfunction()

  dagsgd_mpitrace_test(mpitrace_tests recorder_test.cc "tracer")
  dagsgd_mpitrace_test(mpitrace_mpi_tests mpirun_test.cc "tracer;mpi")
endif()
