// Roles and the permissions they grant (docs/accounts-audit.md).
export const PERMISSIONS = [
  'server.nodes.view',
  'server.nodes.enroll',
  'server.nodes.manage',
  'server.projects.view',
  'server.projects.manage',
  'server.cloud.view',
  'server.cloud.connect',
  'server.cloud.manage',
  'server.federation.view',
  'server.federation.manage',
  'server.accounts.manage',
  'server.federation.vouch',
  'server.audit.view',
  /** Add releases and steer rollouts (superadmin only): what every node runs. */
  'server.releases.manage',
] as const
export type Permission = (typeof PERMISSIONS)[number]

/** The roles of accounts (people). */
export const ROLES = ['superadmin', 'operator', 'viewer'] as const
/** The roles of API tokens: an account's, or `metrics`, which reads GET /metrics and nothing else (docs/monitoring.md). */
export const TOKEN_ROLES = [...ROLES, 'metrics'] as const
export type Role = (typeof TOKEN_ROLES)[number]

const VIEW: Permission[] = ['server.nodes.view', 'server.projects.view', 'server.cloud.view', 'server.federation.view']

export const ROLE_PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  superadmin: new Set(PERMISSIONS),
  operator: new Set<Permission>([
    ...VIEW,
    'server.nodes.enroll',
    'server.nodes.manage',
    'server.projects.manage',
    'server.cloud.connect',
    'server.cloud.manage',
    'server.federation.vouch',
  ]),
  viewer: new Set(VIEW),
  metrics: new Set(),
}

/**
 * What a session opened by a vouch never holds, whatever its role: each makes something that outlives the
 * session (a join token or enrollment that enrolls a node later, an office token, cloud credentials and the
 * machines made with them). The office's own people make those. Within server.accounts.manage, a vouched
 * session may list, demote, disable and remove, but not grant (add an account, raise a role, enable one):
 * src/http/routes/accounts.ts. API tokens are refused too, in their own route.
 */
export const VOUCHED_WITHHELD: ReadonlySet<Permission> = new Set<Permission>(['server.nodes.enroll', 'server.federation.manage', 'server.cloud.connect', 'server.cloud.manage'])

export function isRole(value: string): value is Role {
  return (TOKEN_ROLES as readonly string[]).includes(value)
}

const RANK: Record<Role, number> = { metrics: -1, viewer: 0, operator: 1, superadmin: 2 }

/** The lesser of two roles (least privilege). */
export function lowerRole(a: Role, b: Role): Role {
  return RANK[a] <= RANK[b] ? a : b
}

export function roleCan(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].has(permission)
}
