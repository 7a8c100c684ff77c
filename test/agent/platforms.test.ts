// The Agent's list of Platforms (docs/storage-ha.md): what it takes from an answer,
// how it spreads its first choice, when it moves, and what it keeps on disk.
import { describe, expect, test } from 'bun:test'
import { DataDir } from '../../src/datadir.ts'
import { MusterError } from '../../src/errors.ts'
import { firstChoice, isPlatformFailure, PlatformChoice, PLATFORMS_FILE, rememberPlatforms, usablePlatforms } from '../../src/agent/platform-choice.ts'
import type { AgentConfig } from '../../src/agent/files.ts'
import { tmpDir } from '../helpers/tmp.ts'

const config = (over: Partial<AgentConfig> = {}): AgentConfig => ({
  nodeId: 'w1',
  agentId: 'agent-w1',
  enrollmentUrl: 'https://a.example:7443',
  platformUrl: 'https://a.example:7380',
  pin: { fingerprint: `sha256:${'0'.repeat(64)}` },
  addresses: ['127.0.0.1'],
  port: 7381,
  url: 'https://127.0.0.1:7381',
  joinedAt: '2026-01-01T00:00:00.000Z',
  joinedWith: '0.1.0',
  ...over,
})
const two = [
  { id: 'pa', url: 'https://a.example:7380', enrollmentUrl: 'https://a.example:7443' },
  { id: 'pb', url: 'https://b.example:7380', enrollmentUrl: 'https://b.example:7443' },
]

describe('the Agent\'s Platforms', () => {
  test('an answer is taken only as origins; an https API is never traded for plain http', () => {
    const list = usablePlatforms([...two, { url: 'http://evil.example:80' }, { url: 'https://u:p@c.example' }, { url: 'not a url' }, { url: 'https://b.example:7380/path' }, 7], 'https://a.example:7380')
    expect(list).toEqual(two)
    expect(usablePlatforms([{ url: 'http://127.0.0.1:7380' }], 'http://127.0.0.1:7380')).toEqual([{ url: 'http://127.0.0.1:7380' }])
    expect(usablePlatforms('nonsense', 'https://a.example')).toEqual([])
  })

  test('the first choice is spread over the Platforms by a hash of the node name, the same every time', () => {
    const picks = Array.from({ length: 100 }, (_, i) => firstChoice(`node-${i}`, two))
    expect(new Set(picks)).toEqual(new Set(two.map((p) => p.url)))
    const share = picks.filter((p) => p === two[0]!.url).length
    expect(share).toBeGreaterThan(25)
    expect(share).toBeLessThan(75)
    expect(firstChoice('node-7', [...two].reverse())).toBe(firstChoice('node-7', two))
  })

  test('a failure moves to the next Platform at once until each was tried; the choice survives a restart', () => {
    using dir = tmpDir()
    const dataDir = new DataDir(dir.path)
    rememberPlatforms(dataDir, config(), two)
    const choice = new PlatformChoice(dataDir, config)
    expect(choice.current).toBe(firstChoice('w1', two)!)
    const first = choice.current
    const other = two.find((p) => p.url !== first)!.url
    expect(choice.failed('https://elsewhere.example')).toBe(true) // another loop moved already: nothing to do
    expect(choice.current).toBe(first)
    expect(choice.failed(first)).toBe(true)
    expect(choice.current).toBe(other)
    expect(choice.connection().platformUrl).toBe(other)
    expect(choice.failed(other)).toBe(false) // both tried: back off before the next round
    expect(new PlatformChoice(dataDir, config).current).toBe(first)
    // an answer listing only the live Platform replaces the list (kept on disk)
    const live = two.find((p) => p.url === choice.current)!
    choice.succeeded([live])
    expect(choice.known).toEqual([live])
    expect(JSON.parse(dataDir.readSecretText(PLATFORMS_FILE)!).platforms).toEqual([live])
  })

  test('trust refreshes ask the current Platform\'s listener first, then the joined one, then the others', () => {
    using dir = tmpDir()
    const dataDir = new DataDir(dir.path)
    rememberPlatforms(dataDir, config(), two)
    const choice = new PlatformChoice(dataDir, config)
    if (choice.current !== two[1]!.url) choice.failed(choice.current)
    expect(choice.trustUrls()).toEqual(['https://b.example:7443', 'https://a.example:7443'])
  })

  test('a network failure or a 5xx moves; a refusal does not', () => {
    expect(isPlatformFailure(new MusterError('platform-unreachable', 'x'))).toBe(true)
    expect(isPlatformFailure(new MusterError('store-unavailable', 'x'))).toBe(true)
    expect(isPlatformFailure(new MusterError('internal', 'x', { status: 502 }))).toBe(true)
    expect(isPlatformFailure(new Error('socket closed'))).toBe(true)
    for (const code of ['node-revoked', 'unauthorized', 'rate-limited', 'forbidden'] as const) expect(isPlatformFailure(new MusterError(code, 'x'))).toBe(false)
  })

  test('a trust answer naming another live Platform moves nothing; a new API URL replaces the old one', () => {
    using dir = tmpDir()
    const dataDir = new DataDir(dir.path)
    rememberPlatforms(dataDir, config(), two)
    const choice = new PlatformChoice(dataDir, config)
    const first = choice.current
    const other = two.find((p) => p.url !== first)!.url
    choice.apiMoved(first, other) // answered by the other Platform of the group
    expect(choice.current).toBe(first)
    expect(choice.known.map((p) => p.url).sort()).toEqual(two.map((p) => p.url).sort())
    choice.apiMoved(first, 'https://moved.example:7380') // this Platform's API moved
    expect(choice.current).toBe('https://moved.example:7380')
    expect(choice.known.map((p) => p.url).sort()).toEqual(['https://moved.example:7380', other].sort())
    expect(new PlatformChoice(dataDir, config).current).toBe('https://moved.example:7380')
  })
})
