# Every third-party dependency is found here, once. Debian packages (and PyPI's torch wheel) on
# Linux, vcpkg + the official LibTorch zip on Windows (see README "Windows").
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(yaml-cpp REQUIRED)
# The Pascal VOC reader's XML (it expands no DTD and no external entity).
find_package(pugixml REQUIRED)
# OpenCV: vcpkg ships a CMake config. Debian puts OpenCVConfig.cmake only in the libopencv-dev
# metapackage, which drags in Qt5, VTK and GDAL; we install the core/imgproc/imgcodecs/dnn -dev
# packages alone and find them by hand. dnn runs exported ONNX models (tests, examples).
find_package(OpenCV QUIET COMPONENTS core imgproc imgcodecs dnn)
if(NOT OpenCV_FOUND)
    find_path(OPENCV_INCLUDE_DIR opencv2/core.hpp PATH_SUFFIXES opencv4 REQUIRED)
    foreach(component core imgproc imgcodecs dnn)
        find_library(OPENCV_${component}_LIBRARY opencv_${component} REQUIRED)
        add_library(opencv_${component} UNKNOWN IMPORTED)
        set_target_properties(opencv_${component} PROPERTIES
            IMPORTED_LOCATION "${OPENCV_${component}_LIBRARY}"
            INTERFACE_INCLUDE_DIRECTORIES "${OPENCV_INCLUDE_DIR}")
    endforeach()
endif()
# libjpeg-turbo, which OpenCV decodes JPEGs with too: the loader calls it directly
# (core/data/jpeg_decode.h) for its BGR output and DCT scaling without cv::imdecode's overhead.
find_package(JPEG REQUIRED)
# cpp-httplib: Debian ships a compiled library with a pkg-config file (no CMake config);
# vcpkg ships httplib::httplib.
find_package(httplib CONFIG QUIET)
if(NOT TARGET httplib::httplib)
    find_package(PkgConfig REQUIRED)
    pkg_check_modules(CPPHTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
    add_library(httplib::httplib ALIAS PkgConfig::CPPHTTPLIB)
endif()
# Boost.Beast on Asio (header-only): the agent's HTTP server (core/net/http_listener.cpp,
# http_connection.cpp). Debian's libboost-dev (1.74) and vcpkg's boost-beast both provide
# Boost::headers.
find_package(Boost 1.74 REQUIRED)
# libcurl (7.75 or newer, for its SigV4 signing): the S3 client of the checkpoint mirror
# (core/net/s3_client.cpp). Debian's libcurl4-openssl-dev, vcpkg's curl.
find_package(CURL 7.75 REQUIRED)

# LibTorch: only core/engine, plugins/, the worker and the CLI may link it (DESIGN.md layers).
# CRUCIBLE_WITH_TORCH=OFF builds what a workstation needs, the studio and the agent, without it.
if(CRUCIBLE_WITH_TORCH)
    include(CrucibleTorch)
endif()

if(CRUCIBLE_BUILD_STUDIO)
    find_package(Qt6 REQUIRED COMPONENTS Core Gui Widgets Network Test PrintSupport)
    # Debian's QCustomPlot config points at the Qt5 build: link the Qt6 library by name.
    # vcpkg's port builds qcustomplot2.lib (qcustomplot2d.lib for Debug); Debian, libqcustomplot.so.
    find_library(QCUSTOMPLOT_QT6_LIBRARY
        NAMES QCustomPlotQt6 qcustomplot-qt6 qcustomplot qcustomplot2 qcustomplot2d REQUIRED)
    find_path(QCUSTOMPLOT_INCLUDE_DIR qcustomplot.h REQUIRED)
    add_library(crucible_qcustomplot INTERFACE)
    target_link_libraries(crucible_qcustomplot INTERFACE "${QCUSTOMPLOT_QT6_LIBRARY}"
        Qt6::Widgets Qt6::PrintSupport)
    target_include_directories(crucible_qcustomplot SYSTEM INTERFACE "${QCUSTOMPLOT_INCLUDE_DIR}")
    target_compile_definitions(crucible_qcustomplot INTERFACE QCUSTOMPLOT_USE_LIBRARY)
endif()
if(CRUCIBLE_BUILD_TESTS)
    find_package(GTest REQUIRED)
endif()
if(CRUCIBLE_BUILD_BENCHMARKS)
    find_package(benchmark REQUIRED)
endif()

# plugins/llm_lora tokenizers: PCRE2 (Unicode regexes of tokenizer.json pre-tokenizers) and,
# when present, ICU (NFC/NFKC normalizers). Each becomes an INTERFACE target crucible_<name>,
# whichever way it was found (vcpkg config or Debian). They are private to core/data
# (core/data/text).
add_library(crucible_pcre2 INTERFACE)
find_package(PCRE2 CONFIG QUIET COMPONENTS 8BIT)
if(TARGET PCRE2::8BIT)
    target_link_libraries(crucible_pcre2 INTERFACE PCRE2::8BIT)
else()
    find_package(PkgConfig REQUIRED)
    pkg_check_modules(PCRE2_8 REQUIRED IMPORTED_TARGET libpcre2-8)
    target_link_libraries(crucible_pcre2 INTERFACE PkgConfig::PCRE2_8)
endif()
add_library(crucible_icu INTERFACE)
find_package(ICU QUIET COMPONENTS uc)
if(ICU_FOUND)
    target_link_libraries(crucible_icu INTERFACE ICU::uc)
    target_compile_definitions(crucible_icu INTERFACE CRUCIBLE_HAVE_ICU)
endif()

# plugins/llm_lora reads tokenizer.model with libsentencepiece (its README says why that is safe
# beside LibTorch): an INTERFACE target crucible_sentencepiece, needed wherever the plugins are
# built (with LibTorch). Debian's libsentencepiece-dev has a pkg-config file; vcpkg's
# sentencepiece (Windows) has no CMake config and no pkg-config there, so its header and
# libraries are found by name. Both ways bring libsentencepiece_train too, for the tests that
# train models with it.
if(CRUCIBLE_WITH_TORCH)
    add_library(crucible_sentencepiece INTERFACE)
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
        pkg_check_modules(SENTENCEPIECE QUIET IMPORTED_TARGET sentencepiece)
    endif()
    if(SENTENCEPIECE_FOUND)
        target_link_libraries(crucible_sentencepiece INTERFACE PkgConfig::SENTENCEPIECE)
    else()
        find_path(SENTENCEPIECE_INCLUDE_DIR sentencepiece_processor.h)
        find_library(SENTENCEPIECE_LIBRARY sentencepiece)
        find_library(SENTENCEPIECE_TRAIN_LIBRARY sentencepiece_train)
        if(NOT SENTENCEPIECE_INCLUDE_DIR OR NOT SENTENCEPIECE_LIBRARY
                OR NOT SENTENCEPIECE_TRAIN_LIBRARY)
            message(FATAL_ERROR "libsentencepiece was not found. The LLM task (plugins/llm_lora) "
                "reads tokenizer.model with it: install libsentencepiece-dev (Debian; "
                "installer/setup.sh does) or vcpkg's sentencepiece (Windows), or build without "
                "LibTorch (-DCRUCIBLE_WITH_TORCH=OFF).")
        endif()
        target_include_directories(crucible_sentencepiece SYSTEM INTERFACE
            "${SENTENCEPIECE_INCLUDE_DIR}")
        target_link_libraries(crucible_sentencepiece INTERFACE
            "${SENTENCEPIECE_TRAIN_LIBRARY}" "${SENTENCEPIECE_LIBRARY}")
    endif()
endif()
