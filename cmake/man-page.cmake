# Writes the man page a tool prints with --man: cmake -DTOOL=exe -DPAGE=file -P man-page.cmake
get_filename_component(dir "${PAGE}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
execute_process(COMMAND "${TOOL}" --man OUTPUT_FILE "${PAGE}.tmp" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE "${PAGE}.tmp")
  message(FATAL_ERROR "${TOOL} --man failed (${rc})")
endif()
file(RENAME "${PAGE}.tmp" "${PAGE}")
