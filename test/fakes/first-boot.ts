// Reads first-boot data the way cloud-init on a fresh machine would: the
// files it writes (decoded, with their modes and owners) and what it runs.
import { gunzipSync } from 'bun'

export interface BootFile {
  path: string
  owner: string
  permissions: string
  content: string
}

export interface FirstBootDoc {
  files: Map<string, BootFile>
  runcmd: unknown[]
  /** join.env as key → value. */
  env: Record<string, string>
  /** The single-use join token (Hetzner, DigitalOcean); undefined where the machine joins by its cloud identity. */
  token: string | undefined
}

export function readFirstBoot(userData: string): FirstBootDoc {
  if (!userData.startsWith('#cloud-config\n')) throw new Error('not a cloud-config document')
  const doc = Bun.YAML.parse(userData) as { write_files: { path: string; owner: string; permissions: string; encoding?: string; content: string }[]; runcmd: unknown[] }
  const files = new Map<string, BootFile>()
  for (const f of doc.write_files) {
    const content = f.encoding === 'gz+b64' ? new TextDecoder().decode(gunzipSync(Buffer.from(f.content, 'base64'))) : f.content
    files.set(f.path, { path: f.path, owner: f.owner, permissions: f.permissions, content })
  }
  const envFile = [...files.values()].find((f) => f.path.endsWith('/join.env'))
  const tokenFile = [...files.values()].find((f) => f.path.endsWith('/enrollment-token'))
  if (!envFile) throw new Error('first-boot data without join.env')
  const env = Object.fromEntries(envFile.content.trim().split('\n').map((l) => {
    const m = l.match(/^([A-Z0-9_]+)='([^']*)'$/)
    if (!m) throw new Error(`unexpected join.env line: ${l}`)
    return [m[1]!, m[2]!]
  }))
  return { files, runcmd: doc.runcmd, env, token: tokenFile?.content.trim() }
}
