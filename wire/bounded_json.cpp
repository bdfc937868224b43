#include "wire/bounded_json.h"

#include <string>

#include "wire/json_fields.h"

namespace dormant::wire {
namespace {

using Json = nlohmann::json;

// nlohmann's own DOM builder, fed only while the budget holds: an event that passes it ends the
// parse (a SAX handler that returns false), with what was built so far freed.
class BudgetedBuilder {
 public:
  BudgetedBuilder(Json& result, JsonBudget budget) : dom_(result, false), budget_(budget) {}

  bool null() { return count() && dom_.null(); }
  bool boolean(bool value) { return count() && dom_.boolean(value); }
  bool number_integer(Json::number_integer_t value) {
    return count() && dom_.number_integer(value);
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    return count() && dom_.number_unsigned(value);
  }
  bool number_float(Json::number_float_t value, const std::string& text) {
    return count() && dom_.number_float(value, text);
  }
  bool string(std::string& value) { return count() && dom_.string(value); }
  bool binary(Json::binary_t& value) { return count() && dom_.binary(value); }
  bool start_object(std::size_t size) { return enter() && dom_.start_object(size); }
  bool key(std::string& value) { return count() && dom_.key(value); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t size) { return enter() && dom_.start_array(size); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& error) {
    problem_ = error.id == 406 ? "not valid JSON (a number too large for a double, such as 1e999)"
                               : "not valid JSON (error at byte " + std::to_string(byte) + ")";
    return false;
  }

  // Why the parse ended early; "" when it did not.
  const std::string& problem() const { return problem_; }

 private:
  bool count() {
    if (++values_ <= budget_.max_values) return true;
    problem_ = "holds more than " + std::to_string(budget_.max_values) + " values";
    return false;
  }
  bool enter() {
    if (++depth_ > budget_.max_depth) {
      problem_ = "nested deeper than " + std::to_string(budget_.max_depth) + " levels";
      return false;
    }
    return count();
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  JsonBudget budget_;
  std::size_t values_ = 0;
  int depth_ = 0;
  std::string problem_;
};

}  // namespace

Result<Json> parse_json_within(std::string_view text, std::string_view name, JsonBudget budget) {
  Json result;
  BudgetedBuilder builder(result, budget);
  bool parsed = Json::sax_parse(text, &builder);
  if (parsed) return result;
  std::string problem = builder.problem();
  result = Json();  // what was built before the parse ended goes now, not with the caller's
  return field_error(name, problem.empty() ? "not valid JSON" : problem);
}

}  // namespace dormant::wire
