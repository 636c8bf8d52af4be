# Helpers that give every Crucible target the same flags and conventions.

# Warnings are errors in our own code; third-party headers come in as SYSTEM includes.
function(crucible_warnings target)
    if(MSVC)
        # LibTorch's and Qt's headers do not build warning-free at /W4: headers reached through
        # <...> are external, at warning level 0. (CMake also passes imported targets' folders
        # as /external:I; this holds for a header found through a plain include folder too.)
        target_compile_options(${target} PRIVATE /W4 /WX /utf-8 /permissive-
            /external:anglebrackets /external:W0)
    else()
        # -Wshadow, -Wunused-parameter (in -Wextra) and -Wconversion stand in for MSVC's
        # C4456/C4458, C4100 and C4244/C4267 (a narrowing conversion), which /W4 /WX makes errors
        # there: Linux CI sees what would stop a Windows build in the files mingw-w64 cannot
        # compile (LibTorch's and Qt's). MSVC warns of no sign change at /W4, so neither do we.
        target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror -Wshadow
            -Wconversion -Wno-sign-conversion -Wno-missing-field-initializers)
    endif()
endfunction()

# A layer library: crucible_library(data ALIAS data SOURCES ... PUBLIC_LIBS ... PRIVATE_LIBS ...)
# creates target crucible_<name> with alias crucible::<name>. The repository root is the include
# root, so includes read "core/base/error.h", "plugins/detect/yolo_model.h".
function(crucible_library name)
    cmake_parse_arguments(L "" "" "SOURCES;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
    add_library(crucible_${name} STATIC ${L_SOURCES})
    add_library(crucible::${name} ALIAS crucible_${name})
    target_include_directories(crucible_${name} PUBLIC "${CMAKE_SOURCE_DIR}")
    target_link_libraries(crucible_${name} PUBLIC ${L_PUBLIC_LIBS} PRIVATE ${L_PRIVATE_LIBS})
    target_compile_definitions(crucible_${name} PUBLIC CRUCIBLE_VERSION="${PROJECT_VERSION}")
    crucible_warnings(crucible_${name})
endfunction()

# One precompiled LibTorch header shared by every LibTorch target (REUSE_FROM): one PCH per
# target would cost ~23 s and ~600 MB each.
if(CRUCIBLE_WITH_TORCH)
    add_library(crucible_torch_pch OBJECT "${CMAKE_SOURCE_DIR}/installer/cmake/torch_pch.cpp")
    target_link_libraries(crucible_torch_pch PUBLIC torch ${CRUCIBLE_TORCH_OPENMP})
    target_compile_definitions(crucible_torch_pch PUBLIC CRUCIBLE_VERSION="${PROJECT_VERSION}")
    target_include_directories(crucible_torch_pch PUBLIC "${CMAKE_SOURCE_DIR}")
    crucible_warnings(crucible_torch_pch)
    target_precompile_headers(crucible_torch_pch PRIVATE <torch/torch.h>)
    if(NOT MSVC)
        target_compile_options(crucible_torch_pch PRIVATE -fPIC)
    endif()
endif()

function(crucible_use_torch target)
    if(NOT CRUCIBLE_WITH_TORCH)
        message(FATAL_ERROR "${target} uses LibTorch, which CRUCIBLE_WITH_TORCH=OFF leaves out: "
            "guard its folder with crucible_requires_torch()")
    endif()
    target_link_libraries(${target} PUBLIC torch ${CRUCIBLE_TORCH_OPENMP})
    if(NOT MSVC)
        # Executables get -fPIE, libraries -fPIC; the PCH must see one setting, so force -fPIC.
        target_compile_options(${target} PRIVATE -fPIC)
    endif()
    target_precompile_headers(${target} REUSE_FROM crucible_torch_pch)
    if(WIN32)
        add_dependencies(${target} crucible_torch_dlls)
    endif()
endfunction()

# At the top of a folder whose targets all need LibTorch: nothing there is built without it.
macro(crucible_requires_torch)
    if(NOT CRUCIBLE_WITH_TORCH)
        return()
    endif()
endmacro()

# crucible_posix_marker(OUT FILE): the reason of FILE's first line when it reads
# "// POSIX-only test: <reason>" (what check-portable-calls.sh looks for), else empty.
function(crucible_posix_marker out file)
    set(${out} "" PARENT_SCOPE)
    if(EXISTS "${file}" AND NOT IS_DIRECTORY "${file}")
        file(STRINGS "${file}" first LIMIT_COUNT 1)
        if(first MATCHES "^// POSIX-only test: (.*)")
            set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
        endif()
    endif()
endfunction()

# crucible_posix_only(OUT SOURCES...): sets OUT to the first of SOURCES (relative to the current
# source folder) that is POSIX-only, with the reason; empty when none is. A source is POSIX-only
# when its first line is "// POSIX-only test: <reason>", or when it includes (#include "...",
# looked up beside the source, then from the repository root) a local header whose first line is:
# tests/agent/agent_hostile_test.cpp builds only where tests/agent/agent_process.h does. One
# level of includes is read, no deeper: a header that includes a POSIX-only header is marked
# itself (agent_process.h, for raw_http.h). The include is seen even inside #ifndef _WIN32, so
# a portable file includes a POSIX-only header nowhere. installer/scripts/check-portable-calls.sh
# lets only marked files use POSIX-only calls.
function(crucible_posix_only out)
    foreach(source IN LISTS ARGN)
        get_filename_component(file "${source}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
        file(RELATIVE_PATH shown "${CMAKE_SOURCE_DIR}" "${file}")
        crucible_posix_marker(reason "${file}")
        if(reason)
            set(${out} "${shown}: ${reason}" PARENT_SCOPE)
            return()
        endif()
        if(NOT EXISTS "${file}")
            continue()
        endif()
        get_filename_component(folder "${file}" DIRECTORY)
        file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
        foreach(line IN LISTS includes)
            string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" header
                "${line}")
            foreach(candidate "${folder}/${header}" "${CMAKE_SOURCE_DIR}/${header}")
                if(EXISTS "${candidate}")
                    crucible_posix_marker(reason "${candidate}")
                    if(reason)
                        set(${out} "${shown}: includes ${header}: ${reason}" PARENT_SCOPE)
                        return()
                    endif()
                    break()
                endif()
            endforeach()
        endforeach()
    endforeach()
    set(${out} "" PARENT_SCOPE)
endfunction()

# crucible_windows_sources(OUT NAME SOURCES...): OUT is SOURCES, less the POSIX-only ones (see
# crucible_posix_only) when building for Windows; a status line names each source left out of
# target NAME, and why. The rest of the target is still built: one POSIX-only test file must not
# take its folder's other tests off Windows. OUT is empty when nothing worth building is left:
# no source at all, or no test or benchmark file (*_test.cpp, bench_*.cpp) when there was one,
# since helpers alone would make an executable without a test.
function(crucible_windows_sources out name)
    if(NOT WIN32)
        set(${out} "${ARGN}" PARENT_SCOPE)
        return()
    endif()
    set(kept "")
    set(had_main FALSE)
    set(kept_main FALSE)
    foreach(source IN LISTS ARGN)
        get_filename_component(base "${source}" NAME)
        set(is_main FALSE)
        if(base MATCHES "_test\\.cpp$|^bench_.*\\.cpp$")
            set(is_main TRUE)
            set(had_main TRUE)
        endif()
        crucible_posix_only(posix_only "${source}")
        if(posix_only)
            message(STATUS "${name}: left out on Windows: ${posix_only}")
        else()
            list(APPEND kept "${source}")
            if(is_main)
                set(kept_main TRUE)
            endif()
        endif()
    endforeach()
    if(had_main AND NOT kept_main)
        set(kept "")
    endif()
    if(NOT kept)
        message(STATUS
            "${name}: not built on Windows (its test or benchmark sources are POSIX-only)")
    endif()
    set(${out} "${kept}" PARENT_SCOPE)
endfunction()

# crucible_add_gtest(NAME SOURCES ... LIBS ... [TORCH] [RESOURCE_LOCK cpu] [TIMEOUT s] [LABELS ...]
#                    [FIXTURES_REQUIRED name])
# Test executables get CRUCIBLE_FIXTURES_DIR (the reference data in ../shared/fixtures),
# CRUCIBLE_SOURCE_DIR, CRUCIBLE_BINARY_DIR and CRUCIBLE_TRAINED_SHAPES_DIR (the trained detector
# of the CTest fixture "trained_shapes", which FIXTURES_REQUIRED trained_shapes makes first). Tests that use several threads take the
# resource lock "cpu" so that ctest -j2 never oversubscribes the two CI cores.
function(crucible_add_gtest name)
    cmake_parse_arguments(T "TORCH" "RESOURCE_LOCK;TIMEOUT;FIXTURES_REQUIRED" "SOURCES;LIBS;LABELS"
        ${ARGN})
    if(T_TORCH AND NOT CRUCIBLE_WITH_TORCH)
        return()
    endif()
    crucible_windows_sources(sources ${name} ${T_SOURCES})
    if(NOT sources)  # Windows, nothing portable: callers test if(TARGET name) before using it
        return()
    endif()
    add_executable(${name} ${sources})
    target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
    target_include_directories(${name} PRIVATE "${CMAKE_SOURCE_DIR}")
    crucible_warnings(${name})
    if(T_TORCH)
        crucible_use_torch(${name})
    endif()
    target_compile_definitions(${name} PRIVATE
        CRUCIBLE_FIXTURES_DIR="${CRUCIBLE_FIXTURES_DIR}"
        CRUCIBLE_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
        CRUCIBLE_BINARY_DIR="${CMAKE_BINARY_DIR}"
        CRUCIBLE_TRAINED_SHAPES_DIR="${CRUCIBLE_TRAINED_SHAPES_DIR}")
    if(NOT T_TIMEOUT)
        set(T_TIMEOUT 300)
    endif()
    # Pinned to the CPU: the same suite runs unchanged on a GPU machine (GPU checks live in
    # tests/gpu/run.sh).
    set(props TIMEOUT ${T_TIMEOUT} ENVIRONMENT "CUDA_VISIBLE_DEVICES=")
    if(T_RESOURCE_LOCK)
        list(APPEND props RESOURCE_LOCK ${T_RESOURCE_LOCK})
    endif()
    if(T_LABELS)
        list(APPEND props LABELS "${T_LABELS}")
    endif()
    if(T_FIXTURES_REQUIRED)
        list(APPEND props FIXTURES_REQUIRED ${T_FIXTURES_REQUIRED})
    endif()
    gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
        PROPERTIES ${props})
