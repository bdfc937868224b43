// The merged, differential and per-profile flamegraph endpoints of a real dormant-server: profiles
// uploaded as agents upload them, read back by curl as SVG, collapsed text and pprof.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "server_fixture.h"
#include "tests/support/pprof_text.h"

#include "common/iso_time.h"
#include "common/subprocess.h"
#include "common/text.h"
#include "profile/collapsed.h"

namespace dormant::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using Answer = FullReply;

// `minutes` (and `seconds`) after the start of the hour two hours ago, as "…T10:05:00Z": recent
// enough for every rollup, on whole minutes. Merges read the day before now unless told.
std::string recent(int minutes, int seconds = 0) {
  using std::chrono::hours;
  static const auto base = std::chrono::floor<hours>(std::chrono::system_clock::now()) - hours(2);
  return iso_utc(base + std::chrono::minutes(minutes) + std::chrono::seconds(seconds));
}

class FlamegraphApiTest : public ServerFixture {
 protected:
  FlamegraphApiTest() : ServerFixture("dormant-flamegraph-it-") {}

  // Uploads a profile of `service` from `hostname` covering [start, end] (ISO times), its header
  // `more` added.
  void upload(const std::string& service, const std::string& hostname, const std::string& stacks,
              const std::string& start = recent(0), const std::string& end = recent(1),
              const json& more = json::object()) {
    HttpReply reply = upload_reply(service, hostname, stacks, start, end, more);
    ASSERT_EQ(reply.status, 200) << reply.body;
  }

  HttpReply upload_reply(const std::string& service, const std::string& hostname,
                         const std::string& stacks, const std::string& start,
                         const std::string& end, const json& more = json::object()) {
    std::string collapsed = collapsed_profile(hostname, stacks);
    json header = json::parse(collapsed.substr(1, collapsed.find('\n') - 1));
    header["metadata"]["run_arguments"]["frequency"] = 11;
    header.update(more, /*merge_objects=*/true);
    collapsed = "# " + header.dump() + collapsed.substr(collapsed.find('\n'));
    json body = upload_body(hostname, collapsed);
    body["start_time"] = start;
    body["end_time"] = end;
    HttpReply reply = server_->post_upload(service, body, kToken);
    return reply;
  }

  Answer get(const std::string& path) {
    fs::path headers = root_ / "headers";
    fs::path body = root_ / "body";
    HttpReply reply =
        server_->curl({"-D", headers.string(), "-o", body.string(), server_->url(path)});
    return full_reply(reply.status, headers, body);
  }

  // Every stack of a collapsed answer as "container;comm;frames" → count.
  static std::map<std::string, uint64_t> stacks_of(const std::string& collapsed,
                                                   json* header = nullptr) {
    auto parsed = profile::read_collapsed(collapsed);
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message()) << collapsed;
    std::map<std::string, uint64_t> stacks;
    if (!parsed) return stacks;
    if (header) *header = parsed->header;
    parsed->stacks.for_each([&](const profile::StackView& stack) {
      std::string key = std::string(stack.container) + ";" + std::string(stack.comm);
      for (auto id : stack.frame_ids) key += ";" + std::string(parsed->stacks.string(id));
      stacks[key] += stack.count;
    });
    return stacks;
  }
};

constexpr const char* kWeb01 =
    "0;;nginx;main;handle;parse 5\n"
    "0;;swapper/0;secondary_startup_64_[k];do_idle_[k] 90\n"
    "0;box;app;main;work 3\n";
constexpr const char* kWeb02 =
    "0;;nginx;main;handle;parse 2\n"
    "0;;nginx;main;handle;write 4\n"
    "0;;kworker;worker_thread_[k];cpuidle_enter_[k] 10\n";

