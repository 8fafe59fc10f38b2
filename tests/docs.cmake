# The tutorial in docs/: its text is clean (no control characters), every code snippet resolves,
# and every output block and figure is what the examples print and draw today. Label "docs";
# neither test needs the network.
#   ctest --test-dir build -L docs
# docs.outputs reruns every example in full, the copy-task training included (about a minute on 2
# cores), so it also carries the label "docs_e2e", which the sanitizer run's `-LE "install|e2e"`
# skips. Building the site and opening it in a browser is a separate command:
# scripts/check_docs.sh (Debian's mkdocs, mkdocs-material and chromium).
set(SG_DEBIAN_PYTHON /usr/bin/python3)  # Debian's: the pyenv python3 on PATH may lack modules
find_program(SG_DOT_PROGRAM dot)
if(EXISTS ${SG_DEBIAN_PYTHON})
  add_test(NAME docs.snippets
           COMMAND ${SG_DEBIAN_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/docs_snippets.py --check)
  set_tests_properties(docs.snippets PROPERTIES LABELS docs)
  # No control character in the sources, no formula broken by an escape that ate a backslash.
  add_test(NAME docs.text COMMAND ${SG_DEBIAN_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/check_docs_text.py)
  set_tests_properties(docs.text PROPERTIES LABELS docs)
  # The outputs check compares trained-model figures exactly, so it depends on the machine's
  # floating-point path (OpenBLAS kernels): opt in with -DSCRATCHGRAD_DOCS_OUTPUTS_TEST=ON, or run
  # `bash scripts/docs_outputs.sh --check` after changing an example.
  option(SCRATCHGRAD_DOCS_OUTPUTS_TEST "ctest reruns the examples and compares the docs outputs" OFF)
  if(SCRATCHGRAD_DOCS_OUTPUTS_TEST AND SCRATCHGRAD_BUILD_EXAMPLES AND SG_DOT_PROGRAM
     AND NOT SCRATCHGRAD_SANITIZE)
    add_test(NAME docs.outputs
             COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/docs_outputs.sh --build-dir
                     ${CMAKE_BINARY_DIR} --check)
    set_tests_properties(docs.outputs PROPERTIES LABELS "docs;docs_e2e" TIMEOUT 900)
  endif()
endif()
