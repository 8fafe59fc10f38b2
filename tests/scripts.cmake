# The project's shell scripts, tested without the machine they are for (seconds). Label "scripts".
#   scripts.install_deps     scripts/install_deps.sh against a fake apt (tests/scripts/)
#   scripts.early_readers    no pipeline under pipefail whose reader can stop early, and the
#                            check itself catches each kind (scripts/check_early_readers.py)
#   scripts.docs_snippets    the tutorial's "== N" selector on sections that live in functions
#   scripts.blas_fingerprint the fingerprint of OpenBLAS's products that platforms.sh runs the
#                            suite once per (scripts/blas_fingerprint.py; OpenBLAS builds only)
add_test(NAME scripts.install_deps
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/install_deps_test.sh)
set_tests_properties(scripts.install_deps PROPERTIES LABELS scripts TIMEOUT 120)
if(SG_PYTHON3)
  add_test(NAME scripts.early_readers
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/early_readers_test.sh
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(scripts.early_readers PROPERTIES LABELS scripts TIMEOUT 60
                       ENVIRONMENT PYTHON=${SG_PYTHON3})
endif()
if(SG_PYTHON3)
  add_test(NAME scripts.docs_snippets
           COMMAND ${SG_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/docs_snippets_test.py)
  set_tests_properties(scripts.docs_snippets PROPERTIES LABELS scripts TIMEOUT 60)
endif()
if(SG_PYTHON3 AND SCRATCHGRAD_BLAS STREQUAL "openblas" AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME scripts.blas_fingerprint
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/blas_fingerprint_test.sh
                   $<TARGET_FILE:autograd_tests>
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(scripts.blas_fingerprint PROPERTIES LABELS scripts TIMEOUT 60
                       ENVIRONMENT PYTHON=${SG_PYTHON3})
endif()
