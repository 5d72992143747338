# oxide's CMake package: CUDA kernels written in Python, linked with CUDA C++ through LTO-IR.
#
#   find_package(Python COMPONENTS Interpreter REQUIRED)
#   execute_process(COMMAND "${Python_EXECUTABLE}" -m oxide --cmake-dir
#                   OUTPUT_VARIABLE oxide_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
#   find_package(oxide CONFIG REQUIRED)
#
# Under scikit-build-core with build-backend = "oxide_build", oxide_DIR is found the same way
# (oxide-cuda is a build requirement). Defines:
#   oxide_VERSION, oxide_INCLUDE_DIR, oxide_PYTHON (the interpreter that runs oxide)
#   oxide::headers                      the C++ launch API (#include <oxide/launch.hpp>)
#   oxide_add_device_library(), oxide_add_kernels(), oxide_export_header(),
#   oxide_enable_cuda()                 (oxideFunctions.cmake documents each)
include_guard(GLOBAL)

get_filename_component(oxide_CMAKE_DIR "${CMAKE_CURRENT_LIST_FILE}" DIRECTORY)

if(DEFINED Python_EXECUTABLE AND EXISTS "${Python_EXECUTABLE}")
  set(oxide_PYTHON "${Python_EXECUTABLE}")
elseif(DEFINED Python3_EXECUTABLE AND EXISTS "${Python3_EXECUTABLE}")
  set(oxide_PYTHON "${Python3_EXECUTABLE}")
else()
  find_package(Python COMPONENTS Interpreter REQUIRED)
  set(oxide_PYTHON "${Python_EXECUTABLE}")
endif()

execute_process(
  COMMAND "${oxide_PYTHON}" -m oxide --include-dir
  OUTPUT_VARIABLE oxide_INCLUDE_DIR
  OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _oxide_result
  ERROR_VARIABLE _oxide_error)
if(NOT _oxide_result EQUAL 0)
  message(FATAL_ERROR
    "oxide: '${oxide_PYTHON} -m oxide --include-dir' failed (${_oxide_error}). "
    "Install oxide into that interpreter: pip install 'oxide-cuda[build]'")
endif()

include("${oxide_CMAKE_DIR}/oxideConfigVersion.cmake")
set(oxide_VERSION "${PACKAGE_VERSION}")

if(NOT TARGET oxide::headers)
  add_library(oxide::headers INTERFACE IMPORTED)
  set_target_properties(oxide::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${oxide_INCLUDE_DIR}")
  if(CMAKE_DL_LIBS)
    # the launch API opens libcuda with dlopen: no CUDA toolkit at build time
    set_property(TARGET oxide::headers PROPERTY INTERFACE_LINK_LIBRARIES "${CMAKE_DL_LIBS}")
  endif()
endif()

include("${oxide_CMAKE_DIR}/oxideFunctions.cmake")
set(oxide_FOUND TRUE)
