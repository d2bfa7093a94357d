// Fixture for detail_namespace.py --selftest: a detail/ header that leaks.
// Each line marked in a comment must be reported, and no other line.

#ifndef FIXTURE_LEAKS_HPP_
#define FIXTURE_LEAKS_HPP_

#include <cstddef>
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

struct PublicSettings {  // EXPECT-VIOLATION
  int limit = 0;
};

inline constexpr std::size_t kMax =  // EXPECT-VIOLATION
    std::size_t{1} << 24;

namespace detail {
struct Private {};
}  // namespace detail

inline int Validate(const PublicSettings& s) {  // EXPECT-VIOLATION
  return s.limit > 0 ? 0 : 1;
}

enum class Algorithm { kFixed, kAimd };  // EXPECT-VIOLATION

namespace json = detail;  // EXPECT-VIOLATION
using detail::Private;    // EXPECT-VIOLATION

DEGRADE_NAMESPACE_END

int GlobalCounter = 0;  // EXPECT-VIOLATION

namespace degrade {
namespace testing_only {
class Token;  // EXPECT-VIOLATION
}  // namespace testing_only
}  // namespace degrade

#endif  // FIXTURE_LEAKS_HPP_
