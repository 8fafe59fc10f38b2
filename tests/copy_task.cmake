# Tests of the main job, examples/copy_task: its library (gtest) and its command line (a script).
if(TARGET copy_task_lib)
  add_executable(copy_task_tests copy_task/test_copy_task.cpp copy_task/test_copy_task_hardening.cpp)
  target_link_libraries(copy_task_tests PRIVATE sg_test_support copy_task_lib)
  sg_set_warnings(copy_task_tests)
  # Label "ch12_e2e": these train for real (about 20 s in Release). ctest labels are regular
  # expressions, so `ctest -L ch12` includes them and the sanitizer run's `-LE e2e` skips them.
  gtest_discover_tests(copy_task_tests TEST_PREFIX "ch12." TEST_FILTER "CopyTaskTraining.*"
                       DISCOVERY_MODE PRE_TEST PROPERTIES LABELS ch12_e2e TIMEOUT 300
                       ${SG_EXERCISE_TEST_PROPERTIES})
  gtest_discover_tests(copy_task_tests TEST_PREFIX "ch12." TEST_FILTER "*-CopyTaskTraining.*"
                       DISCOVERY_MODE PRE_TEST PROPERTIES LABELS ch12 ${SG_EXERCISE_TEST_PROPERTIES})
  add_test(NAME ch12.copy_task.cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/copy_task/cli_test.sh
                                           $<TARGET_FILE:copy_task>)
  set_tests_properties(ch12.copy_task.cli PROPERTIES LABELS ch12 TIMEOUT 300
                                               ${SG_EXERCISE_TEST_PROPERTIES})
  # The first-divergent-op finder against PyTorch, on planted bugs (a few seconds; skipped without
  # python3-torch, which .ci/run installs).
  add_test(NAME ch12.copy_task.find_divergence
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/copy_task/find_divergence_test.sh
                   $<TARGET_FILE:copy_task>)
  set_tests_properties(ch12.copy_task.find_divergence PROPERTIES LABELS ch12 TIMEOUT 300
                                                                 SKIP_RETURN_CODE 77
                                                                 ${SG_EXERCISE_TEST_PROPERTIES})
  # SIGKILL a training run at 24 random (seeded) moments, resuming each time: every resumed run
  # ends bit for bit as the uninterrupted one, with no temporary file left. 20-90 s in Release;
  # e2e, so the sanitizer build skips it.
  add_test(NAME ch12.copy_task.kill_resume
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/copy_task/kill_resume_test.sh
                   $<TARGET_FILE:copy_task> 24 19)
  set_tests_properties(ch12.copy_task.kill_resume PROPERTIES LABELS ch12_e2e TIMEOUT 300)
endif()
