# The installed package: cmake --install into a temporary prefix, then the installed binary and
# Python module, and an outside CMake project built against the install (find_package(dagsgd)).
add_test(NAME install.package
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/install_check.sh ${PROJECT_BINARY_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/install-check ${CMAKE_CURRENT_LIST_DIR}/consumer
                 ${Python_EXECUTABLE} "${DAGSGD_PYTHON_INSTALL_DIR}" ${CMAKE_GENERATOR})
set_tests_properties(install.package PROPERTIES LABELS "install;python" TIMEOUT 600
                     RUN_SERIAL TRUE)
