# SPDX-License-Identifier: GPL-2.0
#
# The wire format library (include/sroce/), defined once for every user space
# consumer: the unit tests, their sanitizer build, the fuzzers and
# sroce-pktgen. The kernel module compiles the same sources through
# kernel/wire.c. Included from the top-level CMakeLists.txt.
#
#   sroce_wire                      plain static library (link it)
#   sroce_add_wire_library(NAME [compile options...])
#                                   the same sources built with extra flags
#                                   (sanitizers, fuzzer instrumentation)

set(SROCE_WIRE_INCLUDE_DIR "${PROJECT_SOURCE_DIR}/include")
set(SROCE_WIRE_SOURCES "${SROCE_WIRE_INCLUDE_DIR}/sroce/wire.c")

function(sroce_add_wire_library name)
	add_library(${name} STATIC ${SROCE_WIRE_SOURCES})
	target_include_directories(${name} PUBLIC "${SROCE_WIRE_INCLUDE_DIR}")
	set_target_properties(${name} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON
		C_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
	target_compile_options(${name} PRIVATE -pedantic ${ARGN})
endfunction()

sroce_add_wire_library(sroce_wire)
