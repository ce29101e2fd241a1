# CUDA tests beyond the CPU-only cuda_tests executable: the walker test reads the collector's
# private record-version header, and the GPU tests (*_gputest.cc) get their own executable with
# the ctest label `gpu`, which CI (no GPU) excludes with `ctest -LE gpu`.
if(TARGET cuda_tests)
  target_include_directories(cuda_tests PRIVATE ${CMAKE_SOURCE_DIR}/runtime/cuda/src)
  add_dependencies(cuda_tests dagsgd_cupti_inject)
  target_compile_definitions(cuda_tests PRIVATE
    DAGSGD_CUPTI_INJECT="$<TARGET_FILE:dagsgd_cupti_inject>")
  target_link_libraries(cuda_tests PRIVATE ${CMAKE_DL_LIBS})
endif()
if(DAGSGD_HAVE_CUDA AND TARGET dagsgd_cuda_ops AND TARGET dagsgd_cupti)
  file(GLOB gpu_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_gputest.cc)
  if(gpu_srcs)
    add_executable(cuda_gpu_tests ${gpu_srcs})
    add_dependencies(cuda_gpu_tests dagsgd_cupti_inject)
    target_compile_definitions(cuda_gpu_tests PRIVATE
      DAGSGD_CUPTI_INJECT="$<TARGET_FILE:dagsgd_cupti_inject>")
    target_link_libraries(cuda_gpu_tests PRIVATE dagsgd_cuda_ops dagsgd_cupti dagsgd_model
                          nlohmann_json::nlohmann_json GTest::gtest GTest::gtest_main)
    dagsgd_warnings(cuda_gpu_tests)
    if(TARGET dagsgd AND DAGSGD_WITH_MPI)
      # train_cuda_gputest.cc runs `mpirun -np 2 dagsgd train --device cuda`.
      add_dependencies(cuda_gpu_tests dagsgd)
      target_compile_definitions(cuda_gpu_tests PRIVATE DAGSGD_BINARY="$<TARGET_FILE:dagsgd>")
    endif()
    # One label only: CMake 3.25's discovered-tests script flattens a label list and keeps only
    # its first entry, and `gpu` is the one CI filters on.
    gtest_discover_tests(cuda_gpu_tests PROPERTIES LABELS gpu DISCOVERY_TIMEOUT 60)
  endif()
endif()
