// SPDX-License-Identifier: Apache-2.0
//
// quicknat-swx: a P4Runtime switch on DPDK's SWX pipeline.
//
//   quicknat-swx [EAL options] -- --port 1=net_af_packet0 --port 2=...
//       [--grpc-addr 127.0.0.1:9559] [--device-id 1] [--idle-sleep-us N]
//       [--grpc-server-ssl --grpc-server-cert F --grpc-server-key F
//        [--grpc-server-cacert F --grpc-server-with-client-auth]]
//
// The EAL's main lcore serves P4Runtime; each worker lcore (-l) runs one
// pipeline on its own queue of every port. It starts with no program: a
// controller pushes one (SetForwardingPipelineConfig), as to BMv2's
// simple_switch_grpc --no-p4. docs/p4-targets.md.
#include <getopt.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "p4rt/credentials.h"
#include "p4rt/device.h"
#include "p4rt/server.h"
#include "p4rt/telemetry.h"

extern "C" {
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
}

#ifndef SWX_DEFAULT_CACHE
#define SWX_DEFAULT_CACHE "/var/cache/quicknat-swx"
#endif
#ifndef SWX_DPDK_INTERNAL
#define SWX_DPDK_INTERNAL "/usr/share/quicknat/dpdk-internal"
#endif
#ifndef SWX_VERSION
#define SWX_VERSION "0.1.0"
#endif

namespace {

std::unique_ptr<grpc::Server> g_server;

// How long a stop waits for RPCs in progress. A controller's StreamChannel
// is one until the controller closes it: without a deadline, Shutdown
// waits for that, and a switch with a controller connected did not stop.
constexpr auto kShutdownGrace = std::chrono::seconds(1);

void OnSignal(int) {
  // Shutdown from another thread: gRPC's shutdown is not signal-safe
  std::thread([] {
    if (g_server) g_server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  }).detach();
}

void Usage(FILE* f) {
  fprintf(f,
          "usage: quicknat-swx [EAL options] -- --port N=DEVICE ... [--grpc-addr HOST:PORT]\n"
          "       [--device-id N] [--idle-sleep-us N] [--cache DIR] [--dpdk-internal DIR]\n"
          "       [--pool N] [--learn-timeouts S0,S1,...] [--version]\n"
          "       [--grpc-server-ssl --grpc-server-cert FILE --grpc-server-key FILE\n"
          "        [--grpc-server-cacert FILE --grpc-server-with-client-auth]]\n"
          "  --port N=DEVICE     P4 port N (1..63) is the ethdev DEVICE (from --vdev)\n"
          "  --grpc-addr         the P4Runtime server's address (127.0.0.1:9559)\n"
          "  --grpc-server-ssl   serve P4Runtime over TLS with this certificate and key (PEM);\n"
          "                      with client auth, only to clients the CA (PEM) signed\n"
          "  --idle-sleep-us N   a pipeline thread with little traffic sleeps N us\n"
          "                      (0: it polls its core; at most 1000000)\n"
          "  --learn-timeouts    the learner tables' timeout classes 0, 1, ... in seconds\n"
          "                      (as compiled: p4c-dpdk's 10,30,60,120,300,43200,120,120)\n"
          "  --cache DIR         compiled pipelines (" SWX_DEFAULT_CACHE ")\n"
          "  --dpdk-internal DIR rte_swx_pipeline_internal.h (" SWX_DPDK_INTERNAL ")\n");
}

// A pipeline thread asleep holds an arriving packet up to this long.
constexpr uint64_t kMaxIdleSleepUs = 1000000;
// The pool's per-lcore cache is 256 buffers (swx_ports_start).
constexpr uint64_t kMinPool = 1024;

// A decimal number from min to max, or false: strtoul alone reads "abc"
// as 0 (for --idle-sleep-us, a polling switch) and "-1" as its maximum.
bool ParseNumber(const char* name, const char* text, uint64_t min, uint64_t max,
                 uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || v < min || v > max) {
    fprintf(stderr, "quicknat-swx: %s takes a number from %llu to %llu: %s\n", name,
            static_cast<unsigned long long>(min), static_cast<unsigned long long>(max), text);
    return false;
  }
  *out = v;
  return true;
}

// What the command line says, beyond the ports (swx_ports_parse's).
struct Args {
  std::string address = "127.0.0.1:9559";
  std::string cache = SWX_DEFAULT_CACHE;
  std::string internal = SWX_DPDK_INTERNAL;
  uint64_t device_id = 1;
  unsigned pool = 16384;
  swx::TlsOptions tls;
  swx::Device::Options device;  // its lcores, build and ports: main's
};

