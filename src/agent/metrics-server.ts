// The Agent's metrics for a local scrape (docs/monitoring.md): plain HTTP on
// the address `--metrics-address` names, loopback unless the operator says
// otherwise (`--metrics-allow-remote`: they carry no secret, but say what
// runs on the node). Only GET /metrics answers; everything else is a 404.
import { isIP } from 'node:net'
import { isLoopback } from '../addresses.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { expose } from '../metrics/exposition.ts'
import { agentRegistry, watchAgent, type AgentSources } from '../metrics/agent.ts'

/** `HOST:PORT` (IPv6 in brackets) checked: a loopback host unless `allowRemote`. */
export function parseMetricsAddress(address: string, allowRemote = false): { host: string; port: number } {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(address)
  const port = Number(m?.[2])
  if (!m || port < 1 || port > 65535) throw new MusterError('invalid-request', `--metrics-address ${address}: expected HOST:PORT, like 127.0.0.1:9464`)
  const host = m[1]!.replace(/^\[(.*)\]$/, '$1')
  if (host !== 'localhost' && !isIP(host)) throw new MusterError('invalid-request', `--metrics-address ${address}: the host must be an IP address or localhost`)
  if (!isLoopback(host) && !allowRemote) {
    throw new MusterError('invalid-request', `--metrics-address ${address} is reachable from other machines; the Agent's metrics are for a local scrape. Bind 127.0.0.1, or add --metrics-allow-remote if other machines are meant to read them.`)
  }
  return { host, port }
}

/** What the gauges read of a running Agent. */
export function agentSources(a: { failures: number; backoffMs: number; replicaStatus: () => readonly { state: string }[]; trustKeys: readonly { notBefore: string }[]; trustRefreshedAt: number | undefined; state: string | undefined; now: () => number }): AgentSources {
  return { failures: () => a.failures, backoffMs: () => a.backoffMs, replicas: () => a.replicaStatus(), trustKeys: () => a.trustKeys, trustRefreshedAt: () => a.trustRefreshedAt, state: () => a.state, now: a.now }
}

export interface AgentMetrics {
  readonly port: number
  stop(): void
}

export function startAgentMetrics(sources: AgentSources, address: { host: string; port: number }): AgentMetrics {
  const unwatch = watchAgent(sources)
  let server: ReturnType<typeof Bun.serve>
  try {
    server = Bun.serve({
      hostname: address.host,
      port: address.port,
      reusePort: false,
      async fetch(req) {
        const path = new URL(req.url).pathname
        if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return Response.json({ error: { code: 'not-found', message: 'No such route.' } }, { status: 404 })
        const { body, contentType } = await expose(agentRegistry, req.headers.get('accept'))
        return new Response(body, { headers: { 'content-type': contentType, 'cache-control': 'no-store' } })
      },
    })
  } catch (e) {
    unwatch()
    if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new MusterError('already-running', `--metrics-address: port ${address.port} on ${address.host} is already in use.`)
    throw e
  }
  log.info(`agent metrics on http://${isIP(address.host) === 6 ? `[${address.host}]` : address.host}:${server.port}/metrics`)
  return {
    port: server.port ?? address.port,
    stop() {
      unwatch()
      void server.stop(true)
    },
  }
}
