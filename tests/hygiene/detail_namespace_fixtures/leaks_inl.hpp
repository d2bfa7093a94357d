// Fixture for detail_namespace.py --selftest: an -inl file defines members of
// a public class at degrade scope on purpose, and is exempt. Nothing here may
// be reported.

#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

inline int PublicClassMember() { return 1; }

DEGRADE_NAMESPACE_END
