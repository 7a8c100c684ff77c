// What a scrape gets: a registry's families in the Prometheus text format
// (prom-client's own writer), or in OpenMetrics when the scraper's Accept
// prefers it (Prometheus asks for OpenMetrics first). The OpenMetrics text is
// written here from the families' values, because prom-client's own
// OpenMetrics registry renames counters in place (it strips `_total` from the
// shared metric object), which would break the text answer of the next scrape.
// docs/monitoring.md says what each family means.
import type { MetricObjectWithValues, MetricValue, Registry } from 'prom-client'

export const TEXT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
export const OPENMETRICS_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8'

/** Whether an Accept header prefers OpenMetrics to the text format (by q-value; ties go to OpenMetrics). */
export function wantsOpenMetrics(accept: string | null): boolean {
  if (!accept) return false
  let om = 0
  let text = 0
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((s) => s.trim().toLowerCase())
    const qParam = params.find((p) => p.startsWith('q='))
    const q = qParam ? Number(qParam.slice(2)) : 1
    if (!Number.isFinite(q)) continue
    if (type === 'application/openmetrics-text') om = Math.max(om, q)
    else if (type === 'text/plain' || type === 'text/*' || type === '*/*') text = Math.max(text, q)
  }
  return om > 0 && om >= text
}

export async function expose(registry: Registry, accept: string | null): Promise<{ body: string; contentType: string }> {
  if (!wantsOpenMetrics(accept)) return { body: await registry.metrics(), contentType: TEXT_TYPE }
  return { body: openMetrics(await registry.getMetricsAsJSON()), contentType: OPENMETRICS_TYPE }
}

const escapeHelp = (s: string) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
const escapeValue = (s: string) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')

function number(v: number): string {
  if (Number.isNaN(v)) return 'NaN'
  if (v === Infinity) return '+Inf'
  if (v === -Infinity) return '-Inf'
  return String(v)
}

function labels(l: MetricValue<string>['labels']): string {
  const parts: string[] = []
  for (const [k, v] of Object.entries(l)) if (v !== undefined) parts.push(`${k}="${escapeValue(String(v))}"`)
  return parts.length ? `{${parts.join(',')}}` : ''
}

/** OpenMetrics 1.0 text: a counter's family drops `_total` and its samples carry it; the answer ends with `# EOF`. */
export function openMetrics(families: MetricObjectWithValues<MetricValue<string>>[]): string {
  const out: string[] = []
  for (const f of families) {
    const counter = String(f.type) === 'counter'
    const family = counter ? f.name.replace(/_total$/, '') : f.name
    out.push(`# TYPE ${family} ${f.type}`, `# HELP ${family} ${escapeHelp(f.help)}`)
    for (const v of f.values) {
      const name = counter ? `${family}_total` : ((v as { metricName?: string }).metricName ?? f.name)
      out.push(`${name}${labels(v.labels)} ${number(v.value)}`)
    }
  }
  out.push('# EOF')
  return `${out.join('\n')}\n`
}
