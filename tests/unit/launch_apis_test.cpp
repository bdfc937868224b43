// The launch table against the CUPTI the library is built with: every entry is the API CUPTI names
// under its id, and no API that copies, sets or launches is left without a hook.
#include "dormant_cupti/launch_apis.h"

#include <regex>
#include <string>

#include <cupti.h>
#include <gtest/gtest.h>

namespace dormant::cupti {
namespace {

// CUPTI's name of a callback id as the table shows it: runtime names without their version
// suffix, driver names without "_v2".
std::string shown_name(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || name == nullptr) return "";
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return std::regex_replace(name, std::regex("_v[0-9]{4,5}$"), "");
  }
  return std::regex_replace(name, std::regex("_v2"), "");
}

bool submits_work(const std::string& name) {
  static const std::regex work("^(cuda|cu)(Mem(cpy|set)|Launch|GraphLaunch)|^__cudaLaunch");
  static const std::regex not_work("HostFunc|Graph(Add|Exec|Mem)|Attribute");
  return std::regex_search(name, work) && !std::regex_search(name, not_work);
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
