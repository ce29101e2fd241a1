# Every command block of README.md's tour, run from a copy of the repository without ../shared.
# The tour trains under mpirun and uses the Python module (which a build with sanitizers, preset
# asan, cannot give an interpreter without them).
if(NOT (DAGSGD_WITH_PYTHON AND DAGSGD_WITH_MPI) OR CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  return()
endif()
add_test(NAME readme.tour
         COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/tour_check.py
                 --source ${PROJECT_SOURCE_DIR} --build ${PROJECT_BINARY_DIR}
                 --python ${Python_EXECUTABLE}
                 --out ${CMAKE_CURRENT_BINARY_DIR}/readme-tour)
set_tests_properties(readme.tour PROPERTIES LABELS "tour;mpi;python" TIMEOUT 1500 RUN_SERIAL TRUE)
