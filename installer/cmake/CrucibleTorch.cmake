# LibTorch 2.x with CUDA: the one LibTorch Crucible is built against.
#
# Linux: PyPI's `torch` wheel, which installer/setup.sh installs into a virtual environment it
# owns; CRUCIBLE_TORCH_PYTHON names that environment's python, and its
# torch.utils.cmake_prefix_path is searched. Windows: the official LibTorch zip of the same
# version, found through CMAKE_PREFIX_PATH (README "Windows").
#
# Configure stops with a clear message when LibTorch is older than 2.4, when its CUDA and the
# toolkit's differ (the worker would load two CUDA runtimes), or when its C++ ABI differs from
# the compiler's default, which Debian's Qt and OpenCV are built with (std::string in their
# signatures would not link).

set(CRUCIBLE_TORCH_PYTHON "" CACHE FILEPATH
    "Python of the virtual environment holding PyPI's torch wheel (set by installer/setup.sh)")
# Without a GPU to look at, LibTorch's CMake asks which architectures CUDA code is built for:
# Ampere (8.0, 8.6), Hopper (9.0) and Blackwell (10.0, 12.0), with PTX for newer chips.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;8.6;9.0;10.0;12.0+PTX")
endif()

if(CRUCIBLE_TORCH_PYTHON)
    execute_process(
        COMMAND "${CRUCIBLE_TORCH_PYTHON}" -c
            "import torch.utils; print(torch.utils.cmake_prefix_path)"
        RESULT_VARIABLE torch_rc OUTPUT_VARIABLE torch_prefix ERROR_VARIABLE torch_err
        OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT torch_rc EQUAL 0)
        message(FATAL_ERROR "CRUCIBLE_TORCH_PYTHON=${CRUCIBLE_TORCH_PYTHON} cannot import torch:\n"
            "${torch_err}\nRun `bash installer/setup.sh test` to (re)install it.")
    endif()
    list(PREPEND CMAKE_PREFIX_PATH "${torch_prefix}")
endif()

# LibTorch's own CMake finds the CUDA toolkit (CUDAToolkit_VERSION) and enables CUDA.
find_package(Torch REQUIRED)
message(STATUS "LibTorch: ${Torch_DIR}")

# TORCH_INSTALL_PREFIX is the wheel's torch/ folder or the zip's root.
if(EXISTS "${TORCH_INSTALL_PREFIX}/version.py")
    file(STRINGS "${TORCH_INSTALL_PREFIX}/version.py" torch_version_lines
        REGEX "^(__version__|cuda)")
    string(REGEX MATCH "__version__ = '([0-9.]+)" _ "${torch_version_lines}")
    set(CRUCIBLE_TORCH_VERSION "${CMAKE_MATCH_1}")
    string(REGEX MATCH "cuda[^=]*= '([0-9]+\\.[0-9]+)'" _ "${torch_version_lines}")
    set(CRUCIBLE_TORCH_CUDA "${CMAKE_MATCH_1}")
