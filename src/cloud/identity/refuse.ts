// A refusal with its reason for `nodes audit` (the wire carries the one generic answer).
import { IdentityRefused } from '../../fabric/identity-join.ts'

export { IdentityRefused }
export const refuse = (reason: string): never => {
  throw new IdentityRefused(reason)
}
