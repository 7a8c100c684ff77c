// A machine the Platform creates downloads the binary from the Platform's API.
// When that API serves HTTPS from the Platform CA, the first-boot script hands
// install.sh the CA pin, so the download is verified against that CA (docs/security.md).
import { describe, expect, test } from 'bun:test'
import { firstBootData } from '../../src/cloud/user-data.ts'
import { readFirstBoot } from '../fakes/first-boot.ts'

const base = {
  provider: 'hetzner',
  nodeId: 'w1',
  token: `mjt_${'a'.repeat(16)}.${'b'.repeat(43)}`,
  enrollmentUrl: 'https://10.0.0.5:7443',
  fingerprint: `sha256:${'c'.repeat(64)}`,
  binaryUrl: 'https://10.0.0.5:7380/api/v1/cloud/binary',
  binarySha256: 'd'.repeat(64),
  role: 'general' as const, probe: false, address: null, ssh: false,
}

describe('first-boot download pin', () => {
  test('the CA pin reaches install.sh as --platform-fingerprint; without one, install.sh gets none', () => {
    const pin = `sha256:${'e'.repeat(64)}`
    const pinned = readFirstBoot(firstBootData({ ...base, binaryPin: pin }))
    expect(pinned.env.MUSTER_BINARY_PIN).toBe(pin)
    const join = [...pinned.files.values()].find((f) => f.path.endsWith('/join.sh'))!.content
    expect(join).toContain('[ -z "${MUSTER_BINARY_PIN:-}" ] || set -- --platform-fingerprint "$MUSTER_BINARY_PIN"')
    expect(join).toContain('sh ./install.sh --role worker --from "$MUSTER_BINARY_URL" --sha256 "$MUSTER_BINARY_SHA256" "$@"')
    const plain = readFirstBoot(firstBootData(base))
    expect(plain.env.MUSTER_BINARY_PIN).toBeUndefined()
    expect(() => firstBootData({ ...base, binaryPin: 'sha256:nope' })).toThrow()
  })
})
