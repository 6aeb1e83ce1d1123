# Every dependency comes from Debian's packages (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(CapnProto REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(cppzmq REQUIRED)

# CAF 0.17 ships no CMake package: find its headers and libraries by hand.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
add_library(caf::core SHARED IMPORTED)
set_target_properties(caf::core PROPERTIES
  IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
  INTERFACE_LINK_LIBRARIES Threads::Threads)

if(TESSERA_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
