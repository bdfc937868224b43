# Every library includes its headers as "folder/file.h" from the source root, but no library sees
# the whole tree: each gets an include root of its own, a directory in the build tree holding
# only a link to its folder. What links a library PUBLIC (or itself) sees that folder; anything
# else fails to compile with "No such file or directory". The finer arrows (which folder may
# include which) are checked by tests/unit/include_layers_test.cpp.
function(dormant_include_root target folder)
  set(root ${CMAKE_BINARY_DIR}/include_roots/${target})
  cmake_path(GET folder PARENT_PATH parent)
  file(MAKE_DIRECTORY ${root}/${parent})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${root}/${folder} SYMBOLIC)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE ${root})
  else()
    target_include_directories(${target} PUBLIC ${root})
  endif()
endfunction()
