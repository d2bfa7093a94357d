// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Certificates for the examples and tests that run TLS, made by the
// `openssl` command (Debian: openssl) in a directory the caller owns: a CA,
// and leaves it signs with the subject alternative names asked for. Nothing
// is committed to the tree, so no key outlives its run and no certificate
// expires in the repository. P-256 keys: quick to make, and what
// production meshes issue. Not for production: a real mesh's CA issues
// and rotates its certificates.

#ifndef DEGRADE_EXAMPLES_TLS_CERTIFICATES_HPP_
#define DEGRADE_EXAMPLES_TLS_CERTIFICATES_HPP_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tls_certificates {

struct TestCert {
  std::string cert;  // PEM file paths
  std::string key;
};

// The contents of `path`, or "" when it cannot be read.
inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Whether the openssl command can be run.
inline bool HaveOpenssl() {
  return std::system("openssl version >/dev/null 2>&1") == 0;
}

namespace test_certs_detail {

inline absl::Status Run(const std::string& dir, const std::string& command) {
  const std::string line =
      absl::StrCat("cd '", dir, "' && ", command, " >>openssl.log 2>&1");
  if (std::system(line.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("openssl failed: ", command, "\n",
                     ReadWholeFile(dir + "/openssl.log")));
  }
  return absl::OkStatus();
}

}  // namespace test_certs_detail

// A self-signed CA `name` in `dir` (files name.crt, name.key).
inline absl::StatusOr<TestCert> MakeTestCa(const std::string& dir,
                                           const std::string& name) {
  TestCert ca{absl::StrCat(dir, "/", name, ".crt"),
              absl::StrCat(dir, "/", name, ".key")};
  absl::Status s = test_certs_detail::Run(
      dir,
      absl::StrCat("openssl req -x509 -newkey ec -pkeyopt "
                   "ec_paramgen_curve:prime256v1 -nodes -keyout ",
                   name, ".key -out ", name, ".crt -days 2 -subj '/CN=", name,
                   "' -addext basicConstraints=critical,CA:TRUE "
                   "-addext keyUsage=critical,keyCertSign,cRLSign"));
  if (!s.ok()) return s;
  return ca;
}

// A leaf `name` (its common name) signed by `ca`, with `sans` as its
// subject alternative names in openssl's syntax ("DNS:front.mesh,
// IP:127.0.0.1"; empty for none), usable as a server and a client.
inline absl::StatusOr<TestCert> MakeTestLeaf(const std::string& dir,
                                             const TestCert& ca,
                                             const std::string& name,
                                             const std::string& sans) {
  TestCert leaf{absl::StrCat(dir, "/", name, ".crt"),
                absl::StrCat(dir, "/", name, ".key")};
  {
    std::ofstream ext(absl::StrCat(dir, "/", name, ".ext"));
    ext << "basicConstraints=CA:FALSE\n"
        << "keyUsage=critical,digitalSignature,keyEncipherment\n"
        << "extendedKeyUsage=serverAuth,clientAuth\n";
    if (!sans.empty()) ext << "subjectAltName=" << sans << "\n";
  }
  absl::Status s = test_certs_detail::Run(
      dir,
      absl::StrCat("openssl req -newkey ec -pkeyopt "
                   "ec_paramgen_curve:prime256v1 -nodes -keyout ",
                   name, ".key -out ", name, ".csr -subj '/CN=", name, "'"));
  if (!s.ok()) return s;
  s = test_certs_detail::Run(
      dir, absl::StrCat("openssl x509 -req -in ", name, ".csr -CA '", ca.cert,
                        "' -CAkey '", ca.key, "' -CAcreateserial -out ", name,
                        ".crt -days 2 -extfile ", name, ".ext"));
  if (!s.ok()) return s;
  return leaf;
}

}  // namespace tls_certificates

#endif  // DEGRADE_EXAMPLES_TLS_CERTIFICATES_HPP_
