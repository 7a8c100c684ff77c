// The signed log request: an Agent serves a request only when
// the Platform's trust key signed it, for this node, lately.
import { describe, expect, test } from 'bun:test'
import { generateSigningKey, signDomain } from '../../src/crypto/ed25519.ts'
import { b64url } from '../../src/crypto/tokens.ts'
import { checkLogRequest, LOG_REQUEST } from '../../src/signed/documents.ts'
import { documentBytes } from '../../src/signed/signed.ts'
import type { LogRequestPayload } from '../../src/wire/projects.ts'
import { fitChunk } from '../../src/agent/log-relay.ts'

const now = Date.parse('2030-01-01T12:00:00Z')
const key = generateSigningKey()
const other = generateSigningKey()
const trust = [{ kid: 'k1', publicKey: b64url(key.publicKey), notBefore: '2029-01-01T00:00:00Z', notAfter: '2031-01-01T00:00:00Z' }]
const payload = (more: Partial<LogRequestPayload> = {}): LogRequestPayload => ({ id: 'abcdefghijklmnopqrstuvwx', node: 'w1', project: 'web', replica: 0, tail: 10, follow: false, issuedAt: new Date(now).toISOString(), ...more })
const sign = (p: LogRequestPayload, by = key.privateKey, kid = 'k1') => ({ payload: p, kid, signature: b64url(signDomain(LOG_REQUEST.domain, by, documentBytes(p))) })

describe('log requests', () => {
  test('a request signed by a current trust key for this node is served', () => {
    expect(checkLogRequest(sign(payload()), trust, 'w1', now)).toEqual({ ok: true, payload: payload() })
  })

  test('refused: another signer, a changed field, another node, an old or future request, an unknown key, a path in the project', () => {
    const reason = (doc: unknown, node = 'w1') => {
      const r = checkLogRequest(doc, trust, node, now)
      return r.ok ? 'served' : r.reason
    }
    expect(reason(sign(payload(), other.privateKey))).toContain('bad signature')
    expect(reason({ ...sign(payload()), payload: payload({ replica: 1 }) })).toContain('bad signature')
    expect(reason({ ...sign(payload()), payload: payload({ node: 'w2' }) }, 'w2')).toContain('bad signature')
    expect(reason(sign(payload({ node: 'w2' })))).toContain('for node w2, not w1')
    expect(reason(sign(payload({ issuedAt: new Date(now - 6 * 60_000).toISOString() })))).toContain('outside ±5 minutes')
    expect(reason(sign(payload({ issuedAt: new Date(now + 6 * 60_000).toISOString() })))).toContain('outside ±5 minutes')
    expect(reason(sign(payload(), key.privateKey, 'k9'))).toContain('unknown key')
    expect(reason(sign(payload({ project: '../worker' })))).toContain('malformed')
    expect(reason({ payload: payload() })).toContain('unsigned')
  })

  test('an upload is cut to fit the API\'s body limit, oldest lines first, and says so', () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `${i} ${'x'.repeat(1000)}`)
    const fit = fitChunk({ seq: 0, lines, truncated: false })
    expect(JSON.stringify(fit).length).toBeLessThanOrEqual(900 * 1024)
    expect(fit.truncated).toBe(true)
    expect(fit.lines.at(-1)).toBe(lines.at(-1))
    expect(lines.slice(-fit.lines.length)).toEqual(fit.lines)
    expect(fitChunk({ seq: 1, lines: ['a'], truncated: false })).toEqual({ seq: 1, lines: ['a'], truncated: false })
  })
})
