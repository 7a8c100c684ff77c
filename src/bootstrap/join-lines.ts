// What to run on a new machine (docs/operations.md): the `muster worker join` line and
// the one-line bootstrap, printed by `nodes join-token create`, `nodes
// enroll-token` and the dashboard's "Add a machine". Neither holds the token.
//
// The bootstrap line authenticates the Platform before it runs anything it
// downloads: it fetches the Platform CA certificate (unverified, like any
// public file), checks its SHA-256 against the value in the line, and only then
// uses it as curl's one trust anchor (--cacert) to fetch the script, which
// checks the binary's and install.sh's SHA-256 in turn (src/bootstrap/bootstrap.sh).
import { sha256Hex } from '../crypto/tokens.ts'
import installScript from '../../install.sh' with { type: 'text' }
import type { Fabric } from '../fabric/fabric.ts'
import type { Pki } from '../pki/pki.ts'
import { servedBinary } from './served-binary.ts'
import type { JoinCommands } from '../wire/nodes.ts'

/** What the lines are made from (the routes pass the Platform's services). */
export interface JoinLineSources {
  readonly fabric: Pick<Fabric, 'enrollment'>
  /** The Platform CA pin when the API serves a certificate from that CA; else null. */
  readonly apiCaPin: string | null
  /** The URL operators and nodes use to reach the API. */
  readonly publicUrl: string
  readonly pki: Pick<Pki, 'ca'>
}

/** Where a machine bootstraps from: the enrollment listener, else an API serving HTTPS from the Platform CA. */
export function bootstrapBase(p: Omit<JoinLineSources, 'pki'>): { url: string; pin: string } | null {
  const ep = p.fabric.enrollment
  // A listener still presenting its certificate from before the CA cannot be verified with the CA.
  if (ep) return ep.fingerprint === ep.caFingerprint ? { url: ep.url, pin: ep.fingerprint } : null
  const api = URL.canParse(p.publicUrl) ? new URL(p.publicUrl) : null
  if (p.apiCaPin && api?.protocol === 'https:' && api.pathname === '/') return { url: api.origin, pin: p.apiCaPin }
  return null
}

/** SHA-256 of the install.sh this Platform serves (the one built into it). */
export const INSTALL_SH = installScript
export const INSTALL_SH_SHA256 = sha256Hex(installScript)


/** `nodeId` null: a fleet token, which leaves the name open (a literal NAME). */
export function nodeCommands(p: JoinLineSources, nodeId: string | null): JoinCommands {
  const base = bootstrapBase(p)
  if (!base) return { joinCommand: null, bootstrapCommand: null }
  const name = nodeId ?? 'NAME'
  const joinCommand = `muster worker join --platform-url ${base.url} --node-id ${name} --platform-fingerprint ${base.pin}`
  if (!servedBinary()) return { joinCommand, bootstrapCommand: null }
  const caSha = sha256Hex(p.pki.ca.certPem)
  // The CA file goes as soon as curl has used it, and when its check fails: the line leaves nothing in /tmp.
  const bootstrapCommand =
    `c=$(mktemp) && { curl -fsSk -o "$c" ${base.url}/bootstrap/ca.pem && echo "${caSha}  $c" | sha256sum -c >/dev/null || { rm -f "$c"; false; }; } && ` +
    `{ curl -fsS --cacert "$c" ${base.url}/bootstrap/bootstrap.sh; rm -f "$c"; } | sh -s -- --node-id ${name}`
  return { joinCommand, bootstrapCommand }
}
