# tessera_add_plugin(NAME SOURCES file...): a shared library of task functions, simulations and
# generators (TESSERA_TASK, TESSERA_SIMULATION, TESSERA_GENERATOR) that tessera-node loads from
# [plugins] paths, or a Python process with tessera.load_plugin. It compiles against Tessera's public
# headers and links only libtessera_graph and libtessera_backends (the registries it fills, chunks); the
# rest of Tessera's symbols are resolved from the process that loads it.
# The same function builds the plugins in Tessera's tree and in a project of one's own.
function(tessera_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "SOURCES")
  set(sources ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  if(NOT sources)
    message(FATAL_ERROR "tessera_add_plugin(${name}): no SOURCES given")
  endif()
  add_library(${name} SHARED ${sources})
  target_link_libraries(${name} PRIVATE Tessera::plugin_api)
  target_link_options(${name} PRIVATE -Wl,--allow-shlib-undefined)
endfunction()
