// A small fleet for the dashboard tests: nodes enrolled through the real
// enrollment route that heartbeat with a capacity and report the replicas
// placed on them, a browser with the flags the dashboard tests use, and logins.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { VERSION } from '../../src/version.ts'
import { enrollRaw, newCert } from '../helpers/certs.ts'
import type { TestPlatform } from '../helpers/platform.ts'

export const CHROMIUM = '/usr/bin/chromium'
export const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
/** Several Chromium steps of up to 30 s each: a test gets more than the default minute on a loaded machine. */
export const SLOW = { timeout: 150_000 }

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`)
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 })
}

export const superadminPassword = (p: TestPlatform) => readFileSync(join(p.dataDir, 'platform/initial-superadmin-password'), 'utf8').trim()

/** A fresh browser context (own cookies) and page at `width`; script errors and CSP violations land in `errors`. */
export async function newPage(browser: Browser, errors: string[], width = 1400, height = 900): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext({ viewport: { width, height } })
  ctx.setDefaultTimeout(30_000) // Chromium on 2 busy cores can take seconds per step
  const page = await ctx.newPage()
  page.on('pageerror', (e) => errors.push(e.message))
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) errors.push(m.text())
  })
  return { ctx, page }
}

export async function logIn(page: Page, url: string, identifier: string, secret: string): Promise<void> {
  await page.goto(url)
  await page.locator('#login-form input[name=identifier]').fill(identifier)
  await page.locator('#login-form input[name=password]').fill(secret)
  await page.locator('#login-form button[type=submit]').click()
  await page.locator('#who').getByText(identifier).waitFor()
}

export interface FleetNode {
  name: string
  credential: string
}

/** Enrolls `name` through POST /api/v1/nodes/enroll with a single-use enrollment. */
export async function enrollNode(p: TestPlatform, name: string): Promise<FleetNode> {
  const e = await p.client.nodes.createEnrollment({ nodeId: name })
  const { certPem } = await newCert(name)
  const res = await enrollRaw(p.url, { token: e.token, nodeId: name, certPem, version: VERSION })
  if (res.status !== 200) throw new Error(`enrolling ${name}: ${res.status} ${await res.text()}`)
  return { name, credential: ((await res.json()) as { credential: string }).credential }
}

export interface ReportedReplica {
  project: string
  replica: number
  state: 'pending' | 'running' | 'failed' | 'stopped'
  revision: number
}

/** One heartbeat with a capacity and the replicas the node reports. */
export async function beat(p: TestPlatform, node: FleetNode, capacity: { cpuMillis: number; memoryMB: number }, replicas: ReportedReplica[] = []): Promise<void> {
  const res = await fetch(`${p.url}/api/v1/nodes/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${node.credential}`, 'content-type': 'application/json' },
    body: JSON.stringify({ version: VERSION, capacity, replicas }),
  })
  if (res.status !== 200) throw new Error(`heartbeat of ${node.name}: ${res.status} ${await res.text()}`)
}

/**
 * Each node heartbeats reporting as running the replicas placed on it (the
 * current revision), except those `skip` names ("project/replica").
 */
export async function reportPlaced(p: TestPlatform, nodes: FleetNode[], capacity: { cpuMillis: number; memoryMB: number }, skip: string[] = []): Promise<void> {
  const projects = await p.client.projects.listAll()
  for (const n of nodes) {
    const mine = projects.flatMap((pr) =>
      pr.placements.filter((x) => x.node === n.name && !skip.includes(`${pr.name}/${x.replica}`)).map((x) => ({ project: pr.name, replica: x.replica, state: 'running' as const, revision: pr.revision })),
    )
    await beat(p, n, capacity, mine)
  }
}
