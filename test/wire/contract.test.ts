// The SDK's types are the routes' own (docs/architecture.md): each answer the
// SDK declares is, to the type checker, exactly what the service behind the
// route returns. `bun run typecheck` fails on a drift; this file holds the
// checks (the runtime test only says they were compiled).
import { describe, expect, test } from 'bun:test'
import type * as Sdk from '../../src/client/index.ts'
import type { Cloud } from '../../src/cloud/service.ts'
import type { Autoscaler } from '../../src/cloud/autoscale.ts'
import type { Fabric } from '../../src/fabric/fabric.ts'
import type { acceptHeartbeat } from '../../src/fabric/heartbeat.ts'
import type { credentialState } from '../../src/fabric/node-state.ts'
import type { enroll } from '../../src/fabric/enroll.ts'
import type { fleetOverview, overviewNodes } from '../../src/overview/fleet.ts'
import type { Projects } from '../../src/projects/service.ts'
import type { LogRelay } from '../../src/projects/logs.ts'
import type { Accounts } from '../../src/auth/accounts.ts'
import type { Audit } from '../../src/audit/audit.ts'
import type { Controller } from '../../src/federation/controller.ts'

/** true only when A and B are the same type (not merely assignable either way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
type Answer<F extends (...a: never[]) => unknown> = Awaited<ReturnType<F>>

const checks = {
  // The heartbeat: both of its paths (the fast one answers text built from acceptHeartbeat) and the SDK.
  heartbeatGeneralPath: true satisfies Equal<Sdk.HeartbeatAnswer, Answer<Fabric['heartbeat']>>,
  heartbeatFastPath: true satisfies Equal<Sdk.HeartbeatAnswer, ReturnType<typeof acceptHeartbeat>>,
  heartbeatCarriesLogs: true satisfies Equal<Sdk.HeartbeatAnswer['logs'], true | undefined>,
  enroll: true satisfies Equal<Sdk.EnrollResult, Answer<typeof enroll>>,
  trust: true satisfies Equal<Sdk.TrustAnswer, Answer<Fabric['trustKeys']>>,
  credential: true satisfies Equal<Sdk.CredentialAnswer, Answer<typeof credentialState>>,
  nodeList: true satisfies Equal<Sdk.NodeList, Answer<Fabric['listNodes']>>,
  platformInfo: true satisfies Equal<Sdk.PlatformInfo, Answer<Fabric['platformInfo']>>,
  project: true satisfies Equal<Sdk.Project, ReturnType<Projects['show']>>,
  assignments: true satisfies Equal<Sdk.Assignments, Answer<Projects['assignments']>>,
  logs: true satisfies Equal<Sdk.ProjectLogs, Answer<LogRelay['tail']>>,
  cloudStatus: true satisfies Equal<Sdk.CloudStatus, Answer<Cloud['status']>>,
  cloudScaling: true satisfies Equal<Sdk.CloudScaling, Answer<Autoscaler['view']>>,
  cloudAudit: true satisfies Equal<Sdk.CloudAudit, Answer<Cloud['audit']>>,
  accounts: true satisfies Equal<{ accounts: Sdk.Account[] }, Answer<Accounts['list']>>,
  audit: true satisfies Equal<Sdk.AuditRecord[], Answer<Audit['search']>>,
  overview: true satisfies Equal<Sdk.FleetOverview, Answer<typeof fleetOverview>>,
  overviewNodes: true satisfies Equal<Sdk.OverviewNodePage, ReturnType<typeof overviewNodes>>,
  offices: true satisfies Equal<{ offices: Sdk.OfficeInfo[] }, Answer<Controller['offices']>>,
}

describe('the wire contract', () => {
  test('every answer the SDK declares is the type its service returns', () => {
    expect(Object.values(checks).every((c) => c === true)).toBe(true)
  })
})
