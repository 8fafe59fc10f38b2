# `cmake --install build --prefix <dir>` installs a CMake package, so another project can write
#   find_package(scratchgrad REQUIRED)
#   target_link_libraries(app PRIVATE scratchgrad::nn)
# Layout under <dir>:
#   include/scratchgrad/{autograd,nn,train,distributed}/...   headers, included as "autograd/tensor.h"
#   lib/libscratchgrad_{autograd,nn,train,distributed}.a (distributed: where MPI was found)
#   lib/cmake/scratchgrad/                    scratchgradConfig.cmake, its version file, the exported
#                                             targets, and ScratchgradBLAS.cmake
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Must match the INSTALL_INTERFACE include directory set in autograd/CMakeLists.txt.
set(SCRATCHGRAD_INSTALL_INCLUDEDIR include/scratchgrad)
set(SCRATCHGRAD_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/scratchgrad)

set(SCRATCHGRAD_INSTALLED_TARGETS scratchgrad_autograd scratchgrad_nn)
set(SCRATCHGRAD_INSTALLED_FOLDERS autograd nn train)
if(SCRATCHGRAD_DISTRIBUTED)
  list(APPEND SCRATCHGRAD_INSTALLED_TARGETS scratchgrad_distributed)
  list(APPEND SCRATCHGRAD_INSTALLED_FOLDERS distributed)
endif()
install(TARGETS ${SCRATCHGRAD_INSTALLED_TARGETS}
  EXPORT scratchgradTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Every header, with its folder: headers include each other by their path from the repository root.
foreach(folder ${SCRATCHGRAD_INSTALLED_FOLDERS})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder}
    DESTINATION ${SCRATCHGRAD_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
endforeach()

install(EXPORT scratchgradTargets
  NAMESPACE scratchgrad::
  FILE scratchgradTargets.cmake
  DESTINATION ${SCRATCHGRAD_INSTALL_CMAKEDIR})

# scratchgrad::train (train/, its headers installed with the others) in an export file of its own:
# its headers use nlohmann_json, which scratchgradConfig.cmake looks for only to provide it.
install(TARGETS scratchgrad_train
  EXPORT scratchgradTrainTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT scratchgradTrainTargets
  NAMESPACE scratchgrad::
  FILE scratchgradTrainTargets.cmake
  DESTINATION ${SCRATCHGRAD_INSTALL_CMAKEDIR})

# scratchgradConfig.cmake.in reads SCRATCHGRAD_CUDA to know whether to look for the CUDA toolkit.
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/scratchgradConfig.cmake.in
  ${PROJECT_BINARY_DIR}/scratchgradConfig.cmake
  INSTALL_DESTINATION ${SCRATCHGRAD_INSTALL_CMAKEDIR})
# 0.x releases may break the API between minor versions, so only the same minor version matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/scratchgradConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/scratchgradConfig.cmake
  ${PROJECT_BINARY_DIR}/scratchgradConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/ScratchgradBLAS.cmake
  ${PROJECT_SOURCE_DIR}/cmake/ScratchgradTcmalloc.cmake
  DESTINATION ${SCRATCHGRAD_INSTALL_CMAKEDIR})
