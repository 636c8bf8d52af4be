# The fuzz targets: one line each (see the comment at the top of CMakeLists.txt here).
# crucible_fuzz_target(<name> [SOURCES <repository files beyond the common ones>]
#                             [PACKAGES <find_package names>] [LIBS <link targets>])
crucible_fuzz_target(safetensors SOURCES
    core/base/safetensors.cpp core/base/safetensors_parse.cpp core/base/safetensors_write.cpp
    core/base/mapped_file_posix.cpp)
