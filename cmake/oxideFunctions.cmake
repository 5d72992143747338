# The functions of oxide's CMake package (included by oxideConfig.cmake).
#
#   oxide_enable_cuda()
#   oxide_add_device_library(<name> SOURCES <.cu...> [INCLUDE_DIRS <dir...>] [DEFINES <d...>]
#                            [ARCHS <sm_XX...>] [NVRTC])
#   oxide_add_kernels(<target> PACKAGE <pkg...> [SOURCES <file...>] [LINK <lib|file...>]
#                     [INCLUDE_DIRS <dir...>] [DESTINATION <dir>] [PROJECT_DIR <dir>])
#   oxide_export_header(<name> SOURCE <file.py> MODULE <pkg.mod> [HEADER <file.h>] [ROOT <dir>]
#                       [ARCHS <sm_XX...>])
#
# The archs default to OXIDE_ARCHS, else to the project's [tool.oxide] arch (pyproject.toml in
# OXIDE_PROJECT_DIR, default CMAKE_SOURCE_DIR), so CMake and the Python build agree.
include_guard(GLOBAL)

if(NOT DEFINED OXIDE_PROJECT_DIR)
  set(OXIDE_PROJECT_DIR "${CMAKE_SOURCE_DIR}")
endif()

function(_oxide_archs out explicit)
  if(explicit)
    set(archs ${explicit})
  elseif(OXIDE_ARCHS)
    set(archs ${OXIDE_ARCHS})
  else()
    execute_process(
      COMMAND "${oxide_PYTHON}" -m oxide_build archs "${OXIDE_PROJECT_DIR}"
      OUTPUT_VARIABLE archs OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE result ERROR_VARIABLE error)
    if(NOT result EQUAL 0)
      message(FATAL_ERROR "oxide: could not read the archs of ${OXIDE_PROJECT_DIR}: ${error}"
                          "(pip install 'oxide-cuda[build]' into ${oxide_PYTHON}, or set OXIDE_ARCHS)")
    endif()
  endif()
  set(${out} ${archs} PARENT_SCOPE)
endfunction()

