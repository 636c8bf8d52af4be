# The fuzz targets: one line each (see the comment at the top of CMakeLists.txt here).
# crucible_fuzz_target(<name> [SOURCES <repository files beyond the common ones>]
#                             [PACKAGES <find_package names>] [LIBS <link targets>])
crucible_fuzz_target(safetensors SOURCES
    core/base/safetensors.cpp core/base/safetensors_parse.cpp core/base/safetensors_write.cpp
    core/base/mapped_file_posix.cpp)
crucible_fuzz_target(yolo_labels SOURCES core/data/formats/yolo_labels.cpp)
crucible_fuzz_target(data_yaml SOURCES core/data/formats/data_yaml.cpp core/data/formats/path_text.cpp
    PACKAGES yaml-cpp LIBS yaml-cpp)
crucible_fuzz_target(pickle SOURCES core/engine/pt/zip_reader.cpp core/engine/pt/pickle.cpp core/engine/pt/pt_archive.cpp)
crucible_fuzz_target(voc_xml SOURCES core/data/formats/xml_reader.cpp
    PACKAGES pugixml LIBS pugixml::pugixml)
