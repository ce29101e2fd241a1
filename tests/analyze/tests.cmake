# analyze/replay end to end: CLI exit codes on the shared traces and a freshly traced 2-rank
# `dagsgd train` run replayed within a tolerance (label mpi for the latter).
add_executable(analyze_cli_tests ${CMAKE_CURRENT_LIST_DIR}/analyze_cli.cc)
target_link_libraries(analyze_cli_tests PRIVATE nlohmann_json::nlohmann_json GTest::gtest
                      GTest::gtest_main)
target_include_directories(analyze_cli_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../tools)
target_compile_definitions(analyze_cli_tests PRIVATE
  DAGSGD_SHARED_DATA="${CMAKE_SOURCE_DIR}/../shared/data"
  DAGSGD_BINARY="$<TARGET_FILE:dagsgd>")
add_dependencies(analyze_cli_tests dagsgd)
dagsgd_warnings(analyze_cli_tests)
dagsgd_add_gtests(analyze_cli_tests SOURCES ${CMAKE_CURRENT_LIST_DIR}/analyze_cli.cc
                  LABELS analyze tools)

if(DAGSGD_WITH_MPI)
  add_executable(analyze_replay_mpi ${CMAKE_CURRENT_LIST_DIR}/replay_mpi.cc)
  target_link_libraries(analyze_replay_mpi PRIVATE nlohmann_json::nlohmann_json GTest::gtest
                        GTest::gtest_main)
  target_include_directories(analyze_replay_mpi PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../tools)
  target_compile_definitions(analyze_replay_mpi PRIVATE DAGSGD_BINARY="$<TARGET_FILE:dagsgd>")
  add_dependencies(analyze_replay_mpi dagsgd)
  dagsgd_warnings(analyze_replay_mpi)
  dagsgd_add_gtests(analyze_replay_mpi SOURCES ${CMAKE_CURRENT_LIST_DIR}/replay_mpi.cc
                    LABELS analyze mpi PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
endif()
