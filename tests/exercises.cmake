# Exercise mode (scripts/exercise.sh): the start/splice/reset round trip, without building
# (seconds). Label "exercises". Building every stub and every solution is
# scripts/check_exercises.sh, run by CI.
# Debian's python3 where there is one (a pyenv shim on PATH costs a process per call).
find_program(SG_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(SG_PYTHON3 python3)
if(SG_PYTHON3)
  add_test(NAME exercises.round_trip COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/exercises/round_trip_test.sh)
  set_tests_properties(exercises.round_trip PROPERTIES LABELS exercises TIMEOUT 120
                       ENVIRONMENT PYTHON=${SG_PYTHON3})
endif()
