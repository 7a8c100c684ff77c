// SDK: releases and rollouts (docs/upgrading.md), and the node's side of an update.
import type { Transport } from './http.ts'
import type { AgentFacts, ReleaseKey, ReleaseKeyView, ReleaseList, ReleaseView, SignedManifest } from '../wire/releases.ts'
import type { RolloutList, RolloutView, SignedDirective, StartRollout, UpdateReport } from '../wire/rollouts.ts'
export type * from '../wire/releases.ts'
export type * from '../wire/rollouts.ts'

const id = (s: string) => encodeURIComponent(s)

export function releasesApi(call: Transport) {
  return {
    list: () => call<ReleaseList>('GET', '/api/v1/releases'),
    /** Starts an upload of `size` bytes (the compressed binary); its parts follow. */
    startUpload: (size: number) => call<{ upload: string; partBytes: number }>('POST', '/api/v1/releases/uploads', { size }),
    uploadPart: (upload: string, part: number, bytes: Uint8Array) => call<{ parts: number; bytes: number }>('PUT', `/api/v1/releases/uploads/${id(upload)}/${part}`, bytes),
    add: (body: { release: SignedManifest; upload: string; key: ReleaseKey; mirrors?: string[] }) => call<ReleaseView>('POST', '/api/v1/releases', body),
    addKey: (key: Required<ReleaseKey>) => call<ReleaseKeyView>('POST', '/api/v1/releases/keys', key),
  }
}

export function rolloutsApi(call: Transport) {
  return {
    start: (body: StartRollout) => call<RolloutView>('POST', '/api/v1/rollouts', body),
    list: () => call<RolloutList>('GET', '/api/v1/rollouts'),
    /** One rollout; without an id the newest. `nodes: 'watch'`: only canaries and the nodes updating or failed. */
    status: (rollout?: string, opts: { nodes?: 'watch' } = {}) => call<RolloutView>('GET', `/api/v1/rollouts/${rollout ? id(rollout) : 'latest'}${opts.nodes ? `?nodes=${opts.nodes}` : ''}`),
    pause: (rollout: string) => call<RolloutView>('POST', `/api/v1/rollouts/${id(rollout)}/pause`),
    resume: (rollout: string) => call<RolloutView>('POST', `/api/v1/rollouts/${id(rollout)}/resume`),
    cancel: (rollout: string) => call<RolloutView>('POST', `/api/v1/rollouts/${id(rollout)}/cancel`),
  }
}

/** The node's side, authenticated with its node credential. */
export function updatesNodeApi(call: Transport) {
  return {
    directive: () => call<{ directive: SignedDirective | null }>('GET', '/api/v1/nodes/self/directive'),
    report: (r: UpdateReport) => call<{ ok: true }>('POST', '/api/v1/nodes/self/update', r),
    agentFacts: (f: AgentFacts) => call<{ ok: true }>('POST', '/api/v1/nodes/self/agent', f),
  }
}
