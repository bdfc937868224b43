#include "server/storage/target_rows.h"

#include <algorithm>
#include <string>
#include <vector>

namespace dormant::server::storage {
namespace {

// The WHERE of one selector, built from the members it has; values go in as parameters
// (?3, ?4, ... after the service and the freshness cutoff).
struct Conditions {
  std::string sql;
  std::vector<std::string> texts;
  std::optional<int64_t> pid;

  void add_text(std::string_view column, const std::optional<std::string>& value) {
    if (!value) return;
    texts.push_back(*value);
    sql += " AND " + std::string(column) + " = ?" + std::to_string(texts.size() + 2);
  }
};

Result<void> collect(Statement& select, const Conditions& where, bool with_pids,
                     TargetHosts& hosts) {
  int index = 3;
  for (const std::string& text : where.texts) select.bind(index++, text);
  if (where.pid) select.bind(index, *where.pid);
  // A host's rows mostly come one after another: its entry is looked up once for them.
  auto host = hosts.end();
  for (;;) {
    auto row = select.step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    std::string_view hostname = select.text_view(0);
    if (host == hosts.end() || host->first != hostname) {
      host = hosts.try_emplace(std::string(hostname)).first;
    }
    if (!with_pids) {
      host->second = std::nullopt;
      continue;
    }
    if (!host->second) host->second = PidList{};
    host->second->push_back(static_cast<pid_t>(select.int64(1)));
  }
  select.reset();
  return ok();
}

}  // namespace

Result<TargetHosts> resolve_targets(Database& db, const TargetQuery& query, TimePoint now) {
  TargetHosts hosts;
  std::vector<Selector> selectors = query.selectors;
  // Without selectors a service's scope is all of it; a narrower one picks nothing.
  if (selectors.empty() && query.scope == TargetScope::kService) selectors.push_back({});
  bool whole_hosts = query.scope == TargetScope::kService || query.scope == TargetScope::kHost;
  for (const Selector& selector : selectors) {
    if (selector.service_name && *selector.service_name != query.service_name) continue;
    Conditions where;
    if (query.scope == TargetScope::kHost && !selector.hostname && !selector.ip_address) continue;
    if (query.scope != TargetScope::kService) {
      where.add_text("h.hostname", selector.hostname);
      where.add_text("h.ip_address", selector.ip_address);
    }
    if (!whole_hosts) {
      where.add_text("c.namespace", selector.pod_namespace);
      where.add_text("c.workload_name", selector.workload_name);
      where.add_text("c.workload_kind", selector.workload_kind);
      where.add_text("c.pod_name", selector.pod_name);
      where.add_text("c.container_name", selector.container_name);
      where.add_text("p.process_name", selector.process_name);
      if (selector.pid) {
        where.pid = selector.pid;
        where.sql += " AND p.pid = ?" + std::to_string(where.texts.size() + 3);
      }
    }
    // SQLite joins in the order written after CROSS JOIN (PostgreSQL plans it freely): from the
    // processes when the selector names one, else from the containers, each through the index
    // of what the selector names; hosts by their key. Without this SQLite starts at every
    // process of the service.
    bool by_process = selector.pid || selector.process_name;
    std::string join =
        by_process ? "FROM host_processes p CROSS JOIN host_containers c CROSS JOIN hosts h "
                     "WHERE p.service_name = ?1 AND "
                   : "FROM host_containers c CROSS JOIN host_processes p CROSS JOIN hosts h "
                     "WHERE c.service_name = ?1 AND ";
    std::string sql = whole_hosts
                          ? "SELECT h.hostname FROM hosts h WHERE h.service_name = ?1 AND "
                            "h.last_heartbeat_ms >= ?2" +
                                where.sql
                          : "SELECT h.hostname, p.pid " + join +
                                "c.hostname = p.hostname AND c.service_name = p.service_name AND "
                                "c.position = p.position AND h.hostname = c.hostname AND "
                                "h.service_name = c.service_name AND h.last_heartbeat_ms >= ?2" +
                                where.sql;
    auto select = db.prepare(sql);
    if (!select) return std::move(select).take_error();
    select->bind(1, query.service_name).bind(2, to_unix_ms(now - query.active_window));
    if (auto done = collect(*select, where, !whole_hosts, hosts); !done) {
      return std::move(done).take_error();
    }
  }
  for (auto& [hostname, pids] : hosts) {
    if (!pids) continue;
    std::sort(pids->begin(), pids->end());
    pids->erase(std::unique(pids->begin(), pids->end()), pids->end());
  }
  return hosts;
}

}  // namespace dormant::server::storage
