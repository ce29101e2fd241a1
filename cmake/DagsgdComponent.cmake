# One static library per component: public headers in include/, sources in src/.
# Only include/ is exported, so a component can reach another only through its public headers
# and only if it lists it in DEPS; that is how the layering in DESIGN.md is enforced.
set(DAGSGD_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Wno-missing-field-initializers
    -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual)

# GCC 12 reports -Wrestrict on std::string concatenation inlined at -O3 (a known false positive,
# GCC bug 105329); it stays a warning there rather than failing release builds.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND DAGSGD_WARNINGS -Wno-error=restrict)
endif()

function(dagsgd_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${DAGSGD_WARNINGS}>)
  if(DAGSGD_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

# dagsgd_component(NAME DEPS <components...> PRIVATE_LIBS <libs...>)
function(dagsgd_component name)
  cmake_parse_arguments(ARG "" "" "DEPS;PRIVATE_LIBS;PUBLIC_LIBS;SOURCES" ${ARGN})
  if(ARG_SOURCES)
    set(srcs ${ARG_SOURCES})
  else()
    file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cc)
  endif()
  if(NOT srcs)
    # A component with headers only (so far): still a target, so DEPS work the same way.
    add_library(dagsgd_${name} INTERFACE)
    target_include_directories(dagsgd_${name} INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/include)
    foreach(dep ${ARG_DEPS})
      target_link_libraries(dagsgd_${name} INTERFACE dagsgd_${dep})
    endforeach()
    return()
  endif()
  add_library(dagsgd_${name} STATIC ${srcs})
  add_library(dagsgd::${name} ALIAS dagsgd_${name})
  # Installed, the headers are under <prefix>/include (cmake/DagsgdInstall.cmake).
  target_include_directories(dagsgd_${name}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  foreach(dep ${ARG_DEPS})
    target_link_libraries(dagsgd_${name} PUBLIC dagsgd_${dep})
  endforeach()
  target_link_libraries(dagsgd_${name} PRIVATE ${ARG_PRIVATE_LIBS} PUBLIC ${ARG_PUBLIC_LIBS})
  target_compile_definitions(dagsgd_${name} PRIVATE DAGSGD_DATA_DIR="${DAGSGD_DATA_DIR}"
    DAGSGD_VERSION="${PROJECT_VERSION}")
  dagsgd_warnings(dagsgd_${name})
endfunction()
