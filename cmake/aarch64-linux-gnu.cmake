# Cross build for 64-bit Arm Linux with Debian's toolchain, tests run under qemu.
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake ...
#
# (`make test-aarch64` does this.) Needs the Debian packages g++-aarch64-linux-gnu
# (aarch64-linux-gnu-g++) and qemu-user (qemu-aarch64); scripts/setup_env.sh
# installs them. Host tools (flatc, Python, ccache) are still found on the host.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The target's libraries and headers. Debian's cross compiler is built with
# sysroot "/" and finds /usr/aarch64-linux-gnu/{include,lib} by itself, so this
# is a find root, not CMAKE_SYSROOT (--sysroot would make it look for
# /usr/aarch64-linux-gnu/usr/include and fail).
set(TERN_AARCH64_ROOT /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH ${TERN_AARCH64_ROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # flatc, python, ccache: the host's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# ctest runs the target's test executables through this; -L points qemu at
# the target's ld.so and shared libraries (libstdc++, libc).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${TERN_AARCH64_ROOT})
