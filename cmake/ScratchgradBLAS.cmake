# BLAS libraries as imported targets. Used twice: by our own build (ScratchgradDependencies) and by
# the installed scratchgradConfig.cmake. scratchgrad_autograd is a static library, so its private
# link to the BLAS still reaches every program that links it: an installed package must recreate
# the target on the consumer's machine, with the same library.
#
# SCRATCHGRAD_BLAS picks the library (docs/design.md, "Which BLAS", has the measurements behind
# the default):
#   openblas        Debian's OpenBLAS (libopenblas-dev): the default
#   blis            Debian's BLIS, its pthreads build (libblis-dev, libblis4-pthread)
#   mkl             oneMKL from PyPI (scripts/get_blas.sh mkl)
#   scipy-openblas  OpenBLAS 0.3.3x from PyPI, symbols prefixed scipy_ (scripts/get_blas.sh
#                   scipy-openblas)
# SCRATCHGRAD_BLAS_ROOT: where a PyPI library was unpacked (what scripts/get_blas.sh prints). Left
# empty, the configuration runs scripts/get_blas.sh itself (a download the first time, then its
# cache).
# This file defines scratchgrad_blas for it and sets SCRATCHGRAD_BLAS_FOUND, or
# SCRATCHGRAD_BLAS_HINT (how to install it). Only the files that talk to BLAS
# (autograd/backend/cpu/blas_library.h) learn which library it is: SCRATCHGRAD_BLAS_DEFINITION is
# their compile definition.

