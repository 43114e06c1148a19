# cmake --install build --prefix P: libseam.so (SOVERSION), libseam_report.so, the public
# headers, seam.pc, the CMake package (find_package(seam) -> seam::seam),
# the seam CLI, the Python package (python/CMakeLists.txt) and the docs.
include(CMakePackageConfigHelpers)

install(TARGETS seam_shared EXPORT seamTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES include/seam.h include/seam_partition.h include/seam_quantize.h include/seam_backend.h include/seam_report.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(SEAM_WITH_MPI)
  install(FILES include/seam_mpi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(TARGETS seam RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The report library (seam_report.h, graphviz), for C programs that call it.
install(TARGETS seam_report_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# @ONLY at install time, so the prefix given to cmake --install is the one written.
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/seam.pc.in ${CMAKE_CURRENT_BINARY_DIR}/seam.pc.in.tmp COPYONLY)
install(CODE "
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  configure_file(\"${CMAKE_CURRENT_BINARY_DIR}/seam.pc.in.tmp\" \"${CMAKE_CURRENT_BINARY_DIR}/seam.pc\" @ONLY)
  file(INSTALL \"${CMAKE_CURRENT_BINARY_DIR}/seam.pc\" DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")
")

set(SEAM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/seam)
install(EXPORT seamTargets NAMESPACE seam:: DESTINATION ${SEAM_CMAKE_DIR})
configure_package_config_file(cmake/seamConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/seamConfig.cmake
                              INSTALL_DESTINATION ${SEAM_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/seamConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/seamConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/seamConfigVersion.cmake
        DESTINATION ${SEAM_CMAKE_DIR})

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
