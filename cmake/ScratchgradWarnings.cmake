# sg_set_warnings(<target>): the project's warning flags, errors when SCRATCHGRAD_WERROR is ON.
function(sg_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers>)
  # GCC only: -Wno-restrict, for false -Wrestrict positives on std::string concatenation at -O3
  # (GCC bug 105329). Clang has no such flag and stops on it with -Werror.
  target_compile_options(${target} PRIVATE
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>)
  if(SCRATCHGRAD_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
                                             $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endif()
endfunction()

if(SCRATCHGRAD_SANITIZE)
  add_compile_options(-fsanitize=${SCRATCHGRAD_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${SCRATCHGRAD_SANITIZE})
  # Clang reports each `#pragma omp simd` loop the instrumented code keeps it from vectorizing
  # (-Wpass-failed): a note on speed, which a sanitizer build gives up anyway.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-pass-failed>)
  endif()
endif()
