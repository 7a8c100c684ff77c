// The OFFICE positional shared by federation verbs: checked for shape before any
// request. The pattern is OFFICE_ID of src/wire/federation-formats.ts, repeated so
// that loading a verb for --help pulls in nothing from src/.
import { UsageError } from '../_args.ts'

export const officeArg = { office: { type: 'positional', required: true, description: 'Office id, e.g. office-a' } } as const

export const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/

export function officeId(value: string): string {
  if (!NAME.test(value)) throw new UsageError(`OFFICE must be lowercase letters, digits and dashes (at most 63), got "${value}"`)
  return value
}
