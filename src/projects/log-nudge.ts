// A nudge for a node that can be dialled: the log request
// waits in the store for the node's next heartbeat either way, but a node that
// gave an address is also told at once, with a request signed by the trust key
// (src/signed/requests.ts) to the address its certificate names — the same rule
// as the readiness probe — so its Agent fetches the request now instead of up to
// one heartbeat interval later. Nodes with no inbound port lose nothing.
import type { Context } from '../context/context.ts'
import { pinnedFetch } from '../crypto/pin.ts'
import type { Fabric } from '../fabric/fabric.ts'
import { urlNamedByCertificate } from '../fabric/probe.ts'
import { signAgentRequest } from '../signed/requests.ts'
import { log } from '../log.ts'
import { getNode } from '../store/nodes.ts'
import { LOG_POLL_PATH } from '../wire/projects.ts'

const TIMEOUT_MS = 3000

/** Tells the node's Agent that a log request waits; never throws (the heartbeat carries it anyway). */
export async function nudgeNode(ctx: Context, fabric: Fabric, node: string): Promise<void> {
  try {
    const n = fabric.registry.get(node)
    if (!n?.url || !n.certSha256 || n.revokedAt !== null) return
    const row = await getNode(ctx.store, node)
    if (!row?.cert_pem || !urlNamedByCertificate(n.url, row.cert_pem)) return
    const headers = signAgentRequest((d, m) => fabric.trust.sign(d, m), { method: 'POST', path: LOG_POLL_PATH, body: '', node }, ctx.now())
    await pinnedFetch(`${n.url.replace(/\/+$/, '')}${LOG_POLL_PATH}`, { method: 'POST', headers, signal: AbortSignal.timeout(TIMEOUT_MS) }, { caPem: row.cert_pem })
  } catch (e) {
    log.debug(`log request nudge to ${node}: ${(e as Error).message}`)
  }
}
