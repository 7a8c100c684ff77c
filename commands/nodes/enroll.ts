import { defineCommand } from 'citty'
import { checkName, checkUrl, clientArgs, labelArgs } from '../_args.ts'

export default defineCommand({
  meta: { name: 'enroll', description: 'Enroll a node by hand with a certificate you made (worker join does this for you)' },
  args: {
    name: { type: 'positional', required: true, description: 'Node name' },
    'enrollment-token': { type: 'string', valueHint: 'mjt_…', description: 'The join token (else $MUSTER_ENROLLMENT_TOKEN, stdin or a prompt)' },
    'enrollment-token-file': { type: 'string', valueHint: 'FILE', description: 'Read the join token from this file' },
    'cert-file': { type: 'string', required: true, valueHint: 'FILE', description: "The node Agent's certificate (PEM)" },
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
    let certPem: string
    try {
      certPem = readFileSync(args['cert-file'], 'utf8')
    } catch (e) {
      throw new MusterError('not-configured', `Cannot read --cert-file ${args['cert-file']}: ${(e as Error).message}`)
    }
    const token = await readSecret({
      what: 'enrollment token',
      argv: { value: args['enrollment-token'], flag: '--enrollment-token' },
      file: { value: args['enrollment-token-file'], flag: '--enrollment-token-file' },
      env: 'MUSTER_ENROLLMENT_TOKEN',
    })
    const r = await clientFrom(args).nodes.enroll({ token, nodeId: args.name, certPem, url: args['agent-url'], version: VERSION, ...(Object.keys(labels).length > 0 ? { labels } : {}) })
    if (args['trust-out']) writeFileAtomic(args['trust-out'], `${JSON.stringify({ trustKeys: r.trustKeys }, null, 2)}\n`, 0o600)
    if (args['credential-out']) writeFileAtomic(args['credential-out'], `${r.credential}\n`, 0o600)
    if (args.json) return void process.stdout.write(`${JSON.stringify(args['credential-out'] ? { ...r, credential: undefined } : r)}\n`)
    process.stderr.write(`Enrolled ${r.nodeId} as ${r.agentId}.${args['trust-out'] ? ` Trust keys in ${args['trust-out']}.` : ''}\n`)
    if (!args['credential-out']) process.stdout.write(`${r.credential}\n`)
  },
})
