# tests/ops/avx512_symbols.cmake — the AVX-512 kernel objects (ops/<family>/cpu/*_avx512.cpp) define no
# weak symbol that another object could define too, the kind the linker merges: an inline function
# compiled there with AVX-512 flags could otherwise be the copy the rest of the library calls, and
# fault on a CPU without AVX-512 (ops/softmax/cpu/softmax_rows.hpp, docs/cpu-kernels.md). Allowed: weak
# symbols whose name carries the AVX-512 architecture (xsimd's templates on xsimd::avx512bw: only
# AVX-512 code can define or call them), and the exception-personality reference every C++ object
# carries.
# Run by ctest: cmake -DNM=<nm> -DOBJECTS=<list> -P avx512_symbols.cmake
set(checked 0)
foreach(obj IN LISTS OBJECTS)
  if(NOT obj MATCHES "_avx512\\.cpp\\.o$")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  execute_process(COMMAND ${NM} -C ${obj} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${obj}")
  endif()
  string(REPLACE "\n" ";" lines "${syms}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-f]* [WVu] " AND NOT line MATCHES "DW\\.ref\\.__gxx_personality_v0"
       AND NOT line MATCHES "avx512")
      message(FATAL_ERROR "${obj}: weak symbol (the linker may hand it to code outside the AVX-512 path): ${line}")
    endif()
  endforeach()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no *_avx512.cpp object among OBJECTS")
endif()
message(STATUS "${checked} AVX-512 objects: no weak symbols")
