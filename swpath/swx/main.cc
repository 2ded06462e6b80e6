// SPDX-License-Identifier: Apache-2.0
//
// quicknat-swx: a P4Runtime switch on DPDK's SWX pipeline.
//
//   quicknat-swx [EAL options] -- --port 1=net_af_packet0 --port 2=...
//       [--grpc-addr 127.0.0.1:9559] [--device-id 1] [--idle-sleep-us N]
//
// The EAL's main lcore serves P4Runtime; each worker lcore (-l) runs one
// pipeline on its own queue of every port. It starts with no program: a
// controller pushes one (SetForwardingPipelineConfig), as to BMv2's
// simple_switch_grpc --no-p4. docs/p4-targets.md.
#include <getopt.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

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

void OnSignal(int) {
  // Shutdown from another thread: gRPC's shutdown is not signal-safe
  std::thread([] {
    if (g_server) g_server->Shutdown();
  }).detach();
}

void Usage(FILE* f) {
  fprintf(f,
          "usage: quicknat-swx [EAL options] -- --port N=DEVICE ... [--grpc-addr HOST:PORT]\n"
          "       [--device-id N] [--idle-sleep-us N] [--cache DIR] [--dpdk-internal DIR]\n"
          "       [--pool N] [--learn-timeouts S0,S1,...] [--version]\n"
          "  --port N=DEVICE     P4 port N (1..63) is the ethdev DEVICE (from --vdev)\n"
          "  --grpc-addr         the P4Runtime server's address (127.0.0.1:9559)\n"
          "  --idle-sleep-us N   a pipeline thread with little traffic sleeps N us\n"
          "  --learn-timeouts    the learner tables' timeout classes 0, 1, ... in seconds\n"
          "                      (as compiled: p4c-dpdk's 10,30,60,120,300,43200,120,120)\n"
          "  --cache DIR         compiled pipelines (" SWX_DEFAULT_CACHE ")\n"
          "  --dpdk-internal DIR rte_swx_pipeline_internal.h (" SWX_DPDK_INTERNAL ")\n");
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

  static const struct option options[] = {
      {"port", required_argument, nullptr, 'p'},
      {"grpc-addr", required_argument, nullptr, 'g'},
      {"device-id", required_argument, nullptr, 'd'},
      {"idle-sleep-us", required_argument, nullptr, 's'},
      {"cache", required_argument, nullptr, 'c'},
      {"dpdk-internal", required_argument, nullptr, 'i'},
      {"pool", required_argument, nullptr, 'n'},
      {"learn-timeouts", required_argument, nullptr, 'l'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  static swx_ports ports;
  std::string address = "127.0.0.1:9559", cache = SWX_DEFAULT_CACHE, internal = SWX_DPDK_INTERNAL;
  uint64_t device_id = 1;
  unsigned pool = 16384;
  swx::Device::Options o;
  char err[512];
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "", options, nullptr)) != -1) {
    switch (c) {
      case 'p':
        if (swx_ports_parse(&ports, optarg, err, sizeof(err)) != 0) {
          fprintf(stderr, "quicknat-swx: %s\n", err);
          return 2;
        }
        break;
      case 'g': address = optarg; break;
      case 'd': device_id = strtoull(optarg, nullptr, 10); break;
      case 's': o.idle_sleep_us = static_cast<uint32_t>(strtoul(optarg, nullptr, 10)); break;
      case 'c': cache = optarg; break;
      case 'i': internal = optarg; break;
      case 'n': pool = static_cast<unsigned>(strtoul(optarg, nullptr, 10)); break;
      case 'l':
        if (!swx::ParseLearnTimeouts(optarg, &o.learn_timeouts)) {
          fprintf(stderr,
                  "quicknat-swx: --learn-timeouts takes 1 to 8 seconds, comma-separated, each "
                  "at least 1: %s\n",
                  optarg);
          return 2;
        }
        break;
      case 'h': Usage(stdout); return 0;
      default: Usage(stderr); return 2;
    }
  }
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) o.lcores.push_back(lcore);
  if (o.lcores.empty()) {
    fprintf(stderr,
            "quicknat-swx: no worker lcore for a pipeline: give the EAL two or more (-l 0,1)\n");
    return 2;
  }
  if (swx_ports_start(&ports, static_cast<unsigned>(o.lcores.size()), pool, err, sizeof(err))) {
    fprintf(stderr, "quicknat-swx: %s\n", err);
    return 1;
  }
  o.build.cache_dir = cache.c_str();
  o.build.include_dir = internal.c_str();
  o.ports = &ports;
  int status;
  {
    swx::Device device(o);
    swx::Server service(&device, device_id);
    swx::RegisterTelemetry(&device);
    grpc::ServerBuilder builder;
    int bound = 0;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &bound);
    builder.RegisterService(&service);
    builder.SetMaxReceiveMessageSize(64 << 20);
    builder.SetMaxSendMessageSize(64 << 20);
    g_server = builder.BuildAndStart();
    if (!g_server || bound == 0) {
      fprintf(stderr, "quicknat-swx: cannot serve P4Runtime on %s\n", address.c_str());
      return 1;
    }
    signal(SIGINT, OnSignal);
    signal(SIGTERM, OnSignal);
    service.Start();
    fprintf(stderr, "quicknat-swx: device %llu, %zu pipeline thread(s), P4Runtime on %s\n",
            static_cast<unsigned long long>(device_id), o.lcores.size(), address.c_str());
    g_server->Wait();
    swx::DetachTelemetry();
    service.Stop();
    g_server.reset();
    status = 0;
  }
  swx_ports_stop(&ports);
  rte_eal_cleanup();
  return status;
}
