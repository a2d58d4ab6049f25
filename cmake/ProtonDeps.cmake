# Third-party dependencies: found from Debian packages or PyPI wheels, never vendored.

# nlohmann/json (header only): Debian's nlohmann-json3-dev, else the `nlohmann-json` wheel.
function(proton_find_json)
  if(TARGET nlohmann_json::nlohmann_json)
    return()
  endif()
  find_package(nlohmann_json 3.10 QUIET)
  if(nlohmann_json_FOUND)
    return()
  endif()
  find_package(Python COMPONENTS Interpreter REQUIRED)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
            "import nlohmann_json, os; print(os.path.join(os.path.dirname(nlohmann_json.__file__), 'include'))"
    OUTPUT_VARIABLE _json_inc OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0 OR NOT EXISTS "${_json_inc}/nlohmann/json.hpp")
    message(FATAL_ERROR "nlohmann/json not found: apt-get install nlohmann-json3-dev "
                        "or pip install nlohmann-json")
  endif()
  add_library(nlohmann_json_wheel INTERFACE)
  target_include_directories(nlohmann_json_wheel SYSTEM INTERFACE "${_json_inc}")
  add_library(nlohmann_json::nlohmann_json ALIAS nlohmann_json_wheel)
endfunction()

# GoogleTest: built from Debian's source package when present (so it shares our sanitizer
# flags, which TSan needs), else the installed libraries.
macro(proton_find_gtest)
  if(EXISTS /usr/src/googletest/CMakeLists.txt)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory(/usr/src/googletest ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL SYSTEM)
    if(PROTON_SANITIZE)
      foreach(_t gtest gtest_main)
        target_compile_options(${_t} PRIVATE -fsanitize=${PROTON_SANITIZE})
        target_link_options(${_t} PRIVATE -fsanitize=${PROTON_SANITIZE})
      endforeach()
    endif()
    if(NOT TARGET GTest::gtest_main)
      add_library(GTest::gtest_main ALIAS gtest_main)
      add_library(GTest::gtest ALIAS gtest)
    endif()
  else()
    find_package(GTest REQUIRED)
  endif()
endmacro()

# CUDA / CUPTI headers: the toolkit when present, else the nvidia-cuda-cupti and
# nvidia-cuda-runtime wheels (they ship include/). Sets PROTON_CUDA_INCLUDE_DIRS.
function(proton_find_cuda_headers)
  set(_dirs "")
  foreach(_root $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda)
    if(_root AND EXISTS "${_root}/include/cuda.h")
      list(APPEND _dirs "${_root}/include")
      if(EXISTS "${_root}/extras/CUPTI/include/cupti.h")
        list(APPEND _dirs "${_root}/extras/CUPTI/include")
      endif()
      break()
    endif()
  endforeach()
  if(NOT _dirs)
    find_package(Python COMPONENTS Interpreter REQUIRED)
    execute_process(
      COMMAND "${Python_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/cmake/find_cuda_wheels.py"
      OUTPUT_VARIABLE _wheel_dirs OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(_dirs ${_wheel_dirs})
  endif()
  set(PROTON_CUDA_INCLUDE_DIRS "${_dirs}" PARENT_SCOPE)
endfunction()
