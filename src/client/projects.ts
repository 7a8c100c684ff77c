// SDK: projects and the node's signed assignments.
import type { Transport } from './http.ts'

export interface ProjectPlacement {
  replica: number
  node: string | null
  state: 'pending' | 'running' | 'failed' | 'stopped'
  exitCode?: number | null
}
export interface Project {
  name: string
  command: string[]
  env: Record<string, string>
  replicas: number
  cpu: number
  memory: number
  revision: number
  origin: string
  shortfall: number
  reason: 'insufficient-capacity' | 'no-eligible-node' | null
  placements: ProjectPlacement[]
}
export interface DeployBody {
  name: string
  command: string[]
  env?: Record<string, string>
  replicas: number
  cpu?: number
  memory?: number
}
export interface Assignments {
  payload: {
    node: string
    revision: number
    issuedAt: string
    replicas: { project: string; replica: number; revision: number; command: string[]; env: Record<string, string>; cpu: number; memory: number }[]
  }
  kid: string
  signature: string
}

export function projectsApi(call: Transport) {
  const enc = encodeURIComponent
  return {
    list: () => call<{ projects: Project[] }>('GET', '/api/v1/projects'),
    deploy: (body: DeployBody) => call<Project>('POST', '/api/v1/projects', body),
    show: (name: string) => call<Project>('GET', `/api/v1/projects/${enc(name)}`),
    remove: (name: string) => call<{ name: string; removed: boolean }>('DELETE', `/api/v1/projects/${enc(name)}`),
    shortfall: () => call<{ total: number; projects: Record<string, number> }>('GET', '/api/v1/shortfall'),
    /** The node's signed assignments (node credential); long-polls when `after` and `waitSeconds` are given. */
    assignments: (after?: number, waitSeconds?: number) =>
      call<Assignments>('GET', `/api/v1/nodes/self/assignments${after !== undefined ? `?after=${after}&wait=${waitSeconds ?? 0}` : ''}`),
  }
}
