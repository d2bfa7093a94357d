// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Certificates for tests that need TLS: the examples' maker
// (examples/tls_certificates.hpp), run in the test's own temporary
// directory.

#ifndef DEGRADE_TESTS_SUPPORT_TEST_CERTS_HPP_
#define DEGRADE_TESTS_SUPPORT_TEST_CERTS_HPP_

#include "../../examples/tls_certificates.hpp"

namespace degrade_tests {

using tls_certificates::HaveOpenssl;
using tls_certificates::MakeTestCa;
using tls_certificates::MakeTestLeaf;
using tls_certificates::ReadWholeFile;
using tls_certificates::TestCert;

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_TEST_CERTS_HPP_
