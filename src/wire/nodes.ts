// The wire contract of the enrollment authority's routes (/api/v1/nodes…,
// /api/v1/join-tokens): request schemas and answer types. The routes validate
// with these schemas, the services return these types, and the SDK
// (src/client/nodes.ts) imports them: one definition for both sides.
export interface TrustKey {
  kid: string
  publicKey: string
  notBefore: string
  notAfter: string
}
