// SPDX-License-Identifier: Apache-2.0
#include "credentials.h"

#include <grpcpp/security/server_credentials.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace swx {

namespace {

// The whole of a PEM file, or false with *error.
bool ReadPem(const char* flag, const std::string& path, std::string* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = std::string(flag) + " " + path + ": " + strerror(errno);
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  if (out->find("-----BEGIN ") == std::string::npos) {
    *error = std::string(flag) + " " + path + ": not PEM (no -----BEGIN line)";
    return false;
  }
  return true;
}

}  // namespace

std::string CheckTls(const TlsOptions& tls) {
  if (!tls.enabled) {
    if (!tls.cert.empty() || !tls.key.empty() || !tls.ca.empty() || tls.client_auth)
      return "--grpc-server-cert, -key, -cacert and -with-client-auth need --grpc-server-ssl";
    return "";
  }
  if (tls.cert.empty() || tls.key.empty())
    return "--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key";
  if (tls.client_auth && tls.ca.empty())
    return "--grpc-server-with-client-auth needs --grpc-server-cacert (the clients' CA)";
  return "";
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TlsOptions& tls,
                                                           std::string* error) {
  if (!tls.enabled) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  grpc::SslServerCredentialsOptions options;
  if (!ReadPem("--grpc-server-cert", tls.cert, &pair.cert_chain, error) ||
      !ReadPem("--grpc-server-key", tls.key, &pair.private_key, error) ||
      (!tls.ca.empty() && !ReadPem("--grpc-server-cacert", tls.ca, &options.pem_root_certs, error)))
    return nullptr;
  options.pem_key_cert_pairs.push_back(pair);
  // with client auth, a client without a certificate the CA signed is
  // refused in the handshake; without, none is asked for
  options.client_certificate_request =
      tls.client_auth ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                      : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  return grpc::SslServerCredentials(options);
}

}  // namespace swx
