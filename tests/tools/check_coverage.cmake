# tests/tools/check_coverage.cmake — every op docs/ops.md marks differentiable (gradient "yes";
# tests/ops/test_op_table.cpp keeps its rows equal to the public headers' ops) is differentiated by
# a case of `gradcheck --all`, as `gradcheck --list` reports it (OpInfo::covers):
#   cmake -DEXE=path/to/gradcheck -DDOC=docs/ops.md -P check_coverage.cmake
execute_process(COMMAND ${EXE} --list RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --list: exit status ${rc}\n${out}${err}")
endif()
if(NOT out MATCHES "--all differentiates these public ops:([^\n]*)")
  message(FATAL_ERROR "${EXE} --list names no covered ops:\n${out}")
endif()
set(covered "${CMAKE_MATCH_1} ")
file(STRINGS ${DOC} rows REGEX "^\\| `[a-z_0-9:]+` \\|")
list(LENGTH rows n)
if(n LESS 150)
  message(FATAL_ERROR "${DOC}: only ${n} op rows read")
endif()
set(missing "")
set(differentiable 0)
foreach(row IN LISTS rows)
  # | `op` | PyTorch | file | gradient | ...
  if(NOT row MATCHES "^\\| `([a-z_0-9:]+)` \\|[^|]*\\|[^|]*\\| ([a-z]+) \\|")
    message(FATAL_ERROR "${DOC}: cannot read the gradient column of: ${row}")
  endif()
  set(op "${CMAKE_MATCH_1}")
  if(CMAKE_MATCH_2 STREQUAL "yes")
    math(EXPR differentiable "${differentiable} + 1")
    string(FIND "${covered}" " ${op} " at)
    if(at EQUAL -1)
      string(APPEND missing " ${op}")
    endif()
  endif()
endforeach()
if(NOT missing STREQUAL "")
  message(FATAL_ERROR "gradcheck --all differentiates no case of these differentiable ops "
                      "(docs/ops.md):${missing}\nadd a builder to tools/gradcheck (its OpInfo "
                      "names the op, in `covers` when its --op name differs) and a case to the "
                      "--all table (options.cpp)")
endif()
message(STATUS "gradcheck --all covers all ${differentiable} differentiable ops of ${DOC}")
