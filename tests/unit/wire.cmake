# SPDX-License-Identifier: GPL-2.0
#
# The wire format library (include/sroce/, target sroce_wire from
# cmake/wire.cmake): its unit tests, the same tests built with
# AddressSanitizer + UBSan, and (SROCE_FUZZ=ON, clang only) libFuzzer
# targets for the packet validator and the transport decisions. Included
# from CMakeLists.txt.
#
#   cmake -S . -B /tmp/fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSROCE_FUZZ=ON
#   cmake --build /tmp/fuzz --target sroce_fuzz_validator sroce_fuzz_decide
#   mkdir -p /tmp/fuzz-corpus && /tmp/fuzz/tests/unit/sroce_fuzz_validator -max_total_time=60 /tmp/fuzz-corpus
#   /tmp/fuzz/tests/unit/sroce_fuzz_decide -max_total_time=60
option(SROCE_FUZZ "Build the libFuzzer targets (clang only)" OFF)
option(SROCE_SANITIZE_TESTS "Also build the wire tests with -fsanitize=address,undefined" ON)

set(SROCE_WIRE_TEST_SOURCES
	wire_hdr_test.cpp
	wire_opcode_test.cpp
	wire_psn_ack_test.cpp
	wire_icrc_test.cpp
	wire_validate_test.cpp
	wire_decide_test.cpp
	wire_c11_check.c
)

find_package(ZLIB REQUIRED)	# an independent CRC-32 to check ours against

add_executable(sroce_wire_unit_tests ${SROCE_WIRE_TEST_SOURCES})
set_target_properties(sroce_wire_unit_tests PROPERTIES C_STANDARD 11 C_EXTENSIONS OFF)
target_link_libraries(sroce_wire_unit_tests PRIVATE sroce_wire GTest::gtest_main ZLIB::ZLIB)
gtest_discover_tests(sroce_wire_unit_tests)

if(SROCE_SANITIZE_TESTS)
	set(_san -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
	sroce_add_wire_library(sroce_wire_asan ${_san})
	add_executable(sroce_wire_unit_tests_asan ${SROCE_WIRE_TEST_SOURCES})
	set_target_properties(sroce_wire_unit_tests_asan PROPERTIES C_STANDARD 11 C_EXTENSIONS OFF)
	target_compile_options(sroce_wire_unit_tests_asan PRIVATE ${_san})
	target_link_options(sroce_wire_unit_tests_asan PRIVATE ${_san})
	target_link_libraries(sroce_wire_unit_tests_asan PRIVATE sroce_wire_asan
		GTest::gtest_main ZLIB::ZLIB)
	add_test(NAME wire_unit_tests_asan COMMAND sroce_wire_unit_tests_asan)
	set_tests_properties(wire_unit_tests_asan PROPERTIES
		ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()

if(SROCE_FUZZ)
	if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
		message(FATAL_ERROR "SROCE_FUZZ needs clang: -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
	endif()
	set(_fz_san address,undefined -fno-sanitize-recover=all)
	sroce_add_wire_library(sroce_wire_fuzz -fsanitize=fuzzer-no-link,${_fz_san})
	# a short smoke run of each without a corpus (the real runs are by hand, see above)
	foreach(_t validator decide)
		add_executable(sroce_fuzz_${_t} fuzz_${_t}.cpp)
		target_compile_options(sroce_fuzz_${_t} PRIVATE -fsanitize=fuzzer,${_fz_san})
		target_link_options(sroce_fuzz_${_t} PRIVATE -fsanitize=fuzzer,${_fz_san})
		target_link_libraries(sroce_fuzz_${_t} PRIVATE sroce_wire_fuzz)
		add_test(NAME wire_fuzz_${_t}_smoke COMMAND sroce_fuzz_${_t} -runs=50000 -seed=1)
	endforeach()
endif()
