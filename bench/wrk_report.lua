-- Prints one machine-readable line with the numbers the portal benchmark reports.
done = function(summary, latency, requests)
  local seconds = summary.duration / 1e6
  io.write(string.format("RESULT requests=%d errors=%d rps=%.1f p50=%.2f p95=%.2f p99=%.2f\n",
    summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000))
end
