// A local DigitalOcean API v2 (https://docs.digitalocean.com/reference/api/,
// shapes as in godo): bearer tokens, regions, sizes, droplets with tag and
// name filters and link pagination, 422 for bad input, new → active. Like
// the real API it makes a second droplet of the same name without a word.
// Tags (which must exist before a firewall names them), cloud firewalls
// (applied to droplets by tag; PUT replaces one whole; inbound traffic no rule
// allows is dropped), and
// 429 too_many_requests with RateLimit-* headers.
import { bearer, json, resetIn, serveFake, type FakeMachine, type FakeServer } from './common.ts'

const REGIONS = [
  { name: 'New York 3', slug: 'nyc3', features: ['backups', 'ipv6', 'metadata'], available: true, sizes: ['s-1vcpu-1gb', 's-2vcpu-2gb'] },
  { name: 'Amsterdam 3', slug: 'ams3', features: ['backups', 'ipv6', 'metadata'], available: true, sizes: ['s-1vcpu-1gb', 's-2vcpu-2gb'] },
  { name: 'San Francisco 1', slug: 'sfo1', features: [], available: false, sizes: [] },
]
const SIZES = [
  { slug: 's-1vcpu-1gb', memory: 1024, vcpus: 1, disk: 25, transfer: 1.0, price_monthly: 6.0, price_hourly: 0.00893, regions: ['nyc3', 'ams3'], available: true, description: 'Basic' },
  { slug: 's-2vcpu-2gb', memory: 2048, vcpus: 2, disk: 60, transfer: 3.0, price_monthly: 18.0, price_hourly: 0.02679, regions: ['nyc3', 'ams3'], available: true, description: 'Basic' },
  { slug: 's-8vcpu-16gb', memory: 16384, vcpus: 8, disk: 320, transfer: 6.0, price_monthly: 96.0, price_hourly: 0.14286, regions: [], available: false, description: 'Basic' },
]

const error = (status: number, id: string, message: string, headers?: Record<string, string>) => json({ id, message, request_id: crypto.randomUUID() }, status, headers)

function page<T>(url: URL, key: string, items: T[]) {
  const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 20), 200)
  const p = Math.max(Number(url.searchParams.get('page') ?? 1), 1)
  const more = p * perPage < items.length
  const next = new URL(url)
  next.searchParams.set('page', String(p + 1))
  return json({ [key]: items.slice((p - 1) * perPage, p * perPage), links: more ? { pages: { next: next.toString() } } : {}, meta: { total: items.length } })
}

function droplet(m: FakeMachine) {
  return {
    id: Number(m.id),
    name: m.name,
    memory: SIZES.find((s) => s.slug === m.size)?.memory,
    status: m.running ? 'active' : 'new',
    created_at: new Date(m.createdAt).toISOString(),
    networks: { v4: m.running ? [{ ip_address: m.address, netmask: '255.255.240.0', gateway: '203.0.113.1', type: 'public' }] : [], v6: [] },
    region: REGIONS.find((r) => r.slug === m.region),
    size_slug: m.size,
    tags: Object.keys(m.labels),
  }
}

export interface DoFirewall {
  id: string
  name: string
  inbound_rules: { protocol: string; ports: string; sources: { addresses?: string[] } }[]
  outbound_rules: unknown[]
  tags: string[]
}

export interface DigitalOceanFake extends FakeServer {
  token: string
  firewalls: DoFirewall[]
  tags: Set<string>
}

