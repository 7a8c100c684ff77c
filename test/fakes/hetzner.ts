// A local Hetzner Cloud API v1 (https://docs.hetzner.cloud, shapes as in
// hcloud-go hcloud/schema): bearer tokens (read-only tokens refused on
// writes), locations, server types with their architecture and per-location
// `locations[].deprecation` (the type-wide `deprecated` being phased out),
// servers with label selectors and name filters, pagination, name uniqueness
// (409 uniqueness_error), firewalls (a firewall given at the create applies
// from the start; rules replaced with actions/set_rules; with no inbound rule
// all inbound is dropped), the 32 KiB user-data limit,
// initializing → running, and 429 rate_limit_exceeded with RateLimit-* headers.
import { bearer, json, resetIn, serveFake, type FakeMachine, type FakeServer } from './common.ts'

const LOCATIONS = [
  { id: 1, name: 'fsn1', description: 'Falkenstein DC Park 1', country: 'DE', city: 'Falkenstein', latitude: 50.47612, longitude: 12.370071, network_zone: 'eu-central' },
  { id: 2, name: 'nbg1', description: 'Nuremberg DC Park 1', country: 'DE', city: 'Nuremberg', latitude: 49.452102, longitude: 11.076665, network_zone: 'eu-central' },
  { id: 3, name: 'hel1', description: 'Helsinki DC Park 1', country: 'FI', city: 'Helsinki', latitude: 60.169855, longitude: 24.938379, network_zone: 'eu-central' },
]
const price = (location: string, monthly: string) => ({ location, price_hourly: { net: '0.0060', gross: '0.0071' }, price_monthly: { net: monthly, gross: (Number(monthly) * 1.19).toFixed(4) }, included_traffic: 21990232555520, price_per_tb_traffic: { net: '1.0000', gross: '1.1900' } })
const deprecation = { announced: '2025-09-01T00:00:00+00:00', unavailable_after: '2025-12-01T00:00:00+00:00' }
const at = (names: string[], deprecated: string[] = []) => LOCATIONS.filter((l) => names.includes(l.name)).map((l) => ({ id: l.id, name: l.name, deprecation: deprecated.includes(l.name) ? deprecation : null }))
const type = (id: number, name: string, cores: number, memory: number, disk: number, architecture: 'x86' | 'arm', monthly: string, where: string[], deprecatedAt: string[] = [], deprecated = false) => ({
  id,
  name,
  description: name.toUpperCase(),
  category: 'shared',
  cores,
  memory,
  disk,
  deprecated,
  deprecation: deprecated ? deprecation : null,
  storage_type: 'local',
  cpu_type: 'shared',
  architecture,
  prices: where.map((l) => price(l, monthly)),
  locations: at(where, deprecatedAt),
})
const SERVER_TYPES = [
  type(104, 'cx22', 2, 4.0, 40, 'x86', '3.7900', ['fsn1', 'nbg1', 'hel1']),
  type(105, 'cx32', 4, 8.0, 80, 'x86', '6.8000', ['fsn1', 'nbg1', 'hel1']),
  // deprecated the old way only in some places: `deprecated` is false, the location says so
  type(22, 'cpx11', 2, 2.0, 40, 'x86', '4.3500', ['fsn1', 'nbg1'], ['fsn1']),
  type(1, 'cx11', 1, 2.0, 20, 'x86', '3.2900', ['fsn1'], ['fsn1'], true),
  // deprecated as a whole (type-level `deprecated` and `deprecation`) while its locations say nothing
  type(2, 'cx21', 2, 4.0, 40, 'x86', '5.8300', ['fsn1', 'nbg1', 'hel1'], [], true),
  type(45, 'cax11', 2, 4.0, 40, 'arm', '3.7900', ['fsn1', 'nbg1']),
  type(46, 'cax21', 4, 8.0, 80, 'arm', '6.4900', ['fsn1']),
]
const IMAGES = new Set(['ubuntu-24.04', 'ubuntu-22.04', 'debian-12'])

