// Project env values can be secrets (passwords, API keys): only principals
// that may change projects see them; everyone else sees the keys (docs/security.md).
import { roleCan, type Role } from '../wire/permissions.ts'

export const MASKED = '***'

/** The project as `role` may see it: env values kept for server.projects.manage, else each one "***". */
export function projectFor<T extends { env: Record<string, string> }>(project: T, role: Role): T {
  if (roleCan(role, 'server.projects.manage')) return project
  return { ...project, env: Object.fromEntries(Object.keys(project.env).map((k) => [k, MASKED])) }
}
