# Tests of examples/words (chapter 11's decoder-only section): its command line trains on the
# committed dictionary slice and samples (a script, seconds in Release).
if(TARGET words)
  add_test(NAME ch11.words.cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/words/cli_test.sh
                                       $<TARGET_FILE:words> ${CMAKE_CURRENT_SOURCE_DIR}/data/cmudict_slice.dict)
  set_tests_properties(ch11.words.cli PROPERTIES LABELS ch11 TIMEOUT 300)
endif()
