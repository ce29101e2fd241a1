# The Python module against the CLI: every function gives what the command's --json prints.
# A module built with sanitizers (preset asan) cannot be imported by an interpreter without them.
if(DAGSGD_WITH_PYTHON AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  add_test(NAME python.cli_parity
           COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cli_parity_test.py -v)
  set_tests_properties(python.cli_parity PROPERTIES LABELS "python;tools" TIMEOUT 600
    ENVIRONMENT "PYTHONPATH=${PROJECT_BINARY_DIR}/python;DAGSGD_BINARY=$<TARGET_FILE:dagsgd>;DAGSGD_SOURCE_DIR=${PROJECT_SOURCE_DIR};DAGSGD_TEST_OUT=${CMAKE_CURRENT_BINARY_DIR}/python-parity")
endif()
