# SPDX-License-Identifier: Apache-2.0
# Helpers that give every staticlm target the same flags, include root and test wiring.

function(staticlm_apply_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wconversion -Wno-sign-conversion)
  if(STATICLM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# staticlm_library(NAME SOURCES ... DEPS ...)
# Declares library staticlm_<NAME>; DEPS are the layers it may use (checked by LayeringCheck.cmake).
function(staticlm_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(staticlm_${name} STATIC ${ARG_SOURCES})
  target_include_directories(staticlm_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_BINARY_DIR}/src)
  target_link_libraries(staticlm_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  set_target_properties(staticlm_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  staticlm_apply_warnings(staticlm_${name})
  set_property(GLOBAL APPEND PROPERTY STATICLM_LIBRARIES staticlm_${name})
endfunction()

# staticlm_test(NAME SOURCES ... DEPS ... [LABELS ...])
# One GoogleTest executable; its tests are registered with ctest individually.
# A test's own code runs in milliseconds; the libraries it calls keep their -O2. -O1 compiles the
# test files (gtest macros, fixtures) about a fifth faster, and the test files are half of what
# the release preset compiles.
function(staticlm_test_optimization name)
  target_compile_options(${name} PRIVATE $<$<CONFIG:RelWithDebInfo>:-O1>)
endfunction()

function(staticlm_test name)
  if(NOT STATICLM_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${name} PRIVATE STATICLM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  staticlm_apply_warnings(${name})
  staticlm_test_optimization(${name})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
  if("unit" IN_LIST ARG_LABELS)
    set_property(GLOBAL APPEND PROPERTY STATICLM_UNIT_TESTS ${name})
  endif()
endfunction()

# Target `unit_tests` builds exactly what the `unit` label runs. The asan preset runs only those;
# building the integration suites and benchmarks there too took a quarter of that build's time.
function(staticlm_add_unit_tests_target)
  if(NOT STATICLM_BUILD_TESTS)
    return()
  endif()
  get_property(tests GLOBAL PROPERTY STATICLM_UNIT_TESTS)
  add_custom_target(unit_tests)
  add_dependencies(unit_tests ${tests})
endfunction()

# staticlm_fuzzer(NAME SOURCES ... DEPS ...)
# A libFuzzer harness beside the parser it feeds (the fuzz preset: clang with libFuzzer, ASan and
# UBSan). Its seed corpus is tests/fuzz/corpus/NAME, its dictionary tests/fuzz/NAME.dict when there
# is one; ctest runs it for STATICLM_FUZZ_SECONDS through scripts/fuzz (CI), and scripts/fuzz runs
# any of them longer while working.
function(staticlm_fuzzer name)
  if(NOT STATICLM_BUILD_FUZZERS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(${name} PRIVATE STATICLM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  staticlm_apply_warnings(${name})
  set_property(GLOBAL APPEND PROPERTY STATICLM_FUZZERS ${name})
  add_test(NAME ${name}
           COMMAND ${PROJECT_SOURCE_DIR}/scripts/fuzz --build-dir ${CMAKE_BINARY_DIR}
                   --seconds ${STATICLM_FUZZ_SECONDS} ${name})
  set_tests_properties(${name} PROPERTIES LABELS fuzz TIMEOUT 600)
endfunction()

# Target `fuzzers` builds every harness (the fuzz build preset builds only these).
function(staticlm_add_fuzzers_target)
  if(NOT STATICLM_BUILD_FUZZERS)
    return()
  endif()
  get_property(fuzzers GLOBAL PROPERTY STATICLM_FUZZERS)
  add_custom_target(fuzzers)
  add_dependencies(fuzzers ${fuzzers})
endfunction()