TEST_F(FlamegraphApiTest, MergesEveryProfileOfAServiceWithoutTheIdleTask) {
  start();
  upload("web", "web-01", kWeb01);
  upload("web", "web-02", kWeb02);
  upload("db", "db-01", "0;;postgres;main;exec 50\n");

  Answer merged = get("/api/flamegraph?service=web&format=collapsed");
  ASSERT_EQ(merged.status, 200) << merged.body;
  json header;
  EXPECT_EQ(
      stacks_of(merged.body, &header),
      (std::map<std::string, uint64_t>{
          {";nginx;main;handle;parse", 7}, {";nginx;main;handle;write", 4}, {";app;main;work", 3}}))
      << "merged over hosts and containers";
  EXPECT_EQ(header["merge"]["profiles"], 2);
  EXPECT_EQ(header["merge"]["idle_samples_left_out"], 100);
  EXPECT_EQ(header["merge"]["hosts"], json::array({"web-01", "web-02"}));
  EXPECT_EQ(merged.headers["x-dormant-profiles"], "2");
  EXPECT_EQ(merged.headers["x-dormant-idle-samples-left-out"], "100");

  Answer with_idle = get("/api/flamegraph?service=web&format=collapsed&idle=1");
  auto all = stacks_of(with_idle.body);
  EXPECT_EQ(all[";swapper/0;secondary_startup_64_[k];do_idle_[k]"], 90u);
  EXPECT_EQ(all[";kworker;worker_thread_[k];cpuidle_enter_[k]"], 10u);
  EXPECT_EQ(all.size(), 5u);
}

TEST_F(FlamegraphApiTest, HostContainerAndTimeRangeSelect) {
  start();
  upload("web", "web-01", kWeb01, recent(0), recent(1));
  upload("web", "web-02", kWeb02, recent(60), recent(61));

  EXPECT_EQ(stacks_of(get("/api/flamegraph?service=web&hostname=web-02&format=collapsed").body),
            (std::map<std::string, uint64_t>{{";nginx;main;handle;parse", 2},
                                             {";nginx;main;handle;write", 4}}));
  EXPECT_EQ(stacks_of(get("/api/flamegraph?service=web&container=box&format=collapsed").body),
            (std::map<std::string, uint64_t>{{";app;main;work", 3}}));
  Answer later = get("/api/flamegraph?service=web&since=" + recent(30) + "&until=" + recent(90) +
                     "&format=collapsed");
  EXPECT_EQ(stacks_of(later.body),
            (std::map<std::string, uint64_t>{{";nginx;main;handle;parse", 2},
                                             {";nginx;main;handle;write", 4}}));
  EXPECT_EQ(later.headers["x-dormant-range"], recent(30) + "/" + recent(90));
  // A range is read in the whole minutes it touches: 00:30 to 01:10 reads 00:00 to 02:00, which
  // holds the profile that starts at 00:00, and says so.
  Answer touched = get("/api/flamegraph?service=web&since=" + recent(0, 30) +
                       "&until=" + recent(1, 10) + "&format=collapsed");
  EXPECT_EQ(stacks_of(touched.body)[";nginx;main;handle;parse"], 5u);
  EXPECT_EQ(touched.headers["x-dormant-range"], recent(0) + "/" + recent(2));
  Answer limited = get("/api/flamegraph?service=web&limit=1&format=collapsed");
  EXPECT_EQ(limited.status, 400);
  EXPECT_NE(limited.body.find("narrow it with since and until"), std::string::npos) << limited.body;
}

// The profiles list says what each upload holds: its samples, its idle task's, and the CPU time
// the others stand for at its frequency (11 Hz here), GPU samples apart.
TEST_F(FlamegraphApiTest, TheProfilesListCountsSamplesAndCpuTime) {
  start();
  upload("web", "web-01", std::string(kWeb01) + "0;;app;[GPU 0];kernel 4\n");
  json allocation = {{"metadata", {{"profiling_mode", "allocation"}}}};
  upload("mem", "web-01", "0;;app;malloc 4000\n", recent(0), recent(1), allocation);

  Answer listed = get("/api/profiles?service=web");
  ASSERT_EQ(listed.status, 200) << listed.body;
  json profile = json::parse(listed.body)["profiles"][0];
  EXPECT_EQ(profile["samples"], 5 + 90 + 3 + 4);
  EXPECT_EQ(profile["idle_samples"], 90);
  EXPECT_NEAR(profile["cpu_seconds"].get<double>(), (5.0 + 3.0) / 11.0, 1e-9);
  json counted = json::parse(get("/api/profiles?service=mem").body)["profiles"][0];
  EXPECT_EQ(counted["samples"], 4000);
  EXPECT_TRUE(counted["cpu_seconds"].is_null()) << "allocations are not CPU time: " << counted;
}