endfunction()

# crucible_add_benchmark(NAME SOURCES ... LIBS ... [TORCH]): not part of ctest; run by hand or
# by the scripts under tests/bench.
function(crucible_add_benchmark name)
    cmake_parse_arguments(B "TORCH" "" "SOURCES;LIBS" ${ARGN})
    if(NOT CRUCIBLE_BUILD_BENCHMARKS OR (B_TORCH AND NOT CRUCIBLE_WITH_TORCH))
        return()
    endif()
    crucible_windows_sources(sources ${name} ${B_SOURCES})
    if(NOT sources)  # Windows, nothing portable: callers test if(TARGET name) before using it
        return()
    endif()
    add_executable(${name} ${sources})
    target_link_libraries(${name} PRIVATE ${B_LIBS} benchmark::benchmark Threads::Threads)
    target_include_directories(${name} PRIVATE "${CMAKE_SOURCE_DIR}")
    crucible_warnings(${name})
    if(B_TORCH)
        crucible_use_torch(${name})
    endif()
    target_compile_definitions(${name} PRIVATE
        CRUCIBLE_FIXTURES_DIR="${CRUCIBLE_FIXTURES_DIR}"
        CRUCIBLE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
endfunction()

# Adds every direct sub-folder of the current source folder that has a CMakeLists.txt, so a new
# module or test folder needs no edit of a shared file.
function(crucible_add_subfolders)
    file(GLOB children LIST_DIRECTORIES true RELATIVE "${CMAKE_CURRENT_SOURCE_DIR}"
        "${CMAKE_CURRENT_SOURCE_DIR}/*")
    list(SORT children)
    foreach(child IN LISTS children)
        if(IS_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/${child}"
           AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/${child}/CMakeLists.txt")
            add_subdirectory(${child})
        endif()
    endforeach()
endfunction()

# crucible_windows_resources(TARGET DESCRIPTION): on Windows, embeds the application manifest
# (resources/windows/crucible.manifest: UTF-8 code page, long paths, per-monitor DPI) and a
# version resource (name, description, version) into executable TARGET. The wine tests embed the
# same two files into their programs and check that Windows honours them.
function(crucible_windows_resources target description)
    if(NOT WIN32)
        return()
    endif()
    set(CRUCIBLE_RC_NAME "${target}")
    set(CRUCIBLE_RC_DESCRIPTION "${description}")
    set(CRUCIBLE_RC_VERSION "${PROJECT_VERSION}")
    string(REPLACE "." "," CRUCIBLE_RC_VERSION_COMMAS "${PROJECT_VERSION},0")
    set(CRUCIBLE_RC_MANIFEST "${CMAKE_SOURCE_DIR}/resources/windows/crucible.manifest")
    set(rc "${CMAKE_CURRENT_BINARY_DIR}/${target}.rc")
    configure_file("${CMAKE_SOURCE_DIR}/resources/windows/crucible.rc.in" "${rc}" @ONLY)
    target_sources(${target} PRIVATE "${rc}")
    if(MSVC)  # the manifest comes from the resource; the linker must not add a second one
        target_link_options(${target} PRIVATE /MANIFEST:NO)
    endif()
endfunction()
