# What `cmake --install` puts under the prefix: the dagsgd binary, the core libraries with their
# public headers and a CMake package (find_package(dagsgd): dagsgd::model, dagsgd::trace,
# dagsgd::sim, dagsgd::reports), the bundled data and the report plotting library.
#
#   <prefix>/bin/dagsgd
#   <prefix>/lib/libdagsgd_{model,trace,sim,reports}.a, <prefix>/lib/cmake/dagsgd/
#   <prefix>/include/dagsgd/{model,trace,sim,reports}/
#   <prefix>/share/dagsgd/datasets/        model::data_dir() of everything installed
#   <prefix>/share/dagsgd/node_modules/    vega, vega-lite, vega-embed for report.html
#
# Installed programs find the data relative to themselves or to the package, so an install
# into any prefix (cmake --install build --prefix DIR) works; see model/include/dagsgd/model/
# paths.h.
include(CMakePackageConfigHelpers)

set(DAGSGD_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/dagsgd)
set(DAGSGD_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/dagsgd/datasets)

# The installed binary looks for its data at this path relative to its own directory.
file(RELATIVE_PATH DAGSGD_BIN_TO_DATA /prefix/${CMAKE_INSTALL_BINDIR}
     /prefix/${DAGSGD_INSTALL_DATADIR})
target_compile_definitions(dagsgd PRIVATE DAGSGD_BIN_TO_DATA="${DAGSGD_BIN_TO_DATA}")
# External library directories (CUDA's, MPI's) stay on the installed binary's run path.
set_target_properties(dagsgd PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS dagsgd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(dagsgd_installed_components model trace sim reports)
foreach(c ${dagsgd_installed_components})
  set_target_properties(dagsgd_${c} PROPERTIES EXPORT_NAME ${c})
  install(TARGETS dagsgd_${c} EXPORT dagsgdTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${c}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(EXPORT dagsgdTargets NAMESPACE dagsgd:: DESTINATION ${DAGSGD_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dagsgdConfig.cmake.in
  ${PROJECT_BINARY_DIR}/dagsgdConfig.cmake
  INSTALL_DESTINATION ${DAGSGD_INSTALL_CMAKEDIR}
  PATH_VARS DAGSGD_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dagsgdConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/dagsgdConfig.cmake ${PROJECT_BINARY_DIR}/dagsgdConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/dagsgd_data_dir.cc.in
  DESTINATION ${DAGSGD_INSTALL_CMAKEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/datasets/ DESTINATION ${DAGSGD_INSTALL_DATADIR})

# The plot library report.html inlines (model::data_dir()/../node_modules), with its licences;
# present once tools/setup has run npm ci.
foreach(pkg vega vega-lite vega-embed)
  set(dir ${PROJECT_SOURCE_DIR}/node_modules/${pkg})
  install(FILES ${dir}/build/${pkg}.min.js
    DESTINATION ${CMAKE_INSTALL_DATADIR}/dagsgd/node_modules/${pkg}/build OPTIONAL)
  install(FILES ${dir}/LICENSE ${dir}/package.json
    DESTINATION ${CMAKE_INSTALL_DATADIR}/dagsgd/node_modules/${pkg} OPTIONAL)
endforeach()
