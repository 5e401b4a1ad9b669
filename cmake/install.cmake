# cmake --install: the programs, the library with its headers, and a CMake package
# (find_package(avbench CONFIG)) whose targets avbench::avbench and avbench::mpi
# let a project of its own link the library and register protocols of its own
# (docs/architecture.md, "Using avbench as a library").
include(CMakePackageConfigHelpers)

set(AVB_PROGRAMS averaging_bench sgd_bench)
if(TARGET graph_info)
  list(APPEND AVB_PROGRAMS graph_info)
endif()
# Under SMPI the programs are shared objects that smpirun loads: they go to bin/ too.
install(TARGETS ${AVB_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_BINDIR})

set_target_properties(avb_mpi PROPERTIES EXPORT_NAME mpi)
install(TARGETS avbench avb_mpi EXPORT avbenchTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
set(AVB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/avbench)
install(EXPORT avbenchTargets NAMESPACE avbench:: DESTINATION ${AVB_CMAKE_DIR})

configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/avbenchConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/avbenchConfig.cmake INSTALL_DESTINATION ${AVB_CMAKE_DIR})
# 0.x: a new minor version may change the library's interfaces.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/avbenchConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/avbenchConfig.cmake ${CMAKE_BINARY_DIR}/avbenchConfigVersion.cmake
        DESTINATION ${AVB_CMAKE_DIR})
