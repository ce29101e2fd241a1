# `dagsgd export --format chakra` end to end: the files decode with protoc against Chakra's
# public schema, and what they hold is what the traces say (nodes, dependencies, sizes).
set(chakra_check ${CMAKE_CURRENT_LIST_DIR}/chakra_check.py)
set(chakra_args --dagsgd $<TARGET_FILE:dagsgd> --protoc $<TARGET_FILE:protobuf::protoc>
    --schema ${PROJECT_SOURCE_DIR}/third_party/chakra/et_def.proto
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

# Chakra execution traces read back: analyze, replay and whatif on Chakra's own sample (figures
# from a protobuf-free decoding of the file), our export round-tripped, and bad inputs (exit 2).
set(chakra_import_check ${CMAKE_CURRENT_LIST_DIR}/chakra_import_check.py)
foreach(mode sample roundtrip bad)
  add_test(NAME export.chakra_import_${mode}
           COMMAND ${Python_EXECUTABLE} ${chakra_import_check} ${mode} --dagsgd $<TARGET_FILE:dagsgd>
                   --samples ${PROJECT_SOURCE_DIR}/datasets/samples
                   --out ${CMAKE_CURRENT_BINARY_DIR}/chakra-import-${mode})
  set_tests_properties(export.chakra_import_${mode} PROPERTIES LABELS "trace;export" TIMEOUT 300)
endforeach()
if(DAGSGD_WITH_MPI)
  # A 2-rank `dagsgd train` run exported and read back.
  add_test(NAME export.chakra_import_mpi
           COMMAND ${Python_EXECUTABLE} ${chakra_import_check} mpi --dagsgd $<TARGET_FILE:dagsgd>
                   --samples ${PROJECT_SOURCE_DIR}/datasets/samples
                   --out ${CMAKE_CURRENT_BINARY_DIR}/chakra-import-mpi)
  set_tests_properties(export.chakra_import_mpi PROPERTIES LABELS "trace;export;mpi" TIMEOUT 300
                       RUN_SERIAL TRUE)
endif()
