# tests/dist/fault/run_fault.cmake — runs the fault program under mpirun and checks the job
# fails (non-zero), says why (EXPECT, a regex over stdout + stderr) and ends within LIMIT s.
# -DMPIRUN="mpirun;--allow-run-as-root;..." -DPROG=... -DMODE=kill|throw|hang -DEXPECT=... -DLIMIT=s
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${MPIRUN} -np 2 ${PROG} ${MODE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
string(TIMESTAMP t1 "%s")
math(EXPR elapsed "${t1} - ${t0}")
message("mode ${MODE}: exit ${rc} after ${elapsed} s\n--- output ---\n${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the job exited 0 although rank 1 failed")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "no message matching '${EXPECT}'")
endif()
if(elapsed GREATER ${LIMIT})
  message(FATAL_ERROR "the job took ${elapsed} s to stop (limit ${LIMIT} s)")
endif()
