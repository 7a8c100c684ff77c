// SDK: projects and the node's signed assignments. Every type is the route's
// own (src/wire/projects.ts).
import type { Transport } from './http.ts'
import { allPages, queryString, type PageOptions } from './paging.ts'
import type { DeployBody, LogChunk, ProjectLogs, ProjectPage, ProjectRemoved, ProjectView as Project, Shortfall, SignedAssignments as Assignments, SignedLogRequest } from '../wire/projects.ts'

export type { DeployBody, PlacementView as ProjectPlacement, ProjectLogs, ProjectView as Project, SignedAssignments as Assignments } from '../wire/projects.ts'
export interface LogOptions {
  /** Which replica (default 0). */
  replica?: number
  /** How many of the last lines (default 100, at most 10,000). */
  tail?: number
}
export function projectsApi(call: Transport) {
  const enc = encodeURIComponent
  return {
    /** One page of projects in name order (`q`: name prefix). */
    list: (opts: PageOptions & { q?: string } = {}) => call<ProjectPage>('GET', `/api/v1/projects${queryString({ ...opts })}`),
    /** Every project, page after page. */
    listAll: async (opts: { q?: string; limit?: number } = {}) =>
      (await allPages((cursor) => call<ProjectPage>('GET', `/api/v1/projects${queryString({ ...opts, cursor })}`), (p) => p.projects)).items,
    deploy: (body: DeployBody) => call<Project>('POST', '/api/v1/projects', body),
    show: (name: string) => call<Project>('GET', `/api/v1/projects/${enc(name)}`),
    remove: (name: string) => call<ProjectRemoved>('DELETE', `/api/v1/projects/${enc(name)}`),
    shortfall: () => call<Shortfall>('GET', '/api/v1/shortfall'),
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
