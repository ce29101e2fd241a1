// Where a JSON text is broken: one pass of nlohmann's SAX parser that keeps nothing, run only
// after a parse failed, so that every reader's message carries a line and column.
#include <nlohmann/json.hpp>
#include <string>

#include "dagsgd/model/io.h"

namespace dagsgd::model {

namespace {

using Json = nlohmann::json;

// Accepts every value; remembers the first error and its byte position.
class FirstError final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool /*val*/) override { return true; }
  bool number_integer(number_integer_t /*val*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*val*/) override { return true; }
  bool number_float(number_float_t /*val*/, const string_t& /*s*/) override { return true; }
  bool string(string_t& /*val*/) override { return true; }
  bool binary(binary_t& /*val*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override { return true; }
  bool key(string_t& /*val*/) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t /*elements*/) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    position_ = position;
    std::string what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    if (auto p = what.find(": "); what.rfind("parse error", 0) == 0 && p != std::string::npos) {
      what = what.substr(p + 2);
    }
    // "last read: '...'" can hold a whole (megabytes long) token.
    if (what.size() > 200) what = what.substr(0, 197) + "...";
    what_ = what;
    return false;
  }
  std::size_t position() const { return position_; }
  const std::string& what() const { return what_; }

 private:
  std::size_t position_ = 0;
  std::string what_;
};

}  // namespace

std::string json_syntax_error(std::string_view text, bool allow_comments) {
  FirstError sax;
  const bool ok = Json::sax_parse(text.begin(), text.end(), &sax, Json::input_format_t::json,
                                  /*strict=*/true, allow_comments);
  if (ok) return "";
  // nlohmann counts characters read, the offending one included.
  const std::size_t offset = sax.position() > 0 ? sax.position() - 1 : 0;
  return text_position(text, offset) + ": " + sax.what();
}

}  // namespace dagsgd::model
