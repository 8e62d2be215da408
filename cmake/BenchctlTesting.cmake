# bc_add_cmocka_test(NAME SOURCES src... [LIBS lib...] [LABELS label...])
# One cmocka executable per unit, registered with ctest. Tests find the build
# tree's product plugins through BENCHCTL_TEST_PLUGIN_DIR, the fixture plugins
# (tests/fixtures) through BENCHCTL_TEST_FIXTURE_DIR and the source tree
# through BENCHCTL_SOURCE_DIR (all compile definitions).
function(bc_add_cmocka_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  # tests/core holds bc_test_assert.h, the project's assertions for doubles
  target_include_directories(${name} PRIVATE ${BENCHCTL_CORE_INCLUDE_DIRS}
                             ${PROJECT_SOURCE_DIR}/tests/core)
  target_link_libraries(${name} PRIVATE PkgConfig::CMOCKA ${T_LIBS})
  target_compile_definitions(${name} PRIVATE
    BENCHCTL_TEST_PLUGIN_DIR="${BENCHCTL_PLUGIN_BUILD_DIR}"
    BENCHCTL_TEST_FIXTURE_DIR="${BENCHCTL_FIXTURE_PLUGIN_DIR}"
    BENCHCTL_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    BENCHCTL_BINARY_DIR="${PROJECT_BINARY_DIR}")
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
