# Precompiled headers: the heavy headers a target's files all start with (fmt, which libc++
# builds compile as headers only in every file; the autograd API; GoogleTest in the tests) are
# parsed once per target instead of once per file. Measured on a 2-core AMD Zen 3: 40-60% of a
# file's compile time with GCC, more with Clang and libc++ (bench/NOTES.md, "Precompiled headers").
# Nothing in the sources depends on them: every file still includes what it uses, and a build
# with -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON (CI's ARM64 leg) proves it.

# sg_precompile_headers(<target> <header>...): C++ files only (a CUDA file is compiled by nvcc,
# which cannot read the compiler's precompiled header). A file with other flags than its target's
# (the CPU kernels' -march) sets SKIP_PRECOMPILE_HEADERS: a precompiled header is only valid for
# the flags it was made with, and Clang refuses one made for other CPU features.
function(sg_precompile_headers target)
  set(headers "")
  foreach(header IN LISTS ARGN)
    list(APPEND headers "$<$<COMPILE_LANGUAGE:CXX>:${header}>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()
