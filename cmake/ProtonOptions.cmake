# Warnings and sanitizers shared by every target of the project.
#
# PROTON_WERROR      turn warnings into errors (CI sets it).
# PROTON_SANITIZE    comma list passed to -fsanitize= (e.g. "address,undefined" or "thread").

option(PROTON_WERROR "Treat warnings as errors" OFF)
set(PROTON_SANITIZE "" CACHE STRING "Sanitizers for the C++ test build (address,undefined | thread)")

add_library(proton_options INTERFACE)
target_compile_features(proton_options INTERFACE cxx_std_20)
target_compile_options(proton_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wno-unused-parameter)
if(PROTON_WERROR)
  target_compile_options(proton_options INTERFACE -Werror)
endif()
# GCC 12 at -O2/-O3 reports std::string concatenation as an overlapping memcpy (-Wrestrict
# false positive, GCC PR 105329): with -Werror the optimised package build would fail on code
# that is correct. Off for GCC only; clang keeps checking.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(proton_options INTERFACE -Wno-restrict)
endif()
if(PROTON_SANITIZE)
  target_compile_options(proton_options INTERFACE -fsanitize=${PROTON_SANITIZE}
                         -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(proton_options INTERFACE -fsanitize=${PROTON_SANITIZE})
  # GCC's flow analysis misreads sanitizer instrumentation at -O1 and above and reports
  # std::variant<..., std::vector> members "maybe uninitialized" (GCC 12 in Debian 12): off
  # for sanitized builds only, where the sanitizers themselves check what it would.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(proton_options INTERFACE -Wno-maybe-uninitialized)
  endif()
endif()

# libFuzzer builds (PROTON_BUILD_FUZZERS, clang): the fuzzers and the code they fuzz carry
# AddressSanitizer and UndefinedBehaviorSanitizer, and undefined behaviour aborts (a finding)
# instead of printing and carrying on.
set(PROTON_FUZZ_SANITIZE address,undefined)
set(PROTON_FUZZ_FLAGS -fsanitize=${PROTON_FUZZ_SANITIZE} -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)

# Instruments a library a fuzzer links (coverage for libFuzzer's guidance, the sanitizers).
function(proton_fuzz_instrument TARGET)
  target_compile_options(${TARGET} PRIVATE -fsanitize=fuzzer-no-link ${PROTON_FUZZ_FLAGS})
endfunction()

# Adds a libFuzzer executable, compiled with the project's warnings like every other target.
#   proton_add_fuzzer(NAME name SOURCES a.cpp LIBS lib1)
function(proton_add_fuzzer)
  cmake_parse_arguments(F "" "NAME" "SOURCES;LIBS" ${ARGN})
  add_executable(${F_NAME} ${F_SOURCES})
  target_compile_options(${F_NAME} PRIVATE -fsanitize=fuzzer ${PROTON_FUZZ_FLAGS})
  target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer ${PROTON_FUZZ_FLAGS})
  target_link_libraries(${F_NAME} PRIVATE ${F_LIBS} proton_options)
endfunction()

# Adds a GoogleTest executable registered with ctest.
#   proton_add_test(NAME name SOURCES a.cpp b.cpp LIBS lib1 lib2)
function(proton_add_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} proton_options GTest::gtest_main)
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  # GCC 12 at -O2/-O3 flags std::string concatenation in test code as overlapping memcpy
  # (-Wrestrict false positive, GCC PR 105329); optimised test builds must still build.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${T_NAME} PRIVATE -Wno-restrict)
  endif()
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60)
endfunction()
