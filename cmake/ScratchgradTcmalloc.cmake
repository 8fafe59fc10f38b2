# Defines the imported target scratchgrad_malloc (gperftools' tcmalloc_minimal, a malloc for many
# small, short-lived allocations) if it is found, and sets SCRATCHGRAD_TCMALLOC_FOUND. Used twice,
# as ScratchgradBLAS.cmake is: by our own build and by the installed scratchgradConfig.cmake,
# since scratchgrad_autograd's private link to it reaches every program that links the library.
# Why a malloc at all: every op allocates its shapes, tensor and graph node on the heap (~18 small
# blocks for one elementwise op), and glibc's malloc and free were ~10% of the tiny training step.
# Only the runtime library is needed (we call nothing of its API; linking it replaces malloc and
# free for the whole program), so Debian's libtcmalloc-minimal4 is enough: no -dev package.
if(TARGET scratchgrad_malloc)
  set(SCRATCHGRAD_TCMALLOC_FOUND TRUE)
  return()
endif()

find_library(SCRATCHGRAD_TCMALLOC_LIBRARY NAMES tcmalloc_minimal libtcmalloc_minimal.so.4)
if(SCRATCHGRAD_TCMALLOC_LIBRARY)
  set(SCRATCHGRAD_TCMALLOC_FOUND TRUE)
  add_library(scratchgrad_malloc INTERFACE IMPORTED)
  # --no-as-needed: nothing calls into it by name (it replaces malloc), so a linker that drops
  # unreferenced libraries (Debian's GCC passes --as-needed) would otherwise leave it out. Apple's
  # linker keeps every library it is given and knows no such flags.
  if(APPLE)
    target_link_libraries(scratchgrad_malloc INTERFACE ${SCRATCHGRAD_TCMALLOC_LIBRARY})
  else()
    target_link_libraries(scratchgrad_malloc INTERFACE
      "-Wl,--push-state,--no-as-needed" ${SCRATCHGRAD_TCMALLOC_LIBRARY} "-Wl,--pop-state")
  endif()
else()
  set(SCRATCHGRAD_TCMALLOC_FOUND FALSE)
endif()
