// Fixture for detail_namespace.py --selftest: a detail/ header that keeps
// everything inside namespace detail. Nothing here may be reported. The
// traps: declarations in comments, literals and directives at degrade scope.
//
// struct LooksPublic;   (a comment, not a declaration)

#ifndef FIXTURE_CLEAN_HPP_
#define FIXTURE_CLEAN_HPP_

#include <cstddef>
#include "degrade/version.hpp"

#define FIXTURE_DECLARE(x) \
  inline int x = 0;        \
  struct x##_t {};

DEGRADE_NAMESPACE_BEGIN
/* struct AlsoNotADeclaration { int x; }; */
namespace detail {

inline constexpr std::size_t kBig = 1'000'000;
inline constexpr std::size_t kShifted = std::size_t{1} << 24;
inline constexpr char kBrace = '}';
inline constexpr const char* kText = "} struct Leak {";
inline constexpr const char* kRaw = R"json({"a": "}"})json";

struct Inside {
  int value = 0;
  void Touch() { if (value > 0) { --value; } }
};

namespace json = ::degrade::detail;

}  // namespace detail
DEGRADE_NAMESPACE_END

namespace degrade::detail::levels {
template <typename T>
T Identity(T t) { return t; }
}  // namespace degrade::detail::levels

namespace degrade {
namespace etcd {
namespace detail_etcd {
inline void Nested() {}
}  // namespace detail_etcd
}  // namespace etcd
}  // namespace degrade

#endif  // FIXTURE_CLEAN_HPP_
