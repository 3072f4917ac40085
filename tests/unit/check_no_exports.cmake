# SPDX-License-Identifier: GPL-2.0
# cmake -DLIB=<shared object> -DNM=<nm> -P check_no_exports.cmake
execute_process(COMMAND ${NM} -D --defined-only ${LIB}
	OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
	message(FATAL_ERROR "${NM} failed on ${LIB}: ${err}")
endif()
string(STRIP "${out}" out)
if(NOT out STREQUAL "")
	message(FATAL_ERROR "${LIB} exports symbols:\n${out}")
endif()
message(STATUS "${LIB}: no exported symbols")
