#include "server/storage/rollup_blob.h"

#include <cstdint>

namespace dormant::server::storage {
namespace {

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// Adds `count` to `total`, saturating: counts come from profiles whose sums were checked, but a
// bucket gathers many of them.
uint64_t saturating_sum(uint64_t total, uint64_t count) {
  return total > UINT64_MAX - count ? UINT64_MAX : total + count;
}

}  // namespace

std::string encode_stacks(std::span<const StackCount> stacks) {
  std::string out;
  out.reserve(stacks.size() * 10);
  for (const StackCount& stack : stacks) {
    for (int shift = 0; shift < 64; shift += 8) {
      out.push_back(static_cast<char>((stack.id >> shift) & 0xff));
    }
    put_varint(out, stack.count);
  }
  return out;
}

Result<std::vector<StackCount>> decode_stacks(std::string_view bytes) {
  std::vector<StackCount> stacks;
  stacks.reserve(bytes.size() / 9);
  size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 9) {
      return Error::invalid_argument("a rollup's stacks end inside an entry");
    }
    StackCount stack;
    for (int shift = 0; shift < 64; shift += 8, ++at) {
      stack.id |= uint64_t{static_cast<unsigned char>(bytes[at])} << shift;
    }
    for (int shift = 0;; shift += 7, ++at) {
      if (at == bytes.size() || shift > 63) {
        return Error::invalid_argument("a rollup's stack count is cut short or too long");
      }
      auto byte = static_cast<unsigned char>(bytes[at]);
      stack.count |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) {
        ++at;
        break;
      }
    }
    if (!stacks.empty() && stack.id <= stacks.back().id) {
      return Error::invalid_argument("a rollup's stacks are out of order");
    }
    stacks.push_back(stack);
  }
  return stacks;
}

std::vector<StackCount> add_stacks(std::span<const StackCount> into,
                                   std::span<const StackCount> added, size_t max_stacks) {
  std::vector<StackCount> sum;
  sum.reserve(into.size() + added.size());
  size_t ids = 0;
  for (const StackCount& stack : into) ids += stack.id != kStacksPastCap;
  uint64_t past_cap = 0;
  auto keep = [&](StackCount stack) {
    if (stack.id == kStacksPastCap) {
      past_cap = saturating_sum(past_cap, stack.count);
    } else {
      sum.push_back(stack);
    }
  };
  size_t i = 0;
  size_t j = 0;
  while (i < into.size() || j < added.size()) {
    if (j == added.size() || (i < into.size() && into[i].id < added[j].id)) {
      keep(into[i++]);
    } else if (i == into.size() || added[j].id < into[i].id) {
      StackCount stack = added[j++];
      if (stack.id != kStacksPastCap && ids >= max_stacks) {
        past_cap = saturating_sum(past_cap, stack.count);
      } else {
        ids += stack.id != kStacksPastCap;
        keep(stack);
      }
    } else {
      keep({into[i].id, saturating_sum(into[i].count, added[j].count)});
      ++i;
      ++j;
    }
  }
  if (past_cap > 0) sum.insert(sum.begin(), {kStacksPastCap, past_cap});
  return sum;
}

}  // namespace dormant::server::storage
