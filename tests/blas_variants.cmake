# The BLAS libraries the library is not built with (SCRATCHGRAD_BLAS picks that one): each one
# found gets chapter 4's example, which checks its own products, built against it and run as the
# test blas.<library>.smoke (label blas). So every supported BLAS keeps building and computing
# right, at the cost of three files and a link each: the example is linked with its own copies of
# the files that talk to BLAS (blas_library.h), compiled for that library, and the static library
# then never pulls in its own. --as-needed drops the default BLAS from the program, so every
# cblas_sgemm it makes is the tested library's.
#   -DSCRATCHGRAD_BLAS_SMOKE_ROOTS="mkl=<root>;scipy-openblas=<root>"   (scripts/get_blas.sh)
set(SCRATCHGRAD_BLAS_SMOKE_ROOTS "" CACHE STRING
    "Roots of PyPI BLAS libraries to smoke-test: mkl=<dir>;scipy-openblas=<dir>")
set(sg_blas_files autograd/backend/cpu/blas.cpp autograd/backend/cpu/gemm.cpp
                  autograd/backend/cpu_fast/gemm.cpp)
foreach(which IN ITEMS openblas blis mkl scipy-openblas)
  if(which STREQUAL SCRATCHGRAD_BLAS)
    continue()
  endif()
  set(root "")
  foreach(entry IN LISTS SCRATCHGRAD_BLAS_SMOKE_ROOTS)
    if(entry MATCHES "^${which}=(.*)$")
      set(root "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  string(REPLACE "-" "_" id "${which}")
  sg_find_blas("${which}" "${root}" sg_blas_smoke_${id})
  if(NOT sg_blas_smoke_${id}_FOUND)
    message(STATUS "BLAS ${which} not found (${sg_blas_smoke_${id}_HINT}): blas.${which}.smoke "
                   "is not built")
    continue()
  endif()
  set(sources ${PROJECT_SOURCE_DIR}/examples/04_matmul.cpp)
  foreach(file IN LISTS sg_blas_files)
    list(APPEND sources ${PROJECT_SOURCE_DIR}/${file})
  endforeach()
  add_executable(blas_smoke_${id} ${sources})
  # The CPU kernels' -march, as the library compiles these files.
  get_source_file_property(kernel_flags ${PROJECT_SOURCE_DIR}/autograd/backend/cpu_fast/gemm.cpp
                           DIRECTORY ${PROJECT_SOURCE_DIR}/autograd COMPILE_OPTIONS)
  if(kernel_flags)
    target_compile_options(blas_smoke_${id} PRIVATE ${kernel_flags})
  endif()
  target_compile_definitions(blas_smoke_${id} PRIVATE ${sg_blas_smoke_${id}_DEFINITION})
  target_link_options(blas_smoke_${id} PRIVATE "LINKER:--as-needed")
  target_link_libraries(blas_smoke_${id} PRIVATE sg_blas_smoke_${id} scratchgrad::autograd)
  sg_set_warnings(blas_smoke_${id})
  set(name ${which})  # as sg::blas_library_name() says it
  if(which STREQUAL "openblas")
    set(name OpenBLAS)
  elseif(which STREQUAL "blis")
    set(name BLIS)
  elseif(which STREQUAL "mkl")
    set(name oneMKL)
  endif()
  # Passes when the example's own checks pass and it reports the library it was built for.
  add_test(NAME blas.${which}.smoke
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/output_has_line.sh "^  ${name} kernels:"
                   $<TARGET_FILE:blas_smoke_${id}>)
  set_tests_properties(blas.${which}.smoke PROPERTIES LABELS blas TIMEOUT 120)
endforeach()

# The default library: chapter 4's example names it, and its thread count follows
# OPENBLAS_NUM_THREADS, which the scripts set to mean "the BLAS's threads" (one per test when tests
# run in parallel), whichever library it is.
if(TARGET 04_matmul)
  add_test(NAME blas.default.threads_from_environment
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/output_has_line.sh
                   "^  .* kernels: .*, threads: 1$" $<TARGET_FILE:04_matmul>)
  set_tests_properties(blas.default.threads_from_environment PROPERTIES
    LABELS blas TIMEOUT 120 ENVIRONMENT OPENBLAS_NUM_THREADS=1
    ENVIRONMENT_MODIFICATION "MKL_NUM_THREADS=unset:;OMP_NUM_THREADS=unset:;BLIS_NUM_THREADS=unset:")
endif()
