# Defines the imported target scratchgrad_openblas (OpenBLAS's library and cblas.h) if OpenBLAS is
# found, and sets SCRATCHGRAD_OPENBLAS_FOUND. Used twice: by our own build (ScratchgradDependencies)
# and by the installed scratchgradConfig.cmake. scratchgrad_autograd is a static library, so its
# private link to OpenBLAS still reaches every program that links it: an installed package must
# recreate this target on the consumer's machine.
if(TARGET scratchgrad_openblas)
  set(SCRATCHGRAD_OPENBLAS_FOUND TRUE)
  return()
endif()

# Debian ships libopenblas.so and cblas.h through the alternatives system.
find_library(SCRATCHGRAD_OPENBLAS_LIBRARY NAMES openblas)
find_path(SCRATCHGRAD_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas-pthread openblas)
if(SCRATCHGRAD_OPENBLAS_LIBRARY AND SCRATCHGRAD_CBLAS_INCLUDE_DIR)
  set(SCRATCHGRAD_OPENBLAS_FOUND TRUE)
  add_library(scratchgrad_openblas INTERFACE IMPORTED)
  target_link_libraries(scratchgrad_openblas INTERFACE ${SCRATCHGRAD_OPENBLAS_LIBRARY})
  target_include_directories(scratchgrad_openblas INTERFACE ${SCRATCHGRAD_CBLAS_INCLUDE_DIR})
else()
  set(SCRATCHGRAD_OPENBLAS_FOUND FALSE)
endif()
