# Tests of scratchgrad::distributed (label "distributed", the chapter docs/15-distributed.md).
# distributed_tests runs twice: alone (a group of one: every collective is the identity, the
# 2-rank tests skip) and under `mpirun -np 2` (two ranks, one thread each). mpirun refuses root
# without OMPI_ALLOW_RUN_AS_ROOT*; --oversubscribe lets 2 ranks share fewer cores.
# The copy-task script trains with 2 ranks, then kills a rank mid-run (label distributed_e2e).
if(NOT SCRATCHGRAD_DISTRIBUTED)
  add_test(NAME distributed.skipped
           COMMAND sh -c "echo 'skipped: no MPI, so no scratchgrad::distributed (apt-get install libopenmpi-dev openmpi-bin)'; exit 77")
  set_tests_properties(distributed.skipped PROPERTIES LABELS distributed SKIP_RETURN_CODE 77)
  return()
endif()

add_executable(distributed_tests distributed/main.cpp distributed/test_process_group.cpp
                                 distributed/test_mpi_wait.cpp distributed/test_data_parallel.cpp
                                 distributed/test_shared_memory_collectives.cpp
                                 distributed/test_zero_redundancy_optimizer.cpp
                                 distributed/test_same_settings.cpp
                                 distributed/test_data_parallel_run.cpp
                                 distributed/test_trainer_data_parallel.cpp)
target_link_libraries(distributed_tests PRIVATE sg_test_support scratchgrad::distributed
                                                scratchgrad::train)
sg_set_warnings(distributed_tests)

# btl_vader_single_copy_mechanism=none:
# in containers without ptrace rights Open MPI's shared-memory transport fails on large messages
# ("Read -1, expected ..., errno = 1") unless it copies through its own buffers.
set(SG_MPIRUN_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
                  OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none)
# Under the sanitizer build, LeakSanitizer would report Open MPI's allocations from MPI_Init (in
# plugins it has unloaded by exit, so no suppression can name them): leak checking is off for
# these processes only; AddressSanitizer's memory errors and UBSan stay on.
if(SCRATCHGRAD_SANITIZE)
  list(APPEND SG_MPIRUN_ENV
       ASAN_OPTIONS=detect_leaks=0:strict_string_checks=1:check_initialization_order=1)
endif()
add_test(NAME distributed.np1 COMMAND distributed_tests)
set_tests_properties(distributed.np1 PROPERTIES LABELS distributed TIMEOUT 120
                                                 ENVIRONMENT "${SG_MPIRUN_ENV}")
if(MPIEXEC_EXECUTABLE)
  add_test(NAME distributed.np2
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe
                   $<TARGET_FILE:distributed_tests>)
  set_tests_properties(distributed.np2 PROPERTIES LABELS distributed TIMEOUT 120
                                                   ENVIRONMENT "${SG_MPIRUN_ENV}")
else()
  add_test(NAME distributed.np2
           COMMAND sh -c "echo 'skipped: mpirun not found (apt-get install openmpi-bin)'; exit 77")
  set_tests_properties(distributed.np2 PROPERTIES LABELS distributed SKIP_RETURN_CODE 77)
endif()

# The copy task with --distributed (label distributed_e2e: it trains for real, a few seconds).
if(TARGET copy_task_lib AND MPIEXEC_EXECUTABLE)
  add_executable(copy_task_distributed_tests distributed/main.cpp
                                             distributed/copy_task/test_copy_task_distributed.cpp)
  target_link_libraries(copy_task_distributed_tests PRIVATE sg_test_support copy_task_lib)
  sg_set_warnings(copy_task_distributed_tests)
  add_test(NAME distributed.copy_task.np2
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe
                   $<TARGET_FILE:copy_task_distributed_tests>)
  set_tests_properties(distributed.copy_task.np2 PROPERTIES LABELS distributed_e2e TIMEOUT 300
                                                            ENVIRONMENT "${SG_MPIRUN_ENV}")
  # From the command line: 2 ranks reach 100% exact match; a rank killed mid-run ends the job
  # within seconds with an error, and the last checkpoint still loads.
  add_test(NAME distributed.copy_task.cli
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/distributed/copy_task/cli_test.sh
                   $<TARGET_FILE:copy_task> ${MPIEXEC_EXECUTABLE})
  set_tests_properties(distributed.copy_task.cli PROPERTIES LABELS distributed_e2e TIMEOUT 300
                                                            ENVIRONMENT "${SG_MPIRUN_ENV}")
endif()

# The words example's --distributed: the library's training loop over 2 ranks, from the command
# line (label distributed_e2e: it trains for real, a few seconds).
if(TARGET words AND MPIEXEC_EXECUTABLE)
  add_test(NAME distributed.words.cli
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/distributed/words/cli_test.sh
                   $<TARGET_FILE:words> ${MPIEXEC_EXECUTABLE}
                   ${CMAKE_CURRENT_SOURCE_DIR}/data/cmudict_slice.dict)
  set_tests_properties(distributed.words.cli PROPERTIES LABELS distributed_e2e TIMEOUT 300
                                                        ENVIRONMENT "${SG_MPIRUN_ENV}")
endif()
