# cmake --install build --prefix P: the programs, the public headers (and the internal headers they
# include), the CMake package (find_package(Tessera), versioned, relocatable) and a pkg-config file.
include(CMakePackageConfigHelpers)

set(TESSERA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)

# Imported as Tessera::plugin_api, Tessera::tessera-node and Tessera::tessera.
set_target_properties(tessera_plugin_api PROPERTIES EXPORT_NAME plugin_api)
set_target_properties(tessera-cli PROPERTIES EXPORT_NAME tessera)
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
                              PATH_VARS TESSERA_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
# 0.x: a minor version may change the API, so only the same minor version matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TesseraConfig.cmake ${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/TesseraPlugin.cmake
        DESTINATION ${TESSERA_CMAKE_DIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/tessera-plugin.pc.in ${PROJECT_BINARY_DIR}/tessera-plugin.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tessera-plugin.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

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
# Stripped, as Debian ships programs: a debug build's symbols would make the package ten times larger.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libeigen3-dev (>= 3.4)")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://tessera.invalid")
include(CPack)