elseif(EXISTS "${TORCH_INSTALL_PREFIX}/build-version")
    file(READ "${TORCH_INSTALL_PREFIX}/build-version" build_version)  # e.g. 2.11.0+cu130
    string(REGEX MATCH "^([0-9.]+)" _ "${build_version}")
    set(CRUCIBLE_TORCH_VERSION "${CMAKE_MATCH_1}")
    if(build_version MATCHES "\\+cu([0-9]+)([0-9])")
        set(CRUCIBLE_TORCH_CUDA "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
    endif()
endif()
if(CRUCIBLE_TORCH_VERSION AND CRUCIBLE_TORCH_VERSION VERSION_LESS 2.4)
    message(FATAL_ERROR "LibTorch ${CRUCIBLE_TORCH_VERSION} at ${TORCH_INSTALL_PREFIX} is too "
        "old: Crucible needs LibTorch 2.4 or newer (installer/setup.sh installs 2.11.0).")
endif()

if(CRUCIBLE_TORCH_CUDA)
    if(NOT CUDAToolkit_FOUND)
        message(FATAL_ERROR "LibTorch ${CRUCIBLE_TORCH_VERSION} is built for CUDA "
            "${CRUCIBLE_TORCH_CUDA}, but no CUDA toolkit was found: install CUDA "
            "${CRUCIBLE_TORCH_CUDA} (nvcc on PATH, or -DCUDAToolkit_ROOT=...).")
    endif()
    set(toolkit_cuda "${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR}")
    if(NOT toolkit_cuda VERSION_EQUAL CRUCIBLE_TORCH_CUDA)
        message(FATAL_ERROR "LibTorch ${CRUCIBLE_TORCH_VERSION} is built for CUDA "
            "${CRUCIBLE_TORCH_CUDA}, but the CUDA toolkit at ${CUDAToolkit_BIN_DIR} is "
            "${CUDAToolkit_VERSION}. Install the matching toolkit, or the LibTorch built for "
            "CUDA ${toolkit_cuda}.")
    endif()
endif()
set(CRUCIBLE_TORCH_HAS_CUDA OFF)
if(TARGET torch_cuda OR CRUCIBLE_TORCH_CUDA)
    set(CRUCIBLE_TORCH_HAS_CUDA ON)
endif()
message(STATUS "LibTorch ${CRUCIBLE_TORCH_VERSION}, CUDA ${CRUCIBLE_TORCH_CUDA} "
    "(toolkit ${CUDAToolkit_VERSION}), arch list $ENV{TORCH_CUDA_ARCH_LIST}")

# PyPI's LibTorch is built with a newer GCC and exports the parts of that libstdc++ it linked in
# statically (std::filesystem, std::chrono's time zones). Loaded before the system's libstdc++,
# those copies take over our own calls and crash (std::filesystem::remove_all jumps to address
# 0). Naming libstdc++ first on every executable's link line makes the system's copy the one all
# calls bind to.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" OR CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    string(APPEND CMAKE_EXE_LINKER_FLAGS " -Wl,--push-state,--no-as-needed,-lstdc++,--pop-state")
endif()

# The libstdc++ ABI: LibTorch says its own in TORCH_CXX_FLAGS; the compiler's default is what
# Debian's Qt, OpenCV, yaml-cpp and spdlog were built with.
if(NOT MSVC)
    include(CheckCXXSourceCompiles)
    check_cxx_source_compiles([[
        #include <string>
        #if !defined(_GLIBCXX_USE_CXX11_ABI) || _GLIBCXX_USE_CXX11_ABI == 0
        #error old ABI
        #endif
        int main() { return 0; }]] CRUCIBLE_COMPILER_CXX11_ABI)
    if(CRUCIBLE_COMPILER_CXX11_ABI)
        set(compiler_abi 1)
    else()
        set(compiler_abi 0)
    endif()
    set(torch_abi "${compiler_abi}")
    if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=([01])")
        set(torch_abi "${CMAKE_MATCH_1}")
    endif()
    if(NOT torch_abi STREQUAL compiler_abi)
        message(FATAL_ERROR "LibTorch at ${TORCH_INSTALL_PREFIX} uses the C++ ABI "
            "_GLIBCXX_USE_CXX11_ABI=${torch_abi}, but this compiler, and so Qt and OpenCV built "
            "with it, use ${compiler_abi}: std::string and std::list would not link across "
            "them. Use a LibTorch built with the cxx11 ABI (PyPI's torch >= 2.7 is).")
    endif()
endif()

# Windows has no rpath: a program finds LibTorch's DLLs (and the CUDA ones the zip carries) only
# beside itself or on PATH. Every executable goes to one folder (CMAKE_RUNTIME_OUTPUT_DIRECTORY,
# set in the top CMakeLists.txt on Windows) and the DLLs are copied there once, so the worker,
# the CLI and every LibTorch test run from the build tree, and gtest_discover_tests can list
# the tests.
if(WIN32)
    file(GLOB CRUCIBLE_TORCH_DLLS "${TORCH_INSTALL_PREFIX}/lib/*.dll")
    # Where the executables land: a multi-config generator (Visual Studio, Ninja Multi-Config)
    # adds a <Config> folder under CMAKE_RUNTIME_OUTPUT_DIRECTORY by itself; a single-config one
    # (Ninja, NMake) puts them in that folder directly, where bin/$<CONFIG> would be a folder no
    # program runs from.
    get_property(crucible_multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
    if(crucible_multi_config)
        set(crucible_torch_dll_dir "${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/$<CONFIG>")
    else()
        set(crucible_torch_dll_dir "${CMAKE_RUNTIME_OUTPUT_DIRECTORY}")
    endif()
    add_custom_target(crucible_torch_dlls
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${crucible_torch_dll_dir}"
        COMMAND "${CMAKE_COMMAND}" -E copy_if_different ${CRUCIBLE_TORCH_DLLS}
                "${crucible_torch_dll_dir}"
        COMMENT "LibTorch DLLs beside the executables")
endif()

# at::parallel_for is a header template: LibTorch built with OpenMP (the wheel is) splits the
# range across threads only in code compiled with OpenMP itself. Compiled without it, it runs
# the whole range on the calling thread while LibTorch's other OpenMP threads spin idle. Every
# LibTorch target and the shared precompiled header take the flag (crucible_use_torch). The
# wheel carries its own libgomp.so.1 and ours resolves to it by soname: one OpenMP runtime, one
# thread team. MSVC: LibTorch for Windows ships its own OpenMP runtime, not MSVC's vcomp, so
# the flag waits for the Windows build ([B2 5/8]); there our at::parallel_for stays serial.
set(CRUCIBLE_TORCH_OPENMP "")
if(NOT MSVC)
    find_package(OpenMP REQUIRED COMPONENTS CXX)
    set(CRUCIBLE_TORCH_OPENMP OpenMP::OpenMP_CXX)
endif()
