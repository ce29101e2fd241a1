# `dagsgd export --format chakra` end to end: the files decode with protoc against Chakra's
# public schema, and what they hold is what the traces say (nodes, dependencies, sizes).
set(chakra_check ${CMAKE_CURRENT_LIST_DIR}/chakra_check.py)
set(chakra_args --dagsgd $<TARGET_FILE:dagsgd> --protoc $<TARGET_FILE:protobuf::protoc>
    --schema ${PROJECT_SOURCE_DIR}/reports/proto/chakra/et_def.proto
    --samples ${PROJECT_SOURCE_DIR}/datasets/samples)
add_test(NAME export.chakra_kineto
         COMMAND ${Python_EXECUTABLE} ${chakra_check} kineto ${chakra_args}
                 --out ${CMAKE_CURRENT_BINARY_DIR}/chakra-kineto)
set_tests_properties(export.chakra_kineto PROPERTIES LABELS "reports;export" TIMEOUT 300)
if(DAGSGD_WITH_MPI)
  add_test(NAME export.chakra_mpi
           COMMAND ${Python_EXECUTABLE} ${chakra_check} mpi ${chakra_args}
                   --bench $<TARGET_FILE:dagsgd-allreduce-bench>
                   --out ${CMAKE_CURRENT_BINARY_DIR}/chakra-mpi)
  # Label tracer too: `dagsgd collect` preloads the PMPI tracer (left out of the ASan run).
  set_tests_properties(export.chakra_mpi PROPERTIES LABELS "reports;export;mpi;tracer" TIMEOUT 300
                       RUN_SERIAL TRUE)
endif()
