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
crucible_fuzz_target(job_options SOURCES core/base/json.cpp core/base/options_schema.cpp
    core/base/event.cpp core/base/job_state.cpp core/base/sha256.cpp core/base/rank_plan.cpp
    core/net/api_types.cpp
    core/jobs/path_policy.cpp core/jobs/dataset_manifest.cpp core/jobs/blob_store.cpp
    PACKAGES yaml-cpp OpenSSL LIBS yaml-cpp OpenSSL::Crypto)
crucible_fuzz_target(http_request SOURCES core/net/http_request_parser.cpp
    PACKAGES Boost LIBS Boost::headers)
if(TARGET fuzz_http_request)
    # Beast's assertions go to the target's handler, which lets one known-false one pass.
    target_compile_definitions(fuzz_http_request PRIVATE BOOST_ENABLE_ASSERT_HANDLER)
endif()
crucible_fuzz_target(http_range SOURCES core/net/http_range.cpp)
crucible_fuzz_target(onnx_model SOURCES core/base/onnx_model.cpp core/base/onnx_model_reader.cpp)
crucible_fuzz_target(jpeg_decode SOURCES core/data/jpeg_decode.cpp PACKAGES JPEG LIBS JPEG::JPEG)