// A Kubernetes container's pod and namespace, read from its name (ours and dockershim's here).
TEST_F(FlamegraphApiTest, PodsAndNamespacesSelect) {
  start();
  upload("web", "node-1",
         "0;shop/web-7d9f8b6c5-x2x9k/app;java;Main.run_[j] 4\n"
         "0;k8s_db_pg-0_data_0f1e_3;postgres;exec 6\n"
         "0;;nginx;main 1\n");
  EXPECT_EQ(
      stacks_of(get("/api/flamegraph?service=web&pod=web-7d9f8b6c5-x2x9k&format=collapsed").body),
      (std::map<std::string, uint64_t>{{";java;Main.run_[j]", 4}}));
  EXPECT_EQ(stacks_of(get("/api/flamegraph?service=web&namespace=data&format=collapsed").body),
            (std::map<std::string, uint64_t>{{";postgres;exec", 6}}));
  Answer both = get("/api/flamegraph?service=web&namespace=shop&pod=pg-0&format=collapsed");
  EXPECT_EQ(both.status, 404) << "every label must hold: " << both.body;
  Answer drawn = get("/api/flamegraph?service=web&namespace=shop");
  ASSERT_EQ(drawn.status, 200) << drawn.body;
  EXPECT_NE(drawn.body.find("web in namespace shop"), std::string::npos);

  const std::string range = "?serviceName=web&startTime=" + recent(0) + "&endTime=" + recent(10);
  Answer pods = get("/api/v1/filters/tags/PodName" + range);
  ASSERT_EQ(pods.status, 200) << pods.body;
  EXPECT_EQ(json::parse(pods.body), json::parse(R"([{"name":"pg-0","samples":"6"},
                                                   {"name":"web-7d9f8b6c5-x2x9k","samples":"4"}])"));
  Answer namespaces = get("/api/v1/filters/tags/Namespace" + range);
  EXPECT_EQ(json::parse(namespaces.body), json::parse(R"([{"name":"data","samples":"6"},
                                                         {"name":"shop","samples":"4"}])"));
}

// Issue 43: a service no agent spoke for, a range that misses the profiles, an inverted or empty
// range answered 200 with an empty picture; each is refused with the reason.
TEST_F(FlamegraphApiTest, AMergeOfNothingSaysWhy) {
  start();
  upload("web", "web-01", kWeb01, recent(0), recent(1));
  Answer unknown = get("/api/flamegraph?service=nobody");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_NE(unknown.body.find("service 'nobody' is unknown: no agent has sent a heartbeat or a "
                              "profile under that name (services: 'web')"),
            std::string::npos)
      << unknown.body;
  Answer elsewhere =
      get("/api/flamegraph?service=web&since=" + recent(30) + "&until=" + recent(40));
  EXPECT_EQ(elsewhere.status, 404);
  EXPECT_NE(elsewhere.body.find("no profiles of 'web', from " + recent(30) + "Z to " + recent(40) +
                                "Z; those there are span " + recent(0) + "Z to " + recent(1) + "Z"),
            std::string::npos)
      << elsewhere.body;
  Answer filtered = get("/api/flamegraph?service=web&hostname=web-09&format=collapsed");
  EXPECT_EQ(filtered.status, 404);
  EXPECT_NE(filtered.body.find("that match the filter"), std::string::npos) << filtered.body;
  Answer inverted = get("/api/flamegraph?service=web&since=" + recent(40) + "&until=" + recent(30));
  EXPECT_EQ(inverted.status, 400);
  EXPECT_NE(inverted.body.find("until (" + recent(30) + "Z) is before since (" + recent(40) +
                               "Z): the range is inverted"),
            std::string::npos)
      << inverted.body;
  Answer empty = get("/api/flamegraph?service=web&since=" + recent(30) + "&until=" + recent(30));
  EXPECT_EQ(empty.status, 400);
  EXPECT_NE(empty.body.find("the range is empty"), std::string::npos) << empty.body;
}

