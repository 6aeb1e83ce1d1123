# The public API is sealed: every header in client/tessera/ compiles on its own, and none of them reaches,
# directly or through other headers, a header of CAF, Cap'n Proto (capnp/, kj/, generated .capnp.h),
# ZeroMQ or RocksDB, nor one of our runtime's headers under actors/ or nodes/ (those may include a public
# header, as actors/embedded_cluster.hpp does, never the reverse). Run by ctest (tests/CMakeLists.txt) as
#   cmake -DCOMPILER=... -DFLAGS=a|b|... -DHEADERS_DIR=.../client/tessera -DSOURCE_DIR=... -DWORK_DIR=...
#         -P check_public_headers.cmake
# It compiles `#include <tessera/NAME>` with -H, which prints every header opened, one dot per level of
# nesting; a forbidden one fails the test with the chain of includes that reached it.

foreach(required COMPILER FLAGS HEADERS_DIR SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "check_public_headers.cmake: -D${required}=... is missing")
  endif()
endforeach()

# Where a path names a header of a library the public API must not show.
set(FORBIDDEN_PATTERN "(^|/)(caf|capnp|kj|rocksdb)/|(^|/)zmq[^/]*$|\\.capnp\\.h$")
# Where a path (relative to the source tree) names a header of our actors or nodes.
set(INTERNAL_PATTERN "^(actors|nodes)/")

string(REPLACE "|" ";" flags "${FLAGS}")
file(GLOB headers RELATIVE "${HEADERS_DIR}" "${HEADERS_DIR}/*.hpp")
list(SORT headers)
if(NOT headers)
  message(FATAL_ERROR "no public headers found in ${HEADERS_DIR}")
endif()
file(MAKE_DIRECTORY "${WORK_DIR}")

# Paths under the source tree are shown relative to it.
function(shown path out)
  get_filename_component(path "${path}" ABSOLUTE BASE_DIR "${WORK_DIR}")
  file(RELATIVE_PATH relative "${SOURCE_DIR}" "${path}")
  if(relative MATCHES "^\\.\\./")
    set(${out} "${path}" PARENT_SCOPE)
  else()
    set(${out} "${relative}" PARENT_SCOPE)
  endif()
endfunction()

set(failures "")
set(failed 0)
set(reached_total 0)
foreach(header ${headers})
  set(source "${WORK_DIR}/${header}.cpp")
  file(WRITE "${source}" "#include <tessera/${header}>\n")
  execute_process(
    COMMAND "${COMPILER}" ${flags} -fsyntax-only -H -x c++ "${source}"
    WORKING_DIRECTORY "${WORK_DIR}"
    RESULT_VARIABLE status
    OUTPUT_VARIABLE output
    ERROR_VARIABLE output)
  string(REPLACE ";" "\\;" output "${output}")
  string(REPLACE "\n" ";" lines "${output}")
  if(NOT status EQUAL 0)
    # The compiler's diagnostics, without the -H lines and the include-guard advice after them.
    set(diagnostics "")
    foreach(line IN LISTS lines)
      if(line MATCHES "^Multiple include guards may be useful for:")
        break()
      endif()
      if(NOT line MATCHES "^\\.+ ")
        string(APPEND diagnostics "\n    ${line}")
      endif()
    endforeach()
    string(APPEND failures "\n  tessera/${header} does not compile on its own:${diagnostics}")
    math(EXPR failed "${failed} + 1")
    continue()
  endif()

  # Walk the -H lines keeping the chain of includes that leads to each one.
  set(chain "")
  set(reached 0)
  set(offending "")
  set(internal "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^(\\.+) (.+)$")
      continue()
    endif()
    string(LENGTH "${CMAKE_MATCH_1}" depth)
    set(path "${CMAKE_MATCH_2}")
    math(EXPR reached "${reached} + 1")
    math(EXPR keep "${depth} - 1")
    list(SUBLIST chain 0 ${keep} chain)
    shown("${path}" path)
    list(APPEND chain "${path}")
    # Report where a forbidden library or our internals are entered, not every header inside them.
    math(EXPR parent "${depth} - 2")
    set(parent_path "")
    if(parent GREATER_EQUAL 0)
      list(GET chain ${parent} parent_path)
    endif()
    if(path MATCHES "${FORBIDDEN_PATTERN}" AND NOT parent_path MATCHES "${FORBIDDEN_PATTERN}")
      list(JOIN chain " -> " text)
      string(APPEND offending "\n    ${text}")
    elseif(path MATCHES "${INTERNAL_PATTERN}" AND NOT parent_path MATCHES "${INTERNAL_PATTERN}")
      list(JOIN chain " -> " text)
      string(APPEND internal "\n    ${text}")
    endif()
  endforeach()
  math(EXPR reached_total "${reached_total} + ${reached}")
  if(offending)
    string(APPEND failures "\n  tessera/${header} reaches a CAF, Cap'n Proto, ZeroMQ or RocksDB header:${offending}")
  endif()
  if(internal)
    string(APPEND failures "\n  tessera/${header} reaches an internal actors/ or nodes/ header:${internal}")
  endif()
  if(offending OR internal)
    math(EXPR failed "${failed} + 1")
  endif()
endforeach()

list(LENGTH headers count)
if(failures)
  message(NOTICE "public API not sealed:${failures}\n")  # NOTICE: printed as is, not re-wrapped
  message(FATAL_ERROR "public API not sealed: ${failed} of ${count} headers in client/tessera/ fail (see above)")
endif()
message(STATUS "public API sealed: ${count} headers in client/tessera/ each compile on their own and reach "
               "no CAF, Cap'n Proto, ZeroMQ or RocksDB header nor one under actors/ or nodes/ "
               "(${reached_total} header inclusions checked)")
