// The launch table against the CUPTI the library is built with: every entry is the API CUPTI names
// under its id, and no API that copies, sets or launches is left without a hook.
#include "dormant_cupti/launch_apis.h"

#include <initializer_list>
#include <string>
#include <string_view>
#include <tuple>

#include <cupti.h>
#include <gtest/gtest.h>

namespace dormant::cupti {
namespace {

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view prefix : prefixes) {
    if (name.starts_with(prefix)) return true;
  }
  return false;
}

// CUPTI's name of a callback id as the table shows it: runtime names without their version
// suffix ("_v3020"), driver names without "_v2".
std::string shown_name(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  const char* found = nullptr;
  if (cuptiGetCallbackName(domain, id, &found) != CUPTI_SUCCESS || found == nullptr) return "";
  std::string name = found;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    size_t version = name.rfind("_v");
    if (version != std::string::npos && name.size() - version >= 6 &&
        name.find_first_not_of("0123456789", version + 2) == std::string::npos) {
      name.resize(version);
    }
    return name;
  }
  for (size_t at; (at = name.find("_v2")) != std::string::npos;) name.erase(at, 3);
  return name;
}

bool submits_work(std::string_view name) {
  return starts_with_any(name, {"cudaMemcpy", "cudaMemset", "cuMemcpy", "cuMemset", "cudaLaunch",
                                "cuLaunch", "cudaGraphLaunch", "cuGraphLaunch", "__cudaLaunch"}) &&
         name.find("HostFunc") == std::string_view::npos &&
         name.find("Attribute") == std::string_view::npos;
}

TEST(LaunchApisTest, EachEntryIsTheApiCuptiNamesUnderItsId) {
  for (const LaunchApi& api : kLaunchApis) {
    auto domain = api.cbid > 0 ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    auto id = static_cast<CUpti_CallbackId>(api.cbid > 0 ? api.cbid : -api.cbid);
    EXPECT_EQ(shown_name(domain, id), api.name) << "cbid " << api.cbid;
    EXPECT_EQ(find_launch_api(api.cbid), &api);
  }
}

TEST(LaunchApisTest, EveryApiThatCopiesSetsOrLaunchesHasAnEntry) {
  size_t seen = 0;
  for (auto [domain, sign, end] :
       {std::tuple(CUPTI_CB_DOMAIN_RUNTIME_API, 1, int(CUPTI_RUNTIME_TRACE_CBID_SIZE)),
        std::tuple(CUPTI_CB_DOMAIN_DRIVER_API, -1, int(CUPTI_DRIVER_TRACE_CBID_SIZE))}) {
    ASSERT_LE(end, kMaxLaunchApiId + 1);
    for (int id = 1; id < end; ++id) {
      std::string name = shown_name(domain, static_cast<CUpti_CallbackId>(id));
      if (!submits_work(name)) continue;
      ++seen;
      EXPECT_NE(find_launch_api(sign * id), nullptr) << name << " (cbid " << sign * id << ")";
    }
  }
  EXPECT_EQ(seen, std::size(kLaunchApis));  // and the table holds nothing else
}

TEST(LaunchApisTest, GraphsAndBatchesOfCopiesSubmitMany) {
  EXPECT_TRUE(submits_many(*find_launch_api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000)));
  EXPECT_TRUE(submits_many(*find_launch_api(-CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2)));
  EXPECT_FALSE(submits_many(*find_launch_api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020)));
  EXPECT_EQ(find_launch_api(kMaxLaunchApiId + 1), nullptr);
  EXPECT_EQ(find_launch_api(-kMaxLaunchApiId - 1), nullptr);
}

}  // namespace
}  // namespace dormant::cupti
