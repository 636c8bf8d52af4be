# `crucible-studio --demo FOLDER` (the folder as a positional, not --demo-dir) makes and opens the
# demo project in FOLDER: the studio starts, quits on its own, and the project is there.
# Run by ctest: cmake -DSTUDIO=<crucible-studio> -DOUT=<folder> -P studio_demo_test.cmake
file(REMOVE_RECURSE "${OUT}")
set(ENV{QT_QPA_PLATFORM} offscreen)
set(ENV{XDG_CONFIG_HOME} "${OUT}-config")  # not the user's recent projects
set(ENV{XDG_DATA_HOME} "${OUT}-data")
execute_process(COMMAND "${STUDIO}" --demo "${OUT}" --quit-after 1500
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT code EQUAL 0)
    message(FATAL_ERROR "crucible-studio --demo exited with ${code}:\n${out}\n${err}")
endif()
if(NOT EXISTS "${OUT}/demo.crucible")
    message(FATAL_ERROR "no demo project in ${OUT} after crucible-studio --demo ${OUT}:\n${err}")
endif()
