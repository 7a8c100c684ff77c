// What a failed connection to a Platform means, in words that name the fix
//: the TLS library's own text ("self signed
// certificate in certificate chain", "WRONG_VERSION_NUMBER", "fetch() URL is
// invalid") never reaches a person.

/** A certificate chain this machine does not trust (the leaf alone, or up to an unknown CA). */
const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_CHAIN_TOO_LONG',
])

export type FailureKind = 'pin-mismatch' | 'untrusted' | 'wrong-name' | 'expired' | 'plain-http' | 'refused' | 'unresolved' | 'timeout' | 'invalid-url' | 'reset' | 'other'

export interface NetworkFailure {
  kind: FailureKind
  /** One sentence with the fix. */
  text: string
}

const hostOf = (url: string) => (URL.canParse(url) ? new URL(url).hostname.replace(/^\[(.*)\]$/, '$1') : url)

/** The kind of failure and its sentence, for a connection to `url` that failed with `e`. */
export function explainNetworkError(url: string, e: unknown, how: { caFile?: boolean } = {}): NetworkFailure {
  // crypto/pin.ts's PinMismatchError, told by its name (the SDK does not load node:tls for it).
  if ((e as { name?: string })?.name === 'PinMismatchError') {
    const m = e as { seen: string; expected: string }
    return { kind: 'pin-mismatch', text: `it presented certificate ${m.seen}, which neither is nor chains to the pinned ${m.expected}: check --platform-fingerprint against the pin \`muster nodes platform\` prints on the Platform` }
  }
  const err = (e ?? {}) as { code?: string; name?: string; message?: string }
  const code = String(err.code ?? '')
  const text = `${code} ${err.message ?? ''}`
  if (UNTRUSTED.has(code) || /self[- ]signed certificate|unable to verify the first certificate|unable to get (local )?issuer certificate/i.test(text)) {
    return {
      kind: 'untrusted',
      text: how.caFile
        ? "its certificate is not signed by the CA in --platform-ca-file: check that file, or pass --platform-fingerprint (the pin `muster nodes platform` prints) for a Platform's own CA"
        : "its certificate is not signed by a CA this machine trusts: for a Platform's own CA pass --platform-fingerprint (the pin `muster nodes platform` prints); for a certificate from your own CA (serve --tls-cert) pass --platform-ca-file with that CA",
    }
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || /does not match certificate's altnames|altname/i.test(text)) {
    return { kind: 'wrong-name', text: `its certificate does not name ${hostOf(url)}: use an address it names (\`muster nodes platform\` lists the listener's addresses)` }
  }
  if (code === 'CERT_HAS_EXPIRED' || /certificate has expired/i.test(text)) return { kind: 'expired', text: "its certificate has expired, or this machine's clock is wrong" }
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'EPROTO' || /WRONG_VERSION_NUMBER|packet length too long|http request/i.test(text)) {
    return { kind: 'plain-http', text: 'that port speaks plain http, not https (the enrollment listener’s https URL is in `muster nodes platform`)' }
  }
  // Bun's node:net and node:tls report a host or network with no route as ECONNREFUSED too, so the sentence covers both.
  if (code === 'ECONNREFUSED' || code === 'ConnectionRefused') return { kind: 'refused', text: 'connection refused or no route to it (is `muster serve` running there, on that port, and is the address right?)' }
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return { kind: 'refused', text: 'no route to that address (is the address right, and does this machine reach its network?)' }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { kind: 'unresolved', text: `cannot resolve the name ${hostOf(url)}` }
  if (err.name === 'TimeoutError' || code === 'ETIMEDOUT' || /timed out/i.test(text)) return { kind: 'timeout', text: 'no answer in time (a firewall, or the wrong address?)' }
  if (code === 'ERR_INVALID_URL' || /URL is invalid/i.test(text)) return { kind: 'invalid-url', text: `${url} is not a usable URL (expected https://HOST:PORT)` }
  if (code === 'ECONNRESET') return { kind: 'reset', text: 'the connection was closed before an answer (a plain-http port, or a proxy in the way?)' }
  if (code === 'FailedToOpenSocket') return { kind: 'other', text: 'could not open a connection' }
  return { kind: 'other', text: err.message ?? String(e) }
}
