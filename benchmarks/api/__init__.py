"""REST API of the benchmarks app: results and recommendations."""
