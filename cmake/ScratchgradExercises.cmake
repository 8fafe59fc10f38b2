# Exercise mode (docs/design.md, "Exercise mode"; scripts/exercise.sh is the learner's command):
#   cmake -B build -DSCRATCHGRAD_EXERCISES=06      # chapter 6's exercises: 06, 06.softmax_backward, "03,06"
# compiles, in place of each library source that holds a selected exercise, a copy made by
# scripts/exercises.py whose marked region #includes the learner's file
# ${SCRATCHGRAD_EXERCISES_DIR}/06/<name>.cpp. The library's files are never edited, and with the
# option empty (the default) nothing here changes the build: the solutions are the library's code.
set(SCRATCHGRAD_EXERCISES "" CACHE STRING
    "Exercises whose learner files replace the library's solutions (e.g. 06; see scripts/exercise.sh)")
set(SCRATCHGRAD_EXERCISES_DIR "${PROJECT_SOURCE_DIR}/exercises" CACHE PATH
    "Where the learner's exercise files are (scripts/exercise.sh start writes them)")
set(SG_EXERCISE_TEST_PROPERTIES "")
if(SCRATCHGRAD_EXERCISES)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/exercises.py sources
            "${SCRATCHGRAD_EXERCISES}"
    OUTPUT_VARIABLE SG_EXERCISE_FILES ERROR_VARIABLE sg_exercise_error RESULT_VARIABLE sg_exercise_result
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT sg_exercise_result EQUAL 0)
    message(FATAL_ERROR "SCRATCHGRAD_EXERCISES=${SCRATCHGRAD_EXERCISES}: ${sg_exercise_error}")
  endif()
  string(REPLACE "\n" ";" SG_EXERCISE_FILES "${SG_EXERCISE_FILES}")
  # The catalogue itself is part of the configuration.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${PROJECT_SOURCE_DIR}/scripts/exercises.py)
  # The tests run on the reference CPU kernels, the code the exercises replace: the fast backend
  # has kernels of its own (softmax, cross-entropy, LayerNorm) that would never call them.
  set(SG_EXERCISE_TEST_PROPERTIES ENVIRONMENT SCRATCHGRAD_KERNELS=reference)
  message(STATUS "scratchgrad: exercise mode ${SCRATCHGRAD_EXERCISES}, learner files in "
                 "${SCRATCHGRAD_EXERCISES_DIR}: ${SG_EXERCISE_FILES}")
endif()

# sg_exercise_sources(<target>): in exercise mode, swaps <target>'s sources that hold a selected
# exercise for their spliced copies (same per-file compile options and definitions). Call it
# where <target> is defined, after those are set.
function(sg_exercise_sources target)
  if(NOT SCRATCHGRAD_EXERCISES)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  set(swapped "")
  foreach(source IN LISTS sources)
    get_filename_component(absolute "${source}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    file(RELATIVE_PATH relative "${PROJECT_SOURCE_DIR}" "${absolute}")
    if(NOT relative IN_LIST SG_EXERCISE_FILES)
      list(APPEND swapped "${source}")
      continue()
    endif()
    set(copy "${CMAKE_BINARY_DIR}/exercise_sources/${relative}")
    add_custom_command(
      OUTPUT "${copy}"
      COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/exercises.py splice
              "${SCRATCHGRAD_EXERCISES}" "${relative}" "${copy}" --dir "${SCRATCHGRAD_EXERCISES_DIR}"
      DEPENDS "${absolute}" ${PROJECT_SOURCE_DIR}/scripts/exercises.py
      COMMENT "Exercise mode: ${relative} with the learner's regions"
      VERBATIM)
    foreach(property IN ITEMS COMPILE_OPTIONS COMPILE_DEFINITIONS SKIP_PRECOMPILE_HEADERS)
      get_source_file_property(value "${absolute}" ${property})
      if(value)
        set_source_files_properties("${copy}" PROPERTIES ${property} "${value}")
      endif()
    endforeach()
    list(APPEND swapped "${copy}")
  endforeach()
  set_property(TARGET ${target} PROPERTY SOURCES ${swapped})
endfunction()
