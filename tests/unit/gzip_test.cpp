#include "common/gzip.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

namespace dormant {
namespace {

std::string compressed(std::string_view text) {
  auto data = gzip_compress(text);
  EXPECT_TRUE(data.ok());
  return data.value_or("");
}

TEST(Gzip, RoundTripsTextOfEverySize) {
  std::mt19937 random(1);
  for (size_t size : {0, 1, 100, 300000, 3000000}) {
    std::string text(size, '\0');
    for (char& c : text) c = static_cast<char>('a' + random() % 4);
    EXPECT_EQ(gzip_decompress(compressed(text), size).value(), text) << size;
    EXPECT_EQ(gzip_decompress_at_most(compressed(text), size).value(), text) << size;
    EXPECT_EQ(gzip_decompress_at_most(compressed(text), size + 1000).value(), text) << size;
  }
}

TEST(Gzip, CorruptOrMisSizedDataIsAnError) {
  std::string data = compressed("hello, profile");
  EXPECT_EQ(gzip_decompress(data, 14).value(), "hello, profile");
  EXPECT_FALSE(gzip_decompress(data, 13).ok());
  EXPECT_FALSE(gzip_decompress(data, 15).ok());
  EXPECT_FALSE(gzip_decompress(data.substr(0, data.size() - 4), 14).ok());
  std::string flipped = data;
  flipped[12] = static_cast<char>(flipped[12] ^ 0x55);
  EXPECT_FALSE(gzip_decompress(flipped, 14).ok());
}

TEST(Gzip, TruncatedAndForeignDataSayWhatIsWrong) {
  std::string data = compressed(std::string(100000, 'x'));
  auto truncated = gzip_decompress_at_most(data.substr(0, data.size() / 2), 1 << 20);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message().find("truncated"), std::string::npos)
      << truncated.error().message();
  auto plain = gzip_decompress_at_most("{\"not\": \"gzip\"}", 1 << 20);
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.error().message().find("gzip decompression"), std::string::npos)
      << plain.error().message();
  EXPECT_FALSE(gzip_decompress_at_most("", 1 << 20).ok());
}

// An upload's JSON is parsed as it inflates: a byte at a time, the reader gives the same text,
// and a bomb stops one byte past the limit however it is read.
TEST(Gzip, AReaderGivesTheTextInPiecesAndStopsOnePastItsLimit) {
  std::string text = std::string(100000, 'x') + "end";
  std::string data = compressed(text);
  GzipReader reader(data, text.size());
  std::string out;
  char piece[7];
  for (;;) {
    auto got = reader.read(piece, sizeof(piece));
    ASSERT_TRUE(got.ok()) << got.error().message();
    if (*got == 0) break;
    out.append(piece, *got);
  }
  EXPECT_EQ(out, text);
  EXPECT_FALSE(reader.past_limit());

  std::string bomb = compressed(std::string(50 << 20, '\0'));
  GzipReader limited(bomb, 1 << 20);
  std::string big(4 << 20, '\0');
  size_t total = 0;
  while (auto got = limited.read(big.data(), big.size())) {
    if (*got == 0) break;
    total += *got;
  }
  EXPECT_EQ(total, (1u << 20) + 1);
  EXPECT_TRUE(limited.past_limit());
}

// RFC 1952: a gzip file is a series of members; gunzip gives their concatenation.
TEST(Gzip, MembersOneAfterAnotherComeOutAsOneText) {
  std::string two = compressed("{\"profile\": \"a;b 1\", \"gpid\": ") + compressed("42}");
  EXPECT_EQ(gzip_decompress_at_most(two, 1 << 20).value(),
            "{\"profile\": \"a;b 1\", \"gpid\": 42}");
  EXPECT_EQ(gzip_decompress(two, 32).value().size(), 32u);
  EXPECT_FALSE(gzip_decompress_at_most(compressed("a") + "trailing bytes", 1 << 20).ok());
  std::string second_truncated = compressed("a") + compressed("bcd").substr(0, 12);
  EXPECT_FALSE(gzip_decompress_at_most(second_truncated, 1 << 20).ok());
  std::string bombs =
      compressed(std::string(8 << 20, '\0')) + compressed(std::string(8 << 20, '\0'));
  EXPECT_FALSE(gzip_decompress_at_most(bombs, 12 << 20).ok()) << "the bound spans the members";
}

// A gzip bomb: 64 MiB of zeros compress to about 64 KiB. The bound stops inflation one byte past
// it instead of producing the whole.
TEST(Gzip, DecompressionStopsAtTheBound) {
  std::string bomb = compressed(std::string(64 << 20, '\0'));
  ASSERT_LT(bomb.size(), 1u << 20);
  auto limited = gzip_decompress_at_most(bomb, 1 << 20);
  ASSERT_FALSE(limited.ok());
  EXPECT_NE(limited.error().message().find("more than 1048576 bytes"), std::string::npos)
      << limited.error().message();
}

}  // namespace
}  // namespace dormant
