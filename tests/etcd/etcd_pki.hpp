// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Certificates for the TLS tests of the etcd adapter, made by the openssl
// CLI in a fresh temporary directory (removed by the destructor):
//
//   ca.crt            the test CA
//   server.crt/.key   etcd's, signed by it, SAN IP:127.0.0.1 DNS:localhost;
//                     also for client auth: etcd 3.4's gateway presents it
//                     to etcd's own gRPC port
//   elsewhere.crt     etcd's too, but naming only DNS:elsewhere.example
//   client.crt/.key   a client's, signed by the CA; its subject has no
//                     CommonName (etcd 3.4's gateway refuses one that has)
//   expired.crt       the same key, signed by the CA, valid only in 2020
//   foreign-ca.crt    another CA; foreign.crt/.key a client's signed by it
//
// EC P-256 keys: quick to make. Not thread-safe: one test thread uses it.

#ifndef DEGRADE_TESTS_ETCD_ETCD_PKI_HPP_
#define DEGRADE_TESTS_ETCD_ETCD_PKI_HPP_

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "support/child_process.hpp"

namespace degrade_tests {

class EtcdPki {
 public:
  EtcdPki() = default;
  EtcdPki(const EtcdPki&) = delete;
  EtcdPki& operator=(const EtcdPki&) = delete;
  ~EtcdPki() {
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  absl::Status Make() {
    absl::StatusOr<std::string> dir = MakeTempDir("degrade-etcd-pki-");
    if (!dir.ok()) return dir.status();
    dir_ = *dir;
    absl::Status s = Write("server.ext",
                           "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                           "extendedKeyUsage=serverAuth,clientAuth\n");
    if (s.ok()) {
      s = Write("elsewhere.ext",
                "subjectAltName=DNS:elsewhere.example\n"
                "extendedKeyUsage=serverAuth,clientAuth\n");
    }
    if (s.ok()) s = Write("client.ext", "extendedKeyUsage=clientAuth\n");
    // `openssl ca` signs with chosen dates (x509 -req cannot backdate).
    if (s.ok()) {
      s = Write("ca.cnf",
                "[ca]\ndefault_ca=tca\n[tca]\ndatabase=" + dir_ +
                    "/index.txt\nnew_certs_dir=" + dir_ + "\nserial=" + dir_ +
                    "/serial.txt\ndefault_md=sha256\npolicy=any\n"
                    "x509_extensions=ext\n[any]\norganizationName=supplied\n"
                    "[ext]\nextendedKeyUsage=clientAuth\n");
    }
    if (s.ok()) s = Write("index.txt", "");
    if (s.ok()) s = Write("serial.txt", "01\n");
    if (s.ok()) s = SelfSigned("ca", "/CN=degrade-test-ca");
    if (s.ok()) s = SelfSigned("foreign-ca", "/CN=degrade-foreign-ca");
    if (s.ok()) s = Issued("server", "ca", "/CN=etcd", "server.ext");
    if (s.ok()) s = Issued("elsewhere", "ca", "/CN=etcd", "elsewhere.ext");
    if (s.ok()) s = Issued("client", "ca", "/O=degrade-test", "client.ext");
    if (s.ok()) {
      s = Issued("foreign", "foreign-ca", "/O=degrade-test", "client.ext");
    }
    if (s.ok()) {
      s = OpenSsl({"ca", "-batch", "-config", Path("ca.cnf"), "-cert",
                   Path("ca.crt"), "-keyfile", Path("ca.key"), "-startdate",
                   "20200101000000Z", "-enddate", "20200102000000Z", "-in",
                   Path("client.csr"), "-out", Path("expired.crt"), "-notext"});
    }
    return s;
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  absl::Status Write(const std::string& name, const std::string& text) {
    std::ofstream out(Path(name));
    out << text;
    out.close();
    return out ? absl::OkStatus()
               : absl::InternalError("cannot write " + Path(name));
  }

  absl::Status NewKey(const std::string& name) {
    return OpenSsl({"genpkey", "-algorithm", "EC", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-out", Path(name + ".key")});
  }

  absl::Status SelfSigned(const std::string& name, const std::string& subj) {
    absl::Status s = NewKey(name);
    if (!s.ok()) return s;
    return OpenSsl({"req", "-x509", "-new", "-key", Path(name + ".key"), "-out",
                    Path(name + ".crt"), "-days", "2", "-subj", subj});
  }

  absl::Status Issued(const std::string& name, const std::string& ca,
                      const std::string& subj, const std::string& ext) {
    absl::Status s = NewKey(name);
    if (s.ok()) {
      s = OpenSsl({"req", "-new", "-key", Path(name + ".key"), "-out",
                   Path(name + ".csr"), "-subj", subj});
    }
    if (!s.ok()) return s;
    return OpenSsl({"x509", "-req", "-in", Path(name + ".csr"), "-CA",
                    Path(ca + ".crt"), "-CAkey", Path(ca + ".key"),
                    "-CAcreateserial", "-out", Path(name + ".crt"), "-days",
                    "2", "-extfile", Path(ext)});
  }

  absl::Status OpenSsl(std::vector<std::string> args) {
    args.insert(args.begin(), "openssl");
    const std::string what = absl::StrJoin(args, " ");
    const std::string log = Path("openssl.log");
    std::error_code ignored;
    std::filesystem::remove(log, ignored);
    absl::StatusOr<pid_t> pid =
        SpawnLogged(std::move(args), log, /*own_group=*/false);
    if (!pid.ok()) return pid.status();
    const int status = ReapWithin(*pid, absl::Seconds(30), /*group=*/false);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::ifstream in(log);
      std::stringstream out;
      out << in.rdbuf();
      return absl::InternalError(absl::StrCat("`", what, "` failed (status ",
                                              status, "): ", out.str()));
    }
    return absl::OkStatus();
  }

  std::string dir_;
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_ETCD_ETCD_PKI_HPP_
