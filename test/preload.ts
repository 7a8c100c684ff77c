// Runs before every test file: a private HOME and config dir, no inherited
// muster or cloud settings, so tests never touch the operator's files.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const home = mkdtempSync(join(tmpdir(), 'muster-test-home-'))
process.env.HOME = home
process.env.XDG_CONFIG_HOME = join(home, '.config')
for (const key of Object.keys(process.env)) {
  if (key.startsWith('MUSTER_TEST_')) continue // the test run's own settings (the PostgreSQL that CI started)
  if (/^(MUSTER_|HCLOUD_|HETZNER_|DIGITALOCEAN_|AWS_|AZURE_|ARM_|GOOGLE_|GCP_|CLOUDSDK_)/.test(key)) delete process.env[key]
}
process.env.MUSTER_LOG_LEVEL ??= '1'

// End-to-end tests start real processes; give every test a minute (bun 1.4 ignores bunfig's timeout).
const { setDefaultTimeout } = await import('bun:test')
setDefaultTimeout(60_000)