# sg_find_blas(<which> <root> <target>): defines the imported target <target> for library <which>
# (unpacked under <root> for the PyPI ones). Sets, in the caller's scope, <target>_FOUND,
# <target>_DEFINITION, <target>_LIBRARY and <target>_HINT.
function(sg_find_blas which root target)
  # Searched afresh each call (the results are dropped from the cache), so that changing
  # SCRATCHGRAD_BLAS changes the library.
  unset(_sg_blas_library CACHE)
  unset(_sg_blas_include CACHE)
  if(which STREQUAL "openblas")
    # Debian ships libopenblas.so and cblas.h through the alternatives system; Homebrew's
    # openblas is keg-only (not linked into its prefix), so it is looked for in its own folder.
    set(homebrew $ENV{HOMEBREW_PREFIX}/opt/openblas /opt/homebrew/opt/openblas
                 /usr/local/opt/openblas)
    find_library(_sg_blas_library NAMES openblas PATHS ${homebrew} PATH_SUFFIXES lib)
    find_path(_sg_blas_include cblas.h PATHS ${homebrew} PATH_SUFFIXES openblas-pthread openblas
                                                                      include)
    set(definition SCRATCHGRAD_BLAS_OPENBLAS)
    set(hint "on Debian: apt-get install libopenblas-dev")
  elseif(which STREQUAL "blis")
    # The pthreads build: scratchgrad's own threads are not OpenMP's.
    find_library(_sg_blas_library NAMES libblis.so.4 blis
                 PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/blis-pthread NO_DEFAULT_PATH)
    find_path(_sg_blas_include blis.h
              PATH_SUFFIXES ${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp
                            ${CMAKE_LIBRARY_ARCHITECTURE}/blis-pthread blis)
    set(definition SCRATCHGRAD_BLAS_BLIS)
    set(hint "on Debian: apt-get install libblis-dev libblis4-pthread")
  elseif(which STREQUAL "mkl")
    find_library(_sg_blas_library NAMES mkl_rt PATHS ${root}/lib NO_DEFAULT_PATH)
    find_path(_sg_blas_include mkl_cblas.h PATHS ${root}/include NO_DEFAULT_PATH)
    set(definition SCRATCHGRAD_BLAS_MKL)
    set(hint "pass the folder scripts/get_blas.sh mkl prints as its root")
  elseif(which STREQUAL "scipy-openblas")
    find_library(_sg_blas_library NAMES scipy_openblas PATHS ${root}/lib NO_DEFAULT_PATH)
    find_path(_sg_blas_include cblas.h PATHS ${root}/include NO_DEFAULT_PATH)
    set(definition SCRATCHGRAD_BLAS_SCIPY_OPENBLAS)
    set(hint "pass the folder scripts/get_blas.sh scipy-openblas prints as its root")
  else()
    set(definition "")
    set(hint "the BLAS must be openblas, blis, mkl or scipy-openblas, not '${which}'")
  endif()
  set(found FALSE)
  if(_sg_blas_library AND _sg_blas_include)
    set(found TRUE)
    add_library(${target} INTERFACE IMPORTED GLOBAL)
    target_link_libraries(${target} INTERFACE ${_sg_blas_library})
    target_include_directories(${target} INTERFACE ${_sg_blas_include})
    get_filename_component(dir ${_sg_blas_library} DIRECTORY)
    if(NOT dir MATCHES "^/usr/lib")
      # Outside the system's folders: programs find it (and MKL its own parts) through an rpath.
      target_link_options(${target} INTERFACE "LINKER:-rpath,${dir}")
    endif()
  endif()
  set(${target}_FOUND ${found} PARENT_SCOPE)
  set(${target}_DEFINITION ${definition} PARENT_SCOPE)
  set(${target}_LIBRARY ${_sg_blas_library} PARENT_SCOPE)
  set(${target}_HINT ${hint} PARENT_SCOPE)
  unset(_sg_blas_library CACHE)
  unset(_sg_blas_include CACHE)
endfunction()

if(TARGET scratchgrad_blas)
  set(SCRATCHGRAD_BLAS_FOUND TRUE)
  return()
endif()
set(SCRATCHGRAD_BLAS "openblas" CACHE STRING "BLAS library: openblas, blis, mkl or scipy-openblas")
set_property(CACHE SCRATCHGRAD_BLAS PROPERTY STRINGS openblas blis mkl scipy-openblas)
set(SCRATCHGRAD_BLAS_ROOT "" CACHE PATH "Where a PyPI BLAS was unpacked (scripts/get_blas.sh)")

# A PyPI library without a root: fetch it now. The installed package config always has its root,
# and no scripts/ folder beside it.
set(_sg_get_blas ${CMAKE_CURRENT_LIST_DIR}/../scripts/get_blas.sh)
if(SCRATCHGRAD_BLAS MATCHES "^(mkl|scipy-openblas)$" AND SCRATCHGRAD_BLAS_ROOT STREQUAL ""
   AND EXISTS ${_sg_get_blas})
  message(STATUS "scratchgrad: getting ${SCRATCHGRAD_BLAS} (scripts/get_blas.sh; from PyPI the "
                 "first time, about 220 MB for mkl)")
  execute_process(COMMAND bash ${_sg_get_blas} ${SCRATCHGRAD_BLAS}
                  OUTPUT_VARIABLE _sg_blas_root ERROR_VARIABLE _sg_get_blas_said
                  RESULT_VARIABLE _sg_get_blas_status OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _sg_get_blas_status EQUAL 0)
    message(FATAL_ERROR "scripts/get_blas.sh ${SCRATCHGRAD_BLAS} failed:\n${_sg_get_blas_said}"
                        "Pass -DSCRATCHGRAD_BLAS_ROOT=<folder> if it is unpacked elsewhere, or "
                        "-DSCRATCHGRAD_BLAS=openblas (Debian's, no download).")
  endif()
  # A normal variable: it shadows the empty cache entry, and the installed config records it.
  set(SCRATCHGRAD_BLAS_ROOT "${_sg_blas_root}")
endif()
sg_find_blas("${SCRATCHGRAD_BLAS}" "${SCRATCHGRAD_BLAS_ROOT}" scratchgrad_blas)
set(SCRATCHGRAD_BLAS_FOUND ${scratchgrad_blas_FOUND})
set(SCRATCHGRAD_BLAS_DEFINITION ${scratchgrad_blas_DEFINITION})
set(SCRATCHGRAD_BLAS_LIBRARY ${scratchgrad_blas_LIBRARY})
set(SCRATCHGRAD_BLAS_HINT ${scratchgrad_blas_HINT})
