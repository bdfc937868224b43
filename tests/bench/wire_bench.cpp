// What reading and writing the wire protocol's messages costs: a heartbeat with its inventory (the
// fast reader, and the document reader it falls back to), its body as the agent writes it, a
// heartbeat answer with a command, a profiling request and a command's combined_config. Google
// Benchmark; prints figures, asserts nothing.
//
//   wire_bench [--benchmark_repetitions=5 --benchmark_report_aggregates_only=true]
#include <string>

#include <benchmark/benchmark.h>

#include "common/json_text.h"
#include "wire/command_config.h"
#include "wire/json_fields.h"
#include "wire/plain_heartbeat.h"
#include "wire/profiling_request.h"
#include "wire/protocol.h"

namespace {

namespace wire = dormant::wire;
using nlohmann::json;

// A host's heartbeat with `containers` containers of 5 processes each.
wire::HeartbeatRequest heartbeat(int containers) {
  wire::HeartbeatRequest beat;
  beat.ip_address = "10.1.2.3";
  beat.hostname = "web-017.prod.example.com";
  beat.service_name = "checkout";
  beat.last_command_id = "0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e11";
  beat.timestamp = "2026-12-06T21:00:00";
  beat.perf_supported_events = {"cycles", "instructions"};
  beat.agent_version = "1.53.1";
  beat.run_mode = "k8s";
  for (int c = 0; c < containers; ++c) {
    wire::ReportedContainer container;
    container.container_id = "c0ffee" + std::to_string(c) + std::string(50, 'a');
    container.container_name = "app-" + std::to_string(c);
    container.runtime = "containerd";
    container.pod_namespace = "shop";
    container.pod_name = "checkout-7d9f-" + std::to_string(c);
    container.workload_name = "checkout";
    container.workload_kind = "Deployment";
    for (int p = 0; p < 5; ++p) {
      container.processes.push_back({1000 + c * 5 + p, p == 0 ? "java" : "sidecar"});
    }
    beat.containers.push_back(std::move(container));
  }
  return beat;
}

void ReadHeartbeat(benchmark::State& state) {
  std::string text = wire::heartbeat_body_text(heartbeat(static_cast<int>(state.range(0))));
  for (auto _ : state) benchmark::DoNotOptimize(wire::parse_heartbeat_text(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(ReadHeartbeat)->Arg(0)->Arg(100);

// The same through a document, as a list of another shape is read.
void ReadHeartbeatDocument(benchmark::State& state) {
  std::string text = wire::heartbeat_body_text(heartbeat(static_cast<int>(state.range(0))));
  for (auto _ : state) {
    auto body = wire::parse_json_text(text, "heartbeat");
    benchmark::DoNotOptimize(wire::parse_heartbeat_request(*body));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(ReadHeartbeatDocument)->Arg(0)->Arg(100);

void WriteHeartbeat(benchmark::State& state) {
  wire::HeartbeatRequest beat = heartbeat(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(wire::heartbeat_body_text(beat));
}
BENCHMARK(WriteHeartbeat)->Arg(0)->Arg(100);

const json& command_answer() {
  static const json kAnswer = json::parse(R"({"success": true, "message": "Heartbeat received",
      "command_id": "0b5e7c5a-3f7e-4a43-9a2c-6f0d2c1b9e11",
      "profiling_command": {"command_type": "start", "combined_config": {
        "duration": 60, "frequency": 11, "continuous": true, "profiling_mode": "cpu",
        "pids": [1, 2, 3], "profiler_configs": {"perf": "enabled_restricted", "ebpf": "enabled"},
        "max_processes": 100}}})");
  return kAnswer;
}

void ReadHeartbeatAnswer(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(wire::parse_heartbeat_response(command_answer()));
}
BENCHMARK(ReadHeartbeatAnswer);

void WriteHeartbeatAnswer(benchmark::State& state) {
  auto answer = wire::parse_heartbeat_response(command_answer());
  for (auto _ : state) benchmark::DoNotOptimize(dormant::json_text(wire::to_json(*answer)));
}
BENCHMARK(WriteHeartbeatAnswer);

void ReadCombinedConfig(benchmark::State& state) {
  const json& config = command_answer()["profiling_command"]["combined_config"];
  for (auto _ : state) benchmark::DoNotOptimize(wire::parse_combined_config(config, "start"));
}
BENCHMARK(ReadCombinedConfig);

void ReadProfilingRequest(benchmark::State& state) {
  json body = json::parse(R"({"service_name": "checkout", "request_type": "start",
      "duration": 60, "frequency": 11, "profiling_mode": "cpu", "target_scope": "pod",
      "target_hosts": {"web-01": null, "web-02": [1, 2]},
      "target_entities": [{"serviceName": "checkout", "podName": "checkout-7d9f-1"}],
      "additional_args": {"max_processes": 100}})");
  for (auto _ : state) benchmark::DoNotOptimize(wire::parse_profiling_request(body));
}
BENCHMARK(ReadProfilingRequest);

}  // namespace

BENCHMARK_MAIN();
