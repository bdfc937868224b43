# Language level, warnings, sanitizers and compiler cache for every target of the project.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

# The compiler cache stays where ccache keeps it (~/.cache/ccache unless CCACHE_DIR says otherwise),
# outside the tree, and names files relative to the source folder: a fresh clone in another folder
# (CI's) finds what an earlier build compiled.
find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(dormant_ccache ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=true)
  set(CMAKE_C_COMPILER_LAUNCHER ${dormant_ccache} ${CCACHE_PROGRAM})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${dormant_ccache} ${CCACHE_PROGRAM})
endif()

add_compile_options(-Wall -Wextra -fno-omit-frame-pointer)
# The profiler module is a shared object built from the same static libraries as the programs.
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
# g++ marks the static locals of inline functions and templates STB_GNU_UNIQUE, and a library
# holding such a symbol can never be unloaded: the profiler module must be.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fno-gnu-unique>)
endif()
# g++ 12 at -O2 warns of an overlap in its own std::string code wherever a literal is prepended to
# a temporary string ("a" + std::move(b)): a false positive of g++ 12 (GCC bug 105651) that
# reads as a memory error to whoever builds. The sanitized builds (-O1) do not see it.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13
   AND NOT DORMANT_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()

if(DORMANT_SANITIZE)
  list(JOIN DORMANT_SANITIZE "," dormant_sanitizers)
  add_compile_options(-fsanitize=${dormant_sanitizers} -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${dormant_sanitizers})
  # Sanitized builds exist to run the tests: -O1, as AddressSanitizer advises, and line tables
  # only (all its reports need) build in less than half the time of -O2 -g.
  add_compile_options(-O1 -g1)
endif()

if(DORMANT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DORMANT_FUZZ needs clang (CC=clang CXX=clang++): libFuzzer is part of it")
  endif()
  # Coverage feedback from every library the targets call, not only from the targets themselves.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
