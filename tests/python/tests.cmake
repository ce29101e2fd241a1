# The Python module against the CLI: every function gives what the command's --json prints; the
# module as Python users expect it (python.api); `pip install .` into a fresh virtual environment
# (python.pip_install). A module built with sanitizers (preset asan) cannot be imported by an
# interpreter without them.
if(DAGSGD_WITH_PYTHON AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  set(python_test_env "PYTHONPATH=${PROJECT_BINARY_DIR}/python;DAGSGD_BINARY=$<TARGET_FILE:dagsgd>;DAGSGD_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  add_test(NAME python.cli_parity
           COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cli_parity_test.py -v)
  set_tests_properties(python.cli_parity PROPERTIES LABELS "python;tools" TIMEOUT 600
    ENVIRONMENT "${python_test_env};DAGSGD_TEST_OUT=${CMAKE_CURRENT_BINARY_DIR}/python-parity")
  add_test(NAME python.api
           COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/python_api_test.py -v)
  set_tests_properties(python.api PROPERTIES LABELS "python;tools" TIMEOUT 600
    ENVIRONMENT "${python_test_env};DAGSGD_TEST_OUT=${CMAKE_CURRENT_BINARY_DIR}/python-api")
  # Builds the module target of this tree (up to date after the build) and copies it.
  add_test(NAME python.pip_install
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/pip_install_test.sh ${PROJECT_SOURCE_DIR}
                   ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/pip-install)
  set_tests_properties(python.pip_install PROPERTIES LABELS "python;tools" TIMEOUT 600)
  # pip_install relinks a stale module in place: the others must not import it meanwhile.
  set_tests_properties(python.cli_parity python.api python.pip_install PROPERTIES
    RESOURCE_LOCK dagsgd_python_module)
endif()
