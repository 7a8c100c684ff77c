// Body validation with valibot: a bad body is 400 invalid-request naming the
// field. Messages never repeat what was received: a body can hold secrets.
import * as v from 'valibot'
import { MusterError } from '../errors.ts'

/** The field an issue is about, dotted (`capacity.cpuMillis`), or `body`. */
export function issueField(issue: v.BaseIssue<unknown>): string {
  return issue.path?.map((p) => String(p.key)).join('.') || 'body'
}

/** What was expected, without the value that was received. */
export function issueMessage(issue: v.BaseIssue<unknown>): string {
  return issue.message.replace(/\s*,?\s*but received [\s\S]*$/i, '').replace(/\s*Received [\s\S]*$/, '').trim()
}

export function invalid(issue: v.BaseIssue<unknown>, prefix = ''): MusterError {
  const field = `${prefix}${issueField(issue)}`
  return new MusterError('invalid-request', `Invalid ${field}: ${issueMessage(issue)}`, { field })
}

export function parseBody<S extends v.GenericSchema>(schema: S, body: unknown): v.InferOutput<S> {
  const r = v.safeParse(schema, body ?? {})
  if (r.success) return r.output
  throw invalid(r.issues[0])
}

export const NODE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/
export const NodeName = v.pipe(v.string(), v.regex(NODE_NAME, 'expected a name like worker-1 (lowercase letters, digits, dashes; at most 63)'))