// The options after the EAL's into *args and *ports: -1 to go on, else
// the exit status (2 for a bad option, 0 for --help).
int ParseArgs(int argc, char** argv, swx_ports* ports, Args* args) {
  static const struct option options[] = {
      {"port", required_argument, nullptr, 'p'},
      {"grpc-addr", required_argument, nullptr, 'g'},
      {"device-id", required_argument, nullptr, 'd'},
      {"idle-sleep-us", required_argument, nullptr, 's'},
      {"cache", required_argument, nullptr, 'c'},
      {"dpdk-internal", required_argument, nullptr, 'i'},
      {"pool", required_argument, nullptr, 'n'},
      {"learn-timeouts", required_argument, nullptr, 'l'},
      {"grpc-server-ssl", no_argument, nullptr, 'S'},
      {"grpc-server-cert", required_argument, nullptr, 'C'},
      {"grpc-server-key", required_argument, nullptr, 'K'},
      {"grpc-server-cacert", required_argument, nullptr, 'A'},
      {"grpc-server-with-client-auth", no_argument, nullptr, 'M'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  swx::Device::Options& o = args->device;
  char err[512];
  int c;
  uint64_t number;
  optind = 1;
  while ((c = getopt_long(argc, argv, "", options, nullptr)) != -1) {
    switch (c) {
      case 'p':
        if (swx_ports_parse(ports, optarg, err, sizeof(err)) != 0) {
          fprintf(stderr, "quicknat-swx: %s\n", err);
          return 2;
        }
        break;
      case 'g': args->address = optarg; break;
      case 'd':
        if (!ParseNumber("--device-id", optarg, 0, UINT64_MAX, &args->device_id)) return 2;
        break;
      case 's':
        if (!ParseNumber("--idle-sleep-us", optarg, 0, kMaxIdleSleepUs, &number)) return 2;
        o.idle_sleep_us = static_cast<uint32_t>(number);
        break;
      case 'c': args->cache = optarg; break;
      case 'i': args->internal = optarg; break;
      case 'n':
        if (!ParseNumber("--pool", optarg, kMinPool, UINT32_MAX, &number)) return 2;
        args->pool = static_cast<unsigned>(number);
        break;
      case 'l':
        if (!swx::ParseLearnTimeouts(optarg, &o.learn_timeouts)) {
          fprintf(stderr,
                  "quicknat-swx: --learn-timeouts takes 1 to 8 seconds, comma-separated, each "
                  "at least 1: %s\n",
                  optarg);
          return 2;
        }
        break;
      case 'S': args->tls.enabled = true; break;
      case 'C': args->tls.cert = optarg; break;
      case 'K': args->tls.key = optarg; break;
      case 'A': args->tls.ca = optarg; break;
      case 'M': args->tls.client_auth = true; break;
      case 'h': Usage(stdout); return 0;
      default: Usage(stderr); return 2;
    }
  }
  if (std::string wrong = swx::CheckTls(args->tls); !wrong.empty()) {
    fprintf(stderr, "quicknat-swx: %s\n", wrong.c_str());
    return 2;
  }
  return -1;
}

// The device and its P4Runtime server until SIGINT or SIGTERM: 0, or 1
// when the server does not start.
int Serve(const Args& args, const std::shared_ptr<grpc::ServerCredentials>& credentials) {
  swx::Device device(args.device);
  swx::Server service(&device, args.device_id);
  swx::RegisterTelemetry(&device);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(args.address, credentials, &bound);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  g_server = builder.BuildAndStart();
  if (!g_server || bound == 0) {
    fprintf(stderr, "quicknat-swx: cannot serve P4Runtime on %s\n", args.address.c_str());
    return 1;
  }
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  service.Start();
  fprintf(stderr, "quicknat-swx: device %llu, %zu pipeline thread(s), P4Runtime on %s (%s)\n",
          static_cast<unsigned long long>(args.device_id), args.device.lcores.size(),
          args.address.c_str(),
          !args.tls.enabled ? "plaintext" : args.tls.client_auth ? "mutual TLS" : "TLS");
  g_server->Wait();
  swx::DetachTelemetry();
  service.Stop();
  g_server.reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--version") == 0) {
      printf("quicknat-swx %s (DPDK SWX pipeline, P4Runtime 1.3)\n", SWX_VERSION);
      return 0;
    }
  int eal = rte_eal_init(argc, argv);
  if (eal < 0) {
    fprintf(stderr, "quicknat-swx: the EAL does not start: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  argc -= eal;
  argv += eal;

  static swx_ports ports;
  Args args;
  if (int done = ParseArgs(argc, argv, &ports, &args); done >= 0) return done;
  std::string error;
  std::shared_ptr<grpc::ServerCredentials> credentials = swx::ServerCredentials(args.tls, &error);
  if (!credentials) {  // never plaintext in its place
    fprintf(stderr, "quicknat-swx: %s\n", error.c_str());
    return 1;
  }
  swx::Device::Options& o = args.device;
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) o.lcores.push_back(lcore);
  if (o.lcores.empty()) {
    fprintf(stderr,
            "quicknat-swx: no worker lcore for a pipeline: give the EAL two or more (-l 0,1)\n");
    return 2;
  }
  char err[512];
  if (swx_ports_start(&ports, static_cast<unsigned>(o.lcores.size()), args.pool, err,
                      sizeof(err))) {
    fprintf(stderr, "quicknat-swx: %s\n", err);
    return 1;
  }
  o.build.cache_dir = args.cache.c_str();
  o.build.include_dir = args.internal.c_str();
  o.ports = &ports;
  // as before the split: a server that does not start leaves the ports
  // and the EAL to the exit
  if (int status = Serve(args, credentials); status != 0) return status;
  swx_ports_stop(&ports);
  rte_eal_cleanup();
  return 0;
}
