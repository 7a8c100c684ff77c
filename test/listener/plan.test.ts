// Where the enrollment listener binds (docs/operations.md: every address flag binds what
// it says) and the refusal of a listener other machines reach with a
// loopback-only API. Through the binary: test/e2e/serve-start.test.ts.
import { describe, expect, test } from 'bun:test'
import { defaultAddresses } from '../../src/addresses.ts'
import { listenerPlan, refuseUnreachableApi } from '../../src/listener/plan.ts'

describe('the listener plan', () => {
  test('explicit addresses bind exactly themselves; localhost binds 127.0.0.1', () => {
    expect(listenerPlan({ enrollmentAddresses: ['127.0.0.2'] })).toEqual({ addresses: ['127.0.0.2'], binds: ['127.0.0.2'] })
    expect(listenerPlan({ enrollmentAddresses: ['10.0.0.5', 'localhost'] })).toEqual({ addresses: ['10.0.0.5', 'localhost'], binds: ['10.0.0.5', '127.0.0.1'] })
    expect(listenerPlan({ enrollmentAddresses: ['[fd00::5]'] })).toEqual({ addresses: ['fd00::5'], binds: ['fd00::5'] })
  })

  test('a DNS name binds every interface (it may point anywhere)', () => {
    expect(listenerPlan({ enrollmentAddresses: ['platform.example', '10.0.0.5'] }).binds).toEqual(['0.0.0.0'])
    expect(listenerPlan({ enrollmentAddresses: ['platform.example', 'fd00::5'] }).binds).toEqual(['::'])
  })

  test('without addresses: --host ADDR and localhost; a wildcard --host binds every interface; else this machine\'s', () => {
    expect(listenerPlan({ host: '10.0.0.5' })).toEqual({ addresses: ['10.0.0.5', 'localhost'], binds: ['10.0.0.5', '127.0.0.1'] })
    expect(listenerPlan({ host: '0.0.0.0' })).toEqual({ addresses: defaultAddresses(), binds: ['0.0.0.0'] })
    expect(listenerPlan({ host: '127.0.0.1' }).addresses).toEqual(defaultAddresses())
  })

  test('a wildcard is not an address nodes can reach', () => {
    expect(() => listenerPlan({ enrollmentAddresses: ['0.0.0.0'] })).toThrow('--enrollment-address 0.0.0.0: nodes cannot reach a wildcard')
  })
})

describe('a reachable listener with a loopback-only API', () => {
  const o = { dataDir: '/d', enrollmentPort: 7443, enrollmentAddresses: ['10.0.0.5'] }
  test('is refused with the command line that fixes it', () => {
    expect(() => refuseUnreachableApi(o, ['muster', 'serve', '--host', '127.0.0.1', '--enrollment-port', '7443', '--enrollment-address', '10.0.0.5'])).toThrow(
      'Run: muster serve --enrollment-port 7443 --enrollment-address 10.0.0.5 --host 10.0.0.5 (the API then serves HTTPS from the Platform CA)',
    )
    expect(() => refuseUnreachableApi({ ...o, enrollmentAddresses: ['platform.example'] }, ['muster', 'serve'])).toThrow('Run: muster serve --host 0.0.0.0')
  })
  test('starts when the API is reachable too, a public URL is given, or the listener is loopback-only', () => {
    expect(() => refuseUnreachableApi({ ...o, host: '10.0.0.5' })).not.toThrow()
    expect(() => refuseUnreachableApi({ ...o, publicUrl: 'https://platform.example' })).not.toThrow()
    expect(() => refuseUnreachableApi({ ...o, enrollmentAddresses: ['127.0.0.1', 'localhost'] })).not.toThrow()
    expect(() => refuseUnreachableApi({ dataDir: '/d' })).not.toThrow()
  })
})