export function startDigitalOceanFake(opts: { token?: string } = {}): DigitalOceanFake {
  const token = opts.token ?? 'dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'
  const firewalls: DoFirewall[] = []
  const tags = new Set<string>()
  const handle = async (req: Request, url: URL): Promise<Response> => {
    if (bearer(req) !== token) return error(401, 'Unauthorized', 'Unable to authenticate you')
    const path = url.pathname.replace(/^\/v2/, '')
    const book = fake.book
    if (req.method === 'GET' && path === '/regions') return page(url, 'regions', REGIONS)
    if (req.method === 'GET' && path === '/sizes') return page(url, 'sizes', SIZES)
    if (req.method === 'GET' && path === '/droplets') {
      const tag = url.searchParams.get('tag_name')
      const name = url.searchParams.get('name')
      return page(url, 'droplets', book.shown().filter((m) => (!tag || tag in m.labels) && (name === null || m.name === name)).map(droplet))
    }
    if (req.method === 'POST' && path === '/tags') {
      const b = (await req.json()) as { name?: string }
      if (!b.name || !/^[a-zA-Z0-9_\-:]{1,255}$/.test(b.name)) return error(422, 'unprocessable_entity', 'name is invalid')
      tags.add(b.name)
      return json({ tag: { name: b.name, resources: { count: 0 } } }, 201)
    }
    if (req.method === 'GET' && path === '/firewalls') return page(url, 'firewalls', firewalls)
    const fw = path.match(/^\/firewalls\/([0-9a-f-]+)$/)
    if (fw && req.method === 'PUT') {
      // "To update the configuration of an existing firewall … the request must contain a full representation of the firewall"
      const f = firewalls.find((x) => x.id === fw[1])
      if (!f) return error(404, 'not_found', 'The resource you were accessing could not be found.')
      const b = (await req.json()) as Omit<DoFirewall, 'id'>
      if (!b.name) return error(422, 'unprocessable_entity', 'name is required')
      const missing = (b.tags ?? []).find((t) => !tags.has(t))
      if (missing) return error(422, 'unprocessable_entity', `tag ${missing} does not exist`)
      Object.assign(f, { name: b.name, inbound_rules: b.inbound_rules ?? [], outbound_rules: b.outbound_rules ?? [], tags: b.tags ?? [] })
      return json({ firewall: { ...f, status: 'waiting', droplet_ids: [], pending_changes: [] } })
    }
    if (req.method === 'POST' && path === '/firewalls') {
      const b = (await req.json()) as Omit<DoFirewall, 'id'>
      if (!b.name || !/^[a-zA-Z0-9][a-zA-Z0-9.-]*$/.test(b.name)) return error(422, 'unprocessable_entity', 'name must begin with an alphanumeric character')
      if (!b.inbound_rules?.length && !b.outbound_rules?.length) return error(422, 'unprocessable_entity', 'must have at least one rule')
      const missing = (b.tags ?? []).find((t) => !tags.has(t))
      if (missing) return error(422, 'unprocessable_entity', `tag ${missing} does not exist`)
      const f = { ...b, id: crypto.randomUUID(), tags: b.tags ?? [] }
      firewalls.push(f)
      return json({ firewall: { ...f, status: 'waiting', droplet_ids: [], pending_changes: [] } }, 202)
    }
    if (req.method === 'POST' && path === '/droplets') {
      const b = (await req.json()) as { name?: string; region?: string; size?: string; image?: string; user_data?: string; tags?: string[] }
      if (!b.name || !/^[a-zA-Z0-9.-]{1,255}$/.test(b.name)) return error(422, 'unprocessable_entity', 'Name Only valid hostname characters are allowed. (a-z, A-Z, 0-9, . and -)')
      const region = REGIONS.find((r) => r.slug === b.region)
      if (!region?.available) return error(422, 'unprocessable_entity', 'Region is not available')
      if (!region.sizes.includes(b.size ?? '')) return error(422, 'unprocessable_entity', 'Size is not available in this region.')
      if (b.image !== 'ubuntu-24-04-x64') return error(422, 'unprocessable_entity', 'You specified an invalid image for Droplet creation.')
      if ((b.user_data?.length ?? 0) > 64 * 1024) return error(422, 'unprocessable_entity', 'user_data is too long')
      for (const tag of b.tags ?? []) if (!/^[a-zA-Z0-9_\-:]{1,255}$/.test(tag)) return error(422, 'unprocessable_entity', `tag ${tag} is invalid`)
      for (const tag of b.tags ?? []) tags.add(tag) // droplet creates make their tags
      const m = book.add({ id: String(book.nextNumber()), name: b.name, region: region.slug, size: b.size!, userData: b.user_data ?? '', labels: Object.fromEntries((b.tags ?? []).map((t) => [t, ''])), extra: {} })
      return json({ droplet: droplet(m), links: { actions: [{ id: book.nextNumber(), rel: 'create', href: `${url.origin}/v2/actions/1` }] } }, 202)
    }
    const one = path.match(/^\/droplets\/(\d+)$/)
    if (one) {
      const m = book.machines.get(one[1]!)
      if (!m || (req.method === 'GET' && !book.visible(m))) return error(404, 'not_found', 'The resource you were accessing could not be found.')
      if (req.method === 'GET') return json({ droplet: droplet(m) })
      if (req.method === 'DELETE') {
        book.remove(m.id)
        return new Response(null, { status: 204 })
      }
    }
    return error(404, 'not_found', 'The resource you were accessing could not be found.')
  }
  const fake = serveFake({
    handle,
    // API reference, "Rate Limit": 429 too_many_requests; ratelimit-reset is a UNIX time.
    throttle: (_req, _url, waitS) => error(429, 'too_many_requests', 'API Rate limit exceeded.', { 'ratelimit-limit': '5000', 'ratelimit-remaining': '0', 'ratelimit-reset': resetIn(waitS) }),
    isCreate: (req, url) => req.method === 'POST' && url.pathname === '/v2/droplets',
  })
  return Object.assign(fake, { token, firewalls, tags, url: `${fake.url}/v2` })
}
