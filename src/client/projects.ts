// SDK: projects and the node's signed assignments.
import type { Transport } from './http.ts'
import { allPages, queryString, type PageOptions } from './paging.ts'
import type { InferInput } from 'valibot'
import type { ProjectSpec } from '../projects/spec.ts'
import type { ProjectView as Project } from '../projects/service.ts'
import type { SignedAssignments as Assignments } from '../projects/assignments.ts'

export type { PlacementView as ProjectPlacement, ProjectView as Project } from '../projects/service.ts'
export type { SignedAssignments as Assignments } from '../projects/assignments.ts'
export type DeployBody = InferInput<typeof ProjectSpec>
export function projectsApi(call: Transport) {
  const enc = encodeURIComponent
  return {
    /** One page of projects in name order (`q`: name prefix). */
    list: (opts: PageOptions & { q?: string } = {}) => call<{ projects: Project[]; nextCursor: string | null }>('GET', `/api/v1/projects${queryString({ ...opts })}`),
    /** Every project, page after page. */
    listAll: async (opts: { q?: string; limit?: number } = {}) =>
      (await allPages((cursor) => call<{ projects: Project[]; nextCursor: string | null }>('GET', `/api/v1/projects${queryString({ ...opts, cursor })}`), (p) => p.projects)).items,
    deploy: (body: DeployBody) => call<Project>('POST', '/api/v1/projects', body),
    show: (name: string) => call<Project>('GET', `/api/v1/projects/${enc(name)}`),
    remove: (name: string) => call<{ name: string; removed: boolean }>('DELETE', `/api/v1/projects/${enc(name)}`),
    shortfall: () => call<{ total: number; projects: Record<string, number> }>('GET', '/api/v1/shortfall'),
    /** The node's signed assignments (node credential); long-polls when `after` and `waitSeconds` are given. */
    assignments: (after?: number, waitSeconds?: number) =>
      call<Assignments>('GET', `/api/v1/nodes/self/assignments${after !== undefined ? `?after=${after}&wait=${waitSeconds ?? 0}` : ''}`),
  }
}
