// A local Google: the OAuth token endpoint checking a service account's RS256
// JWT (signature, issuer, audience, scope, times; invalid_grant otherwise),
// and Compute Engine v1 for one project: zones, machine types with their
// architecture, instances with requestId de-duplication (a repeated insert
// answers the first Operation and ignores its body), zone Operations that run
// and end DONE (with error.errors[] when the insert failed: quota, capacity),
// instances that reads do not show right after the insert (eventual
// consistency), PROVISIONING → STAGING → RUNNING, firewall rules (insert,
// get, update; each write a global Operation that runs, then is DONE — with an
// error when told), boot disk types per machine family (the default
// pd-standard refused by C3/C3D, anything but Hyperdisk by N4/C4/C4A:
// https://cloud.google.com/compute/docs/disks#disk-types), 403
// rateLimitExceeded throttling, and Google's error shape (code, message,
// errors[].reason, status).
import { json, serveFake, type FakeMachine, type FakeServer } from './common.ts'

const ZONES = [
  { name: 'europe-west1-b', region: 'europe-west1', status: 'UP' },
  { name: 'europe-west1-c', region: 'europe-west1', status: 'UP' },
  { name: 'us-central1-a', region: 'us-central1', status: 'DOWN' },
]
const TYPES = [
  { name: 'e2-small', guestCpus: 2, memoryMb: 2048, description: '2 vCPU (shared core), 2 GB RAM' },
  { name: 'e2-medium', guestCpus: 2, memoryMb: 4096, description: '2 vCPU (shared core), 4 GB RAM', architecture: 'X86_64' },
  { name: 'n1-standard-1', guestCpus: 1, memoryMb: 3840, description: '1 vCPU, 3.75 GB RAM', deprecated: { state: 'DEPRECATED' } },
  { name: 't2a-standard-1', guestCpus: 1, memoryMb: 4096, description: '1 vCPU, 4 GB RAM', architecture: 'ARM64' },
  { name: 'c3-standard-4', guestCpus: 4, memoryMb: 16384, description: '4 vCPUs, 16 GB RAM', architecture: 'X86_64' },
  { name: 'n4-standard-2', guestCpus: 2, memoryMb: 8192, description: '2 vCPUs, 8 GB RAM', architecture: 'X86_64' },
  { name: 'c4a-standard-1', guestCpus: 1, memoryMb: 4096, description: '1 vCPU, 4 GB RAM', architecture: 'ARM64' },
  { name: 'ct5lp-hightpu-1t', guestCpus: 24, memoryMb: 49152, description: 'TPU host', architecture: 'X86_64' },
]
/** The boot disk types each family takes (the rest: pd-standard, pd-balanced, pd-ssd). */
const DISKS: Record<string, string[]> = {
  c3: ['pd-balanced', 'pd-ssd', 'hyperdisk-balanced'],
  n4: ['hyperdisk-balanced'],
  c4a: ['hyperdisk-balanced'],
  ct5lp: ['hyperdisk-balanced'],
}

interface Op {
  name: string
  type: string
  target: string
  targetId?: string
  zone?: string
  startedAt: number
  error?: { code: string; message: string }
}

const gError = (code: number, status: string, reason: string, message: string) => json({ error: { code, message, errors: [{ message, domain: 'global', reason }], status } }, code)

export interface GcpFake extends FakeServer {
  /** The service account key file, as Google hands it out. */
  key: Record<string, string>
  tokenUrl: string
  firewalls: Record<string, unknown>[]
  /** The next insert's Operation ends DONE with this error, and no instance. */
  failNextInsert: { code: string; message: string } | null
  /** How long an Operation runs before it is DONE. */
  opMs: number
  operations: Map<string, Op>
  /** The next firewall write's Operation ends DONE with this error (and changes nothing). */
  failNextFirewall: { code: string; message: string } | null
}

