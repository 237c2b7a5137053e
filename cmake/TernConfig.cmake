# find_package(Tern): the installed C++ runtime (cmake/install.cmake says what
# is installed where). Link Tern::extension for Module, or Tern::runtime and
# Tern::portable_kernels for the core API alone.
include(CMakeFindDependencyMacro)
find_dependency(Threads)  # Tern::runtime links Threads::Threads

include(${CMAKE_CURRENT_LIST_DIR}/TernTargets.cmake)