function(_oxide_absolute out)
  set(paths)
  foreach(path IN LISTS ARGN)
    get_filename_component(absolute "${path}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND paths "${absolute}")
  endforeach()
  set(${out} ${paths} PARENT_SCOPE)
endfunction()

# Turns on CMake's CUDA language, or stops with what to install. Without it,
# oxide_add_device_library compiles with NVRTC from the pip wheels (no toolkit needed).
macro(oxide_enable_cuda)
  if(NOT CMAKE_CUDA_COMPILER)
    include(CheckLanguage)
    check_language(CUDA)
  endif()
  if(NOT CMAKE_CUDA_COMPILER)
    execute_process(
      COMMAND "${oxide_PYTHON}" -c "from oxide_build.toolchain.discovery import find_tool; print(find_tool('nvcc') or '')"
      OUTPUT_VARIABLE _oxide_nvcc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_oxide_nvcc)
      set(_oxide_hint "an nvcc was found at ${_oxide_nvcc} (the nvidia-cuda-nvcc wheel?): pass -DCMAKE_CUDA_COMPILER=${_oxide_nvcc}")
    else()
      set(_oxide_hint "install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads) or pip install nvidia-cuda-nvcc, and pass -DCMAKE_CUDA_COMPILER=<its bin/nvcc>")
    endif()
    message(FATAL_ERROR
      "oxide: this project compiles CUDA C++ with CMake's CUDA language, and no CUDA compiler (nvcc) was found: "
      "${_oxide_hint}; or leave CUDA off and let oxide_add_device_library compile with NVRTC from the pip wheels.")
  endif()
  enable_language(CUDA)
endmacro()

# CUDA C++ -> LTO-IR, a device library for oxide_add_kernels(... LINK <name>).
# With CMake's CUDA language on (and no NVRTC option): a static library of nvcc -dc -dlto objects.
# Otherwise: NVRTC through `python -m oxide_build device-lib`, one fatbin of LTO-IR per arch, on
# any machine that has the pip wheels of oxide-cuda[build].
function(oxide_add_device_library name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "NVRTC" "" "SOURCES;INCLUDE_DIRS;DEFINES;ARCHS")
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "oxide_add_device_library(${name}): no SOURCES")
  endif()
  _oxide_archs(archs "${ARG_ARCHS}")
  _oxide_absolute(sources ${ARG_SOURCES})
  _oxide_absolute(include_dirs ${ARG_INCLUDE_DIRS})
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("CUDA" IN_LIST languages AND NOT ARG_NVRTC)
    add_library(${name} STATIC ${sources})
    set(gencode)  # code=lto_XX: LTO-IR per arch (the same as -dlto, which nvcc refuses next to -gencode)
    foreach(arch IN LISTS archs)
      string(REPLACE "sm_" "" number "${arch}")
      list(APPEND gencode "--generate-code=arch=compute_${number},code=lto_${number}")
    endforeach()
    set_target_properties(${name} PROPERTIES
      CUDA_SEPARABLE_COMPILATION ON
      CUDA_RESOLVE_DEVICE_SYMBOLS OFF
      CUDA_ARCHITECTURES OFF
      POSITION_INDEPENDENT_CODE ON
      OXIDE_DEVICE_LIBRARY "static")
    target_compile_options(${name} PRIVATE ${gencode})
    target_include_directories(${name} PRIVATE ${include_dirs})
    target_compile_definitions(${name} PRIVATE ${ARG_DEFINES})
  else()
    set(output "${CMAKE_CURRENT_BINARY_DIR}/${name}.ltoir.fatbin")
    string(REPLACE ";" "," arch_list "${archs}")
    set(flags)
    foreach(dir IN LISTS include_dirs)
      list(APPEND flags "-I${dir}")
    endforeach()
    foreach(define IN LISTS ARG_DEFINES)
      list(APPEND flags "-D${define}")
    endforeach()
    set(depfile)
    if(CMAKE_GENERATOR MATCHES "Ninja" OR NOT CMAKE_VERSION VERSION_LESS 3.20)
      # the headers the sources include: editing one rebuilds the library
      set(depfile DEPFILE "${output}.d")
      list(APPEND flags --depfile "${output}.d")
    endif()
    add_custom_command(
      OUTPUT "${output}"
      COMMAND "${oxide_PYTHON}" -m oxide_build device-lib ${sources} -o "${output}" --arch "${arch_list}" ${flags}
      DEPENDS ${sources}
      ${depfile}
      COMMENT "oxide: NVRTC, ${name} (${arch_list}) -> LTO-IR"
      VERBATIM)
    add_custom_target(${name} ALL DEPENDS "${output}")
    set_target_properties(${name} PROPERTIES OXIDE_DEVICE_LIBRARY "${output}")
  endif()
endfunction()

