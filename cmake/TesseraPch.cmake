# Precompiled headers for the units that spend their first seconds parsing CAF and Eigen (the main job's
# targets build about 15% faster from scratch; bench/RESULTS.md, issue 42), and ccache for rebuilds.
option(TESSERA_PRECOMPILED_HEADERS "Precompile CAF and Eigen for the heavy libraries and programs" ON)
function(tessera_precompile target)
  if(TESSERA_PRECOMPILED_HEADERS)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
# Debian's ccache, when installed, for rebuilds (TESSERA_CCACHE=OFF to do without).
option(TESSERA_CCACHE "Compile through ccache when it is installed" ON)
find_program(TESSERA_CCACHE_PROGRAM ccache)
if(TESSERA_CCACHE AND TESSERA_CCACHE_PROGRAM AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${TESSERA_CCACHE_PROGRAM})
  set(CMAKE_C_COMPILER_LAUNCHER ${TESSERA_CCACHE_PROGRAM})
endif()
