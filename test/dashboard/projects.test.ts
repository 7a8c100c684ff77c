// Projects from the dashboard, in headless Chromium against a
// real Platform: an operator deploys, scales, edits and redeploys, and removes
// a project with the buttons, and each change is on the Platform; a viewer
// sees the same pages without the buttons and with env values masked, and
// when it calls the API from the page anyway (the attack: the buttons are
// only absent) the Platform refuses it and nothing changes. The project page
// asks for a replica's log tail and says plainly when there are none.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { hashPassword } from '../../src/auth/auth.ts'
import { insertAccount } from '../../src/store/accounts.ts'
import { startPlatform, type TestPlatform } from '../helpers/platform.ts'
import { waitFor } from '../helpers/tmp.ts'
import { beat, enrollNode, launch, logIn, newPage, SLOW } from './_fleet.ts'

const SECRET = 'hunter2-do-not-show'
let browser: Browser
let p: TestPlatform
const errors: string[] = []

beforeAll(async () => {
  browser = await launch()
  p = await startPlatform({ remoteDispatch: true, logWaitMs: 2_000 })
  for (const name of ['w1', 'w2']) await beat(p, await enrollNode(p, name), { cpuMillis: 4000, memoryMB: 8192 })
  await p.client.projects.deploy({ name: 'api', replicas: 2, env: { DB_PASSWORD: SECRET, MODE: 'prod' }, command: ['/bin/api', '--port', '8080'] })
  for (const [name, role] of [['olga', 'operator'], ['vera', 'viewer']] as const) {
    await insertAccount(p.platform.store, { name, role, passwordHash: await hashPassword(`${name}-pass-1`), now: Date.now() })
  }
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

const tab = (page: Page, name: string) => page.locator('#tabs').getByRole('button', { name, exact: true }).click()
const shown = (name: string) => p.client.projects.show(name)

async function openProjectPage(page: Page, name: string) {
  await tab(page, 'Projects')
  await page.locator(`#panel-projects tr[data-project="${name}"]`).getByRole('button', { name, exact: true }).click()
  await page.locator(`[data-project-page="${name}"]`).waitFor()
}

describe('projects from the dashboard', () => {
  test('an operator deploys, scales, edits and redeploys, then removes a project', SLOW, async () => {
    const { ctx, page } = await newPage(browser, errors)
    await logIn(page, p.url, 'olga', 'olga-pass-1')
    await tab(page, 'Projects')
    await page.getByRole('button', { name: 'Deploy a project' }).click()
    const form = page.locator('dialog form.deploy-form')
    await form.locator('input[name=name]').fill('hello')
    await form.locator('input[name=command]').fill(`/bin/sh -c 'echo "hello world"; sleep 100' "two words"`)
    await form.locator('input[name=replicas]').fill('2')
    await form.locator('input[name=cpu]').fill('200')
    await form.locator('textarea[name=env]').fill('GREETING=hi there\nEMPTY=')
    await form.locator('input[name=nodeLabels]').fill('')
    await form.getByRole('button', { name: 'Deploy' }).click()
    await page.locator('[data-project-page="hello"]').waitFor()
    let hello = await shown('hello')
    expect(hello).toMatchObject({ replicas: 2, cpu: 200, memory: 64, revision: 1, env: { GREETING: 'hi there', EMPTY: '' }, command: ['/bin/sh', '-c', 'echo "hello world"; sleep 100', 'two words'], deployedBy: 'olga' })
    expect(hello.placements.filter((x) => x.node).length).toBe(2)

    // Scale: the same revision, more replicas.
    await page.locator('input[name=scale-replicas]').fill('3')
    await page.getByRole('button', { name: 'Scale', exact: true }).click()
    await page.getByText('hello is scaled to 3 replicas.').waitFor()
    hello = await shown('hello')
    expect([hello.replicas, hello.revision]).toEqual([3, 1])
    await waitFor(async () => (await page.locator('#panel-projects tr[data-replica]').count()) === 3, { what: 'three replica rows' })

    // Edit and redeploy: the form holds the current spec (the command as it was split); a change is a new revision.
    await page.getByRole('button', { name: 'Edit and redeploy' }).click()
    expect(await form.locator('input[name=name]').inputValue()).toBe('hello')
    expect(await form.locator('input[name=replicas]').inputValue()).toBe('3')
    expect(await form.locator('textarea[name=env]').inputValue()).toBe('GREETING=hi there\nEMPTY=')
    await form.locator('input[name=command]').fill('/bin/echo bye')
    await form.getByRole('button', { name: 'Redeploy hello' }).click()
    await page.getByText('hello is deployed as revision 2').waitFor()
    hello = await shown('hello')
    expect(hello).toMatchObject({ command: ['/bin/echo', 'bye'], revision: 2, replicas: 3, env: { GREETING: 'hi there', EMPTY: '' } })

    // A refused deploy keeps the form open with the Platform's reason. (The tab, pressed again, lists the projects.)
    await tab(page, 'Projects')
    await page.getByRole('button', { name: 'Deploy a project' }).click()
    await form.locator('input[name=name]').fill('Bad_Name')
    await form.locator('input[name=command]').fill('/bin/true')
    await form.evaluate((f) => ((f as HTMLFormElement).noValidate = true)) // past the browser's own check, to the Platform's
    await form.getByRole('button', { name: 'Deploy' }).click()
    await form.locator('.error').getByText('name').waitFor()
    await form.getByRole('button', { name: 'Cancel' }).click()

    // Remove asks first.
    await openProjectPage(page, 'hello')
    await page.locator('.actions-bar').getByRole('button', { name: 'Remove' }).click()
    await page.locator('dialog').getByRole('button', { name: 'Remove hello' }).click()
    await page.getByText('hello is removed.').waitFor()
    expect((await p.client.projects.listAll()).map((x) => x.name)).toEqual(['api'])
    expect(await page.locator('#panel-projects tr[data-project="hello"]').count()).toBe(0)
    await ctx.close()
    expect(errors).toEqual([])
  })

  test('a viewer sees no buttons and masked env values; the API refuses what the buttons would do', SLOW, async () => {
    const before = await shown('api')
    const { ctx, page } = await newPage(browser, errors)
    await logIn(page, p.url, 'vera', 'vera-pass-1')
    await tab(page, 'Projects')
    await page.locator('#panel-projects tr[data-project="api"]').waitFor()
    expect(await page.getByRole('button', { name: 'Deploy a project' }).count()).toBe(0)
    await openProjectPage(page, 'api')
    await page.getByText('Read-only: changing projects needs permission server.projects.manage.').waitFor()
    for (const name of ['Scale', 'Edit and redeploy', 'Remove']) expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0)
    expect(await page.locator('#panel-projects .env').textContent()).toContain('DB_PASSWORD=***')
    expect(await page.content()).not.toContain(SECRET)

    // The attack: the same calls the buttons make, from the viewer's page with its session.
    const tries = await page.evaluate(async () => {
      const json = { 'content-type': 'application/json' }
      const deploy = await fetch('/api/v1/projects', { method: 'POST', headers: json, body: JSON.stringify({ name: 'api', command: ['/bin/evil'], replicas: 9 }) })
      const create = await fetch('/api/v1/projects', { method: 'POST', headers: json, body: JSON.stringify({ name: 'mine', command: ['/bin/evil'], replicas: 1 }) })
      const remove = await fetch('/api/v1/projects/api', { method: 'DELETE' })
      return Promise.all([deploy, create, remove].map(async (r) => [r.status, ((await r.json()) as { error?: { code: string } }).error?.code]))
    })
    expect(tries).toEqual([
      [403, 'forbidden'],
      [403, 'forbidden'],
      [403, 'forbidden'],
    ])
    const after = await shown('api')
    expect([after.command, after.replicas, after.revision]).toEqual([before.command, before.replicas, before.revision])
    expect((await p.client.projects.listAll()).map((x) => x.name)).not.toContain('mine')
    await ctx.close()
    expect(errors).toEqual([])
  })

  test('the project page shows the tail of a replica’s logs, or says they are not available', SLOW, async () => {
    const { ctx, page } = await newPage(browser, errors)
    await logIn(page, p.url, 'olga', 'olga-pass-1')
    await openProjectPage(page, 'api')
    const out = page.locator('#panel-projects .logs-out')
    // The route as this build has it: without it (404) the page says so in one line.
    const real = await fetch(`${p.url}/api/v1/projects/api/logs?replica=0&tail=50`, { headers: { authorization: `Bearer ${p.token}` } })
    const answer = (await real.json()) as { error?: { message: string } }
    await page.getByRole('button', { name: 'Show logs' }).click()
    if (real.status === 404) await out.getByText(`Logs not available: ${answer.error!.message}`).waitFor()
    else if (real.ok) await out.locator('p').first().getByText('Replica #0').waitFor()
    // say, the node cannot be reached: its reason, shown (this Platform gives a node that never picks the request up 2 s)
    else await out.getByText(answer.error!.message).waitFor()

    // A Platform without the route, whatever this build has: one line, not an error.
    await page.route('**/api/v1/projects/api/logs?*', (route) => route.fulfill({ status: 404, contentType: 'application/json', body: JSON.stringify({ error: { code: 'not-found', message: 'No such route.' } }) }))
    await page.getByRole('button', { name: 'Show logs' }).click()
    await out.getByText('Logs not available: No such route.').waitFor()
    expect(await out.locator('.error').count()).toBe(0)
    await page.unroute('**/api/v1/projects/api/logs?*')

    // The shape the logs route answers ({project, replica, node, lines, truncated}): lines shown as text, the cut said.
    const asked: string[] = []
    await page.route('**/api/v1/projects/api/logs?*', (route) => {
      asked.push(route.request().url())
      return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ project: 'api', replica: 1, node: 'w2', lines: ['<b>started</b>', 'listening on 8080'], truncated: true }) })
    })
    await page.locator('select[name=log-replica]').selectOption('1')
    await page.locator('select[name=log-tail]').selectOption('200')
    await page.getByRole('button', { name: 'Show logs' }).click()
    await out.locator('pre.logs').waitFor()
    expect(await out.locator('pre.logs').textContent()).toBe('<b>started</b>\nlistening on 8080')
    expect(await out.locator('pre.logs b').count()).toBe(0)
    expect(await out.textContent()).toContain('Replica #1 on w2: 2 lines (older lines cut).')
    expect(new URL(asked[0]!).searchParams.toString()).toBe('replica=1&tail=200')
    await ctx.close()
    expect(errors).toEqual([])
  })
})
