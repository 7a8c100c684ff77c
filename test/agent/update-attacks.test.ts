// Attacks on the update path, against real Agents (docs/upgrading.md "What a
// Platform cannot do"): a tampered byte, a manifest signed by another key, an
// older signed release replayed, a directive for another node or an expired
// one, a mirror serving another file, and the stolen Platform — an attacker
// holding its whole data directory, store and master key (here: the running
// Platform's own objects, its vault with the trust keys, its store) who tries
// every way to make a node run a binary the release key did not sign. Each
// attack's binary would leave a marker file if it ever ran.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { zstdCompressSync, zstdDecompressSync } from 'node:zlib'
import { publishRelease } from '../../src/releases/publish.ts'
import { fullBlob } from '../../src/releases/service.ts'
import { endorseKey, newReleaseKey, signManifest, type Manifest } from '../../src/signed/releases.ts'
import { DIRECTIVE } from '../../src/signed/documents.ts'
import { signDocument, type TrustSigner } from '../../src/signed/signed.ts'
import type { DirectivePayload as Directive } from '../../src/wire/rollouts.ts'
import { appendBlobPart, beginBlob, completeBlob, insertRelease, insertReleaseKey } from '../../src/store/releases.ts'
import { VERSION } from '../../src/version.ts'
import { buildWithVersion } from '../helpers/builds.ts'
import { startListenerPlatform, type ListenerPlatform } from '../helpers/node-side.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { joinNode, killAgentsUnder, releaseBoth, rolloutReaches, updateDirPrefix, type UpdateNode } from '../helpers/update-nodes.ts'

const OLD = '0.0.9'
const signDirective = (sign: TrustSigner, d: Directive) => signDocument(DIRECTIVE, sign, d)
process.env.MUSTER_ROLLOUT_TICK_MS = '200'

