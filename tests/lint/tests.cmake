# Style gates as tests, so CI (ctest) checks formatting and the clang-tidy allow-list.
find_program(CLANG_FORMAT clang-format)
find_program(CLANG_TIDY clang-tidy)
if(CLANG_FORMAT)
  add_test(NAME lint_clang_format COMMAND ${CMAKE_SOURCE_DIR}/tools/lint format ${CMAKE_BINARY_DIR}
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(lint_clang_format PROPERTIES LABELS lint TIMEOUT 300)
endif()
if(CLANG_TIDY)
  add_test(NAME lint_clang_tidy COMMAND ${CMAKE_SOURCE_DIR}/tools/lint tidy ${CMAKE_BINARY_DIR}
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(lint_clang_tidy PROPERTIES LABELS lint TIMEOUT 1500)
endif()