export async function startGcpFake(): Promise<GcpFake> {
  const pair = (await crypto.subtle.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign', 'verify'])) as CryptoKeyPair
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', pair.privateKey)).toString('base64')
  const project = 'muster-test-4711'
  const tokens = new Set<string>()
  const requests = new Map<string, string>()
  const firewalls: Record<string, unknown>[] = []
  let tokenUrl = ''
  const key = {
    type: 'service_account',
    project_id: project,
    private_key_id: 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0',
    private_key: `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`,
    client_email: `muster@${project}.iam.gserviceaccount.com`,
    client_id: '112233445566778899000',
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: 'https://oauth2.googleapis.com/token',
  }
  const instance = (m: FakeMachine) => {
    const age = Date.now() - m.createdAt
    const status = m.running ? 'RUNNING' : age < fake.book.bootMs / 2 ? 'PROVISIONING' : 'STAGING'
    return {
      kind: 'compute#instance',
      id: m.id,
      name: m.name,
      zone: `https://www.googleapis.com/compute/v1/projects/${project}/zones/${m.region}`,
      machineType: `https://www.googleapis.com/compute/v1/projects/${project}/zones/${m.region}/machineTypes/${m.size}`,
      status,
      labels: m.labels,
      tags: { items: m.extra.tags },
      networkInterfaces: [{ network: `https://www.googleapis.com/compute/v1/projects/${project}/global/networks/default`, accessConfigs: [{ type: 'ONE_TO_ONE_NAT', name: 'External NAT', ...(m.running ? { natIP: m.address } : {}) }] }],
    }
  }
  const operations = new Map<string, Op>()
  const started = (type: string, target: string, zone?: string, error?: Op['error']): Op => {
    const op: Op = { name: `operation-${Date.now()}-${crypto.randomUUID()}`, type, target, zone, startedAt: Date.now(), ...(error ? { error } : {}) }
    operations.set(op.name, op)
    return op
  }
  const operation = (op: Op) => {
    const done = Date.now() - op.startedAt >= fake.opMs
    return {
      kind: 'compute#operation',
      id: String(op.startedAt),
      name: op.name,
      operationType: op.type,
      targetLink: `https://www.googleapis.com/compute/v1/${op.target}`,
      // the resource's numeric id (an instance's is the instance_id of its identity tokens)
      ...(op.targetId ? { targetId: op.targetId } : {}),
      status: done ? 'DONE' : 'RUNNING',
      progress: done ? 100 : 0,
      ...(op.zone ? { zone: `https://www.googleapis.com/compute/v1/projects/${project}/zones/${op.zone}` } : {}),
      ...(done && op.error ? { error: { errors: [op.error] }, httpErrorStatusCode: 403, httpErrorMessage: 'FORBIDDEN' } : {}),
    }
  }

  const handle = async (req: Request, url: URL): Promise<Response> => {
    const book = fake.book
    if (url.pathname === '/token' && req.method === 'POST') {
      const f = new URLSearchParams(await req.text())
      if (f.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return json({ error: 'unsupported_grant_type', error_description: 'Invalid grant_type: ' }, 400)
      const [h, c, s] = (f.get('assertion') ?? '').split('.')
      if (!h || !c || !s) return json({ error: 'invalid_request', error_description: 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.' }, 400)
      const ok = await crypto.subtle.verify('RSASSA-PKCS1-v1_5', pair.publicKey, Buffer.from(s, 'base64url'), new TextEncoder().encode(`${h}.${c}`))
      if (!ok) return json({ error: 'invalid_grant', error_description: 'Invalid JWT Signature.' }, 400)
      const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg?: string }
      const claims = JSON.parse(Buffer.from(c, 'base64url').toString()) as { iss?: string; aud?: string; scope?: string; iat?: number; exp?: number }
      const now = Date.now() / 1000
      if (header.alg !== 'RS256' || claims.iss !== key.client_email || claims.aud !== tokenUrl) return json({ error: 'invalid_grant', error_description: 'Invalid JWT: Failed audience check.' }, 400)
      if (!claims.iat || !claims.exp || Math.abs(claims.iat - now) > 300 || claims.exp - claims.iat > 3600) return json({ error: 'invalid_grant', error_description: 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.' }, 400)
      if (!claims.scope?.split(' ').includes('https://www.googleapis.com/auth/compute')) return json({ error: 'invalid_scope', error_description: 'Invalid OAuth scope or ID token audience provided.' }, 400)
      const t = `ya29.c.${crypto.randomUUID()}`
      tokens.add(t)
      return json({ access_token: t, expires_in: 3599, token_type: 'Bearer' })
    }
    const t = req.headers.get('authorization')?.replace(/^Bearer /, '')
    if (!t || !tokens.has(t)) return gError(401, 'UNAUTHENTICATED', 'authError', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.')
    const m = url.pathname.match(/^\/compute\/v1\/projects\/([^/]+)(\/.*)$/)
    if (!m) return gError(404, 'NOT_FOUND', 'notFound', 'Not Found')
    if (m[1] !== project) return gError(403, 'PERMISSION_DENIED', 'forbidden', `Required 'compute.zones.list' permission for 'projects/${m[1]}'`)
    const path = m[2]!
    if (path === '/zones' && req.method === 'GET') {
      const max = Number(url.searchParams.get('maxResults') ?? 500)
      const start = Number(url.searchParams.get('pageToken') ?? 0)
      const page = ZONES.slice(start, start + max)
      return json({ kind: 'compute#zoneList', items: page.map((z) => ({ kind: 'compute#zone', name: z.name, status: z.status, region: `https://www.googleapis.com/compute/v1/projects/${project}/regions/${z.region}` })), ...(start + max < ZONES.length ? { nextPageToken: String(start + max) } : {}) })
    }
    if (path === '/global/firewalls' && req.method === 'POST') {
      const b = (await req.json()) as { name: string }
      if (firewalls.some((f) => f.name === b.name)) return gError(409, 'ALREADY_EXISTS', 'alreadyExists', `The resource 'projects/${project}/global/firewalls/${b.name}' already exists`)
      const failed = fake.failNextFirewall
      fake.failNextFirewall = null
      if (!failed) firewalls.push({ kind: 'compute#firewall', disabled: false, priority: 1000, ...b })
      return json(operation(started('insert', `projects/${project}/global/firewalls/${b.name}`, undefined, failed ?? undefined)))
    }
    const fw = path.match(/^\/global\/firewalls\/([^/]+)$/)
    if (fw) {
      const i = firewalls.findIndex((f) => f.name === fw[1])
      if (i < 0) return gError(404, 'NOT_FOUND', 'notFound', `The resource 'projects/${project}/global/firewalls/${fw[1]}' was not found`)
      if (req.method === 'GET') return json({ ...firewalls[i], network: `https://www.googleapis.com/compute/v1/projects/${project}/global/networks/default`, selfLink: `https://www.googleapis.com/compute/v1/projects/${project}/global/firewalls/${fw[1]}` })
      if (req.method === 'PUT') {
        // firewalls.update: the rule becomes what was sent (fields left out go back to their defaults)
        const b = (await req.json()) as Record<string, unknown>
        const failed = fake.failNextFirewall
        fake.failNextFirewall = null
        if (!failed) firewalls[i] = { kind: 'compute#firewall', disabled: false, priority: 1000, ...b, name: fw[1] }
        return json(operation(started('update', `projects/${project}/global/firewalls/${fw[1]}`, undefined, failed ?? undefined)))
      }
    }
    const gop = path.match(/^\/global\/operations\/([^/]+)$/)
    if (gop && req.method === 'GET') {
      const op = operations.get(gop[1]!)
      return op && !op.zone ? json(operation(op)) : gError(404, 'NOT_FOUND', 'notFound', `The resource 'projects/${project}/global/operations/${gop[1]}' was not found`)
    }
    const zm = path.match(/^\/zones\/([^/]+)(\/.*)$/)
    const zone = zm && ZONES.find((z) => z.name === zm[1])
    if (!zm || !zone) return gError(404, 'NOT_FOUND', 'notFound', `The resource 'projects/${project}/zones/${zm?.[1]}' was not found`)
    const rest = zm[2]!
    if (rest === '/machineTypes' && req.method === 'GET') return json({ kind: 'compute#machineTypeList', items: TYPES })
    const opPath = rest.match(/^\/operations\/([^/]+)$/)
    if (opPath && req.method === 'GET') {
      const op = operations.get(opPath[1]!)
      return op && op.zone === zone.name ? json(operation(op)) : gError(404, 'NOT_FOUND', 'notFound', `The resource 'projects/${project}/zones/${zone.name}/operations/${opPath[1]}' was not found`)
    }
    if (rest === '/instances' && req.method === 'POST') {
      const rid = url.searchParams.get('requestId')
      if (rid && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(rid)) return gError(400, 'INVALID_ARGUMENT', 'invalid', "Invalid value for field 'requestId': must be a UUID.")
      const b = (await req.json()) as { name?: string; machineType?: string; labels?: Record<string, string>; tags?: { items?: string[] }; metadata?: { items?: { key: string; value: string }[] }; disks?: { initializeParams?: { diskType?: string } }[] }
      // A repeated requestId is the same request: its Operation, whatever the body says now.
      if (rid && requests.has(rid)) return json(operation(operations.get(requests.get(rid)!)!))
      if (!b.name || !/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(b.name)) return gError(400, 'INVALID_ARGUMENT', 'invalid', `Invalid value for field 'resource.name': '${b.name}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'`)
      const type = b.machineType?.split('/').pop()
      if (!TYPES.some((x) => x.name === type)) return gError(400, 'INVALID_ARGUMENT', 'invalid', `Invalid value for field 'resource.machineType': '${b.machineType}'. Machine type with name '${type}' does not exist in zone '${zone.name}'.`)
      const disk = b.disks?.[0]?.initializeParams?.diskType?.split('/').pop() ?? 'pd-standard'
      const takes = DISKS[type!.split('-')[0]!] ?? ['pd-standard', 'pd-balanced', 'pd-ssd']
      if (!takes.includes(disk)) return gError(400, 'INVALID_ARGUMENT', 'invalid', `Invalid value for field 'resource.disks[0].initializeParams.diskType': 'projects/${project}/zones/${zone.name}/diskTypes/${disk}'. ${disk} disk type cannot be used by ${type} machine type.`)
      if ([...book.machines.values()].some((x) => x.name === b.name && x.region === zone.name)) return gError(409, 'ALREADY_EXISTS', 'alreadyExists', `The resource 'projects/${project}/zones/${zone.name}/instances/${b.name}' already exists`)
      const userData = b.metadata?.items?.find((i) => i.key === 'user-data')?.value ?? ''
      const target = `projects/${project}/zones/${zone.name}/instances/${b.name}`
      const failed = fake.failNextInsert
      fake.failNextInsert = null
      const op = started('insert', target, zone.name, failed ?? undefined)
      if (rid) requests.set(rid, op.name)
      if (!failed) op.targetId = book.add({ id: String(book.nextNumber()), name: b.name, region: zone.name, size: type!, userData, labels: b.labels ?? {}, extra: { tags: b.tags?.items ?? [], requestId: rid, diskType: disk } }).id
      return json(operation(op))
    }
    const one = rest.match(/^\/instances\/([^/]+)$/)
    if (one) {
      const x = [...book.machines.values()].find((i) => i.name === one[1] && i.region === zone.name && (req.method !== 'GET' || book.visible(i)))
      if (!x) return gError(404, 'NOT_FOUND', 'notFound', `The resource 'projects/${project}/zones/${zone.name}/instances/${one[1]}' was not found`)
      if (req.method === 'GET') return json(instance(x))
      if (req.method === 'DELETE') {
        book.remove(x.id)
        return json(operation(started('delete', `projects/${project}/zones/${zone.name}/instances/${x.name}`, zone.name)))
      }
    }
    return gError(404, 'NOT_FOUND', 'notFound', 'Not Found')
  }
  const fake = Object.assign(
    serveFake({
      handle,
      // "If your project exceeds a rate quota, you receive a 403 error with the reason rateLimitExceeded" (https://cloud.google.com/compute/api-quota).
      throttle: () => json({ error: { code: 403, message: 'Rate Limit Exceeded', errors: [{ message: 'Rate Limit Exceeded', domain: 'usageLimits', reason: 'rateLimitExceeded' }], status: 'PERMISSION_DENIED' } }, 403),
      isCreate: (req, url) => req.method === 'POST' && /\/zones\/[^/]+\/instances$/.test(url.pathname),
    }),
    { failNextInsert: null as { code: string; message: string } | null, opMs: 100, failNextFirewall: null as { code: string; message: string } | null },
  )
  tokenUrl = `${fake.url}/token`
  return Object.assign(fake, { key, tokenUrl, firewalls, operations, url: `${fake.url}/compute/v1` })
}
