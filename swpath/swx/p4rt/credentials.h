// SPDX-License-Identifier: Apache-2.0
//
// The P4Runtime server's transport: plaintext, TLS, or mutual TLS (the
// P4Runtime spec's "Security considerations": a controller and its switch
// authenticate each other). The command line's words are simple_switch_grpc's,
// so an operator says the same to either target (docs/p4-targets.md).
#ifndef SWX_P4RT_CREDENTIALS_H
#define SWX_P4RT_CREDENTIALS_H

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

namespace swx {

struct TlsOptions {
  bool enabled = false;      // --grpc-server-ssl
  std::string cert;          // --grpc-server-cert: the switch's certificate chain (PEM)
  std::string key;           // --grpc-server-key: its private key (PEM)
  std::string ca;            // --grpc-server-cacert: the CA a client's certificate must chain to
  bool client_auth = false;  // --grpc-server-with-client-auth: a client must show one
};

// What the options say is missing or contradictory, or "" when they hold
// together (checked before the switch starts its ports).
std::string CheckTls(const TlsOptions& tls);

// The credentials to serve with: plaintext without --grpc-server-ssl; null,
// with *error naming the file, when a file cannot be read.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TlsOptions& tls,
                                                           std::string* error);

}  // namespace swx

#endif  // SWX_P4RT_CREDENTIALS_H
