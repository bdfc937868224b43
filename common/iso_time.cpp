#include "common/iso_time.h"

#include <cstdint>
#include <cstdio>
#include <ctime>

namespace dormant {
namespace {

// Reads the text's characters in order; each read moves past what it matched.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  // Exactly `count` digits.
  bool digits(size_t count, int& value) {
    if (at_ + count > text_.size()) return false;
    value = 0;
    for (char c : text_.substr(at_, count)) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    at_ += count;
    return true;
  }
  bool next_is_digit() const {
    return at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9';
  }
  bool literal(char c) {
    if (at_ >= text_.size() || text_[at_] != c) return false;
    ++at_;
    return true;
  }
  bool at_end() const { return at_ == text_.size(); }

 private:
  std::string_view text_;
  size_t at_ = 0;
};

// ".123456789": the fraction in microseconds, digits past the sixth dropped; false for a lone '.'.
bool read_fraction(Cursor& cursor, std::chrono::microseconds& fraction) {
  int64_t micros = 0;
  int digits = 0;
  for (int digit = 0; cursor.next_is_digit() && cursor.digits(1, digit); ++digits) {
    if (digits < 6) micros = micros * 10 + digit;
  }
  if (digits == 0) return false;
  for (int d = digits; d < 6; ++d) micros *= 10;
  fraction = std::chrono::microseconds(micros);
  return true;
}

// 'Z', ±hh, ±hhmm or ±hh:mm, or nothing: the zone's offset east of UTC, in minutes.
bool read_zone(Cursor& cursor, int& offset_minutes) {
  offset_minutes = 0;
  if (cursor.at_end() || cursor.literal('Z')) return true;
  int sign = 0;
  if (cursor.literal('+')) sign = 1;
  if (sign == 0 && cursor.literal('-')) sign = -1;
  int hours = 0, minutes = 0;
  if (sign == 0 || !cursor.digits(2, hours)) return false;
  if (cursor.literal(':') || cursor.next_is_digit()) {
    if (!cursor.digits(2, minutes)) return false;
  }
  if (hours > 23 || minutes > 59) return false;
  offset_minutes = sign * (hours * 60 + minutes);
  return true;
}

}  // namespace

std::string iso_utc(std::chrono::system_clock::time_point time, bool with_millis) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  if (!with_millis) return text;
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()) % 1000;
  char fraction[8];
  std::snprintf(fraction, sizeof(fraction), ".%03d", static_cast<int>(millis.count()));
  return std::string(text) + fraction;
}

std::optional<std::chrono::system_clock::time_point> parse_iso_time(std::string_view text) {
  Cursor cursor(text);
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!(cursor.digits(4, year) && cursor.literal('-') && cursor.digits(2, month) &&
        cursor.literal('-') && cursor.digits(2, day) &&
        (cursor.literal('T') || cursor.literal(' ')) && cursor.digits(2, hour) &&
        cursor.literal(':') && cursor.digits(2, minute))) {
    return std::nullopt;
  }
  std::chrono::microseconds fraction{0};
  if (cursor.literal(':')) {
    if (!cursor.digits(2, second)) return std::nullopt;
    if (cursor.literal('.') && !read_fraction(cursor, fraction)) return std::nullopt;
  }
  int offset_minutes = 0;
  if (!read_zone(cursor, offset_minutes) || !cursor.at_end()) return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  if (year < 1970 || year >= 2200) return std::nullopt;
  std::tm fields{};
  fields.tm_year = year - 1900;
  fields.tm_mon = month - 1;
  fields.tm_mday = day;
  fields.tm_hour = hour;
  fields.tm_min = minute;
  fields.tm_sec = second;
  std::time_t seconds = ::timegm(&fields);
  std::tm normalised{};
  ::gmtime_r(&seconds, &normalised);
  if (normalised.tm_mday != day || normalised.tm_mon != month - 1) return std::nullopt;  // 02-31
  return std::chrono::system_clock::time_point(std::chrono::seconds(seconds)) + fraction -
         std::chrono::minutes(offset_minutes);
}

}  // namespace dormant
