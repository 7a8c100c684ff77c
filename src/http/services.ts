// The services of a running Platform, as the HTTP layer sees them. Platform
// (src/platform/platform.ts) implements this; routes take it, so nothing below the HTTP
// layer ever imports the Platform.
import type { Audit } from '../audit/audit.ts'
import type { Auth } from '../auth/auth.ts'
import type { Sso } from '../sso/signin.ts'
import type { Cloud } from '../cloud/service.ts'
import type { Context } from '../context/context.ts'
import type { Fabric } from '../fabric/fabric.ts'
import type { Federation } from '../federation/service.ts'
import type { PlatformOptions } from '../context/options.ts'
import type { Pki } from '../pki/pki.ts'
import type { Projects } from '../projects/service.ts'
import type { LogRelay } from '../projects/logs.ts'
import type { Releases } from '../releases/service.ts'
import type { Rollouts } from '../rollouts/service.ts'

export interface Services {
  readonly ctx: Context
  readonly options: PlatformOptions
  readonly auth: Auth
  /** Sign-in with the identity provider (serve --oidc-issuer); null when none is set up. */
  readonly sso: Sso | null
  /** One audit of every action. */
  readonly audit: Audit
  readonly fabric: Fabric
  readonly projects: Projects
  /** Replica logs relayed from their nodes. */
  readonly logs: LogRelay
  readonly federation: Federation
  readonly cloud: Cloud
  /** Signed releases and their binaries (docs/upgrading.md). */
  readonly releases: Releases
  /** Rollouts of a release over the fleet. */
  readonly rollouts: Rollouts
  /** The API is served over HTTPS. */
  readonly secure: boolean
  /** The URL operators and nodes use to reach the API. */
  readonly publicUrl: string
  /** The Platform CA (certificates, pins). */
  readonly pki: Pki
  /** The Platform CA pin when the API serves a certificate from that CA; else null. */
  readonly apiCaPin: string | null
  readonly now: () => number
}