TEST_F(FlamegraphApiTest, TheSvgIsValidSaysWhatWasLeftOutAndCarriesItsPolicy) {
  start();
  upload("web", "web-01", kWeb01);
  Answer svg = get("/api/flamegraph?service=web");
  ASSERT_EQ(svg.status, 200) << svg.body;
  EXPECT_EQ(svg.headers["content-type"], "image/svg+xml");
  EXPECT_EQ(svg.headers["x-content-type-options"], "nosniff");
  const std::string policy = svg.headers["content-security-policy"];
  EXPECT_NE(policy.find("default-src 'none'"), std::string::npos) << policy;
  size_t nonce_at = policy.find("'nonce-");
  ASSERT_NE(nonce_at, std::string::npos) << policy;
  std::string nonce = policy.substr(nonce_at + 7, policy.find('\'', nonce_at + 7) - nonce_at - 7);
  EXPECT_NE(svg.body.find("<script type=\"text/ecmascript\" nonce=\"" + nonce + "\">"),
            std::string::npos);
  EXPECT_NE(svg.body.find("90 idle samples left out (idle=1 keeps them)"), std::string::npos);
  EXPECT_NE(get("/api/flamegraph?service=web").headers["content-security-policy"], policy)
      << "a nonce per response";
  fs::path file = root_ / "merged.svg";
  std::ofstream(file) << svg.body;
  auto lint =
      run_command({"xmllint", "--noout", file.string()}, deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(lint.ok());
  EXPECT_TRUE(lint->status.success()) << lint->stderr_text;
}

TEST_F(FlamegraphApiTest, MergesAndProfilesExportAsPprofThatProtocReads) {
  start();
  upload("web", "web-01", kWeb01);
  upload("web", "web-02", kWeb02);
  Answer merged = get("/api/flamegraph?service=web&format=pprof");
  ASSERT_EQ(merged.status, 200) << merged.body;
  EXPECT_EQ(merged.headers["content-disposition"], "attachment; filename=\"web.pb.gz\"");
  auto decoded = decode_pprof(merged.body);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message();
  EXPECT_EQ(decoded->stacks, (std::map<std::string, int64_t>{{"comm=nginx|main;handle;parse", 7},
                                                             {"comm=nginx|main;handle;write", 4},
                                                             {"comm=app|main;work", 3}}))
      << decoded->text;
  EXPECT_EQ(decoded->period, 1'000'000'000 / 11) << "from the profiles' frequency";
  EXPECT_EQ(decoded->duration_nanos, 60'000'000'000);

  json listed = server_->get("/api/profiles?hostname=web-01").json();
  ASSERT_EQ(listed["profiles"].size(), 1u) << listed.dump();
  std::string gpid = std::to_string(listed["profiles"][0]["gpid"].get<int64_t>());
  auto one = decode_pprof(get("/api/profiles/" + gpid + "/pprof?idle=1").body);
  ASSERT_TRUE(one.ok()) << one.error().message();
  EXPECT_EQ(one->stacks["comm=swapper/0|secondary_startup_64_[k];do_idle_[k]"], 90);
  EXPECT_EQ(one->stacks.size(), 3u);
  Answer drawn = get("/api/profiles/" + gpid + "/flamegraph");
  EXPECT_NE(drawn.body.find("90 idle samples left out"), std::string::npos);
  EXPECT_EQ(drawn.body.find("do_idle"), std::string::npos);
  EXPECT_NE(get("/api/profiles/" + gpid + "/flamegraph?idle=1").body.find("do_idle"),
            std::string::npos);
}

// A GPU profile's devices each apart: the agent's figures of each beside its samples, and its
// flamegraph alone; a header that lies in its figures gives none of them.
TEST_F(FlamegraphApiTest, AProfilesGpusAreShownEachApart) {
  start();
  json devices = {{"0",
                   {{"kernel_ns", 2'000'000'000},
                    {"copy_ns", 100'000'000},
                    {"busy_ns", 2'050'000'000},
                    {"idle_ns", 57'950'000'000},
                    {"wall_ns", 60'000'000'000}}},
                  {"1", {{"kernel_ns", "lots"}, {"busy_ns", -5}, {"wall_ns", 60'000'000'000}}},
                  {"x", {{"kernel_ns", 1}}}};
  upload("train", "gpu-01",
         "0;;python;[GPU 0];main;cudaLaunchKernel;[stream 7];[GPU] gemm 22\n"
         "0;;python;[GPU 1];main;cudaLaunchKernel;[stream 9];[GPU] softmax 5\n"
         "0;;python;main;step 40\n",
         "2026-11-22T10:00:00", "2026-11-22T10:01:00", {{"gpu", {{"gpu_devices", devices}}}});
  json listed = server_->get("/api/profiles?hostname=gpu-01").json();
  ASSERT_EQ(listed["profiles"].size(), 1u) << listed.dump();
  std::string gpid = std::to_string(listed["profiles"][0]["gpid"].get<int64_t>());
  Answer gpus = get("/api/profiles/" + gpid + "/gpus");
  ASSERT_EQ(gpus.status, 200) << gpus.body;
  EXPECT_EQ(json::parse(gpus.body)["devices"],
            json::parse(R"([{"device": 0, "samples": 22, "kernel_ns": 2000000000,
                             "copy_ns": 100000000, "busy_ns": 2050000000,
                             "idle_ns": 57950000000, "wall_ns": 60000000000},
                            {"device": 1, "samples": 5, "wall_ns": 60000000000}])"));
  Answer one = get("/api/profiles/" + gpid + "/flamegraph?gpu=1");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_NE(one.body.find("softmax"), std::string::npos);
  EXPECT_EQ(one.body.find("gemm"), std::string::npos);
  EXPECT_EQ(one.body.find(">step"), std::string::npos);
  EXPECT_NE(get("/api/profiles/" + gpid + "/flamegraph").body.find("gemm"), std::string::npos)
      << "the whole profile is not the one device's, cached";
  EXPECT_EQ(get("/api/profiles/" + gpid + "/flamegraph?gpu=one").status, 400);
}

// Issue 40: an upload claiming 1e9 samples for 60 s at 11 Hz on 2 processors (about 1,320
// possible) made its service's merged flamegraph 99.9999% fake. Refused now, saying why; the
// service's honest profiles are all the merge holds.
TEST_F(FlamegraphApiTest, AnUploadClaimingMoreSamplesThanItsSessionCouldTakeIsRefused) {
  start();
  upload("web", "web-01", kWeb01);
  HttpReply forged = upload_reply("web", "web-02", "0;;nginx;main;forged 1000000000\n",
                                  "2026-11-22T10:00:00", "2026-11-22T10:01:00");
  EXPECT_EQ(forged.status, 422) << forged.body;
  EXPECT_NE(forged.body.find("1000000000 samples of CPU in 60 s at 11 Hz on 2 processors"),
            std::string::npos)
      << forged.body;
  Answer merged = get("/api/flamegraph?service=web&format=collapsed");
  ASSERT_EQ(merged.status, 200) << merged.body;
  EXPECT_EQ(stacks_of(merged.body).count(";nginx;main;forged"), 0u);
}

// Issue 22, server 1: 12 MiB of distinct stacks 2,048 frames deep (6 M frames) drew a 1 GB SVG
// on the thread serving the connection. Drawn now within 16 MB, with boxes for the frames left
// out, whether alone, merged or from the cache.
TEST_F(FlamegraphApiTest, AHostileProfileIsDrawnWithinTheBoundsEveryWay) {
  start();
  std::string tail;
  for (size_t i = 1; i < profile::kMaxStackDepth; ++i) tail += ";f";
  std::string stacks;
  for (int i = 0; stacks.size() < (12 << 20); ++i) {
    stacks += "0;;app;root" + std::to_string(i) + tail + " 1\n";
  }
  // An hour: its ~3,000 samples are ones a session could take, at 11 Hz on 2 processors.
  upload("web", "web-01", stacks, recent(0), recent(60));
  json listed = server_->get("/api/profiles?hostname=web-01").json();
  ASSERT_EQ(listed["profiles"].size(), 1u) << listed.dump();
  const std::string one = "/api/profiles/" +
                          std::to_string(listed["profiles"][0]["gpid"].get<int64_t>()) +
                          "/flamegraph";
  for (const std::string& path : {one, one, std::string("/api/flamegraph?service=web")}) {
    Answer svg = get(path);
    ASSERT_EQ(svg.status, 200) << path << ": " << svg.body.substr(0, 300);
    EXPECT_LE(svg.body.size(), 16'000'000u) << path;
    EXPECT_NE(svg.body.find("<g class=\"left-out\""), std::string::npos) << path;
    EXPECT_NE(svg.body.find(" frames not drawn: past the flamegraph&apos;s limits]"),
              std::string::npos);
  }
  EXPECT_EQ(get(one).headers["x-dormant-cached"], "1");
}

TEST_F(FlamegraphApiTest, ADiffComparesTwoTimeRangesByShare) {
  start();
  upload("web", "web-01", "0;;nginx;main;parse 10\n0;;nginx;main;write 10\n", recent(0), recent(1));
  upload("web", "web-01", "0;;nginx;main;parse 90\n0;;nginx;main;write 10\n", recent(60),
         recent(61));
  Answer diff =
      get("/api/flamegraph/diff?service=web&since=" + recent(60) + "&until=" + recent(90) +
          "&baseline_since=" + recent(0) + "&baseline_until=" + recent(30));
  ASSERT_EQ(diff.status, 200) << diff.body;
  EXPECT_EQ(diff.headers["x-dormant-baseline-profiles"], "1");
  EXPECT_NE(diff.headers["content-security-policy"].find("'nonce-"), std::string::npos);
  EXPECT_NE(diff.body.find("<title>parse\n90 samples (90.00%)\nbaseline 50.00%, +40.00 points"),
            std::string::npos)
      << diff.body;
  EXPECT_NE(diff.body.find("<title>write\n10 samples (10.00%)\nbaseline 50.00%, -40.00 points"),
            std::string::npos);
  EXPECT_EQ(get("/api/flamegraph/diff?service=web&since=2026-11-22T00:00:00Z").status, 400)
      << "no baseline";
  // Issue 43: an empty baseline drew every frame as new; overlapping ranges counted a profile on
  // both sides. Both are refused, as ranges that meet inside a minute (both read it).
  Answer empty_baseline =
      get("/api/flamegraph/diff?service=web&since=" + recent(60) + "&until=" + recent(90) +
          "&baseline_since=" + recent(10) + "&baseline_until=" + recent(30));
  EXPECT_EQ(empty_baseline.status, 404);
  EXPECT_NE(empty_baseline.body.find("no profiles of 'web' in the baseline, from " + recent(10)),
            std::string::npos)
      << empty_baseline.body;
  Answer overlapping =
      get("/api/flamegraph/diff?service=web&since=" + recent(0) + "&until=" + recent(90) +
          "&baseline_since=" + recent(0) + "&baseline_until=" + recent(30));
  EXPECT_EQ(overlapping.status, 400);
  EXPECT_NE(overlapping.body.find("the range and the baseline share " + recent(0) + "Z to " +
                                  recent(30) + "Z"),
            std::string::npos)
      << overlapping.body;
  Answer same_minute =
      get("/api/flamegraph/diff?service=web&since=" + recent(60, 30) + "&until=" + recent(90) +
          "&baseline_since=" + recent(0) + "&baseline_until=" + recent(60, 30));
  EXPECT_EQ(same_minute.status, 400);
  EXPECT_NE(same_minute.body.find("ranges that meet must meet on a bucket's edge"),
            std::string::npos)
      << same_minute.body;
  EXPECT_EQ(get("/api/flamegraph/diff?service=web&baseline_until=2026-11-22T00:00:00Z"
                "&format=pprof")
                .status,
            400);
}

TEST_F(FlamegraphApiTest, BadQueriesAreRefusedWithTheirReason) {
  start();
  struct Case {
    const char* path;
    const char* says;
  };
  for (const Case& bad : {Case{"/api/flamegraph", "service"},
                          Case{"/api/flamegraph?service=web&format=png", "format"},
                          Case{"/api/flamegraph?service=web&since=yesterday", "since"},
                          Case{"/api/flamegraph?service=web&limit=0", "limit"},
                          Case{"/api/flamegraph?service=web&limit=99999999", "limit"}}) {
    Answer answer = get(bad.path);
    EXPECT_EQ(answer.status, 400) << bad.path << ": " << answer.body;
    EXPECT_NE(answer.body.find(bad.says), std::string::npos) << bad.path << ": " << answer.body;
  }
  EXPECT_EQ(server_->curl({server_->url("/api/flamegraph?service=web")}, false).status, 401);
}

// A merge keeps at most --merge-max-stacks distinct stacks however many the profiles hold; the
// samples of the others are kept under one stack that says so.
TEST_F(FlamegraphApiTest, AMergeIsBoundedInStacksAndLosesNoSample) {
  start({"--merge-max-stacks", "10"});
  std::string many;
  for (int i = 0; i < 500; ++i) many += "0;;app;main;f" + std::to_string(i) + " 2\n";
  upload("web", "web-01", many);
  upload("web", "web-02", many);
  json header;
  auto stacks = stacks_of(get("/api/flamegraph?service=web&format=collapsed").body, &header);
  EXPECT_EQ(stacks.size(), 11u);
  uint64_t total = 0;
  for (const auto& [stack, count] : stacks) total += count;
  EXPECT_EQ(total, 2000u);
  EXPECT_EQ(stacks[";[stacks beyond the merge's limit]"], 2000u - 10 * 4);
  EXPECT_EQ(header["merge"]["samples_beyond_stack_limit"], 2000 - 10 * 4);
}

// Issue 42: merges read rollups, whatever the number of profiles: --merge-max-mb, which bounded
// the text a merge read, is accepted from older configurations and warned about.
TEST_F(FlamegraphApiTest, TheOldTextBudgetIsAcceptedAndNoLongerRefusesAMerge) {
  start({"--merge-max-mb", "1"});
  std::string wide;
  for (int i = 0; i < 1000; ++i) {
    wide += "0;;app;main;" + std::string(400, 'f') + std::to_string(i) + " 1\n";
  }
  for (const char* host : {"web-01", "web-02", "web-03"}) upload("web", host, wide);
  Answer merged = get("/api/flamegraph?service=web&format=collapsed");
  EXPECT_EQ(merged.status, 200) << merged.body.substr(0, 300);
  json header;
  EXPECT_EQ(stacks_of(merged.body, &header).size(), 1000u);
  EXPECT_EQ(header["merge"]["samples"], 3000);
}

// Performance Studio's web UI asks /api/flamegraph by serviceName, with its range as
// toISOString() gives it, and draws the JSON tree it gets: process names first, children in name
// order, values inclusive, languages and markers as its colours and filters need them.
TEST_F(FlamegraphApiTest, StudiosUiGetsTheTreeItDraws) {
  start();
  upload("web", "web-01",
         "0;;java;Thread.run_[j];Checkout.total_[j];Cart.add_[i] 7\n"
         "0;;java;Thread.run_[j];Checkout.total_[j] 3\n"
         "0;box;python3;handle (/app/web.py)_[p] 5\n"
         "0;;swapper/0;do_idle_[k] 90\n");
  upload("web", "web-02", "0;;python3;handle (/app/web.py)_[p] 2\n", recent(10), recent(11));
  auto ms = [](const std::string& iso) { return iso.substr(0, 19) + ".000Z"; };
  const std::string range =
      "serviceName=web&startTime=" + ms(recent(0)) + "&endTime=" + ms(recent(30));
  Answer answer = get("/api/flamegraph?enrichment=lang&" + range);
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.headers["content-type"], "application/json");
  json tree = json::parse(answer.body);
  EXPECT_EQ(tree["name"], "root");
  EXPECT_EQ(tree["value"], 17) << "the idle task is left out, as Studio's indexer drops it";
  ASSERT_EQ(tree["children"].size(), 2u);
  EXPECT_EQ(tree["children"][0]["name"], "java");
  EXPECT_EQ(tree["children"][0]["value"], 10);
  const json& run = tree["children"][0]["children"][0];
  EXPECT_EQ(run["name"], "Thread.run");
  EXPECT_EQ(run["suffix"], "_[j]");
  EXPECT_EQ(run["language"], "Java");
  EXPECT_EQ(run["children"][0]["children"][0]["specialType"], "Java (inl)");
  EXPECT_EQ(tree["children"][1]["name"], "python3");
  EXPECT_EQ(tree["children"][1]["value"], 7) << "merged over hosts and containers";
  for (const char* key : {"50", "75", "95", "99"}) {
    EXPECT_TRUE(tree["percentiles"].contains(key)) << key << " hides every weight preset";
  }
  // Snapshots find frames by their place: the same range answers the same tree.
  json again = json::parse(get("/api/flamegraph?enrichment=lang&" + range).body);
  tree.erase("exec_time");
  again.erase("exec_time");
  EXPECT_EQ(again, tree);

  std::string host = "{\"id\":\"\",\"filter\":{\"$and\":[{\"HostName\":{\"$eq\":\"web-02\"}}]}}";
  Answer filtered_answer = get("/api/flamegraph?" + range + "&filter=" + url_encoded(host));
  ASSERT_EQ(filtered_answer.status, 200) << filtered_answer.body;
  json filtered = json::parse(filtered_answer.body);
  EXPECT_EQ(filtered["value"], 2);
  EXPECT_FALSE(filtered["children"][0].contains("language")) << "no enrichment asked";
  json capped = json::parse(get("/api/flamegraph?stacksCount=2&" + range).body);
  EXPECT_EQ(capped["value"], 17) << "the root still counts every sample";
  ASSERT_EQ(capped["children"].size(), 1u) << "the two largest frames: java and Thread.run";
  EXPECT_EQ(capped["children"][0]["children"][0]["name"], "Thread.run_[j]");
  EXPECT_EQ(capped["children"][0]["children"][0]["children"], json::array());
  // No data, or a service never seen: the empty root (204 or [] would crash the UI).
  for (const std::string& empty :
       {"serviceName=nobody&startTime=" + ms(recent(0)) + "&endTime=" + ms(recent(30)),
        "serviceName=web&startTime=" + ms(recent(100)) + "&endTime=" + ms(recent(110))}) {
    Answer none = get("/api/flamegraph?" + empty);
    EXPECT_EQ(none.status, 200) << empty;
    json root = json::parse(none.body);
    root.erase("exec_time");
    EXPECT_EQ(root, json::parse(R"({"name":"root","value":0,"children":[],"percentiles":{}})"))
        << none.body;
  }
  Answer missing = get("/api/flamegraph?serviceName=web&startTime=" + ms(recent(0)));
  EXPECT_EQ(missing.status, 422);
  EXPECT_EQ(json::parse(missing.body)["detail"][0]["loc"], json::array({"query", "endTime"}))
      << missing.body;
  EXPECT_EQ(get("/api/flamegraph?service=web&" + range).status, 400) << "service and serviceName";
  EXPECT_EQ(get("/api/flamegraph?" + range +
                "&filter=" + url_encoded("{\"filter\":{\"$and\":[{\"Pod\":{\"$eq\":\"x\"}}]}}"))
                .status,
            400);
  EXPECT_EQ(get("/api/flamegraph?" + range + "&filter=%7B").status, 400);
}

// The time picker's "Custom" and "Last snapshot": the first and last times with data, of the
// service or of what a filter keeps; 204 (read as []) when there are none.
TEST_F(FlamegraphApiTest, StudiosUiFindsTheTimesWithData) {
  start();
  upload("web", "web-01", kWeb01, recent(0), recent(1));
  upload("web", "web-02", kWeb02, recent(10), recent(11));
  Answer span = get("/api/flamegraph/datetime_with_data?serviceName=web");
  ASSERT_EQ(span.status, 200) << span.body;
  EXPECT_EQ(json::parse(span.body),
            (json{{"firstDateTime", recent(0) + "Z"}, {"lastDateTime", recent(11) + "Z"}}));
  std::string host = "{\"id\":7,\"filter\":{\"$or\":[{\"HostName\":{\"$eq\":\"web-01\"}}]}}";
  EXPECT_EQ(json::parse(get("/api/flamegraph/datetime_with_data?serviceName=web&filter=" +
                            url_encoded(host))
                            .body),
            (json{{"firstDateTime", recent(0) + "Z"}, {"lastDateTime", recent(1) + "Z"}}));
  Answer none = get("/api/flamegraph/datetime_with_data?serviceName=nobody");
  EXPECT_EQ(none.status, 204);
  EXPECT_EQ(none.body, "");
  EXPECT_EQ(get("/api/flamegraph/datetime_with_data").status, 422);
}

}  // namespace
}  // namespace dormant::testing
