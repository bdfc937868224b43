// A test with a dormant-server of its own: a fresh folder per test for its certificates, tokens
// and data, removed afterwards.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "server_process.h"

namespace dormant::testing {

class ServerFixture : public ::testing::Test {
 protected:
  explicit ServerFixture(std::string folder_prefix) : folder_prefix_(std::move(folder_prefix)) {}

  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            (folder_prefix_ + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    server_ = std::make_unique<ServerProcess>(root_);
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(root_);
  }

  void start(const std::vector<std::string>& args = {}) {
    ASSERT_TRUE(server_->start(args)) << server_->log();
  }

  std::filesystem::path root_;
  std::unique_ptr<ServerProcess> server_;

 private:
  std::string folder_prefix_;
};

}  // namespace dormant::testing
