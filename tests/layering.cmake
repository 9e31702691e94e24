# tests/layering.cmake — STYLE habit 11's include rules, read from the sources' #include lines:
#   cuda/      of the library only ops/kern/ (the neutral kernel codes and list)
#   ops/kern/  nothing of the library but itself
#   autograd/  no ops/, nn/ or examples/ header
#   ops/       no nn/ or examples/ header
#   nn/        not ops' kernel tables (ops/core/kernels.hpp, ops/<family>/cpu/, ops/kern/): tensor-level ops only;
#              no examples/ header
# What it does not judge: system and third-party headers, and includes made by macros.
# Run by ctest: cmake -DROOT=<repository root> -P layering.cmake (tests/layering/ holds a tree
# that breaks each rule once: the check must name every one).

cmake_minimum_required(VERSION 3.25)

# Known crossings that another change of the same issue removes: "<file>|<header>" each. One
# that no longer occurs fails too, so the list cannot outlive its reason.
set(TG_LAYERING_PENDING)

if(NOT ROOT)
  message(FATAL_ERROR "layering.cmake: pass -DROOT=<repository root>")
endif()
set(found 0)
set(used_pending "")

# check(<folder> <forbidden regex> <allowed regex> <why>): every #include "x" or <x> of a source
# under ROOT/<folder> whose x matches forbidden and not allowed is reported.
function(check folder forbidden allowed why)
  file(GLOB_RECURSE files LIST_DIRECTORIES false
       ${ROOT}/${folder}/*.hpp ${ROOT}/${folder}/*.cpp ${ROOT}/${folder}/*.h
       ${ROOT}/${folder}/*.cu ${ROOT}/${folder}/*.cuh ${ROOT}/${folder}/*.inc)
  foreach(f IN LISTS files)
    file(RELATIVE_PATH rel ${ROOT} ${f})
    file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(line IN LISTS lines)
      if(NOT line MATCHES "#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]")
        continue()
      endif()
      set(inc ${CMAKE_MATCH_1})
      if(NOT inc MATCHES "${forbidden}" OR (allowed AND inc MATCHES "${allowed}"))
        continue()
      endif()
      if("${rel}|${inc}" IN_LIST TG_LAYERING_PENDING)
        list(APPEND used_pending "${rel}|${inc}")
        set(used_pending ${used_pending} PARENT_SCOPE)
        continue()
      endif()
      message(SEND_ERROR "layering: ${rel} includes ${inc} (${why})")
      math(EXPR found "${found} + 1")
      set(found ${found} PARENT_SCOPE)
    endforeach()
  endforeach()
endfunction()

check(cuda "^(autograd|ops|nn|examples)/" "^ops/kern/"
      "cuda/ reads only the neutral kernel codes of ops/kern/")
check(ops/kern "^(autograd|ops|nn|cuda|examples)/" "^ops/kern/"
      "ops/kern/ depends on nothing of the library")
check(autograd "^(ops|nn|examples)/" "" "autograd/ never includes ops/ or nn/")
check(ops "^(nn|examples)/" "" "ops/ never includes nn/")
check(nn "^(ops/core/|ops/[^/]+/cpu/|ops/kern/|examples/)" ""
      "nn/ reaches kernels only through tensor-level ops")

foreach(p IN LISTS TG_LAYERING_PENDING)
  if(NOT p IN_LIST used_pending)
    message(SEND_ERROR "layering: the pending crossing ${p} no longer occurs: delete it from "
                       "TG_LAYERING_PENDING in tests/layering.cmake")
    math(EXPR found "${found} + 1")
  endif()
endforeach()
if(found GREATER 0)
  message(FATAL_ERROR "layering: ${found} finding(s) against STYLE habit 11")
endif()
message(STATUS "layering: cuda/, ops/kern/, autograd/, ops/ and nn/ include only what they may")