const error = (status: number, code: string, message: string, details: unknown = {}, headers?: Record<string, string>) => json({ error: { code, message, details } }, status, headers)

function page<T>(url: URL, key: string, items: T[]) {
  const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 25), 50)
  const p = Math.max(Number(url.searchParams.get('page') ?? 1), 1)
  const last = Math.max(Math.ceil(items.length / perPage), 1)
  return json({
    [key]: items.slice((p - 1) * perPage, p * perPage),
    meta: { pagination: { page: p, per_page: perPage, previous_page: p > 1 ? p - 1 : null, next_page: p < last ? p + 1 : null, last_page: last, total_entries: items.length } },
  })
}

function server(m: FakeMachine) {
  return {
    id: Number(m.id),
    name: m.name,
    status: m.running ? 'running' : 'initializing',
    created: new Date(m.createdAt).toISOString(),
    public_net: { ipv4: { ip: m.address, blocked: false, dns_ptr: `static.${m.address}.clients.your-server.de` }, ipv6: null, floating_ips: [], firewalls: ((m.extra.firewalls as number[] | undefined) ?? []).map((id) => ({ id, status: 'applied' })) },
    server_type: SERVER_TYPES.find((t) => t.name === m.size),
    datacenter: { name: `${m.region}-dc14`, location: LOCATIONS.find((l) => l.name === m.region) },
    image: { name: 'ubuntu-24.04' },
    labels: m.labels,
  }
}

function matches(selector: string | null, labels: Record<string, string>): boolean {
  if (!selector) return true
  return selector.split(',').every((term) => {
    const [k, v] = term.split('=')
    return v === undefined ? k! in labels : labels[k!] === v
  })
}

export interface HetznerFirewall {
  id: number
  name: string
  labels: Record<string, string>
  rules: { direction: string; protocol: string; port?: string; source_ips?: string[]; description?: string }[]
}

export interface HetznerFake extends FakeServer {
  token: string
  readOnlyToken: string
  firewalls: HetznerFirewall[]
}