describe('attacks on updates', () => {
  const dir = tmpDir(updateDirPrefix('attacks'))
  const marker = join(dir.path, 'the-attacker-binary-ran')
  let p: ListenerPlatform
  let w1: UpdateNode
  let w2: UpdateNode
  let release: Awaited<ReturnType<typeof releaseBoth>>
  let evil: string
  beforeAll(async () => {
    p = await startListenerPlatform({ remoteDispatch: true })
    release = await releaseBoth(p, { bin: await buildWithVersion(OLD), version: OLD })
    // Both nodes run dist/muster as release 2 before the attacks: they hold the release key and sequence 2.
    // Trust refreshed every second: the nodes hear at once of a release key the attacker plants.
    const env = { MUSTER_AGENT_TRUST_MS: '1000', MUSTER_AGENT_TICK_MS: '300' }
    w1 = await joinNode(p, 'w1', await buildWithVersion(OLD), dir.path, env)
    w2 = await joinNode(p, 'w2', await buildWithVersion(OLD), dir.path, env)
    const r = await p.client.rollouts.start({ version: VERSION })
    expect((await rolloutReaches(p, r.id, ['done', 'halted'])).state).toBe('done')
    evil = join(dir.path, 'evil')
    writeFileSync(evil, `#!/bin/sh\ntouch ${marker}\nexec sleep 100000\n`)
    chmodSync(evil, 0o755)
  })
  afterAll(async () => {
    for (const n of [w1, w2]) await n?.stop()
    await killAgentsUnder(dir.path)
    await p?.close()
    dir[Symbol.dispose]()
  })

  /** The node as it is now, to compare after an attack: the same process, release and sequence, nothing under way. */
  const snapshot = (n: UpdateNode) => ({ pid: n.pid(), sequence: n.journal().sequence, current: n.journal().current, version: p.platform.fabric.registry.get(n.name)?.version })
  const unchanged = (n: UpdateNode, before: ReturnType<typeof snapshot>) => {
    expect(existsSync(marker)).toBe(false)
    expect(snapshot(n)).toEqual(before)
    expect(n.journal().step).toBeUndefined()
  }

  /** Stores a release row and its binary as an attacker with the store would, bypassing every check the API makes. */
  const plant = async (m: Manifest, kid: string, signature: string, bytes: Uint8Array) => {
    const db = p.platform.store
    await insertRelease(db, { sha256: m.sha256, version: m.version, arch: m.arch, size: m.size, sequence: m.sequence, kid, signature, mirrors: '[]', compressed_size: 0, added_at: Date.now(), added_by: 'attacker' })
    await beginBlob(db, fullBlob(m.sha256), Date.now())
    const packed = zstdCompressSync(bytes)
    for (let i = 0, part = 0; i < packed.byteLength; i += 700_000, part++) await appendBlobPart(db, fullBlob(m.sha256), part, packed.subarray(i, i + 700_000))
    await completeBlob(db, fullBlob(m.sha256))
  }
  const evilManifest = (sequence: number): Manifest => {
    const bytes = Buffer.concat([readFileSync(evil), Buffer.from(`# ${sequence}\n`)])
    return { version: '0.0.50', arch: 'x64', sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.byteLength, sequence }
  }

  test('a tampered byte in the binary the Platform serves: refused (SHA-256), nothing installed, the Agent keeps running', async () => {
    const before = snapshot(w1)
    const rel = await publishRelease(p.client, { binary: await buildWithVersion('0.0.20'), key: release.key, level: 1 })
    const real = p.platform.releases.download.bind(p.platform.releases)
    p.platform.releases.download = async (sha, _from) => {
      const full = new Uint8Array(await (await real(sha, undefined)).arrayBuffer())
      const raw = new Uint8Array(zstdDecompressSync(full))
      const i = raw.length >> 1
      raw[i] = raw[i]! ^ 0x01
      return new Response(zstdCompressSync(raw, { params: { 100: 1 } } as never), { headers: { 'x-muster-encoding': 'zstd' } })
    }
    try {
      const r = await p.client.rollouts.start({ version: rel.version, canaries: 1 })
      const s = await rolloutReaches(p, r.id, ['halted'])
      const n = s.nodes.find((x) => x.name === 'w1')!
      expect(n.state).toBe('failed')
      expect(n.error).toMatch(/^the Platform sent a binary whose SHA-256 \([0-9a-f]{16}…\) is not the signed manifest's \([0-9a-f]{16}…\)$/)
      expect(existsSync(join(w1.dataDir, 'versions', `0.0.20-${rel.sequence}`))).toBe(false)
      expect(readdirSync(join(w1.dataDir, 'versions')).filter((f) => f.startsWith('.staging'))).toEqual([])
      unchanged(w1, before)
      await p.client.rollouts.cancel(r.id)
    } finally {
      p.platform.releases.download = real
    }
  })

  test('a mirror serving another file: refused by the manifest, and the Platform serves the signed one', async () => {
    const other = readFileSync(evil)
    const mirror = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(other) })
    try {
      const rel = await publishRelease(p.client, { binary: await buildWithVersion('0.0.21'), key: release.key, level: 1, mirrors: [`http://127.0.0.1:${mirror.port}/muster`] })
      const r = await p.client.rollouts.start({ version: rel.version, canaries: 1, maxUnavailable: '2' })
      const s = await rolloutReaches(p, r.id, ['done', 'halted'])
      expect(s.state).toBe('done')
      expect(w1.log()).toMatch(/the mirror http:\/\/127\.0\.0\.1:\d+\/muster sent \d+ bytes, not the \d+ the signed manifest names/)
      expect(existsSync(marker)).toBe(false)
      await waitFor(() => p.platform.fabric.registry.get('w1')?.version === '0.0.21', { what: 'w1 on 0.0.21' })
    } finally {
      mirror.stop(true)
    }
  })

  test('the stolen Platform: its own release key planted in the store, a release signed with it, the legitimate release rewritten, a forged endorsement — no node runs the binary', async () => {
    const [before1, before2] = [snapshot(w1), snapshot(w2)]
    const attacker = newReleaseKey()
    // 1. its own key straight into the store (the API would refuse an unendorsed key), and a forged endorsement
    const forged = { ...endorseKey(attacker, attacker), endorsedBy: release.key.kid }
    await insertReleaseKey(p.platform.store, { kid: attacker.kid, public_key: attacker.publicKey, endorsed_by: forged.endorsedBy, signature: forged.signature!, added_at: Date.now(), added_by: 'attacker' })
    await p.platform.ctx.changes.publish('releases')
    await waitFor(() => p.platform.releases.publicKeys().some((k) => k.kid === attacker.kid), { what: 'the planted key published' })
    // the nodes hear of it with their trust keys and refuse it
    for (const n of [w1, w2]) {
      await n.agent.waitForLog(new RegExp(`release keys: the Platform names ${attacker.kid}, which no key this node trusts endorsed; ignored`), 30_000)
      expect(JSON.parse(readFileSync(join(n.dataDir, 'worker', 'release-keys.json'), 'utf8')).keys.map((k: { kid: string }) => k.kid)).toEqual([release.key.kid])
    }
    // 2. a release signed with it, rolled out
    const m = evilManifest(500)
    const signed = signManifest(attacker, m)
    await plant(m, signed.kid, signed.signature, Buffer.concat([readFileSync(evil), Buffer.from('# 500\n')]))
    const r = await p.client.rollouts.start({ version: m.version, maxUnavailable: '2', maxFailures: 5, canaries: 2 })
    const s = await rolloutReaches(p, r.id, ['halted', 'done'])
    for (const n of s.nodes) expect(n.error).toBe(`the release manifest is signed by release key ${attacker.kid}, which this node does not trust`)
    await p.client.rollouts.cancel(r.id)
    // 3. the legitimate key's signature over another manifest: the attacker's binary under a real release's signature
    const legit = (await p.client.releases.list()).releases.find((x) => x.version === '0.0.21')!
    const rows = await p.platform.store.all<{ signature: string }>('SELECT signature FROM releases WHERE sha256 = ?1', legit.sha256)
    const m2 = evilManifest(501)
    await plant(m2, release.key.kid, rows[0]!.signature, Buffer.concat([readFileSync(evil), Buffer.from('# 501\n')]))
    const r2 = await p.client.rollouts.start({ version: m2.version, maxUnavailable: '2', maxFailures: 5, canaries: 2 })
    const s2 = await rolloutReaches(p, r2.id, ['halted', 'done'])
    for (const n of s2.nodes) expect(n.error).toBe(`the release manifest's signature by ${release.key.kid} does not verify`)
    await p.client.rollouts.cancel(r2.id)
    // 4. the trust keys sign whatever the attacker likes: a directive carrying the attacker's manifest under every key name
    const trust = p.platform.fabric.trust
    const real = p.platform.rollouts.directive.bind(p.platform.rollouts)
    p.platform.rollouts.directive = async (node) => {
      const d = await real(node, 'x64')
      if (!d) return null
      return signDirective((dm, msg) => trust.sign(dm, msg), { ...d.payload, release: { manifest: m2, kid: release.key.kid, signature: signManifest(attacker, m2).signature } })
    }
    try {
      const r3 = await p.client.rollouts.start({ version: m2.version, maxUnavailable: '2', maxFailures: 5, canaries: 2 })
      const s3 = await rolloutReaches(p, r3.id, ['halted', 'done'])
      for (const n of s3.nodes) expect(n.error).toBe(`the release manifest's signature by ${release.key.kid} does not verify`)
      await p.client.rollouts.cancel(r3.id)
    } finally {
      p.platform.rollouts.directive = real
    }
    // The Platform cannot sign a manifest: no file of its data directory (the store included) holds a release private key.
    const grep = Bun.spawnSync(['grep', '-rlF', release.key.privateKey, p.dataDir])
    expect(grep.stdout.toString()).toBe('')
    unchanged(w1, before1)
    unchanged(w2, before2)
  })

  test('an older signed release replayed: refused by its sequence', async () => {
    const before = snapshot(w1)
    // The attacker tells the Platform the node runs nothing yet, so the plan sends it the first, older, signed release.
    await p.platform.store.run("UPDATE node_agents SET sequence = 0, binary_sha256 = ?1 WHERE name = 'w1'", 'f'.repeat(64))
    const r = await p.client.rollouts.start({ version: OLD, canaries: 1 })
    const s = await rolloutReaches(p, r.id, ['halted'])
    const seq = w1.journal().sequence
    expect(s.nodes.find((n) => n.name === 'w1')!.error).toBe(`release sequence 1 is lower than the ${seq} installed here (an older release replayed?); release it again under a new sequence to go back`)
    unchanged(w1, before)
    await p.client.rollouts.cancel(r.id)
  })

  test('a directive for another node, or an expired one: refused without a step', async () => {
    const before = snapshot(w1)
    const trust = p.platform.fabric.trust
    const real = p.platform.rollouts.directive.bind(p.platform.rollouts)
    const forged: ((d: Directive) => Directive)[] = [(d) => ({ ...d, node: 'w2' }), (d) => ({ ...d, issuedAt: Date.now() - 3_600_000, expiresAt: Date.now() - 3_000_000 })]
    const rel = await publishRelease(p.client, { binary: await buildWithVersion('0.0.23'), key: release.key, level: 1 })
    for (const [i, change] of forged.entries()) {
      p.platform.rollouts.directive = async (node) => {
        const d = await real(node, 'x64')
        return d && signDirective((dm, msg) => trust.sign(dm, msg), change(d.payload))
      }
      try {
        const r = await p.client.rollouts.start({ version: rel.version, canaries: 1 })
        await w1.agent.waitForLog(i === 0 ? /update: refused a directive: directive is for node w2, not w1/ : /update: refused a directive: directive expired at /, 30_000)
        const s = await p.client.rollouts.status(r.id)
        expect(s.nodes.find((n) => n.name === 'w1')!.state).toBe('downloading')
        unchanged(w1, before)
        await p.client.rollouts.cancel(r.id)
      } finally {
        p.platform.rollouts.directive = real
      }
    }
  })
})
