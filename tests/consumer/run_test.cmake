# The "install" test, run by ctest as `cmake -D... -P run_test.cmake` (see tests/consumer.cmake):
#   1. build the libraries (a no-op after a full build; makes the test work on its own too),
#   2. `cmake --install` the build into a fresh prefix,
#   3. configure and build tests/consumer against that prefix with find_package(scratchgrad),
#   4. run it and check what it prints.
# Inputs: SG_BUILD_DIR SG_SOURCE_DIR SG_WORK_DIR SG_BUILD_TYPE SG_GENERATOR SG_MAKE_PROGRAM
#         SG_CXX_COMPILER SG_SANITIZE (may be empty)
cmake_minimum_required(VERSION 3.25)

# Runs a command, echoing it, and stops the test with its output if it fails.
function(sg_run)
  string(JOIN " " shown ${ARGN})
  message(STATUS "run: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${shown}\n${out}")
  endif()
endfunction()

if(NOT SG_BUILD_TYPE)
  set(SG_BUILD_TYPE Release)
endif()
set(prefix ${SG_WORK_DIR}/prefix)
set(consumer_build ${SG_WORK_DIR}/build)
file(REMOVE_RECURSE ${SG_WORK_DIR})

sg_run(${CMAKE_COMMAND} --build ${SG_BUILD_DIR} --config ${SG_BUILD_TYPE}
       --target scratchgrad_autograd scratchgrad_nn scratchgrad_train)
sg_run(${CMAKE_COMMAND} --install ${SG_BUILD_DIR} --config ${SG_BUILD_TYPE} --prefix ${prefix})

# Headers keep their folders (the package config and its version file are checked by find_package).
foreach(expected include/scratchgrad/autograd/autograd.h
                 include/scratchgrad/autograd/backend/backend.h include/scratchgrad/nn/nn.h
                 include/scratchgrad/train/history.h)
  if(NOT EXISTS ${prefix}/${expected})
    message(FATAL_ERROR "the install is missing ${expected}")
  endif()
endforeach()

# A sanitized library needs the sanitizer runtime in the program that links it.
set(sanitize_args)
if(SG_SANITIZE)
  set(sanitize_args -DCMAKE_CXX_FLAGS=-fsanitize=${SG_SANITIZE}
                    -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SG_SANITIZE})
endif()

# CMAKE_PREFIX_PATH points at the fresh install only; the package registries are ignored so an
# older scratchgrad installed elsewhere cannot be picked up by mistake.
sg_run(${CMAKE_COMMAND} -S ${SG_SOURCE_DIR}/tests/consumer -B ${consumer_build}
       -G ${SG_GENERATOR} -DCMAKE_MAKE_PROGRAM=${SG_MAKE_PROGRAM}
       -DCMAKE_BUILD_TYPE=${SG_BUILD_TYPE} -DCMAKE_CXX_COMPILER=${SG_CXX_COMPILER}
       -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
       -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF ${sanitize_args})
file(STRINGS ${consumer_build}/CMakeCache.txt found_dir REGEX "^scratchgrad_DIR:")
string(FIND "${found_dir}" "=${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "find_package found scratchgrad outside the test prefix: ${found_dir}")
endif()
sg_run(${CMAKE_COMMAND} --build ${consumer_build} --config ${SG_BUILD_TYPE})

execute_process(COMMAND ${consumer_build}/consumer
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "consumer printed:\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer program failed (${rc})")
endif()
string(CONCAT expected "y = 21\nx.grad = 1 1 1 1 1 1\nw.grad = 5 5 7 7 9 9\n"
       "history = {\"eval_steps\":[],\"losses\":[21.0]}\n")
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "the consumer program printed\n${out}\ninstead of\n${expected}")
endif()
message(STATUS "the installed package builds and runs a program")
