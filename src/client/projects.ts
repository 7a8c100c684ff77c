// SDK: projects and the node's signed assignments.
import type { Transport } from './http.ts'
import { allPages, queryString, type PageOptions } from './paging.ts'
import type { InferInput } from 'valibot'
import type { ProjectSpec } from '../projects/spec.ts'
import type { ProjectView as Project } from '../projects/service.ts'
import type { ProjectLogs } from '../projects/logs.ts'
import type { LogChunk, SignedAssignments as Assignments, SignedLogRequest } from '../wire/projects.ts'

export type { PlacementView as ProjectPlacement, ProjectView as Project } from '../projects/service.ts'
export type { SignedAssignments as Assignments } from '../wire/projects.ts'
export type { ProjectLogs } from '../projects/logs.ts'
export interface LogOptions {
  /** Which replica (default 0). */
  replica?: number
  /** How many of the last lines (default 100, at most 10,000). */
  tail?: number
}
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
    /** The last lines a replica wrote, relayed from its node (server.projects.manage). */
    logs: (name: string, opts: LogOptions = {}) => call<ProjectLogs>('GET', `/api/v1/projects/${enc(name)}/logs${queryString({ replica: opts.replica, tail: opts.tail })}`),
    /**
     * The tail, then what the replica writes next, batch by batch, until `signal`
     * aborts. A follow whose node went quiet (an Agent restart) starts again
     * from the next line; a node that cannot be reached ends it with an error.
     */
    async *followLogs(name: string, opts: LogOptions & { signal?: AbortSignal } = {}): AsyncGenerator<ProjectLogs> {
      const start = (tail: number) => call<ProjectLogs>('GET', `/api/v1/projects/${enc(name)}/logs${queryString({ replica: opts.replica, tail, follow: 'true' })}`)
      let batch = await start(opts.tail ?? 100)
      for (;;) {
        if (batch.lines.length > 0 || batch.truncated) yield batch
        if (opts.signal?.aborted) return
        batch = batch.cursor ? await call<ProjectLogs>('GET', `/api/v1/projects/${enc(name)}/logs${queryString({ cursor: batch.cursor })}`) : await start(0)
      }
    },
    /** Node side: the log requests waiting for this node (node credential), each signed with a trust key. */
    logRequests: () => call<{ requests: SignedLogRequest[] }>('GET', '/api/v1/nodes/self/log-requests'),
    /** Node side: what one request asked for (seq 0, the tail) or what followed (seq 1…). */
    sendLogs: (id: string, chunk: LogChunk) => call<{ ok: true }>('POST', `/api/v1/nodes/self/logs/${enc(id)}`, chunk),
    /** The node's signed assignments (node credential); long-polls when `after` and `waitSeconds` are given. */
    assignments: (after?: number, waitSeconds?: number) =>
      call<Assignments>('GET', `/api/v1/nodes/self/assignments${after !== undefined ? `?after=${after}&wait=${waitSeconds ?? 0}` : ''}`),
  }
}
