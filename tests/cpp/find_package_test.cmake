# ctest cpp_package.find_package_example (registered in CMakeLists.txt here).
#
# Installs the build into BUILD_DIR/package-test/prefix, configures and builds
# examples/cpp as a separate project that finds Tern there, and runs it on a
# frozen v1 file. It checks the package as an application sees it: only the
# installed headers, libraries and config, none of the project's own targets.
#
# Inputs (-D): SOURCE_DIR, BUILD_DIR, GENERATOR, MAKE_PROGRAM, CXX_COMPILER,
# BUILD_TYPE, and optionally CXX_LAUNCHER (ccache) and APP_LINKER_FLAGS.
cmake_minimum_required(VERSION 3.24)

set(work ${BUILD_DIR}/package-test)
set(prefix ${work}/prefix)
set(app ${work}/app)
file(REMOVE_RECURSE ${work})

# Runs a command; on failure, fails the test with the command line and its output.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message("${cmd}\n${out}")  # verbatim; FATAL_ERROR would reflow it
    message(FATAL_ERROR "${what} failed (${rc})")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# The file format's generated code and FlatBuffers are build-time only: an
# installed header or target that needs them would not build in an application.
file(GLOB_RECURSE headers ${prefix}/include/*.h)
foreach(h ${headers})
  file(STRINGS ${h} bad REGEX "#include [<\"](flatbuffers/|schema/)")
  if(bad)
    message(FATAL_ERROR "installed header ${h} includes a build-time-only header: ${bad}")
  endif()
endforeach()
file(GLOB_RECURSE exports ${prefix}/*/TernTargets*.cmake)
foreach(f ${exports})
  file(READ ${f} text)
  if(text MATCHES "flatbuffers|/generated")
    message(FATAL_ERROR "${f} refers to FlatBuffers or generated code")
  endif()
endforeach()

set(configure -S ${SOURCE_DIR}/examples/cpp -B ${app} -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
if(MAKE_PROGRAM)
  list(APPEND configure -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
if(CXX_LAUNCHER)
  list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER})
endif()
if(APP_LINKER_FLAGS)
  list(APPEND configure -DCMAKE_EXE_LINKER_FLAGS=${APP_LINKER_FLAGS})
endif()
run("configure examples/cpp" ${CMAKE_COMMAND} ${configure})

# Another Tern on the machine (a system install) must not stand in for this one.
file(STRINGS ${app}/CMakeCache.txt tern_dir REGEX "^Tern_DIR:")
string(FIND "${tern_dir}" "=${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "examples/cpp found Tern outside ${prefix}: ${tern_dir}")
endif()

run("build examples/cpp" ${CMAKE_COMMAND} --build ${app})
run("run_model" ${app}/run_model ${SOURCE_DIR}/tests/data/v1/kitchen_sink.tern)
if(NOT out MATCHES "output 0")
  message(FATAL_ERROR "run_model printed no \"output 0\":\n${out}")
endif()
message("run_model kitchen_sink.tern:\n${out}")
