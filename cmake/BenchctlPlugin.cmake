# benchctl_add_plugin(NAME SOURCES src... [LIBS lib...] [NO_INSTALL] [OUTPUT_DIRECTORY dir])
# Builds one plugin as benchctl-NAME.so in the build tree's plugins/ folder (or
# OUTPUT_DIRECTORY) and installs it to ${CMAKE_INSTALL_LIBDIR}/benchctl. Plugins see
# only the public header (core/include) and never link against benchctl.
# NO_INSTALL is for test fixtures, which live only in the build tree, in their
# own OUTPUT_DIRECTORY so that `benchctl plugins` does not list them.
function(benchctl_add_plugin name)
  cmake_parse_arguments(P "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;LIBS" ${ARGN})
  if(NOT P_OUTPUT_DIRECTORY)
    set(P_OUTPUT_DIRECTORY ${BENCHCTL_PLUGIN_BUILD_DIR})
  endif()
  set(target benchctl-${name})
  add_library(${target} MODULE ${P_SOURCES})
  set_target_properties(${target} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden
                        LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIRECTORY})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/core/include)
  # Only the entry point is exported: hidden visibility for the plugin's own
  # objects, and nothing from the static libraries it links (the OPT engine,
  # the precision formats), whose symbols would otherwise be dynamic ones.
  target_link_options(${target} PRIVATE -Wl,--no-undefined -Wl,--exclude-libs,ALL)
  if(P_LIBS)
    target_link_libraries(${target} PRIVATE ${P_LIBS})
  endif()
  if(BENCHCTL_SANITIZE)
    # The sanitizer runtime lives in the executable; plugins resolve it there.
    target_link_options(${target} PRIVATE -Wl,--allow-shlib-undefined)
  endif()
  if(NOT P_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${BENCHCTL_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
