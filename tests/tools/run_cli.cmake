# tests/tools/run_cli.cmake — runs one command line of a tool and checks its exit status and
# output: cmake -DEXE=path -DARGS="--op relu ..." -DRC=0 -DEXPECT=regex [-DREJECT=regex] -P this.
# EXPECT (and REJECT) are matched against stdout and stderr together.
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${EXE} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "${EXE} ${ARGS}\nexit status ${rc}, expected ${RC}; output:\n${all}")
endif()
if(DEFINED EXPECT AND NOT all MATCHES "${EXPECT}")
  message(FATAL_ERROR "${EXE} ${ARGS}\noutput does not match '${EXPECT}':\n${all}")
endif()
if(DEFINED REJECT AND all MATCHES "${REJECT}")
  message(FATAL_ERROR "${EXE} ${ARGS}\noutput matches '${REJECT}', which it must not:\n${all}")
endif()
message(STATUS "ok (exit ${rc}):\n${all}")
