# Install rules for the C++ package, what an application gets from
#
#   cmake --install build --prefix <prefix>
#
#   <prefix>/include/tern/runtime/**/*.h           every runtime header
#   <prefix>/include/tern/kernels/portable/register.h
#   <prefix>/include/tern/backends/cpu/register.h
#   <prefix>/include/tern/extension/*.h
#   <prefix>/lib/libtern_{core,runtime,portable_kernels,cpu_backend,extension}.a
#   <prefix>/lib/cmake/Tern/                       TernConfig.cmake, version, targets
#
# The include root is <prefix>/include/tern: an application writes the same
# includes as the project ("extension/module.h"), and generic folder names such
# as runtime/ stay out of <prefix>/include itself.
#
# Targets: Tern::runtime (core, format, executor), Tern::portable_kernels,
# Tern::cpu_backend (the optimized CPU backend: tern::register_cpu_backend()),
# and Tern::extension (Module and loaders; brings the runtime and the
# portable kernels). Tern::core is
# exported too because both of the first two link it.

include(CMakePackageConfigHelpers)

set_target_properties(tern_core PROPERTIES EXPORT_NAME core)
set_target_properties(tern_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(tern_portable_kernels PROPERTIES EXPORT_NAME portable_kernels)
set_target_properties(tern_extension PROPERTIES EXPORT_NAME extension)
set_target_properties(tern_cpu_backend PROPERTIES EXPORT_NAME cpu_backend)
set_target_properties(tern_llm PROPERTIES EXPORT_NAME llm)

install(TARGETS tern_core tern_runtime tern_portable_kernels tern_cpu_backend tern_extension tern_llm
        EXPORT TernTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# Matched when installing, so a new header under runtime/ or extension/ ships
# without a change here. Of the portable kernels only register.h is public;
# ops.h and util/ are their internals.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime ${PROJECT_SOURCE_DIR}/extension
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tern
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_SOURCE_DIR}/kernels/portable/register.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tern/kernels/portable)
install(FILES ${PROJECT_SOURCE_DIR}/backends/cpu/register.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tern/backends/cpu)

set(TERN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tern)
install(EXPORT TernTargets NAMESPACE Tern:: DESTINATION ${TERN_CMAKE_DIR})
# While the version is 0.x a minor release may change the API: 0.1 accepts 0.1.* only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TernConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_SOURCE_DIR}/cmake/TernConfig.cmake ${PROJECT_BINARY_DIR}/TernConfigVersion.cmake
        DESTINATION ${TERN_CMAKE_DIR})
