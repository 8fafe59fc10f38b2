# The "install" test: installs this build into a fresh prefix, then builds and runs the separate
# project tests/consumer against it with find_package(scratchgrad). Run it alone with
#   ctest -L install
# (The sanitizer build in .ci/run skips it: the installed package is the same there.)
add_test(NAME install.find_package
  COMMAND ${CMAKE_COMMAND}
    -DSG_BUILD_DIR=${PROJECT_BINARY_DIR}
    -DSG_SOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DSG_WORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/consumer
    -DSG_BUILD_TYPE=$<CONFIG>
    -DSG_GENERATOR=${CMAKE_GENERATOR}
    -DSG_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}
    -DSG_CXX_COMPILER=${CMAKE_CXX_COMPILER}
    -DSG_SANITIZE=${SCRATCHGRAD_SANITIZE}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/consumer/run_test.cmake)
set_tests_properties(install.find_package PROPERTIES LABELS install TIMEOUT 180)