# Compiles the Python kernel modules of PACKAGE(s) with the project's [tool.oxide], linking the
# LINK device libraries (targets of oxide_add_device_library, static libraries built with -dlto,
# or files), and installs <package>/_oxide/ (manifest + fatbin) to DESTINATION (default: the
# install prefix, which scikit-build-core puts into the wheel). SOURCES: files whose change
# rebuilds (the .py modules, the .cu they name).
function(oxide_add_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "DESTINATION;PROJECT_DIR" "PACKAGE;SOURCES;LINK;INCLUDE_DIRS")
  if(NOT ARG_PACKAGE)
    message(FATAL_ERROR "oxide_add_kernels(${target}): no PACKAGE (the top-level package of the kernel modules)")
  endif()
  if(NOT ARG_PROJECT_DIR)
    set(ARG_PROJECT_DIR "${OXIDE_PROJECT_DIR}")
  endif()
  if(NOT DEFINED ARG_DESTINATION)
    set(ARG_DESTINATION ".")
  endif()
  _oxide_absolute(sources ${ARG_SOURCES})
  _oxide_absolute(include_dirs ${ARG_INCLUDE_DIRS})
  set(arguments)
  foreach(package IN LISTS ARG_PACKAGE)
    list(APPEND arguments --package "${package}")
  endforeach()
  set(depends ${sources} "${ARG_PROJECT_DIR}/pyproject.toml")
  foreach(library IN LISTS ARG_LINK)
    if(TARGET ${library})
      get_target_property(kind ${library} OXIDE_DEVICE_LIBRARY)
      get_target_property(type ${library} TYPE)
      if(kind STREQUAL "static" OR (NOT kind AND type STREQUAL "STATIC_LIBRARY"))
        list(APPEND arguments --link "$<TARGET_FILE:${library}>")
      elseif(kind)
        list(APPEND arguments --link "${kind}")
      else()
        message(FATAL_ERROR "oxide_add_kernels(${target}): LINK ${library} is neither an oxide_add_device_library "
                            "nor a static library (built with nvcc -dc -dlto)")
      endif()
      list(APPEND depends ${library})
    else()
      get_filename_component(file "${library}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      list(APPEND arguments --link "${file}")
      list(APPEND depends "${file}")
    endif()
  endforeach()
  foreach(dir IN LISTS include_dirs)
    list(APPEND arguments -I "${dir}")
  endforeach()
  set(output "${CMAKE_CURRENT_BINARY_DIR}/oxide_${target}")
  add_custom_command(
    OUTPUT "${output}.stamp"
    COMMAND "${CMAKE_COMMAND}" -E rm -rf "${output}"
    COMMAND "${oxide_PYTHON}" -m oxide_build build-kernels "${ARG_PROJECT_DIR}" -o "${output}" ${arguments}
    COMMAND "${CMAKE_COMMAND}" -E touch "${output}.stamp"
    DEPENDS ${depends}
    COMMENT "oxide: compiling the kernels of ${ARG_PACKAGE}"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS "${output}.stamp")
  set_target_properties(${target} PROPERTIES OXIDE_KERNELS_DIR "${output}")
  install(DIRECTORY "${output}/" DESTINATION "${ARG_DESTINATION}")
endfunction()

# The C++ header (and LTO-IR per arch) of the @device(export=...) functions of one module, for
# CUDA C++ callers: sets <name>_HEADER and <name>_INCLUDE_DIR; add_dependencies(<yours> <name>).
function(oxide_export_header name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "SOURCE;MODULE;HEADER;ROOT" "ARCHS")
  if(NOT ARG_SOURCE OR NOT ARG_MODULE)
    message(FATAL_ERROR "oxide_export_header(${name}): SOURCE <file.py> and MODULE <package.module> are required")
  endif()
  get_filename_component(source "${ARG_SOURCE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT ARG_HEADER)
    set(ARG_HEADER "${CMAKE_CURRENT_BINARY_DIR}/${name}/oxide_exports.h")
  endif()
  get_filename_component(header "${ARG_HEADER}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  get_filename_component(include_dir "${header}" DIRECTORY)
  _oxide_archs(archs "${ARG_ARCHS}")
  string(REPLACE ";" "," arch_list "${archs}")
  set(root)
  if(ARG_ROOT)
    get_filename_component(root_dir "${ARG_ROOT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    set(root --root "${root_dir}")
  endif()
  add_custom_command(
    OUTPUT "${header}"
    COMMAND "${oxide_PYTHON}" -m oxide_build compile "${source}" --module "${ARG_MODULE}" ${root}
            --arch "${arch_list}" --emit ltoir --header "${header}" -o "${CMAKE_CURRENT_BINARY_DIR}/${name}"
    DEPENDS "${source}"
    COMMENT "oxide: exports of ${ARG_MODULE} -> ${header}"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS "${header}")
  set(${name}_HEADER "${header}" PARENT_SCOPE)
  set(${name}_INCLUDE_DIR "${include_dir}" PARENT_SCOPE)
endfunction()
