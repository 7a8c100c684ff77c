// Body validation with valibot: a bad body is 400 invalid-request naming the field.
import * as v from 'valibot'
import { MusterError } from '../errors.ts'

export function parseBody<S extends v.GenericSchema>(schema: S, body: unknown): v.InferOutput<S> {
  const r = v.safeParse(schema, body ?? {})
  if (r.success) return r.output
  const issue = r.issues[0]
  const field = issue.path?.map((p) => String(p.key)).join('.') || 'body'
  throw new MusterError('invalid-request', `Invalid ${field}: ${issue.message}`, { field })
}

export const NODE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/
export const NodeName = v.pipe(v.string(), v.regex(NODE_NAME, 'expected a name like worker-1 (lowercase letters, digits, dashes; at most 63)'))
