# Install rules and the two Debian packages (scripts/package runs cpack):
#   dormant-agent   /usr/lib/dormant/{dormant-agent,dormant-pprof,libdormant_profilers.so,
#                   libdormant_cupti.so},
#                   /usr/bin/dormant-agent -> ../lib/dormant/dormant-agent (the agent finds its
#                   module beside the file /proc/self/exe names, so beside the link's target),
#                   its unit, /etc/dormant/agent.conf
#   dormant-server  /usr/bin/dormant-server, its unit, /etc/dormant/server.conf
# Install prefix /usr: /etc and /lib/systemd/system are given absolute, as Debian 12 has them.
set(DORMANT_PACKAGE_MAINTAINER "Dormant maintainers <dormant@example.org>" CACHE STRING
  "The packages' Maintainer: who builds them for the fleet")
set(packaging_dir ${PROJECT_SOURCE_DIR}/packaging)
set(doc_files ${PROJECT_SOURCE_DIR}/README.md ${packaging_dir}/copyright)

install(TARGETS dormant-agent dormant-pprof RUNTIME DESTINATION lib/dormant COMPONENT agent)
install(TARGETS dormant_profiler_module LIBRARY DESTINATION lib/dormant COMPONENT agent
  PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
if(TARGET dormant_cupti)
  install(TARGETS dormant_cupti LIBRARY DESTINATION lib/dormant COMPONENT agent
    PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  # Its RUNPATH names CUDA's library folder, where it looks for libcupti when the program has not
  # loaded one, outside the loader's own path.
  file(WRITE ${PROJECT_BINARY_DIR}/packaging/lintian/dormant-agent
    "dormant-agent: custom-library-search-path RUNPATH ${DORMANT_CUPTI_LIBRARY_DIR} "
    "[usr/lib/dormant/libdormant_cupti.so]\n")
  install(FILES ${PROJECT_BINARY_DIR}/packaging/lintian/dormant-agent
    DESTINATION share/lintian/overrides COMPONENT agent)
endif()
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/packaging/bin)
file(CREATE_LINK ../lib/dormant/dormant-agent ${PROJECT_BINARY_DIR}/packaging/bin/dormant-agent
  SYMBOLIC)
install(FILES ${PROJECT_BINARY_DIR}/packaging/bin/dormant-agent DESTINATION bin COMPONENT agent)
install(FILES ${PROJECT_SOURCE_DIR}/scripts/systemd/dormant-agent.service
  DESTINATION /lib/systemd/system COMPONENT agent)
# 0600: it may name the token, and the agent refuses a --config file others may read.
install(FILES ${packaging_dir}/agent.conf DESTINATION /etc/dormant COMPONENT agent
  PERMISSIONS OWNER_READ OWNER_WRITE)

install(TARGETS dormant-server RUNTIME DESTINATION bin COMPONENT server)
install(FILES ${PROJECT_SOURCE_DIR}/scripts/systemd/dormant-server.service
  DESTINATION /lib/systemd/system COMPONENT server)
install(FILES ${packaging_dir}/server.conf DESTINATION /etc/dormant COMPONENT server)

# Debian wants a copyright file and a changelog (gzip -9n) in each package's doc folder.
string(TIMESTAMP package_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
foreach(component agent server)
  set(package dormant-${component})
  configure_file(${packaging_dir}/changelog.in ${PROJECT_BINARY_DIR}/packaging/${package}/changelog
    @ONLY)
  execute_process(COMMAND gzip -9nf ${PROJECT_BINARY_DIR}/packaging/${package}/changelog
    COMMAND_ERROR_IS_FATAL ANY)
  install(FILES ${doc_files} ${PROJECT_BINARY_DIR}/packaging/${package}/changelog.gz
    DESTINATION share/doc/${package} COMPONENT ${component})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL agent server)
set(CPACK_PACKAGE_CONTACT ${DORMANT_PACKAGE_MAINTAINER})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME dormant-agent)
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS linux-perf)
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS adduser)
set(CPACK_COMPONENT_AGENT_DESCRIPTION "heartbeat-controlled profiling agent
dormant-agent sits idle on every host and polls its control server. Only when
a start command arrives does it load its profilers (perf or an eBPF CPU
sampler, and a CUDA GPU profiler); on stop it unloads them and is back to its
idle footprint.")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA ${packaging_dir}/dormant-agent/conffiles
  ${packaging_dir}/dormant-agent/postinst ${packaging_dir}/dormant-agent/prerm
  ${packaging_dir}/dormant-agent/postrm)

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME dormant-server)
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS adduser)
set(CPACK_COMPONENT_SERVER_DESCRIPTION "control server for Dormant profiling agents
dormant-server speaks gProfiler's Performance Studio API: profiling requests,
per-host commands, heartbeats, profile uploads and flamegraphs, on SQLite or
PostgreSQL.")
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA ${packaging_dir}/dormant-server/conffiles
  ${packaging_dir}/dormant-server/postinst ${packaging_dir}/dormant-server/prerm
  ${packaging_dir}/dormant-server/postrm)

include(CPack)
