// Node labels (docs/cloud.md; Role): KEY=VALUE pairs a node carries (from
// `worker join --label`, the nodes file, or its provision) and a project may
// ask for (`projects deploy --node-label`). A project runs only on nodes that
// carry every label it asks for, and a node labelled role=build takes only
// projects that ask for role=build.
import * as v from 'valibot'

export type Labels = Record<string, string>

/** Lower-case key: a letter, then letters, digits, `.`, `_`, `-`; at most 63. */
export const LABEL_KEY = /^[a-z][a-z0-9._-]{0,62}$/
/** Value: a letter or digit, then letters, digits, `.`, `_`, `-`; at most 63. */
export const LABEL_VALUE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/
export const MAX_LABELS = 16

const KEY_HINT = 'expected a label key like role (lower-case letters, digits, . _ -; at most 63)'
const VALUE_HINT = 'expected a label value like build (letters, digits, . _ -; at most 63)'

export const LabelsSchema = v.pipe(
  v.record(v.pipe(v.string(), v.regex(LABEL_KEY, KEY_HINT)), v.pipe(v.string(), v.regex(LABEL_VALUE, VALUE_HINT))),
  v.check((l) => Object.keys(l).length <= MAX_LABELS, `at most ${MAX_LABELS} labels`),
)

/** Why `labels` is not a valid label set, or null. */
export function labelsProblem(labels: unknown): string | null {
  const r = v.safeParse(LabelsSchema, labels)
  if (r.success) return null
  const issue = r.issues[0]
  const key = issue.path?.map((p) => String(p.key)).join('.')
  return `${key ? `label ${key}: ` : ''}${issue.message.replace(/\s*,?\s*but received [\s\S]*$/i, '').replace(/\s*Received [\s\S]*$/, '')}`
}

/** `KEY=VALUE` arguments (a repeatable flag) as labels; throws an Error naming the bad one. */
export function parseLabelArgs(args: string[], flag: string): Labels {
  const out: Labels = {}
  for (const arg of args) {
    const i = arg.indexOf('=')
    const key = i < 0 ? arg : arg.slice(0, i)
    const value = i < 0 ? '' : arg.slice(i + 1)
    if (i <= 0 || !LABEL_KEY.test(key) || !LABEL_VALUE.test(value)) throw new Error(`${flag} needs KEY=VALUE (${KEY_HINT}; ${VALUE_HINT}), got "${arg}"`)
    if (key in out && out[key] !== value) throw new Error(`${flag} gives ${key} twice`)
    out[key] = value
  }
  if (Object.keys(out).length > MAX_LABELS) throw new Error(`${flag}: at most ${MAX_LABELS} labels`)
  return out
}

/** Labels as stored (a JSON object), tolerating a missing or damaged value. */
export function labelsFromJson(text: string | null): Labels {
  if (!text) return {}
  try {
    const parsed: unknown = JSON.parse(text)
    return labelsProblem(parsed) === null ? (parsed as Labels) : {}
  } catch {
    return {}
  }
}

/** Labels stored as JSON with sorted keys (null when there are none). */
export function labelsToJson(labels: Labels | undefined): string | null {
  if (!labels || Object.keys(labels).length === 0) return null
  return JSON.stringify(Object.fromEntries(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b))))
}

/** `role=build,zone=a` for tables. */
export function formatLabels(labels: Labels | undefined): string {
  return Object.entries(labels ?? {})
    .map(([k, val]) => `${k}=${val}`)
    .join(',')
}

/**
 * Whether a node with `node` labels may run a project asking for `wanted`:
 * it carries every wanted label, and a build node (role=build) runs only
 * projects that ask for role=build.
 */
export function labelsAdmit(node: Labels, wanted: Labels): boolean {
  for (const [k, val] of Object.entries(wanted)) if (node[k] !== val) return false
  if (node.role === 'build' && wanted.role !== 'build') return false
  return true
}
