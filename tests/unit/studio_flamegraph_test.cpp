// The tree Performance Studio's UI draws, from a merged profile (server/api/studio_flamegraph.h).
#include "server/api/studio_flamegraph.h"

#include <gtest/gtest.h>

#include "server/api/studio_queries.h"

namespace dormant::server::api {
namespace {

using nlohmann::json;

profile::StackTable table(
    std::initializer_list<std::pair<std::vector<std::string_view>, int>> rows) {
  profile::StackTable stacks;
  for (const auto& [frames, count] : rows) {
    std::vector<std::string_view> rest(frames.begin() + 1, frames.end());
    stacks.add("", frames[0], rest, static_cast<uint64_t>(count));
  }
  return stacks;
}

TEST(StudioFrameTest, LanguagesSuffixesAndSpecialTypesAsStudioSetsThem) {
  struct Case {
    std::string_view name, parent, shown, suffix, language, special;
  };
  for (const Case& c : {
           Case{"com.shop.Checkout.run_[j]", "Other", "com.shop.Checkout.run", "_[j]", "Java", ""},
           Case{"Cart.total_[i]", "Java", "Cart.total", "_[i]", "Java", "Java (inl)"},
           Case{"Cart.add_[1]", "Java", "Cart.add", "_[1]", "Java", "Java (C1)"},
           Case{"Cart.get_[0]", "Java", "Cart.get", "_[0]", "Java", "Java (interpreted)"},
           Case{"Thread.run_[j]_[s]", "Java", "Thread.run", "_[j]_[s]", "Java", ""},
           Case{"handle (/app/web.py)_[p]", "Other", "handle (/app/web.py)", "_[p]", "Python", ""},
           Case{"handle (/app/web.py)", "Other", "handle (/app/web.py)", "", "Python", ""},
           Case{"<decorator-gen-12>", "Other", "<decorator-gen-12>", "", "Python", ""},
           Case{"do_syscall_64_[k]", "C++", "do_syscall_64", "_[k]", "Kernel", ""},
           Case{"index.php_[php]", "Other", "index.php", "_[php]", "PHP", ""},
           Case{"LazyCompile:*tick node:internal", "Other", "LazyCompile:*tick node:internal", "",
                "Node", ""},
           Case{"std::vector<int>::push_back", "Other", "std::vector<int>::push_back", "", "C++",
                ""},
           Case{"[libc.so.6]", "Other", "[libc.so.6]", "", "Other", ""},
           Case{"runtime.mallocgc", "Other", "runtime.mallocgc", "", "Go", ""},
           Case{"main.handler", "Go", "main.handler", "", "Go", ""},
           Case{"main.handler", "Other", "main.handler", "", "Other", ""},
           Case{"python3", "Other", "python3", "", "Other", ""},
       }) {
    StudioFrame frame = studio_frame(c.name, c.parent);
    EXPECT_EQ(frame.name, c.shown) << c.name;
    EXPECT_EQ(frame.suffix, c.suffix) << c.name;
    EXPECT_EQ(frame.language, c.language) << c.name;
    EXPECT_EQ(frame.special_type, c.special) << c.name;
  }
}

// The sheet's example, built from its stacks.
TEST(StudioFlamegraphTest, InclusiveValuesChildrenByNameAndPercentiles) {
  auto stacks = table({{{"java", "com.shop.Checkout.run_[j]", "com.shop.Cart.total_[i]"}, 700},
                       {{"java", "com.shop.Checkout.run_[j]"}, 500},
                       {{"python3", "handle (/app/web.py)_[p]"}, 350}});
  json tree = studio_flamegraph(stacks, {});
  EXPECT_EQ(tree["name"], "root");
  EXPECT_EQ(tree["value"], 1550);
  ASSERT_EQ(tree["children"].size(), 2u);
  const json& java = tree["children"][0];
  EXPECT_EQ(java["name"], "java");
  EXPECT_EQ(java["value"], 1200);
  EXPECT_EQ(java["language"], "Other");
  const json& run = java["children"][0];
  EXPECT_EQ(run["name"], "com.shop.Checkout.run");
  EXPECT_EQ(run["suffix"], "_[j]");
  EXPECT_EQ(run["value"], 1200);
  const json& total = run["children"][0];
  EXPECT_EQ(total["specialType"], "Java (inl)");
  EXPECT_EQ(total["children"], json::array()) << "children is always a list";
  EXPECT_EQ(tree["children"][1]["name"], "python3");
  // Five nodes: 350, 350, 700, 1200, 1200.
  EXPECT_EQ(tree["percentiles"].size(), 100u);
  EXPECT_EQ(tree["percentiles"]["1"], "350");
  EXPECT_EQ(tree["percentiles"]["50"], "700");
  EXPECT_EQ(tree["percentiles"]["75"], "1200");
  EXPECT_EQ(tree["percentiles"]["100"], "1200");
}

TEST(StudioFlamegraphTest, NoSamplesIsAnEmptyRootNeverAnEmptyAnswer) {
  json tree = studio_flamegraph(profile::StackTable(), {});
  EXPECT_EQ(tree, json::parse(R"({"name":"root","value":0,"children":[],"percentiles":{}})"));
}

// A frame cap keeps the largest frames, each with its parent; the root's value stays every
// sample's, so the UI's shares stay true.
TEST(StudioFlamegraphTest, TheFrameCapKeepsTheLargestFramesAndTheirParents) {
  auto stacks = table({{{"app", "main", "big"}, 60},
                       {{"app", "main", "small"}, 5},
                       {{"app", "main", "big", "leaf"}, 30},
                       {{"other", "tiny"}, 1}});
  json tree = studio_flamegraph(stacks, {3, true});
  EXPECT_EQ(tree["value"], 96);
  ASSERT_EQ(tree["children"].size(), 1u);
  EXPECT_EQ(tree["children"][0]["name"], "app");
  const json& main_frame = tree["children"][0]["children"][0];
  EXPECT_EQ(main_frame["name"], "main");
  ASSERT_EQ(main_frame["children"].size(), 1u);
  EXPECT_EQ(main_frame["children"][0]["name"], "big");
  EXPECT_EQ(main_frame["children"][0]["value"], 90);
  EXPECT_EQ(main_frame["children"][0]["children"], json::array());
  // Ties: the same stacks in any order give the same tree.
  auto reordered = table({{{"other", "tiny"}, 1},
                          {{"app", "main", "big", "leaf"}, 30},
                          {{"app", "main", "small"}, 5},
                          {{"app", "main", "big"}, 60}});
  EXPECT_EQ(studio_flamegraph(reordered, {3, true}), tree);
}

// The filter panel's JSON as the UI sends it, and every other shape refused with a reason.
TEST(StudioFilterTest, TheUisFiltersAreReadAndAnythingElseIsRefused) {
  auto read = studio_filter(json::parse(
      R"({"id":"","filter":{"$or":[{"HostName":{"$eq":"web-01"}},{"ContainerEnvName":{"$neq":"db_shop"}}]}})"));
  ASSERT_TRUE(read.ok()) << read.error().message();
  ASSERT_TRUE(*read);
  EXPECT_TRUE((*read)->any);
  ASSERT_EQ((*read)->rules.size(), 2u);
  EXPECT_EQ((*read)->rules[1].label, storage::Label::kContainerEnvName);
  EXPECT_FALSE((*read)->rules[1].equal);
  EXPECT_EQ((*read)->rules[1].value, "db_shop");
  EXPECT_FALSE(studio_filter(json::parse(R"({"id":7,"filter":{"$and":[]}})")).value());
  EXPECT_FALSE(studio_filter(json::parse(R"({"id":7,"filter":{}})")).value());
  std::string many = R"({"$and":[)";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + R"({"HostName":{"$eq":"h"}})";
  many += "]}";
  for (const std::string& bad :
       {std::string(R"([])"), std::string(R"("text")"), std::string(R"({"$and":{}})"),
        std::string(R"({"$not":[]})"), std::string(R"({"$and":[],"$or":[]})"),
        std::string(R"({"$and":[{"Pod":{"$eq":"x"}}]})"),
        std::string(R"({"$and":[{"HostName":{"$in":["x"]}}]})"),
        std::string(R"({"$and":[{"HostName":{"$eq":7}}]})"),
        std::string(R"({"$and":[{"HostName":"x"}]})"), std::string(R"({"$and":[{}]})"),
        std::string(R"({"$and":[{"HostName":{"$eq":"x"},"ContainerName":{"$eq":"y"}}]})"),
        std::string(R"({"$and":[[[[[[[[[[]]]]]]]]]]})"), std::string(R"({"filter":[1]})"), many}) {
    auto refused = studio_filter(json::parse(bad));
    EXPECT_FALSE(refused.ok()) << bad;
    if (!refused.ok()) {
      EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidArgument) << bad;
      EXPECT_TRUE(refused.error().message().starts_with("filter: ")) << refused.error().message();
    }
  }
}

}  // namespace
}  // namespace dormant::server::api
