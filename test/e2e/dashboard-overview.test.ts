// The dashboard's Overview and project buttons through dist/muster:
// `muster serve` with a worker joined by `muster worker join` and its
// Agent; in headless Chromium the superadmin sees the node ready with its
// capacity, deploys a project with the form, sees its replica run on the
// worker (a real process), scales it and removes it, and the process is gone.
// Every script the page loads is served by the compiled binary.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { joinWorker, runMuster, startServeWithListener, type Daemon } from '../helpers/binary.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'
import { launch, logIn, newPage } from '../dashboard/_fleet.ts'

const running = (marker: string) => Bun.spawnSync(['pgrep', '-f', marker]).exitCode === 0

describe('the dashboard through dist/muster', () => {
  test('the overview shows the joined worker; a project deployed, scaled and removed with the buttons runs and stops there', { timeout: 180_000 }, async () => {
    using dir = tmpDir()
    const marker = `muster-dash-${crypto.randomUUID().slice(0, 8)}`
    await using serve = await startServeWithListener(`${dir.path}/platform`)
    const env = serve.env
    const agents: Daemon[] = []
    const browser = await launch()
    const errors: string[] = []
    try {
      // Every module the page loads, from the binary's embedded copy.
      const seen = new Set<string>()
      const queue = ['app.js']
      while (queue.length) {
        const file = queue.pop()!
        if (seen.has(file)) continue
        seen.add(file)
        const res = await fetch(`${serve.url}/ui/${file}`)
        expect([file, res.status]).toEqual([file, 200])
        for (const m of (await res.text()).matchAll(/from '\.\/([a-z-]+\.js)'/g)) queue.push(m[1]!)
      }
      expect([...seen]).toEqual(expect.arrayContaining(['overview.js', 'projects.js', 'project-page.js', 'project-form.js']))

      const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', 'worker-a', '--json'], { env })).stdout) as { token: string }
      agents.push(await joinWorker(dir.path, 'worker-a', serve, token))
      await waitFor(async () => {
        const list = JSON.parse((await runMuster(['nodes', 'list', '--json'], { env })).stdout) as { nodes: { name: string; state: string; capacity: unknown }[] }
        return list.nodes.find((n) => n.name === 'worker-a' && n.state === 'ready' && n.capacity)
      }, { timeoutMs: 30_000, what: 'worker-a ready' })

      const { page } = await newPage(browser, errors)
      await logIn(page, serve.url, 'superadmin', readFileSync(`${dir.path}/platform/platform/initial-superadmin-password`, 'utf8').trim())
      const stat = (key: string) => page.locator(`#panel-overview [data-stat="${key}"]`)
      await stat('nodes.ready').waitFor()
      expect(await stat('nodes.ready').textContent()).toBe('1')
      expect(Number(await stat('cpu.capacity').getAttribute('data-value'))).toBeGreaterThan(0)
      await page.locator('#panel-overview tr[data-fleet-node="worker-a"] td.state').getByText('ready').waitFor()
      const overview = JSON.parse((await runMuster(['nodes', 'platform', '--json'], { env })).stdout) as { platforms: { id: string }[] }
      expect(await page.locator('#panel-overview [data-stat="self"]').textContent()).toBe(overview.platforms[0]!.id)

      await page.locator('#tabs').getByRole('button', { name: 'Projects', exact: true }).click()
      await page.getByRole('button', { name: 'Deploy a project' }).click()
      const form = page.locator('dialog form.deploy-form')
      await form.locator('input[name=name]').fill('hello')
      await form.locator('input[name=command]').fill(`sh -c 'sleep 300; true ${marker}'`)
      await form.locator('input[name=cpu]').fill('10')
      await form.locator('input[name=memory]').fill('8')
      await form.getByRole('button', { name: 'Deploy' }).click()
      await page.locator('[data-project-page="hello"]').waitFor()
      await waitFor(() => running(marker), { timeoutMs: 30_000, what: 'the replica running on worker-a' })

      // The overview counts it once the worker reports it.
      await page.locator('#tabs').getByRole('button', { name: 'Overview', exact: true }).click()
      await waitFor(async () => {
        await page.locator('#panel-overview').getByRole('button', { name: 'Refresh' }).click()
        // The counts and the node's row come from separate reads: both must have seen the worker's report.
        return (await stat('replicas.running').getAttribute('data-value')) === '1' && (await page.locator('#panel-overview tr[data-fleet-node="worker-a"] td.replicas').textContent()) === '1 / 1 running'
      }, { timeoutMs: 30_000, what: 'the overview counting the running replica, and worker-a\'s row saying 1 / 1 running' })

      // Scale to 0 from its page, then remove it: the process stops.
      await page.locator('#tabs').getByRole('button', { name: 'Projects', exact: true }).click()
      await page.locator('#panel-projects tr[data-project="hello"]').getByRole('button', { name: 'hello', exact: true }).click()
      await page.locator('input[name=scale-replicas]').fill('0')
      await page.getByRole('button', { name: 'Scale', exact: true }).click()
      await page.getByText('hello is scaled to 0 replicas.').waitFor()
      await waitFor(() => !running(marker), { timeoutMs: 30_000, what: 'the replica stopped' })
      await page.locator('.actions-bar').getByRole('button', { name: 'Remove' }).click()
      await page.locator('dialog').getByRole('button', { name: 'Remove hello' }).click()
      await page.getByText('hello is removed.').waitFor()
      expect((await runMuster(['projects', 'list', '--json'], { env })).stdout).not.toContain('"hello"')
      expect(errors).toEqual([])
    } finally {
      await browser.close()
      for (const a of agents) await a.stop()
      // Left over only if the test failed midway: this test's replicas, by their ids (only they carry the marker).
      for (const pid of new TextDecoder().decode(Bun.spawnSync(['pgrep', '-f', marker]).stdout).split(/\s+/).filter(Boolean)) process.kill(Number(pid), 'SIGKILL')
    }
  })
})
