# Transfer calibration end to end on runs made here (label mpi): `dagsgd calibrate --trace` on a
# traced micro-benchmark and validate's mode (c) on traced training runs (tests/transfer).
if(DAGSGD_WITH_MPI)
  add_executable(transfer_mpi ${CMAKE_CURRENT_LIST_DIR}/transfer_mpi.cc)
  target_link_libraries(transfer_mpi PRIVATE dagsgd_runtime dagsgd_sim dagsgd_reports
                        nlohmann_json::nlohmann_json GTest::gtest GTest::gtest_main)
  target_compile_definitions(transfer_mpi PRIVATE
    DAGSGD_BINARY="$<TARGET_FILE:dagsgd>"
    DAGSGD_BENCH="$<TARGET_FILE:dagsgd-allreduce-bench>"
    DAGSGD_PINGPONG="$<TARGET_FILE:dagsgd-pingpong-bench>")
  add_dependencies(transfer_mpi dagsgd dagsgd-allreduce-bench dagsgd-pingpong-bench)
  dagsgd_warnings(transfer_mpi)
  # Label tracer too: `dagsgd collect` preloads the PMPI tracer (left out of the ASan run).
  dagsgd_add_gtests(transfer_mpi SOURCES ${CMAKE_CURRENT_LIST_DIR}/transfer_mpi.cc
                    LABELS sim tools mpi tracer PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
endif()
