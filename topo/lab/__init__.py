"""Lab building blocks shared by the labs, the PTF harness and the benchmarks:
network namespaces with veth pairs, and child processes with bounded waits."""
