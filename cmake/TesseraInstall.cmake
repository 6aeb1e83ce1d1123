# cmake --install build --prefix P: the programs, the public headers (and the internal headers they
# include), the CMake package (find_package(Tessera), versioned, relocatable) and a pkg-config file.
include(CMakePackageConfigHelpers)

set(TESSERA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)

# The libraries the programs, the client library and the Python module run on. Only the client library
# (libtessera) and libtessera_graph and libtessera_backends (what the public headers' inline code calls,
# so what plugins link) are imported by the CMake package, by hand in
# TesseraConfig.cmake.in: their link interface is the public headers and Eigen, whereas the exported
# targets would drag in CAF, ZeroMQ, Cap'n Proto and RocksDB as a user's build dependencies.
set(TESSERA_RUNTIME_LIBRARIES tessera_backends tessera_graph tessera_programs tessera_generators tessera_scheduling tessera_monitor tessera_dashboard
                              tessera_messages tessera_storage tessera_actors tessera_nodes tessera)
if(TARGET tessera_wide_kernels)
  list(APPEND TESSERA_RUNTIME_LIBRARIES tessera_wide_kernels)
endif()
set_target_properties(${TESSERA_RUNTIME_LIBRARIES} PROPERTIES
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
install(TARGETS ${TESSERA_RUNTIME_LIBRARIES} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP)
# The cuda backend, loaded by name from beside libtessera_backends (backends/cuda/loader.cpp): unversioned.
if(TARGET tessera_cuda)
  install(TARGETS tessera_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
# Development links (libtessera.so) only for what users link.
install(TARGETS tessera tessera_graph tessera_backends LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_ONLY)

# Imported as Tessera::plugin_api, Tessera::tessera-node and Tessera::tessera-cli.
set_target_properties(tessera_plugin_api PROPERTIES EXPORT_NAME plugin_api)
install(TARGETS tessera-node tessera-cli EXPORT TesseraTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS tessera_plugin_api EXPORT TesseraTargets)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/client/tessera DESTINATION ${TESSERA_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
# What the public headers include of ours (TESSERA_PUBLIC_INTERNAL_HEADERS, in the top CMakeLists.txt). The
# out-of-tree test compiles against the installed copy only, so a header missing here fails it.
foreach(header ${TESSERA_PUBLIC_INTERNAL_HEADERS})
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${TESSERA_INSTALL_INCLUDEDIR}/${folder})
endforeach()

install(EXPORT TesseraTargets NAMESPACE Tessera:: DESTINATION ${TESSERA_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TesseraConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/TesseraConfig.cmake INSTALL_DESTINATION ${TESSERA_CMAKE_DIR}
                              PATH_VARS TESSERA_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR CMAKE_INSTALL_LIBDIR)
# 0.x: a minor version may change the API, so only the same minor version matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TesseraConfig.cmake ${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/TesseraPlugin.cmake
        DESTINATION ${TESSERA_CMAKE_DIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/tessera-plugin.pc.in ${PROJECT_BINARY_DIR}/tessera-plugin.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tessera.pc.in ${PROJECT_BINARY_DIR}/tessera.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tessera-plugin.pc ${PROJECT_BINARY_DIR}/tessera.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -G DEB (from the build directory): a Debian package of the above, installed under /usr. Its
# Depends come from dpkg-shlibdeps on the programs (CAF, ZeroMQ, Cap'n Proto, RocksDB, OpenBLAS, ...);
# plugins are built against Eigen's headers, so libeigen3-dev is a dependency too.
set(CPACK_PACKAGE_NAME tessera)
set(CPACK_PACKAGE_VENDOR "Tessera")
set(CPACK_PACKAGE_CONTACT "Tessera maintainers <maintainers@tessera.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "actor-model parallel and distributed computation: node, CLI and plugin SDK")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
       "tessera-node runs schedulers and workers that exchange Cap'n Proto messages over ZeroMQ; tessera is "
       "its command line; the headers and CMake package build plugins of task functions and simulations.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Our own libraries are in the package: dpkg-shlibdeps resolves them there instead of asking for a package.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/lib)
# Stripped, as Debian ships programs: a debug build's symbols would make the package ten times larger.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libeigen3-dev (>= 3.4)")
if(TESSERA_PYTHON)
  # The module is built for this interpreter's ABI (3.x); the package imports NumPy, and pandas for frames.
  set(python_abi ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR})
  math(EXPR python_next_minor "${Python_VERSION_MINOR} + 1")
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", python3 (>= ${python_abi}~), "
         "python3 (<< ${Python_VERSION_MAJOR}.${python_next_minor}), python3-numpy")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-pandas")
endif()
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://tessera.invalid")
include(CPack)
