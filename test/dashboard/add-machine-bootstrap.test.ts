// The dashboard's "Add a machine" on a compiled Platform (dist/muster) shows the
// same two lines `muster nodes enroll-token` prints (docs/operations.md): the bootstrap
// line and the worker join line, neither holding the token shown beside them.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { runMuster, startServeWithListener } from '../helpers/binary.ts'
import { tmpDir } from '../helpers/tmp.ts'

const CHROMIUM = '/usr/bin/chromium'
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

let browser: Browser
beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`)
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 })
})
afterAll(async () => {
  await browser?.close()
})

test('Add a machine shows the bootstrap line and the join line the CLI prints', { timeout: 150_000 }, async () => {
  using dir = tmpDir()
  const data = `${dir.path}/platform`
  await using serve = await startServeWithListener(data, ['--no-local-node'])
  const cli = JSON.parse((await runMuster(['nodes', 'enroll-token', 'worker-1', '--json'], { env: serve.env })).stdout) as { joinCommand: string; bootstrapCommand: string }
  expect(cli.bootstrapCommand).toContain('--node-id worker-1')

  const ctx = await browser.newContext()
  ctx.setDefaultTimeout(30_000)
  try {
    const page = await ctx.newPage()
    await page.goto(`${serve.url}/#nodes`) // the Nodes page (the dashboard opens on the Overview)
    await page.locator('#login-form input[name=identifier]').fill('superadmin')
    await page.locator('#login-form input[name=password]').fill(readFileSync(join(data, 'platform/initial-superadmin-password'), 'utf8').trim())
    await page.locator('#login-form button[type=submit]').click()
    await page.getByRole('button', { name: 'Add a machine' }).click()
    await page.locator('input[name=nodeId]').fill('worker-2')
    await page.getByRole('button', { name: 'Issue join command' }).click()
    const bootstrap = (await page.locator('dialog .bootstrap-command').textContent()) ?? ''
    const joinLine = (await page.locator('dialog .join-command').textContent()) ?? ''
    const token = (await page.locator('dialog .join-token').textContent()) ?? ''
    expect(bootstrap).toBe(cli.bootstrapCommand.replace('--node-id worker-1', '--node-id worker-2'))
    expect(joinLine).toBe(cli.joinCommand.replace('--node-id worker-1', '--node-id worker-2'))
    expect(token).toMatch(/^mjt_/)
    expect(bootstrap).not.toContain(token.slice(4, 20))
  } finally {
    await ctx.close()
  }
})
