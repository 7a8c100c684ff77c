// Simulated nodes for rollout tests: enrolled through the real route, each
// sends what the Agent sends (heartbeats, what its Agent runs, update
// reports), checks its directive as the Agent does (trust keys, this node,
// unexpired; the manifest under the release keys it learned) and plays an
// update: downloading → installing → restarting → done, or a failure.
import { verifyManifest, type ReleaseKey } from '../../src/signed/releases.ts'
import { checkDirective as verifyDirective } from '../../src/signed/documents.ts'
import type { DirectivePayload as Directive } from '../../src/wire/rollouts.ts'
import type { TrustKey } from '../../src/wire/nodes.ts'
import { publishRelease } from '../../src/releases/publish.ts'
import { newReleaseKey, type ReleaseKeyFile } from '../../src/signed/releases.ts'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from './certs.ts'
import type { TestPlatform } from './platform.ts'
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'

export type Play = 'done' | 'failed' | 'rolled-back' | 'silent'

export class SimNode {
  credential = ''
  runs: string
  sha: string
  sequence = 0
  /** What this node does when told (default: done). */
  play: Play = 'done'
  /** Directives this node received. */
  readonly directives: Directive[] = []
  busy = false

  constructor(
    readonly p: TestPlatform,
    readonly name: string,
    version = '0.0.1',
    readonly labels: Record<string, string> = {},
  ) {
    this.runs = version
    this.sha = createHash('sha256').update(`sim ${name} ${version}`).digest('hex')
  }

  private async call(method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(`${this.p.url}${path}`, { method, headers: { authorization: `Bearer ${this.credential}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) })
  }

  async enroll(): Promise<this> {
    const { token } = await this.p.client.nodes.createEnrollment({ nodeId: this.name })
    const r = await enrollRaw(this.p.url, { token, nodeId: this.name, certPem: (await newCert()).certPem, version: VERSION, ...(Object.keys(this.labels).length ? { labels: this.labels } : {}) })
    if (r.status !== 200) throw new Error(`enroll ${this.name}: ${r.status} ${await r.text()}`)
    this.credential = ((await r.json()) as { credential: string }).credential
    return this
  }

  async facts(): Promise<void> {
    const r = await this.call('POST', '/api/v1/nodes/self/agent', { arch: 'x64', version: this.runs, binarySha256: this.sha, sequence: this.sequence, skipped: [] })
    if (r.status !== 200) throw new Error(`facts ${this.name}: ${r.status} ${await r.text()}`)
  }

  async beat(): Promise<{ update?: true }> {
    const r = await this.call('POST', '/api/v1/nodes/register', { version: this.runs, capacity: { cpuMillis: 1000, memoryMB: 1024 }, replicas: [] })
    if (r.status !== 200) throw new Error(`heartbeat ${this.name}: ${r.status} ${await r.text()}`)
    return (await r.json()) as { update?: true }
  }

  async directive(): Promise<unknown> {
    const r = await this.call('GET', '/api/v1/nodes/self/directive')
    return ((await r.json()) as { directive: unknown }).directive
  }

  async report(body: Record<string, unknown>): Promise<number> {
    return (await this.call('POST', '/api/v1/nodes/self/update', body)).status
  }

  /** One round as the Agent does it: a heartbeat, and when told, the update played out (verified first). */
  async round(trust: () => Promise<TrustKey[]>, releaseKeys: ReleaseKey[], stepMs = 0, now: () => number = Date.now): Promise<void> {
    const a = await this.beat()
    if (!a.update || this.busy) return
    this.busy = true
    try {
      const doc = await this.directive()
      // The hint lags the store by a moment: a node already done asks once more and gets nothing, as the Agent does.
      if (doc === null) return
      const check = verifyDirective(doc, await trust(), this.name, now())
      if (!check.ok) throw new Error(`${this.name}: directive refused: ${check.reason}`)
      const m = verifyManifest(check.directive.release, releaseKeys)
      if (!m.ok) throw new Error(`${this.name}: manifest refused: ${m.reason}`)
      this.directives.push(check.directive)
      if (this.play === 'silent') return
      const base = { rollout: check.directive.rollout, sha256: m.value.manifest.sha256, version: m.value.manifest.version }
      const step = () => Bun.sleep(stepMs)
      await this.report({ ...base, state: 'downloading' })
      await step()
      await this.report({ ...base, state: 'installing' })
      await step()
      if (this.play === 'failed') return void (await this.report({ ...base, state: 'failed', error: 'no space left on the device' }))
      await this.report({ ...base, state: 'restarting' })
      await step()
      if (this.play === 'rolled-back') return void (await this.report({ ...base, state: 'rolled-back', error: 'the new Agent did not heartbeat at 0.1.0 within 60 s' }))
      this.runs = m.value.manifest.version
      this.sha = m.value.manifest.sha256
      this.sequence = m.value.manifest.sequence
      await this.report({ ...base, state: 'done' })
      await this.facts()
    } finally {
      this.busy = false
    }
  }
}

/** A release of `version` (a small fake binary: the Platform never runs it) signed with `key`. */
export async function fakeRelease(p: TestPlatform, dir: string, version: string, key: ReleaseKeyFile = newReleaseKey(), sequence?: number): Promise<{ key: ReleaseKeyFile; sha256: string; sequence: number }> {
  const file = join(dir, `fake-${version}-${Math.random().toString(36).slice(2)}`)
  writeFileSync(file, `not really muster ${version} ${Math.random()}\n`.repeat(100))
  const r = await publishRelease(p.client, { binary: file, key, version, arch: 'x64', level: 1, ...(sequence ? { sequence } : {}) })
  return { key, sha256: r.sha256, sequence: r.sequence }
}
