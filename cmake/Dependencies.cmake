# Every dependency comes from Debian's packages (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(CapnProto REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(cppzmq REQUIRED)
find_package(RocksDB REQUIRED)
find_package(ZLIB REQUIRED)      # CRC-32 of checkpoint records
find_package(OpenSSL REQUIRED)   # SHA-256 of task digests (checkpoint keys)
find_package(PkgConfig REQUIRED)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
pkg_check_modules(LAPACKE REQUIRED IMPORTED_TARGET lapacke)
# OpenBLAS's cblas.h lives in a multiarch sub-folder.
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas-pthread openblas REQUIRED)

# CUDA is optional: the cuda backend is built only when a toolkit is found (a GPU is needed only to run it).
option(TESSERA_WITH_CUDA "Build the cuda backend when the CUDA toolkit is found" ON)
set(TESSERA_CUDA_FOUND OFF)
if(TESSERA_WITH_CUDA AND NOT TESSERA_ASAN AND NOT TESSERA_TSAN)
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(TESSERA_CUDA_FOUND ON)
    endif()
  endif()
endif()
message(STATUS "Tessera cuda backend: ${TESSERA_CUDA_FOUND}")  # RocksDB::rocksdb-shared (the static archive drags in compression libraries)

# CAF 0.17 ships no CMake package: find its headers and libraries by hand.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
# Debian's libcaf_core is not built with ThreadSanitizer, which then reports every CAF message as a race:
# a TSan build links the instrumented one that scripts/build-caf-tsan.sh makes (same version and options).
if(TESSERA_TSAN)
  set(TESSERA_TSAN_CAF_DIR "${PROJECT_SOURCE_DIR}/build-caf-tsan/lib" CACHE PATH "TSan-built libcaf_core")
  if(EXISTS "${TESSERA_TSAN_CAF_DIR}/libcaf_core.so")
    set(CAF_CORE_LIBRARY "${TESSERA_TSAN_CAF_DIR}/libcaf_core.so")
    # Its soname is Debian's: without a runpath the loader would pick /usr/lib's uninstrumented copy.
    set(TESSERA_CAF_LINK_OPTIONS "LINKER:-rpath,${TESSERA_TSAN_CAF_DIR}")
  else()
    message(WARNING "no TSan-built libcaf_core in ${TESSERA_TSAN_CAF_DIR}: run scripts/build-caf-tsan.sh first")
  endif()
endif()
add_library(caf::core SHARED IMPORTED)
set_target_properties(caf::core PROPERTIES
  IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
  INTERFACE_LINK_LIBRARIES Threads::Threads
  INTERFACE_LINK_OPTIONS "${TESSERA_CAF_LINK_OPTIONS}")

# The dashboard: Debian's cpp-httplib is a compiled library built with OpenSSL, zlib and brotli, whose
# pkg-config file carries the matching defines (libcpp-httplib-dev), and its charts are drawn by Debian's
# Chart.js (libjs-chart.js), which the node serves itself: no page fetches anything from the network.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
find_file(TESSERA_CHARTJS chart.min.js PATHS /usr/share/javascript/chart.js NO_DEFAULT_PATH REQUIRED)

# Header-only: JSON that Tessera writes (nlohmann-json3-dev) and every program's command line (libcli11-dev).
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)

if(TESSERA_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
  find_package(yaml-cpp REQUIRED)  # the Kubernetes manifests' offline check (tests/kubernetes_test.cpp)
  # Delay and loss on the namespace lab's links where the kernel has no sch_netem (tests/tools/link_shaper.cpp).
  pkg_check_modules(NETFILTER_QUEUE REQUIRED IMPORTED_TARGET libnetfilter_queue)
endif()

# The Python client (python/): Debian's interpreter, which python3-pybind11, python3-numpy and the rest
# are installed for (a python3 earlier on PATH may be another one), and pybind11's CMake package.
# What an uninstrumented program (Debian's python3, a user's program built outside the tree) must
# preload to load a sanitized Tessera library: the sanitizer's runtime, and
# libstdc++ with it (the sanitizer's __cxa_throw interceptor finds the real one only if it is loaded
# when the sanitizer starts; the interpreter itself does not link it).
set(TESSERA_SANITIZER_PRELOAD "")
if(TESSERA_ASAN OR TESSERA_TSAN)
  if(TESSERA_ASAN)
    set(runtime libasan.so)
  else()
    set(runtime libtsan.so)
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${runtime} OUTPUT_VARIABLE runtime_path
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so OUTPUT_VARIABLE libstdcxx_path
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(TESSERA_SANITIZER_PRELOAD "${runtime_path}:${libstdcxx_path}")
endif()
if(TESSERA_PYTHON)
  if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python_EXECUTABLE /usr/bin/python3)
  endif()
  set(PYBIND11_FINDPYTHON ON)
  find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
  find_package(pybind11 2.10 CONFIG REQUIRED)
endif()
