# The installed package: cmake --install into a temporary prefix, then the installed binary and
# Python module, and an outside CMake project built against the install (find_package(dagsgd))
# with this build's compiler flags (a sanitized build's libraries need the sanitizer's runtime).
set(install_python_dir "${DAGSGD_PYTHON_INSTALL_DIR}")
if(NOT DAGSGD_WITH_PYTHON OR CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  set(install_python_dir "")  # no module an unsanitized interpreter can import
endif()
add_test(NAME install.package
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/install_check.sh ${PROJECT_BINARY_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/install-check ${CMAKE_CURRENT_LIST_DIR}/consumer
                 ${Python_EXECUTABLE} "${install_python_dir}" ${CMAKE_GENERATOR}
                 "${CMAKE_CXX_FLAGS}" "${CMAKE_EXE_LINKER_FLAGS}")
set_tests_properties(install.package PROPERTIES LABELS "install;python" TIMEOUT 600
                     RUN_SERIAL TRUE)
