"""Developer tooling, never imported by the service: benchmarks, load and fault runs, the stack."""
