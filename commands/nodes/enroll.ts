import { defineCommand } from 'citty'
import { checkName, checkUrl, clientArgs, labelArgs } from '../_args.ts'
import { clean, esc, note, printJsonLine, printLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'enroll', description: 'Enroll a node by hand with a certificate you made (worker join does this for you)' },
  args: {
    name: { type: 'positional', required: true, description: 'Node name' },
    'enrollment-token': { type: 'string', valueHint: 'mjt_…', description: 'The join token (else $MUSTER_ENROLLMENT_TOKEN, stdin or a prompt)' },
    'enrollment-token-file': { type: 'string', valueHint: 'FILE', description: 'Read the join token from this file' },
    'cert-file': { type: 'string', required: true, valueHint: 'FILE', description: "The node Agent's certificate (PEM)" },
    'key-file': { type: 'string', required: true, valueHint: 'FILE', description: "The certificate's private key (PEM, ECDSA P-256 or Ed25519): signs the proof of possession, never sent" },
    'agent-url': { type: 'string', required: true, valueHint: 'URL', description: 'https URL the Platform reaches the Agent at' },
    'trust-out': { type: 'string', valueHint: 'FILE', description: 'Write the trust keys here (0600)' },
    'credential-out': { type: 'string', valueHint: 'FILE', description: 'Write the node credential here (0600) instead of stdout' },
    label: { type: 'string', valueHint: 'KEY=VALUE', description: 'A label the node carries, like role=build (repeatable)' },
    ...clientArgs,
  },
  async run({ args, rawArgs }) {
    checkName(args.name, 'NAME')
    checkUrl(args['agent-url'], '--agent-url')
    const labels = await labelArgs(rawArgs, 'label')
    const { readFileSync } = await import('node:fs')
    const { readSecret } = await import('../_secret.ts')
    const { clientFrom } = await import('../_client.ts')
    const { writeFileAtomic } = await import('../../src/datadir.ts')
    const { VERSION } = await import('../../src/version.ts')
    const { MusterError } = await import('../../src/errors.ts')
    const read = (flag: 'cert-file' | 'key-file') => {
      try {
        return readFileSync(args[flag], 'utf8')
      } catch (e) {
        throw new MusterError('not-configured', `Cannot read --${flag} ${args[flag]}: ${(e as Error).message}`)
      }
    }
    const certPem = read('cert-file')
    const keyPem = read('key-file')
    const token = await readSecret({
      what: 'enrollment token',
      argv: { value: args['enrollment-token'], flag: '--enrollment-token' },
      file: { value: args['enrollment-token-file'], flag: '--enrollment-token-file' },
      env: 'MUSTER_ENROLLMENT_TOKEN',
    })
    const { signEnrollProof } = await import('../../src/crypto/enroll-proof.ts')
    let proof: { proofTime: number; proof: string }
    try {
      proof = signEnrollProof({ keyPem, certPem, nodeId: args.name, token })
    } catch (e) {
      throw new MusterError('invalid-request', `Cannot sign with --key-file ${args['key-file']} for --cert-file ${args['cert-file']}: ${(e as Error).message}`)
    }
    const r = await clientFrom(args).nodes.enroll({ token, nodeId: args.name, certPem, url: args['agent-url'], version: VERSION, ...proof, ...(Object.keys(labels).length > 0 ? { labels } : {}) })
    if (args['trust-out']) writeFileAtomic(args['trust-out'], `${JSON.stringify({ trustKeys: r.trustKeys }, null, 2)}\n`, 0o600)
    if (args['credential-out']) writeFileAtomic(args['credential-out'], `${r.credential}\n`, 0o600)
    if (args.json) return void printJsonLine(args['credential-out'] ? { ...r, credential: undefined } : r)
    note(esc`Enrolled ${r.nodeId} as ${r.agentId}.${args['trust-out'] ? ` Trust keys in ${args['trust-out']}.` : ''}`)
    if (!args['credential-out']) printLine(clean(r.credential))
  },
})
