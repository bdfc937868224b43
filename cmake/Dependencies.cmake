# Every library comes from Debian's packages (scripts/install-deps installs them).
find_package(Threads REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(PostgreSQL REQUIRED)  # libpq, for the server's shared store
find_package(ZLIB REQUIRED)
find_package(Protobuf REQUIRED)  # the lite runtime and protoc, for pprof
if(BUILD_TESTING)
  find_package(GTest REQUIRED)
endif()

# CUPTI from CUDA's toolkit, for libdormant_cupti.so and its tests: built where the toolkit is
# installed, and left out (saying so) where it is not. The agent's side needs no CUDA.
set(DORMANT_CUDA_ROOT /usr/local/cuda CACHE PATH "Where CUDA's toolkit is installed")
find_path(DORMANT_CUDA_INCLUDE_DIR cupti.h
  PATHS ${DORMANT_CUDA_ROOT}/include ${DORMANT_CUDA_ROOT}/extras/CUPTI/include NO_DEFAULT_PATH)
find_library(DORMANT_CUPTI_LIBRARY NAMES libcupti.so.13 libcupti.so.12 cupti
  PATHS ${DORMANT_CUDA_ROOT}/lib64 ${DORMANT_CUDA_ROOT}/extras/CUPTI/lib64 NO_DEFAULT_PATH)
if(DORMANT_CUDA_INCLUDE_DIR AND DORMANT_CUPTI_LIBRARY AND NOT DORMANT_FUZZ)
  set(DORMANT_CUPTI_FOUND ON)
  get_filename_component(DORMANT_CUPTI_LIBRARY_DIR ${DORMANT_CUPTI_LIBRARY} DIRECTORY)
else()
  set(DORMANT_CUPTI_FOUND OFF)
  message(STATUS "CUPTI not found under ${DORMANT_CUDA_ROOT}: libdormant_cupti.so and its tests are not built")
endif()
