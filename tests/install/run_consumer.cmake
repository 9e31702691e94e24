# Installs the built tapegrad into a scratch prefix, then configures, builds and runs the outside
# consumer project against it. Run by ctest: cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK=...
# [-DCUDA_MODULE=ON] -P. With CUDA_MODULE (an nvcc build) the consumer must link no CUDA library
# (ldd), and with --cuda it must load the installed libtapegrad_cuda.so (TG_CUDA_LIBRARY).
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
if(NOT EXISTS ${WORK}/prefix/include/tapegrad.hpp)
  message(FATAL_ERROR "install did not produce include/tapegrad.hpp")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/build
                        -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCMAKE_BUILD_TYPE=Release
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${WORK}/build/consumer RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer program failed: ${rc}")
endif()
if(CUDA_MODULE)
  file(GLOB module ${WORK}/prefix/lib*/libtapegrad_cuda.so)
  if(NOT module)
    message(FATAL_ERROR "install did not produce lib/libtapegrad_cuda.so")
  endif()
  execute_process(COMMAND ldd ${WORK}/build/consumer OUTPUT_VARIABLE libs RESULT_VARIABLE rc)
  if(rc OR libs MATCHES "cudart|cublas|nccl|tapegrad_cuda")
    message(FATAL_ERROR "the CPU-only consumer links CUDA libraries:\n${libs}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env TG_CUDA_LIBRARY=${module}
                          ${WORK}/build/consumer --cuda
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  message("${out}")
  if(rc OR NOT out MATCHES "cuda devices: [0-9]+")
    message(FATAL_ERROR "the consumer with --cuda failed (${rc}): ${out}")
  endif()
endif()
