// Expected<T>: a value, or an Error that says where and what. The error path for bad input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace dagsgd::model {

struct Error {
  std::string message;
};

// Prefixes an error with where it happened: "trace 'x.json': " + "event 3: ...".
inline Error with_context(const std::string& context, const Error& e) {
  return Error{context + ": " + e.message};
}

namespace detail {
[[noreturn]] inline void bad_access(const Error& e) {
  std::fprintf(stderr, "dagsgd: internal error: value() of an error: %s\n", e.message.c_str());
  std::abort();
}
}  // namespace detail

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT
  Expected(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    if (!ok()) detail::bad_access(std::get<1>(v_));
    return std::get<0>(v_);
  }
  const T& value() const& {
    if (!ok()) detail::bad_access(std::get<1>(v_));
    return std::get<0>(v_);
  }
  T&& value() && {
    if (!ok()) detail::bad_access(std::get<1>(v_));
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Expected<void> ok() { return {}; }

}  // namespace dagsgd::model

// Returns the error of an Expected expression from the enclosing function.
#define DAGSGD_TRY(expr)                                             \
  do {                                                               \
    auto&& dagsgd_try_result_ = (expr);                              \
    if (!dagsgd_try_result_.ok()) return dagsgd_try_result_.error(); \
  } while (false)