export function startHetznerFake(opts: { token?: string } = {}): HetznerFake {
  const token = opts.token ?? 'hz-test-token-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcd'
  const readOnlyToken = `${token}-ro`
  const firewalls: HetznerFirewall[] = []
  const handle = async (req: Request, url: URL): Promise<Response> => {
    const t = bearer(req)
    if (t !== token && t !== readOnlyToken) return error(401, 'unauthorized', 'unable to authenticate')
    if (req.method !== 'GET' && t === readOnlyToken) return error(403, 'token_readonly', 'The token you are using is read-only')
    const path = url.pathname.replace(/^\/v1/, '')
    const book = fake.book
    if (req.method === 'GET' && path === '/locations') return page(url, 'locations', LOCATIONS)
    if (req.method === 'GET' && path === '/server_types') return page(url, 'server_types', SERVER_TYPES)
    if (req.method === 'GET' && path === '/servers') {
      const name = url.searchParams.get('name')
      const list = book.shown().filter((m) => matches(url.searchParams.get('label_selector'), m.labels) && (name === null || m.name === name))
      return page(url, 'servers', list.map(server))
    }
    if (req.method === 'POST' && path === '/servers') {
      const b = (await req.json()) as { name?: string; server_type?: string; location?: string; image?: string; user_data?: string; labels?: Record<string, string>; firewalls?: { firewall: number }[] }
      const invalid = (field: string, msg: string) => error(400, 'invalid_input', `invalid input in field '${field}'`, { fields: [{ name: field, messages: [msg] }] })
      if (!b.name || !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(b.name)) return invalid('name', 'must be a valid hostname')
      if (!SERVER_TYPES.some((s) => s.name === b.server_type)) return invalid('server_type', 'server type not found')
      if (!LOCATIONS.some((l) => l.name === b.location)) return invalid('location', 'location not found')
      if (!b.image || !IMAGES.has(b.image)) return invalid('image', 'image not found')
      if ((b.user_data?.length ?? 0) > 32 * 1024) return invalid('user_data', 'user_data must not exceed 32 KiB')
      for (const f of b.firewalls ?? []) if (!firewalls.some((x) => x.id === f.firewall)) return error(404, 'not_found', `firewall with ID '${f.firewall}' not found`)
      if ([...book.machines.values()].some((m) => m.name === b.name)) return error(409, 'uniqueness_error', 'server name is already used', { fields: [{ name: 'name' }] })
      const m = book.add({ id: String(book.nextNumber()), name: b.name, region: b.location!, size: b.server_type!, userData: b.user_data ?? '', labels: b.labels ?? {}, extra: { firewalls: (b.firewalls ?? []).map((f) => f.firewall) } })
      const action = { id: book.nextNumber(), command: 'create_server', status: 'running', progress: 0, started: new Date().toISOString(), finished: null, resources: [{ id: Number(m.id), type: 'server' }], error: null }
      return json({ server: server(m), action, next_actions: [{ ...action, id: book.nextNumber(), command: 'start_server' }], root_password: null }, 201)
    }
    if (req.method === 'GET' && path === '/firewalls') {
      const name = url.searchParams.get('name')
      return page(url, 'firewalls', firewalls.filter((f) => name === null || f.name === name))
    }
    if (req.method === 'POST' && path === '/firewalls') {
      const b = (await req.json()) as { name?: string; labels?: Record<string, string>; rules?: HetznerFirewall['rules'] }
      if (!b.name) return error(400, 'invalid_input', "invalid input in field 'name'")
      if (firewalls.some((f) => f.name === b.name)) return error(409, 'uniqueness_error', 'name is already used', { fields: [{ name: 'name' }] })
      const f = { id: book.nextNumber(), name: b.name, labels: b.labels ?? {}, rules: b.rules ?? [] }
      firewalls.push(f)
      return json({ firewall: { ...f, applied_to: [], created: new Date().toISOString() }, actions: [] }, 201)
    }
    const setRules = path.match(/^\/firewalls\/(\d+)\/actions\/set_rules$/)
    if (req.method === 'POST' && setRules) {
      const f = firewalls.find((x) => x.id === Number(setRules[1]))
      if (!f) return error(404, 'not_found', `firewall with ID '${setRules[1]}' not found`)
      const b = (await req.json()) as { rules?: HetznerFirewall['rules'] }
      if (!Array.isArray(b.rules)) return error(400, 'invalid_input', "invalid input in field 'rules'")
      f.rules = b.rules
      return json({ actions: [{ id: book.nextNumber(), command: 'set_firewall_rules', status: 'running', progress: 0, resources: [{ id: f.id, type: 'firewall' }], error: null }] }, 201)
    }
    const one = path.match(/^\/servers\/(\d+)$/)
    if (one) {
      const m = book.machines.get(one[1]!)
      if (!m || (req.method === 'GET' && !book.visible(m))) return error(404, 'not_found', `server with ID '${one[1]}' not found`)
      if (req.method === 'GET') return json({ server: server(m) })
      if (req.method === 'DELETE') {
        book.remove(m.id)
        return json({ action: { id: book.nextNumber(), command: 'delete_server', status: 'running', progress: 0, resources: [{ id: Number(m.id), type: 'server' }], error: null } })
      }
    }
    return error(404, 'not_found', 'not found')
  }
  const fake = serveFake({
    handle,
    // https://docs.hetzner.cloud/#rate-limiting: 429 rate_limit_exceeded; RateLimit-Reset is a UNIX time.
    throttle: (_req, _url, waitS) => error(429, 'rate_limit_exceeded', 'limit of 3600 requests per hour reached', {}, { 'RateLimit-Limit': '3600', 'RateLimit-Remaining': '0', 'RateLimit-Reset': resetIn(waitS) }),
    isCreate: (req, url) => req.method === 'POST' && url.pathname === '/v1/servers',
  })
  return Object.assign(fake, { token, readOnlyToken, firewalls, url: `${fake.url}/v1` })
}
