# Fuzz targets (tests/fuzz/fuzz_<target>.cc, each an LLVMFuzzerTestOneInput): libFuzzer programs
# in the `fuzz` preset (clang; tools/fuzz runs them), and in every other build a replay program
# that ctest runs over the target's seed corpus and regression inputs (label `fuzz`).
option(DAGSGD_FUZZ "Build the libFuzzer targets (clang only; the fuzz preset sets it)" OFF)
set(DAGSGD_FUZZ_TARGETS importer manifest network hardware topology osu_log bcaffe_log stack
    whatif_grid chakra chakra_import)
foreach(t ${DAGSGD_FUZZ_TARGETS})
  if(DAGSGD_FUZZ)
    set(exe fuzz_${t})
    add_executable(${exe} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_${t}.cc)
    target_link_options(${exe} PRIVATE -fsanitize=fuzzer)
  else()
    set(exe fuzz_${t}_replay)
    add_executable(${exe} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_${t}.cc
                          ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/replay_main.cc)
    set(inputs ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${t})
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/regressions/${t})
      list(APPEND inputs ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/regressions/${t})
    endif()
    add_test(NAME fuzz_replay_${t} COMMAND ${exe} ${inputs})
    set_tests_properties(fuzz_replay_${t} PROPERTIES LABELS "fuzz")
  endif()
  target_link_libraries(${exe} PRIVATE dagsgd_trace dagsgd_model)
  if(t STREQUAL "topology" OR t STREQUAL "whatif_grid")
    # Node types, clusters and sweeps live in sim.
    target_link_libraries(${exe} PRIVATE dagsgd_sim)
  elseif(t STREQUAL "chakra")
    target_link_libraries(${exe} PRIVATE dagsgd_reports)
  endif()
  dagsgd_warnings(${exe})
endforeach()
