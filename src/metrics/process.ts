// The standard process families (process_cpu_seconds_total,
// process_resident_memory_bytes, process_open_fds, process_max_fds,
// process_start_time_seconds, …) and the event loop's lag
// (nodejs_eventloop_lag_seconds and its percentiles), from prom-client's
// default collectors. Turned on once per registry, and only in a process
// that serves metrics: they keep an event-loop monitor running.
import { collectDefaultMetrics, type Registry } from 'prom-client'

const on = new WeakSet<Registry>()

export function withProcessMetrics(registry: Registry): void {
  if (on.has(registry)) return
  on.add(registry)
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 })
  // Gauges named like counters (`promtool check metrics` refuses them), and the heap spaces: on Bun,
  // v8.getHeapSpaceStatistics() walks the heap (26–28 ms a scrape at 100,000 nodes, bench/metrics.ts).
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total', 'nodejs_heap_space_size_total_bytes', 'nodejs_heap_space_size_used_bytes', 'nodejs_heap_space_size_available_bytes']) registry.removeSingleMetric(name)
}
