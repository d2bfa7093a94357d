// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Certificates for tests that need TLS: the examples' maker
// (examples/tls_certificates.hpp), run in the test's own temporary
// directory.

#ifndef DEGRADE_TESTS_SUPPORT_TEST_CERTS_HPP_
#define DEGRADE_TESTS_SUPPORT_TEST_CERTS_HPP_

#include <fstream>
#include <string>

#include "../../examples/tls_certificates.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace degrade_tests {

using tls_certificates::HaveOpenssl;
using tls_certificates::MakeTestCa;
using tls_certificates::MakeTestLeaf;
using tls_certificates::ReadWholeFile;
using tls_certificates::TestCert;

// A leaf like MakeTestLeaf's, for certificates an attacker or a careless CA
// would make: `subject` is the whole subject name in openssl's syntax
// ("/CN=batch/CN=front.svc": several common names allowed), `sans` as for
// MakeTestLeaf (empty: none). Its files are `file`.crt and `file`.key.
// REQUIRES: `subject` and `file` hold no single quote.
inline absl::StatusOr<TestCert> MakeTestLeafWithSubject(
    const std::string& dir, const TestCert& ca, const std::string& file,
    const std::string& subject, const std::string& sans) {
  TestCert leaf{absl::StrCat(dir, "/", file, ".crt"),
                absl::StrCat(dir, "/", file, ".key")};
  {
    std::ofstream ext(absl::StrCat(dir, "/", file, ".ext"));
    ext << "basicConstraints=CA:FALSE\n"
        << "keyUsage=critical,digitalSignature,keyEncipherment\n"
        << "extendedKeyUsage=serverAuth,clientAuth\n";
    if (!sans.empty()) ext << "subjectAltName=" << sans << "\n";
  }
  absl::Status s = tls_certificates::test_certs_detail::Run(
      dir,
      absl::StrCat("openssl req -newkey ec -pkeyopt "
                   "ec_paramgen_curve:prime256v1 -nodes -keyout '",
                   file, ".key' -out '", file, ".csr' -subj '", subject, "'"));
  if (!s.ok()) return s;
  s = tls_certificates::test_certs_detail::Run(
      dir, absl::StrCat("openssl x509 -req -in '", file, ".csr' -CA '", ca.cert,
                        "' -CAkey '", ca.key, "' -CAcreateserial -out '", file,
                        ".crt' -days 2 "
                        "-extfile '",
                        file, ".ext'"));
  if (!s.ok()) return s;
  return leaf;
}

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_TEST_CERTS_HPP_
