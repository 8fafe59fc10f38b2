# Tests of examples/g2p: its library (gtest, label ch12b: short runs on the committed dictionary
# slice, seconds in Release) and its command line (a script).
if(TARGET g2p_lib)
  add_executable(g2p_tests g2p/test_g2p.cpp g2p/test_g2p_hardening.cpp g2p/test_g2p_split.cpp)
  target_link_libraries(g2p_tests PRIVATE sg_test_support g2p_lib)
  target_compile_definitions(g2p_tests PRIVATE SG_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data")
  sg_set_warnings(g2p_tests)
  gtest_discover_tests(g2p_tests TEST_PREFIX "ch12b." DISCOVERY_MODE PRE_TEST
                       PROPERTIES LABELS ch12b TIMEOUT 300)
  add_test(NAME ch12b.g2p.cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/g2p/cli_test.sh
                                      $<TARGET_FILE:g2p> ${CMAKE_CURRENT_SOURCE_DIR}/data/cmudict_slice.dict)
  set_tests_properties(ch12b.g2p.cli PROPERTIES LABELS ch12b TIMEOUT 300)
endif()
